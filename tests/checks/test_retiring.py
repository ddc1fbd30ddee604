"""Rules of the retiring family and the transition render, on the bundled fleet (its flavors are
topology-bound, so a taint on l40s-infer renames the pool's flavor)."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from hetgitops import api
from hetgitops.diagnostics import Diagnostic

REPO = Path(__file__).resolve().parents[2]
NOW = dt.date(2026, 12, 1)
NODES = '    - {names: "gpu-l40s-[01:04]", zone: zone-b, rack: rack-b03}\n'
TAINT = "  taints:\n    - {key: hetgitops.io/dedicated, value: serving, effect: NoSchedule}\n"
# The flavor the bundled render gives l40s-infer, as `diff` prints it for the rename.
LIVE = {
    "name": "l40s-infer-f397d926",
    "nodeLabels": {"hetgitops.io/card-type": "l40s-48gb", "hetgitops.io/pool": "l40s-infer"},
    "topologyName": "fleet-topology-6d6042ad",
}


def _policy(tmp_path: Path, entry: dict[str, Any], *, taint: bool = True) -> Path:
    root = tmp_path / "policy"
    shutil.copytree(REPO / "policies", root)
    path = root / "pools" / "inference.yaml"
    block = yaml.safe_dump({"kueue": {"retiringFlavor": entry}}, sort_keys=False)
    added = (TAINT if taint else "") + "".join(f"  {line}\n" for line in block.splitlines())
    path.write_text(path.read_text().replace(NODES, NODES + added))
    return root


def _findings(root: Path, rule: str) -> list[Diagnostic]:
    result = api.validate([root], api.Options(now=NOW, check_output=False))
    return [d for d in result.diagnostics if d.rule == rule]


def test_the_bundled_l40s_flavor_is_the_one_these_tests_quote(tmp_path: Path) -> None:
    result = api.render([REPO / "policies"], api.Options(now=NOW))
    names = {m.name for m in result.manifests if m.kind == "ResourceFlavor"}
    assert LIVE["name"] in names


def test_a_transition_as_diff_prints_it_is_only_a_reminder(tmp_path: Path) -> None:
    root = _policy(tmp_path, LIVE)
    result = api.validate([root], api.Options(now=NOW, check_output=True))
    assert not [d for d in result.diagnostics if d.severity.name == "ERROR"]
    (reminder,) = [d for d in result.diagnostics if d.rule == "kueue-flavor-retiring"]
    assert reminder.severity.name == "WARNING"
    assert "less all of it" in reminder.message and "diff --kubeconfig" in reminder.hint
    assert reminder.span.line > 0


def test_the_current_flavor_cannot_retire(tmp_path: Path) -> None:
    (found,) = _findings(_policy(tmp_path, LIVE, taint=False), "kueue-retiring-flavor-current")
    assert found.severity.name == "ERROR" and "not renamed" in found.message


def test_a_spec_that_is_not_the_live_one_is_refused(tmp_path: Path) -> None:
    edited = {**LIVE, "nodeLabels": {**LIVE["nodeLabels"], "hetgitops.io/extra": "x"}}
    (found,) = _findings(_policy(tmp_path, edited), "kueue-retiring-flavor-not-live")
    assert "l40s-infer-f397d926" in found.message and "immutable" in found.message


def test_a_retiring_flavor_must_name_the_rendered_topology(tmp_path: Path) -> None:
    edited = {**LIVE, "topologyName": "fleet-topology-00000000"}
    found = _findings(_policy(tmp_path, edited), "kueue-retiring-flavor-topology")
    assert [f.severity.name for f in found] == ["ERROR"]
    assert "fleet-topology-6d6042ad" in found[0].message


def test_holds_name_teams_with_quota_and_covered_resources(tmp_path: Path) -> None:
    edited = {
        **LIVE,
        "holds": {"pretraining": {"nvidia.com/gpu": 4}, "online-inference": {"amd.com/gpu": 1}},
    }
    found = _findings(_policy(tmp_path, edited), "kueue-retiring-hold-unknown")
    assert sorted(f.message.split(",")[0] for f in found) == [
        "holds gives team 'online-inference' resource 'amd.com/gpu'",
        "holds names team 'pretraining'",
    ]


def _queues(root: Path) -> dict[str, dict[str, dict[str, dict[str, str]]]]:
    """ClusterQueue -> flavor -> resource -> its quota fields, from the render."""
    result = api.render([root], api.Options(now=NOW))
    found: dict[str, dict[str, dict[str, dict[str, str]]]] = {}
    for m in result.manifests:
        if m.kind != "ClusterQueue":
            continue
        for group in m.obj["spec"].get("resourceGroups", []):
            for flavor in group["flavors"]:
                found.setdefault(m.name, {})[flavor["name"]] = {
                    r["name"]: {k: v for k, v in r.items() if k != "name"}
                    for r in flavor["resources"]
                }
    return found


def test_the_render_keeps_the_old_flavor_and_holds_back_the_new_one(tmp_path: Path) -> None:
    result = api.render([_policy(tmp_path / "a", LIVE)], api.Options(now=NOW))
    flavors = {m.name: m.obj["spec"] for m in result.manifests if m.kind == "ResourceFlavor"}
    kept = flavors[LIVE["name"]]
    assert {k: kept[k] for k in ("nodeLabels", "topologyName")} == {
        k: LIVE[k] for k in ("nodeLabels", "topologyName")
    }
    assert kept["nodeTaints"] == [{"key": "hetgitops.io/retiring-flavor", "effect": "NoSchedule"}]
    queues = _queues(_policy(tmp_path / "b", LIVE))
    new = next(
        n for n in queues["online-inference"] if n.startswith("l40s-infer-") and n != LIVE["name"]
    )
    assert queues["online-inference"][LIVE["name"]]["nvidia.com/gpu"] == {
        "nominalQuota": "24",
        "lendingLimit": "12",
    }
    # Held back in full: nothing new is admitted on the pool (lendingLimit <= nominalQuota).
    assert queues["online-inference"][new]["nvidia.com/gpu"] == {
        "nominalQuota": "0",
        "lendingLimit": "0",
    }
    assert queues["online-inference"][new]["memory"]["nominalQuota"] == "0"
    assert queues["finetune-vision"][new]["nvidia.com/gpu"]["nominalQuota"] == "0"


@pytest.mark.parametrize(
    ("held", "gpus", "lend", "memory"),
    [("6", "18", "12", "1728Gi"), ("20", "4", "4", "1728Gi"), ("30", "0", "0", "1728Gi")],
)
def test_holds_cut_the_new_flavor_by_what_the_old_one_still_holds(
    tmp_path: Path, held: str, gpus: str, lend: str, memory: str
) -> None:
    holds = {"online-inference": {"nvidia.com/gpu": held, "cpu": "72", "memory": "576Gi"}}
    queues = _queues(_policy(tmp_path, {**LIVE, "holds": holds}))["online-inference"]
    new = next(n for n in queues if n.startswith("l40s-infer-") and n != LIVE["name"])
    assert queues[new]["nvidia.com/gpu"] == {"nominalQuota": gpus, "lendingLimit": lend}
    assert queues[new]["memory"]["nominalQuota"] == memory
    assert queues[new]["cpu"]["nominalQuota"] == "216"
    # finetune-vision names no holds: its share stays held in full.
    finetune = _queues(_policy(tmp_path / "f", {**LIVE, "holds": holds}))["finetune-vision"]
    assert finetune[new]["nvidia.com/gpu"]["nominalQuota"] == "0"


# ---- the Topology change transition (Fleet spec.topology.retiring) ------------------------

TWO_LEVELS = ("levels: [zone, rack, hostname]", "levels: [zone, hostname]")
LIVE_TOPOLOGY = {
    "name": "fleet-topology-6d6042ad",
    "nodeLabels": ["topology.kubernetes.io/zone", "hetgitops.io/rack", "kubernetes.io/hostname"],
}


def _topology_change(tmp_path: Path, retiring: dict[str, Any] | None, *, flavor: bool) -> Path:
    """The rack level dropped; l40s-infer keeps its old flavor (naming the old Topology) when
    `flavor`, and the Fleet keeps `retiring` as its retiring Topology."""
    root = _policy(tmp_path, LIVE, taint=False) if flavor else tmp_path / "policy"
    if not flavor:
        shutil.copytree(REPO / "policies", root)
    fleet = root / "fleet.yaml"
    text = fleet.read_text().replace(*TWO_LEVELS)
    if retiring is not None:
        block = yaml.safe_dump({"retiring": retiring}, sort_keys=False, default_flow_style=True)
        text = text.replace(TWO_LEVELS[1], f"{TWO_LEVELS[1]}\n    retiring: {block.strip()[11:-1]}")
    fleet.write_text(text)
    return root


def test_the_bundled_topology_is_the_one_these_tests_quote() -> None:
    result = api.render([REPO / "policies"], api.Options(now=NOW))
    (topology,) = [m for m in result.manifests if m.kind == "Topology"]
    assert topology.name == LIVE_TOPOLOGY["name"]
    assert [lv["nodeLabel"] for lv in topology.obj["spec"]["levels"]] == LIVE_TOPOLOGY["nodeLabels"]


def test_a_retiring_flavor_of_a_topology_change_needs_the_retiring_topology(
    tmp_path: Path,
) -> None:
    (found,) = _findings(
        _topology_change(tmp_path, None, flavor=True), "kueue-retiring-flavor-topology"
    )
    assert found.severity.name == "ERROR" and "spec.topology.retiring" in found.hint
    assert found.span.line > 0


def test_the_retiring_topology_keeps_the_old_one_rendered_and_is_a_reminder(
    tmp_path: Path,
) -> None:
    root = _topology_change(tmp_path, LIVE_TOPOLOGY, flavor=True)
    result = api.validate([root], api.Options(now=NOW, check_output=True))
    assert not [d for d in result.diagnostics if d.severity.name == "ERROR"], result.diagnostics
    (reminder,) = [d for d in result.diagnostics if d.rule == "kueue-topology-retiring"]
    assert "l40s-infer-f397d926" in reminder.message and reminder.span.line > 0
    rendered = api.render([root], api.Options(now=NOW))
    topologies = {m.name: m for m in rendered.manifests if m.kind == "Topology"}
    assert set(topologies) == {"fleet-topology-6d6042ad", "fleet-topology-5509bda6"}
    old = topologies["fleet-topology-6d6042ad"].obj["spec"]["levels"]
    assert [lv["nodeLabel"] for lv in old] == LIVE_TOPOLOGY["nodeLabels"]


def test_a_retiring_topology_nobody_names_is_a_warning(tmp_path: Path) -> None:
    root = _topology_change(tmp_path, LIVE_TOPOLOGY, flavor=False)
    (found,) = _findings(root, "kueue-retiring-topology-unused")
    assert found.severity.name == "WARNING" and "remove spec.topology.retiring" in found.hint


def test_a_retiring_topology_with_other_levels_than_its_name_is_refused(tmp_path: Path) -> None:
    edited = {**LIVE_TOPOLOGY, "nodeLabels": LIVE_TOPOLOGY["nodeLabels"][:1]}
    (found,) = _findings(
        _topology_change(tmp_path, edited, flavor=True), "kueue-retiring-topology-not-live"
    )
    assert found.severity.name == "ERROR" and "fleet-topology-6d6042ad" in found.message


def test_the_current_topology_cannot_retire(tmp_path: Path) -> None:
    root = tmp_path / "policy"
    shutil.copytree(REPO / "policies", root)
    fleet = root / "fleet.yaml"
    labels = ", ".join(LIVE_TOPOLOGY["nodeLabels"])
    block = f"{{name: fleet-topology-6d6042ad, nodeLabels: [{labels}]}}"
    fleet.write_text(
        fleet.read_text().replace(TWO_LEVELS[0], f"{TWO_LEVELS[0]}\n    retiring: {block}")
    )
    (found,) = _findings(root, "kueue-retiring-topology-current")
    assert found.severity.name == "ERROR"


# ---- the staged sharing reduction (retiringReplicas) --------------------------------------


def _sharing(tmp_path: Path, sharing: str) -> Path:
    root = tmp_path / "policy"
    shutil.copytree(REPO / "policies", root)
    dev = root / "pools" / "dev.yaml"
    dev.write_text(dev.read_text().replace("    replicas: 4\n", sharing))
    others = root / "teams" / "others.yaml"
    text = others.read_text().replace(
        "{pool: rtx4090-dev, cards: 16}", "{pool: rtx4090-dev, cards: 8}"
    )
    others.write_text(
        text.replace("{pool: rtx4090-dev, cards: 32}", "{pool: rtx4090-dev, cards: 16}")
    )
    return root


def test_step_1_keeps_the_device_plugin_and_checks_quotas_against_the_new_count(
    tmp_path: Path,
) -> None:
    root = _sharing(tmp_path, "    replicas: 2\n    retiringReplicas: 4\n")
    result = api.validate([root], api.Options(now=NOW, check_output=True))
    assert not [d for d in result.diagnostics if d.severity.name == "ERROR"], result.diagnostics
    (staged,) = [d for d in result.diagnostics if d.rule == "sharing-retiring"]
    assert "keeps advertising 4 nvidia.com/gpu per GPU (48 on the pool)" in staged.message
    assert "count 2 (24)" in staged.message and staged.span.line > 0
    rendered = api.render([root], api.Options(now=NOW))
    bundled = api.render([REPO / "policies"], api.Options(now=NOW))

    def plugin(manifests: Any) -> list[Any]:
        return [
            m.obj
            for m in manifests
            if m.kind in ("ConfigMap", "NodeFeatureRule")
            and ("device-plugin" in m.name or m.kind == "NodeFeatureRule")
        ]

    assert plugin(rendered.manifests) == plugin(bundled.manifests)


def test_step_1_with_too_much_quota_for_the_new_count_is_refused(tmp_path: Path) -> None:
    root = _sharing(tmp_path, "    replicas: 2\n    retiringReplicas: 4\n")
    others = root / "teams" / "others.yaml"
    others.write_text(
        others.read_text().replace(
            "{pool: rtx4090-dev, cards: 16}", "{pool: rtx4090-dev, cards: 32}"
        )
    )
    result = api.validate([root], api.Options(now=NOW, check_output=False))
    assert result.failed()


def test_retiring_replicas_not_above_replicas_is_refused(tmp_path: Path) -> None:
    root = _sharing(tmp_path, "    replicas: 2\n    retiringReplicas: 2\n")
    (found,) = _findings(root, "sharing-retiring-not-higher")
    assert found.severity.name == "ERROR" and found.span.line > 0
