"""docs/maintenance.md shows real outputs: each `<!-- output: CMD -->` block is what CMD prints
now, run from the repository's root (`| head -N` / `| tail -N` keep the first or last lines).
`pytest --update-golden` rewrites the blocks."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from hetgitops.cli.main import main

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "maintenance.md"
BLOCK = re.compile(
    r"<!-- output: (?P<cmd>.+?) -->\n(?P<fence>`{3,})(?P<lang>\w*)\n(?P<body>.*?)(?P=fence)\n", re.S
)


def _run(command: str) -> str:
    cut = re.fullmatch(r"(?P<cmd>.+?)(?: \| (?P<end>head|tail) -(?P<n>\d+))?", command)
    assert cut is not None
    args = shlex.split(cut["cmd"])
    assert args[0] == "hetgitops"
    result = CliRunner().invoke(main, args[1:])
    assert result.exit_code in (0, 1), (command, result.output)
    lines = result.stdout.splitlines(keepends=True)
    if cut["end"]:
        n = int(cut["n"])
        lines = lines[:n] if cut["end"] == "head" else lines[-n:]
    return "".join(lines)


def test_documented_outputs_are_what_the_commands_print(
    monkeypatch: pytest.MonkeyPatch, update_golden: bool
) -> None:
    monkeypatch.chdir(REPO)
    text = PAGE.read_text("utf-8")
    blocks = list(BLOCK.finditer(text))
    assert len(blocks) >= 5
    fresh = BLOCK.sub(
        lambda m: (
            f"<!-- output: {m['cmd']} -->\n{m['fence']}{m['lang']}\n{_run(m['cmd'])}{m['fence']}\n"
        ),
        text,
    )
    if update_golden:
        PAGE.write_text(fresh, "utf-8")
        return
    assert fresh == text, "docs/maintenance.md is stale: run pytest --update-golden"


LIVE = re.compile(
    r"<!-- live output: (?P<cmd>.+?) -->\n(?P<fence>`{3,})(?P<lang>\w*)\n(?P<body>.*?)(?P=fence)\n",
    re.S,
)


def test_documented_live_outputs_are_what_the_stand_in_cluster_gives(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, update_golden: bool
) -> None:
    """`<!-- live output: ... KUBECONFIG ... -->` blocks: the command read from the stand-in
    cluster of test_maintenance_readmit (KUBECONFIG is a throw-away file)."""
    import hetgitops.live.client as client
    from tests.capacity.test_maintenance_readmit import _Cluster

    monkeypatch.setattr(client, "Cluster", _Cluster)
    config = tmp_path / "kubeconfig"
    config.write_text("{}")
    monkeypatch.chdir(REPO)
    text = PAGE.read_text("utf-8")
    assert LIVE.search(text)

    def fresh_block(m: re.Match[str]) -> str:
        out = _run(m["cmd"].replace("KUBECONFIG", str(config)))
        return f"<!-- live output: {m['cmd']} -->\n{m['fence']}{m['lang']}\n{out}{m['fence']}\n"

    fresh = LIVE.sub(fresh_block, text)
    if update_golden:
        PAGE.write_text(fresh, "utf-8")
        return
    assert fresh == text, "docs/maintenance.md is stale: run pytest --update-golden"
