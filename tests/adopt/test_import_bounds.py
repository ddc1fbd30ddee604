"""The dump reader of `import -f` applies the bounds every other reader does (adopt.bounds):
an input no larger than one live answer, no deeper than a policy, aliases no costlier than a
policy file's. Each refusal is a located import-unreadable finding; the rest is still read."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hetgitops.adopt import bounds, sources
from hetgitops.cli.main import main
from hetgitops.load.yamllimits import MAX_DEPTH

HERE = Path(__file__).parent
A100 = (HERE / "cluster_a100.yaml").read_text()
NODE = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n9\n"
# Ten levels of ten aliases each: 10^10 values once expanded, in 300 bytes.
BOMB = "  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 10)
)


def _read(text: str, name: str = "dump.yaml") -> sources.Read:
    read = sources.Read()
    sources.from_text(name, text, read)
    return read


def _unreadable(read: sources.Read) -> list[tuple[str, int, str]]:
    return [(d.span.file, d.span.line, d.message) for d in read.diagnostics]


def test_an_alias_bomb_in_a_field_import_does_not_read_is_refused_located() -> None:
    """Before: the bomb was built (shared lists) and kept, its object imported as if sound;
    the first walker of the whole object (a copy, a JSON dump) would never return."""
    count = len(_read(A100).objects)
    read = _read(A100 + "---\n" + NODE + "extra:\n" + BOMB + "---\n" + NODE)
    assert len(read.objects) == count  # what came before; the rest of the file is not read
    [(file, line, message)] = _unreadable(read)
    assert (file, line) == ("dump.yaml", A100.count("\n") + 2)
    assert "alias expansion bomb" in message


@pytest.mark.parametrize(
    "tail", ["metadata:\n  name: n9\n  labels: &l {a: *l}\n", "spec: &s\n  x: [*s]\n"]
)
def test_an_alias_inside_itself_is_refused_and_the_next_document_read(tail: str) -> None:
    """Before: a recursive structure was imported (and walked by the phases that recurse)."""
    node = "apiVersion: v1\nkind: Node\n" + ("" if "metadata" in tail else "metadata: {name: n}\n")
    read = _read(node + tail + "---\n" + NODE)
    assert [i.name for i in read.objects] == ["n9"]
    [(_, line, message)] = _unreadable(read)
    assert line == 1 and f"more than {MAX_DEPTH} deep" in message


@pytest.mark.parametrize("suffix", ["yaml", "json"])
def test_nesting_deeper_than_a_policy_may_is_refused_in_yaml_and_json(
    suffix: str, tmp_path: Path
) -> None:
    """Before: 65 to ~1,000 levels (libyaml's and orjson's own limits) were read as sound."""
    deep: dict[str, object] = {}
    obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": deep}
    for _ in range(MAX_DEPTH + 1):
        deep["a"] = deep = {}
    dump = tmp_path / f"dump.{suffix}"
    # JSON is YAML too; a comment first sends it down the YAML path.
    dump.write_text(("# a dump\n" if suffix == "yaml" else "") + json.dumps(obj))
    read = sources.from_paths([dump])
    assert read.objects == []
    assert any(f"more than {MAX_DEPTH} deep" in m for _, _, m in _unreadable(read))
    shallow = dump.read_text().replace('{"a": ' * 10, "", 1).replace("}" * 10, "", 1)
    dump.write_text(shallow)
    assert len(sources.from_paths([dump]).objects) == 1  # a depth within bounds reads


def test_an_input_larger_than_one_live_answer_is_refused_before_it_is_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a file or standard input of any size was read whole (2 GB: 4 GB of memory)."""
    monkeypatch.setattr(bounds, "MAX_INPUT_BYTES", len(A100) - 1)
    dump = tmp_path / "dump.yaml"
    dump.write_text(A100)
    read = sources.from_paths([dump])
    assert read.objects == [] and "larger than" in read.diagnostics[0].message
    assert read.diagnostics[0].span.file == str(dump)
    stdin = sources.from_paths([Path("-")], io.BytesIO(A100.encode()))
    assert stdin.objects == [] and "<stdin> is larger than" in stdin.diagnostics[0].message
    monkeypatch.setattr(bounds, "MAX_INPUT_BYTES", len(A100.encode()))
    assert sources.from_paths([dump]).objects  # exactly the bound still reads


def test_the_command_reads_standard_input_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bounds, "MAX_INPUT_BYTES", 1000)
    args = ["import", "-f", "-", "-o", str(tmp_path / "out")]
    result = CliRunner().invoke(main, args, input=A100)
    assert result.exit_code == 1, result.output
    assert "<stdin> is larger than" in result.output
    assert not (tmp_path / "out").exists()
