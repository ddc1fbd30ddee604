"""Writing and comparing output trees: atomic swap, old tree kept on failure, byte-exact --check.

Kills at every step are in test_output_crash.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from hetgitops.output import manifests, writer
from hetgitops.output.writer import MARKER, UnsafeOutput, compare_tree, replace_tree, write_tree

FILES = {"kustomization.yaml": "resources: []\n", "core/a.yaml": "a: 1\n"}
MARKED = {**FILES, MARKER: writer.MARKER_TEXT}


def _read(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*") if p.is_file()}


def test_write_replaces_the_whole_tree(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree({**FILES, "old/stale.yaml": "x: 1\n"}, out)
    write_tree(FILES, out)
    assert _read(out) == MARKED
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporaries left
    assert out.stat().st_mode & 0o755 == 0o755


def test_a_rerun_links_unchanged_files_and_writes_changed_ones(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree({**FILES, "core/b.yaml": "b: 1\n", "core/gone.yaml": "g: 1\n"}, out)
    before = {name: (out / name).stat().st_ino for name in ("core/a.yaml", "core/b.yaml")}
    write_tree({**FILES, "core/b.yaml": "b: 2\n"}, out)
    assert _read(out) == {**MARKED, "core/b.yaml": "b: 2\n"}  # stale file gone
    assert (out / "core/a.yaml").stat().st_ino == before["core/a.yaml"]  # same bytes: linked
    assert (out / "core/b.yaml").stat().st_ino != before["core/b.yaml"]
    assert all(p.stat().st_nlink == 1 for p in out.rglob("*") if p.is_file())  # old tree gone


def test_a_rerun_never_links_what_is_not_a_plain_file_of_its_own(tmp_path: Path) -> None:
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere.yaml"
    write_tree(FILES, out)
    elsewhere.write_text("a: 1\n")
    (out / "core/a.yaml").unlink()
    (out / "core/a.yaml").symlink_to(elsewhere)  # same bytes behind a symlink
    (tmp_path / "shared").write_text(FILES["kustomization.yaml"])
    (out / "kustomization.yaml").unlink()
    (out / "kustomization.yaml").hardlink_to(tmp_path / "shared")  # linked outside the tree
    write_tree(FILES, out)
    assert _read(out) == MARKED
    assert not (out / "core/a.yaml").is_symlink()
    assert (out / "kustomization.yaml").stat().st_ino != (tmp_path / "shared").stat().st_ino
    (out / "core/a.yaml").chmod(0o444)  # read-only: the next tree gets a fresh, writable copy
    write_tree(FILES, out)
    assert (out / "core/a.yaml").stat().st_mode & 0o200
    elsewhere.write_text("changed\n")
    (tmp_path / "shared").write_text("changed\n")
    assert _read(out) == MARKED  # nothing of the new tree is shared with a file outside it


@pytest.mark.parametrize("step", ["staging", "marker", "file", "filled"])
def test_a_failure_before_the_switch_keeps_the_old_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    out = tmp_path / "out"
    write_tree(FILES, out)

    def fail(name: str) -> None:
        if name == step:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer, "STEP_HOOK", fail)
    with pytest.raises(OSError, match="No space"):
        write_tree({"kustomization.yaml": "new\n"}, out)
    assert _read(out) == MARKED
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


def test_compare_tree_ignores_the_marker(tmp_path: Path) -> None:
    write_tree(FILES, tmp_path / "out")
    assert (tmp_path / "out" / MARKER).is_file()
    assert not compare_tree(FILES, tmp_path / "out")
    assert MARKER not in manifests.tree([])  # never part of a render (nor of a golden tree)


@pytest.mark.parametrize("where", [".", "..", "/"])
def test_refuses_the_working_directory_and_its_parents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "keep.txt").write_text("mine\n")
    monkeypatch.chdir(work)
    with pytest.raises(UnsafeOutput, match="current directory"):
        write_tree(FILES, Path(where))
    assert (work / "keep.txt").read_text() == "mine\n"


@pytest.mark.parametrize("output", ["policy", "policy/out", "."])
def test_refuses_an_output_overlapping_an_input(tmp_path: Path, output: str) -> None:
    """Equal to, inside, or containing an input path (a directory or a file)."""
    policy = tmp_path / "policy"
    policy.mkdir()
    (policy / "fleet.yaml").write_text("kind: Fleet\n")
    for source in (policy, policy / "fleet.yaml"):
        if output != "." and source.is_file():
            continue  # DIR can neither equal a file nor lie inside one
        with pytest.raises(UnsafeOutput, match="overlaps the input"):
            write_tree(FILES, tmp_path / output, inputs=[source])
    assert sorted(p.name for p in policy.iterdir()) == ["fleet.yaml"]


def test_refuses_a_non_empty_unmarked_directory(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.md").write_text("mine\n")
    with pytest.raises(UnsafeOutput, match="not a hetgitops output tree"):
        write_tree(FILES, out)
    assert _read(out) == {"notes.md": "mine\n"}


def test_rewrites_an_empty_dir_and_a_marked_tree(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    write_tree({**FILES, "old.yaml": "o: 1\n"}, out)
    write_tree(FILES, out)
    assert _read(out) == MARKED


def test_replace_tree_writes_no_marker(tmp_path: Path) -> None:
    """Golden trees are written with replace_tree: exactly the rendered files."""
    replace_tree(FILES, tmp_path / "expected")
    assert _read(tmp_path / "expected") == FILES


def test_ebusy_at_the_swap_removes_the_staging_tree_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What renameat2 answers for a mount point (or a folder in use): the new tree cannot go in.
    out = tmp_path / "out"
    write_tree(FILES, out)

    def busy(a: Path, b: Path) -> bool:
        raise OSError(16, "Device or resource busy", str(a), None, str(b))

    monkeypatch.setattr(writer, "_exchange", busy)
    with pytest.raises(OSError, match="cannot be swapped for a new tree, and nothing was changed"):
        write_tree({"kustomization.yaml": "new\n"}, out)
    assert _read(out) == MARKED
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
