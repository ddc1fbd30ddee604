"""hetgitops import of Volcano Queues: a hand-written Volcano cluster (nodegroups, a parent
queue, weights, reclaimable, guarantee, no capability) and Volcano's own examples."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hetgitops.adopt import sources
from hetgitops.adopt.run import import_objects

HERE = Path(__file__).parent
CLUSTER = HERE / "cluster_volcano.yaml"


def test_a_volcano_cluster_imports_and_its_leaf_queues_render_back_unchanged(
    tmp_path: Path,
) -> None:
    read = sources.from_paths([CLUSTER])
    result = import_objects(read, tmp_path / "p", cluster="lab")
    found = sorted(
        (d.rule, d.message.split(":")[0][:34])
        for d in result.diagnostics
        if d.rule != "import-first-sync-creates"
    )
    creates = sorted(
        d.message.split(" (")[0]
        for d in result.diagnostics
        if d.rule == "import-first-sync-creates"
    )
    assert creates == [
        "the first sync creates 1 PriorityClass: standard",
        "the first sync creates 2 Namespace: nlp, vision",
        "the first sync creates 2 ResourceQuota: nlp/hetgitops-accelerators, "
        "vision/hetgitops-accelerators",
    ]
    # No import-field-changes: every leaf renders as the cluster has it. Parent, root and
    # default stay Volcano's; the teams need namespaces. The nodes already carry their
    # nodegroups (spec.volcano.nodeGroup): no targets-incomplete for the missing nodes target.
    assert found == [
        ("import-kind-not-imported", "Queue research is a parent queue"),
        ("import-team-without-namespace", "Queue nlp belongs to no ClusterQue"),
        ("import-team-without-namespace", "Queue vision belongs to no Cluster"),
    ]  # fmt: skip
    written = yaml.safe_load_all(result.files["pools.yaml"])
    pools = {p["metadata"]["name"]: p["spec"] for p in written}
    assert {n: p.get("volcano") for n, p in pools.items()} == {n: {"nodeGroup": n} for n in pools}
    teams = {
        t["metadata"]["name"]: t["spec"] for t in yaml.safe_load_all(result.files["teams.yaml"])
    }
    assert teams["vision"]["volcano"] == {
        "weight": 4, "omitCapability": True, "parent": "research", "queueNames": {"a100": "vision"}
    }  # fmt: skip
    assert teams["nlp"]["volcano"]["reclaimable"] is False
    assert teams["nlp"]["volcano"]["guaranteePercent"] == 50
    assert teams["nlp"]["quotas"] == [{"pool": "h100", "cards": 8}]
    fleet = yaml.safe_load(result.files["fleet.yaml"])
    assert fleet["spec"]["targets"] == ["core", "volcano"]
    assert result.rendered is not None
    queues = {
        m.obj["metadata"]["name"] for m in result.rendered.manifests if m.obj.get("kind") == "Queue"
    }
    assert queues == {"vision", "nlp"}  # fmt: skip


def test_a_leaf_the_language_cannot_say_is_reported_at_its_team(tmp_path: Path) -> None:
    """A guarantee on cpu alone (no accelerator share gives it) is a located field change."""
    text = CLUSTER.read_text().replace(
        'resource: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "4"}', 'resource: {cpu: "10"}'
    )
    read = sources.Read()
    sources.from_text("cluster.yaml", text, read)
    result = import_objects(read, tmp_path / "p", cluster="lab")
    changes = [d for d in result.diagnostics if d.rule == "import-field-changes"]
    assert [d.message.split(":")[0] for d in changes] == ["Queue nlp"]
    assert changes[0].span.file.endswith("teams.yaml")


def _volcano_examples() -> list[Path]:
    from harness import upstream

    if upstream.missing():
        return []
    return sorted((upstream.folder() / "volcano" / "examples").glob("*queue*.yaml"))


@pytest.mark.parametrize("example", _volcano_examples(), ids=lambda p: p.name)
def test_volcano_example_queues_import_to_a_valid_policy_and_each_is_reported(
    example: Path, tmp_path: Path
) -> None:
    """Volcano's example queues bind to no accelerator pool (cpu capability, no nodegroup):
    each is reported, none dropped, and the written policy validates."""
    read = sources.from_paths([example])
    queues = [o.name for o in read.objects if o.kind == "Queue"]
    assert queues
    result = import_objects(read, tmp_path / "p", cluster="lab")
    assert result.rendered is not None
    assert [d for d in result.rendered.diagnostics if d.severity.name == "ERROR"] == []
    reported = {d.message.split(":")[0].split(" ")[1] for d in result.diagnostics
                if d.rule.startswith("import-")}  # fmt: skip
    assert set(queues) <= reported


def _with_scheduler_config(conf: str) -> sources.Read:
    """The hand-written Volcano cluster with `conf` as its volcano-scheduler.conf."""
    objects = list(yaml.safe_load_all(CLUSTER.read_text()))
    for obj in objects:
        if obj["kind"] == "ConfigMap":
            obj["data"]["volcano-scheduler.conf"] = conf
    read = sources.Read()
    sources.from_text("cluster.yaml", "---\n".join(yaml.safe_dump(o) for o in objects), read)
    return read


def _fleet_volcano(files: dict[str, str]) -> dict[str, object]:
    return yaml.safe_load(files["fleet.yaml"])["spec"].get("volcano")  # type: ignore[no-any-return]


def test_the_hand_written_scheduler_config_is_kept_as_its_tiers(tmp_path: Path) -> None:
    """capacity + nodegroup with enableHierarchy, a plugin switch, nodeorder arguments and an
    enqueue configuration: not hetgitops' own layout, so kept as tiers, and it renders back
    unchanged (the comma spacing of its actions is no change: Volcano trims each)."""
    result = import_objects(sources.from_paths([CLUSTER]), tmp_path / "p", cluster="lab")
    assert not [d for d in result.diagnostics if d.rule == "import-field-changes"]
    volcano = _fleet_volcano(result.files)
    assert "actions" not in volcano  # the default five, in Volcano's order
    assert volcano["tiers"][0]["plugins"][1] == {  # type: ignore[index]
        "name": "gang", "enablePreemptable": False, "enableJobStarving": False
    }  # fmt: skip
    assert volcano["configurations"] == [
        {"name": "enqueue", "arguments": {"overcommit-factor": 1.2}}
    ]
    assert result.rendered is not None
    (config,) = [m.obj for m in result.rendered.manifests if m.obj["kind"] == "ConfigMap"]
    assert config["metadata"] == {**config["metadata"], "name": "volcano-scheduler-configmap",
                                  "namespace": "volcano-system"}  # fmt: skip


def _scheduler_configs() -> list[Path]:
    from harness import upstream

    if upstream.missing():
        return []
    return sorted((upstream.folder() / "volcano" / "configs").glob("volcano-scheduler*.yaml"))


@pytest.mark.parametrize("conf", _scheduler_configs(), ids=lambda p: p.name)
def test_volcanos_own_scheduler_configs_import_and_render_back_unchanged(
    conf: Path, tmp_path: Path
) -> None:
    """The Helm chart's default and CI configs (overcommit first, proportion, no nodegroup,
    predicates arguments, sla, network-topology-aware): tiers as written, actions kept."""
    read = _with_scheduler_config(conf.read_text())
    result = import_objects(read, tmp_path / "p", cluster="lab")
    assert not [d.message for d in result.diagnostics if d.rule == "import-field-changes"]
    assert result.rendered is not None and not result.rendered.failed()
    upstream_conf = yaml.safe_load(conf.read_text())
    volcano = _fleet_volcano(result.files)
    assert volcano["tiers"] == upstream_conf["tiers"]
    assert ", ".join(volcano["actions"]) == upstream_conf["actions"]  # type: ignore[arg-type]


def test_hetgitops_own_layout_imports_as_the_settings_that_write_it(tmp_path: Path) -> None:
    """proportion without hierarchy, binpack told the pools' accelerator (imported pools are
    training pools: binpack placement), an extra plugin, three actions: the structured
    settings, not tiers. Without the binpack arguments the render would add them: tiers."""
    conf = """actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - {name: priority}
  - {name: gang, enablePreemptable: false}
  - {name: conformance}
- plugins:
  - {name: drf, enablePreemptable: false}
  - {name: predicates}
  - {name: proportion}
  - name: nodegroup
    arguments: {strict: false}
  - {name: nodeorder}
  - name: binpack
    arguments: {binpack.resources: nvidia.com/gpu}
  - {name: sla}
"""
    result = import_objects(_with_scheduler_config(conf), tmp_path / "p", cluster="lab")
    assert _fleet_volcano(result.files) == {
        "actions": ["enqueue", "allocate", "backfill"],
        "queuePlugin": "proportion",
        "hierarchy": False,
        "extraPlugins": ["sla"],
    }
    assert not [d.message for d in result.diagnostics if d.rule == "import-field-changes"]
    plain = conf.replace("    arguments: {binpack.resources: nvidia.com/gpu}\n", "")
    result = import_objects(_with_scheduler_config(plain), tmp_path / "q", cluster="lab")
    assert "tiers" in _fleet_volcano(result.files)
    assert not [d.message for d in result.diagnostics if d.rule == "import-field-changes"]


def test_what_the_policy_cannot_hold_of_a_scheduler_config_is_a_located_change(
    tmp_path: Path,
) -> None:
    """An option Volcano has no switch for and an unknown top-level key are not written; the
    round trip says at the Fleet's spec.volcano what the first sync drops."""
    conf = CLUSTER.read_text().split("volcano-scheduler.conf: |\n")[1]
    conf = "\n".join(line[4:] for line in conf.splitlines())
    conf = conf.replace("  - name: predicates", "  - name: predicates\n    enableMagic: true")
    conf += "\nkubeletConfig: {maxPods: 110}\n"
    result = import_objects(_with_scheduler_config(conf), tmp_path / "p", cluster="lab")
    changes = [d for d in result.diagnostics if d.rule == "import-field-changes"]
    assert sorted(d.path for d in changes) == [
        "data.volcano-scheduler.conf.kubeletConfig",
        "data.volcano-scheduler.conf.tiers.1.plugins.1.enableMagic",
    ], [d.message for d in changes]
    assert all(d.span.file.endswith("fleet.yaml") for d in changes)


def test_a_scheduler_config_under_another_name_is_reported_not_adopted(tmp_path: Path) -> None:
    text = CLUSTER.read_text().replace(
        "name: volcano-scheduler-configmap, namespace: volcano-system",
        "name: vc-scheduler-configmap, namespace: volcano",
    )
    read = sources.Read()
    sources.from_text("cluster.yaml", text, read)
    result = import_objects(read, tmp_path / "p", cluster="lab")
    (found,) = [d for d in result.diagnostics if "vc-scheduler-configmap" in d.message]
    assert found.rule == "import-object-not-adopted"
    assert _fleet_volcano(result.files) is None
