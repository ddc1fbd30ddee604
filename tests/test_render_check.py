"""`render --check`: read-only, and a failure names the exact command that fixes it."""

from __future__ import annotations

import shlex
from pathlib import Path

from click.testing import CliRunner

from hetgitops.cli.main import main

CASES = Path(__file__).resolve().parent / "cases" / "render"


def _snapshot(tree: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(tree).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in tree.rglob("*")
        if p.is_file()
    }


def test_stale_tree_message_names_the_fix_command_with_paths_and_targets(tmp_path: Path) -> None:
    policy, out = str(CASES / "kueue-only" / "policy"), tmp_path / "rendered dir"
    args = [policy, "--now", "2026-09-01", "--target", "kueue", "--output", str(out)]
    assert CliRunner().invoke(main, ["render", *args]).exit_code == 0
    victim = next(out.glob("kueue/clusterqueue-*.yaml"))
    victim.write_text(victim.read_text().replace("nominalQuota", "nominalQuota ") + "# x\n")
    before = _snapshot(out)

    result = CliRunner().invoke(main, ["render", *args, "--check"])

    assert result.exit_code == 1 and result.stdout == ""
    fix = shlex.join(["hetgitops", "render", policy, "--output", str(out), "--target", "kueue"])
    assert fix in result.stderr
    assert f"{victim}: stale" in result.stderr
    assert _snapshot(out) == before  # read-only: not even a marker or a temp folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rendered dir"]
    # Running the named command makes the check pass.
    assert CliRunner().invoke(main, [*shlex.split(fix)[1:], "--now", "2026-09-01"]).exit_code == 0
    assert CliRunner().invoke(main, ["render", *args, "--check"]).exit_code == 0
