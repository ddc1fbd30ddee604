"""Crash safety of `--output`: a process killed at any step of write_tree leaves DIR wholly old
or wholly new, and the next run removes (or puts back) whatever the killed one left.

Fault injection, not luck: writer.STEP_HOOK names every step; a forked child SIGKILLs itself
at the n-th occurrence of each one in turn, on the exchange path and on the two-rename fallback.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from hetgitops.output import writer
from hetgitops.output.writer import MARKER, MARKER_TEXT, write_tree

OLD = {"kustomization.yaml": "resources: [a]\n", "core/a.yaml": "a: 1\n", "core/b.yaml": "b: 1\n"}
NEW = {"kustomization.yaml": "resources: [c]\n", "vol/c.yaml": "c: 1\n", "core/a.yaml": "a: 2\n"}
LATER = {"kustomization.yaml": "resources: []\n"}


def _read(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*") if p.is_file()}


def _steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every (step, occurrence) of one replacement of OLD by NEW."""
    seen: list[str] = []
    out = tmp_path / "probe"
    write_tree(OLD, out)
    monkeypatch.setattr(writer, "STEP_HOOK", seen.append)
    write_tree(NEW, out)
    monkeypatch.setattr(writer, "STEP_HOOK", None)
    return [(name, seen[: i + 1].count(name)) for i, name in enumerate(seen)]


def _killed_at(step: str, nth: int, run: Callable[[], None]) -> None:
    pid = os.fork()
    if pid == 0:  # the child: count steps, die without cleanup at the chosen one
        counts: dict[str, int] = {}

        def hook(name: str) -> None:
            counts[name] = counts.get(name, 0) + 1
            if name == step and counts[name] == nth:
                os.kill(os.getpid(), signal.SIGKILL)

        writer.STEP_HOOK = hook
        try:
            run()
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (step, nth)


@pytest.fixture(params=["exchange", "two-renames"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "two-renames":  # a platform or file system without RENAME_EXCHANGE
        monkeypatch.setattr(writer, "_exchange", lambda a, b: False)
    return str(request.param)


@pytest.mark.slow  # a process killed at every step
def test_a_kill_at_any_step_leaves_old_or_new_and_the_next_run_cleans_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    steps = _steps(tmp_path, monkeypatch)
    names = {name for name, _ in steps}
    assert {"staging", "marker", "file", "filled", "switched", "removing", "done"} <= names
    assert ("aside" in names) == (mode == "two-renames")
    for case, (step, nth) in enumerate(steps):
        out = tmp_path / f"case{case}" / "out"
        write_tree(OLD, out)
        _killed_at(step, nth, lambda out=out: write_tree(NEW, out))  # type: ignore[misc]
        if mode == "two-renames" and step == "aside":
            assert not out.exists()  # the one gap of the fallback; the next run mends it
        else:
            assert _read(out) in ({**OLD, MARKER: MARKER_TEXT}, {**NEW, MARKER: MARKER_TEXT})
        write_tree(LATER, out)
        assert _read(out) == {**LATER, MARKER: MARKER_TEXT}, (step, nth)
        assert [p.name for p in out.parent.iterdir()] == ["out"], (step, nth)


def test_the_next_run_puts_back_a_tree_moved_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer, "_exchange", lambda a, b: False)
    out = tmp_path / "out"
    write_tree(OLD, out)
    _killed_at("aside", 1, lambda: write_tree(NEW, out))
    assert not out.exists()

    def stop(name: str) -> None:
        if name == "recovered":
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer, "STEP_HOOK", stop)
    with pytest.raises(OSError):
        write_tree(LATER, out)
    assert _read(out) == {**OLD, MARKER: MARKER_TEXT}
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_hidden_folders_that_are_not_ours_are_left_alone(tmp_path: Path) -> None:
    out = tmp_path / "out"
    mine = tmp_path / ".out.hetgitops-notes"
    mine.mkdir()
    (mine / "notes.md").write_text("mine\n")
    write_tree(OLD, out)
    assert _read(mine) == {"notes.md": "mine\n"}


def test_two_writers_take_turns(tmp_path: Path) -> None:
    """Racing renders into one DIR: both succeed, one after the other, DIR whole at the end."""
    out = tmp_path / "out"
    pids = []
    for files in (OLD, NEW) * 4:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                write_tree(files, out)
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert _read(out) in ({**OLD, MARKER: MARKER_TEXT}, {**NEW, MARKER: MARKER_TEXT})
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
