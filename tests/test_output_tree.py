"""Writing and comparing output trees: atomic swap, restore on failure, byte-exact --check."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hetgitops import manifests
from hetgitops.manifests import compare_tree, write_tree

FILES = {"kustomization.yaml": "resources: []\n", "core/a.yaml": "a: 1\n"}


def _read(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*") if p.is_file()}


def test_write_replaces_the_whole_tree(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree({**FILES, "old/stale.yaml": "x: 1\n"}, out)
    write_tree(FILES, out)
    assert _read(out) == FILES
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporaries left
    assert out.stat().st_mode & 0o755 == 0o755


def test_failed_swap_restores_the_old_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    write_tree(FILES, out)
    real_replace = os.replace
    calls: list[tuple[str, str]] = []

    def flaky(src: str | Path, dst: str | Path) -> None:
        calls.append((str(src), str(dst)))
        if len(calls) == 2:  # old tree moved aside; now swapping the new one in fails
            raise OSError("disk on fire")
        real_replace(src, dst)

    monkeypatch.setattr(manifests.os, "replace", flaky)
    with pytest.raises(OSError, match="disk on fire"):
        write_tree({"kustomization.yaml": "new\n"}, out)
    monkeypatch.undo()
    assert _read(out) == FILES
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_compare_tree_classifies_differences(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree({**FILES, "extra.yaml": "e: 1\n"}, out)
    (out / "core" / "a.yaml").write_text("a: 2\n")
    wanted = {**FILES, "core/b.yaml": "b: 1\n"}
    diff = compare_tree(wanted, out)
    assert diff.stale == ("core/a.yaml",)
    assert diff.missing == ("core/b.yaml",)
    assert diff.extra == ("extra.yaml",)
    assert diff


def test_compare_tree_of_a_missing_dir_lists_everything_missing(tmp_path: Path) -> None:
    diff = compare_tree(FILES, tmp_path / "absent")
    assert diff.missing == tuple(sorted(FILES)) and not diff.stale and not diff.extra
    write_tree(FILES, tmp_path / "absent")
    assert not compare_tree(FILES, tmp_path / "absent")
