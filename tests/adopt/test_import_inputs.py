"""hetgitops import on hostile or odd input: every input read or refused with a located
finding, nothing read an error, wrong types located findings (never a crash), embedded YAML
read by the bounded loader, names kept out of comments, the policy written atomically."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from hetgitops import api
from hetgitops.adopt import nodes, sources
from hetgitops.adopt import run as adopt_run
from hetgitops.adopt.infer import Inferred, infer
from hetgitops.adopt.write import comment, policy_files
from hetgitops.cli.main import main
from hetgitops.load.bundled import bundled_versions
from hetgitops.model.catalogue import card_types

HERE = Path(__file__).parent
A100 = (HERE / "cluster_a100.yaml").read_text()
GPU_OPERATOR = (HERE / "cluster_gpu_operator.yaml").read_text()


def _read(text: str, name: str = "dump.yaml") -> sources.Read:
    read = sources.Read()
    sources.from_text(name, text, read)
    return read


def _infer(read: sources.Read) -> Inferred:
    return infer(read.objects, card_types(), cluster="lab", versions=bundled_versions())


def _unreadable(found: list[Any]) -> list[tuple[str, int, str]]:
    return [(d.span.file, d.span.line, d.path) for d in found if d.rule == "import-unreadable"]


# Item 1: every input read, or refused with a located finding.


def test_any_named_file_any_suffix_case_folders_and_dev_stdin_are_read(tmp_path: Path) -> None:
    count = len(_read(A100).objects)
    (tmp_path / "dump.txt").write_text(A100)
    (tmp_path / "dump.YAML").write_text(A100)
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "cluster.YML").write_text(A100)
    for path in (tmp_path / "dump.txt", tmp_path / "dump.YAML", folder):
        read = sources.from_paths([path])
        assert len(read.objects) == count, path
        assert read.diagnostics == []
    with (tmp_path / "dump.txt").open() as stdin:
        fd = f"/dev/fd/{stdin.fileno()}"  # what /dev/stdin is when stdin is a file or pipe
        assert len(sources.from_paths([Path(fd)]).objects) == count


def test_a_json_array_and_a_list_inside_a_list_are_unpacked() -> None:
    objects = [i.obj for i in _read(A100).objects]
    array = _read(json.dumps(objects), "items.json")  # `jq .items`
    assert len(array.objects) == len(objects)
    assert array.objects[3].span.file == "items.json#items[3]"
    nested = {"kind": "List", "items": [{"kind": "List", "items": objects}]}
    assert len(_read(json.dumps(nested)).objects) == len(objects)
    as_yaml = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [nested]})
    assert len(_read(as_yaml).objects) == len(objects)


def test_an_object_with_a_non_string_kind_is_a_located_finding_not_dropped() -> None:
    text = A100.replace("kind: Node", "kind: [Node]", 1)
    read = _read(text)
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "kind: [Node]" in t)
    assert [(s, ln) for s, ln, _ in _unreadable(read.diagnostics)] == [("dump.yaml", line - 1)]
    assert len(read.objects) == len(_read(A100).objects) - 1


def test_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    run = CliRunner().invoke(
        main, ["import", "-f", str(tmp_path / "no-such-file.yaml"), "-o", str(tmp_path / "p")]
    )
    assert run.exit_code == 2, run.output
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize("text", ["", "# nothing\n", "[]\n", '{"kind": "List", "items": []}'])
def test_zero_objects_read_is_an_error_and_writes_no_policy(tmp_path: Path, text: str) -> None:
    (tmp_path / "dump.yaml").write_text(text)
    out = tmp_path / "policy"
    run = CliRunner().invoke(main, ["import", "-f", str(tmp_path / "dump.yaml"), "-o", str(out)])
    assert run.exit_code == 1, run.output
    assert "0 objects read" in run.output
    assert not out.exists() or not any(out.iterdir())


def test_zero_objects_from_a_cluster_is_an_environment_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An API URL whose every path answers 404 serves no kind import reads."""
    monkeypatch.setattr(sources, "from_cluster", lambda *_: sources.Read(source="https://x"))
    out = tmp_path / "policy"
    run = CliRunner().invoke(main, ["import", "-o", str(out)])
    assert run.exit_code == 4, run.output
    assert "0 objects read from https://x" in run.output
    assert not out.exists() or not any(out.iterdir())


# Item 2: nothing read from input reaches a YAML comment unescaped.


def test_a_name_carrying_a_document_stays_inside_its_comment() -> None:
    read = _read(A100)
    evil = (
        "vision\n---\napiVersion: hetgitops.io/v1alpha1\nkind: Team\nmetadata: {name: evil}\n---\n#"
    )
    for item in read.objects:
        if item.kind == "ClusterQueue" and item.name == "vision":
            item.obj["metadata"]["name"] = evil
        if item.kind == "LocalQueue" and item.obj["spec"]["clusterQueue"] == "vision":
            item.obj["spec"]["clusterQueue"] = evil
    teams = list(yaml.safe_load_all(policy_files(_infer(read))["teams.yaml"]))
    assert sorted(t["metadata"]["name"] for t in teams) == sorted(["nlp", evil])


def test_comment_escapes_every_line_break_and_control_character() -> None:
    text = comment("a\nb\rc\x85d\u2028e\u2029f\x00g\u202eh")
    assert text.count("\n") == 1 and text.endswith("\n")
    assert yaml.safe_load("key: 1\n" + text) == {"key": 1}


# Item 3: accelerator counts are Kubernetes quantities.


def test_accelerator_counts_are_read_as_quantities() -> None:
    node = {"status": {"allocatable": {"nvidia.com/gpu": "1k", "amd.com/gpu": "8.0"}}}
    assert nodes.accelerators(node) == {"nvidia.com/gpu": 1000, "amd.com/gpu": 8}


def test_import_reads_intel_gpus_by_the_names_their_plugin_registers() -> None:
    """Intel's GPU plugin registers gpu.intel.com/i915 and gpu.intel.com/xe; import's own
    copy of the accelerator list named intel.com/gpu, which no plugin advertises, so an Intel
    node was read as accelerator-less. One list now (model/accelerators.py)."""
    node = {"status": {"allocatable": {"gpu.intel.com/i915": "2", "gpu.intel.com/xe": "4"}}}
    assert nodes.accelerators(node) == {"gpu.intel.com/i915": 2, "gpu.intel.com/xe": 4}
    assert nodes.accelerators({"status": {"allocatable": {"intel.com/gpu": "2"}}}) == {}


@pytest.mark.parametrize("value", ["1.5", "-8", "1Ei", "1e18", "²", "abc"])
def test_a_count_that_is_no_whole_plausible_number_is_a_located_finding(value: str) -> None:
    text = A100.replace('nvidia.com/gpu: "8"', f"nvidia.com/gpu: {json.dumps(value)}", 1)
    assert text != A100
    read = _read(text)
    found = _unreadable(read.diagnostics)
    assert len(found) == 1 and found[0][2] == "status.allocatable[nvidia.com/gpu]"
    _infer(read)  # no crash


# Item 10: a wrong-typed field is a located import-unreadable, never a crash.

WRONG_TYPES = [
    ("Node", ("metadata", "labels"), ["a", "b"]),
    ("Node", ("status",), ["a"]),
    ("ClusterQueue", ("spec", "resourceGroups", 0, "flavors", 0, "resources", 0, "nominalQuota"),
     "abc"),
    ("ClusterQueue", ("spec", "resourceGroups", 0, "flavors", 0, "resources", 1, "nominalQuota"),
     "1e400"),
    ("PriorityClass", ("value",), "high"),
    ("WorkloadPriorityClass", ("value",), None),
    ("Topology", ("spec", "levels"), 5),
    ("ResourceFlavor", ("spec", "nodeLabels"), ["x"]),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "path", "value"), WRONG_TYPES)
def test_a_wrong_typed_field_is_a_located_finding(
    kind: str, path: tuple[Any, ...], value: Any
) -> None:
    objects = [i.obj for i in _read(A100).objects]
    index = next(i for i, o in enumerate(objects) if o["kind"] == kind)
    target = objects[index]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    read = _read(json.dumps(objects), "dump.json")
    assert [s for s, _, _ in _unreadable(read.diagnostics)] == [f"dump.json#items[{index}]"]
    policy_files(_infer(read))  # no crash


# Item 11: embedded YAML through the bounded loader, failures located.

DEEP = "[" * 5000 + "]" * 5000
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


def _kueue_config(body: str) -> str:
    value = "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n" + body
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
        "data": {"controller_manager_config.yaml": value},
    }
    return A100 + "---\n" + yaml.safe_dump(config)


@pytest.mark.parametrize(
    "text",
    [
        GPU_OPERATOR.replace("    mig-configs:\n", "    mig-configs: [\n", 1),  # not YAML
        GPU_OPERATOR.replace("replicas: 4", "replicas: four"),
        GPU_OPERATOR.replace('"1g.5gb": 7', '"1g.5gb": [7]'),
        _kueue_config("integrations: [batch/job]\n"),
        _kueue_config("waitForPodsReady: [1]\n"),
        _kueue_config("integrations: {frameworks: " + DEEP + "}\n"),
        _kueue_config("integrations:\n  frameworks: [batch/job\n"),  # not YAML
        _kueue_config(BOMB + "integrations: {frameworks: *i}\n"),
    ],
    ids=[
        "mig-not-yaml",
        "replicas-four",
        "mig-devices-list",
        "integrations-list",
        "pods-ready-list",
        "deep",
        "kueue-not-yaml",
        "alias-bomb",
    ],
)
def test_embedded_configs_that_cannot_be_read_are_located_findings(text: str) -> None:
    read = _read(text)
    inferred = _infer(read)
    found = [d for d in inferred.diagnostics if d.rule == "import-unreadable"]
    assert len(found) == 1, [d.message for d in inferred.diagnostics]
    assert found[0].span.file == "dump.yaml" and found[0].span.line > 0
    assert found[0].path.startswith("data.")


# Item 13: the policy appears whole or not at all.


def test_a_failed_write_leaves_no_partial_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"fleet.yaml": "a: 1\n", "pools.yaml": "b: 1\n", "teams\0.yaml": "c: 1\n"}
    result = adopt_run.ImportResult(files, [], api.Result())
    monkeypatch.setattr(adopt_run, "import_objects", lambda *_, **__: result)
    (tmp_path / "dump.yaml").write_text(A100)
    out = tmp_path / "policy"
    run = CliRunner().invoke(main, ["import", "-f", str(tmp_path / "dump.yaml"), "-o", str(out)])
    assert run.exit_code != 0
    assert not out.exists() or not any(out.iterdir())
