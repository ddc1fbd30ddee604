"""The `volcano` target's team layout (`spec.volcano.layout: team`): one Queue per team across
its pools, and `resources: accelerators` (issue 32 item 5: what hand-written clusters say)."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import bundled
import yaml

from hetgitops import api
from hetgitops.compilers.volcano import compile_volcano
from hetgitops.model import quantities

REPO = Path(__file__).resolve().parents[2]
CASE = REPO / "tests" / "cases" / "render" / "volcano-only" / "policy"
BETA = "  volcano: {weight: 3, guaranteePercent: 50}"


def _policy(tmp_path: Path, volcano: str, *, lends: bool = True) -> api.Result:
    policy = tmp_path / "policy"
    shutil.copytree(CASE, policy)
    teams = policy / "teams.yaml"
    text = teams.read_text()
    assert BETA in text and ", lendingLimit: 4}" in text
    text = text if lends else text.replace(", lendingLimit: 4}", "}")
    teams.write_text(text.replace(BETA, f"  volcano: {volcano}"))
    if not lends:  # nothing kept from lending: no guarantee
        pools = policy / "pools.yaml"
        pools.write_text(pools.read_text().replace("  lending:\n    maxPercent: 50\n", ""))
    return api.validate([policy], api.Options(check_output=False))


def _queues(result: api.Result) -> dict[str, dict[str, Any]]:
    assert result.policy is not None and not result.failed(), result.diagnostics
    return {m.name: m.obj for m in compile_volcano(result.policy) if m.kind == "Queue"}


def _sum(queues: list[dict[str, Any]], field: str) -> Counter[str]:
    total: Counter[str] = Counter()
    for spec in queues:
        amounts = spec.get(field) or {}
        amounts = amounts.get("resource", amounts) if field == "guarantee" else amounts
        total.update({r: quantities.value_of(q) for r, q in amounts.items()})  # type: ignore[misc]
    return total


def test_a_team_layout_renders_one_queue_with_the_sums_of_its_leaves(tmp_path: Path) -> None:
    leaves = _queues(_policy(tmp_path / "a", "{weight: 3, guaranteePercent: 50}"))
    team = _queues(_policy(tmp_path / "b", "{weight: 3, guaranteePercent: 50, layout: team}"))
    beta = [q["spec"] for n, q in leaves.items() if n.startswith("beta-")]
    assert len(beta) == 2  # one per pool before
    assert sorted(team) == ["alpha-h100-train", "alpha-l40s-infer", "beta"]
    spec = team["beta"]["spec"]
    for field in ("deserved", "capability"):
        assert Counter({r: quantities.value_of(q) for r, q in spec[field].items()}) == _sum(
            beta, field
        )
    assert _sum([spec], "guarantee") == _sum(beta, "guarantee")
    assert "affinity" not in spec  # it spans the pools: no nodegroup binds it
    assert "hetgitops.io/pool" not in team["beta"]["metadata"]["labels"]
    assert spec["weight"] == 3
    assert team["alpha-h100-train"] == leaves["alpha-h100-train"]  # other teams unchanged


def test_a_team_queue_takes_its_written_name_capability_and_may_omit_deserved(
    tmp_path: Path,
) -> None:
    volcano = (
        "{layout: team, queueName: beta-all, omitDeserved: true, capability: {nvidia.com/gpu: 40}}"
    )
    spec = _queues(_policy(tmp_path / "a", volcano, lends=False))["beta-all"]["spec"]
    assert "deserved" not in spec
    assert spec["capability"] == {"nvidia.com/gpu": "40"}
    # With a guarantee (what Kueue never lends) and no deserved, Volcano's webhook refuses the
    # queue (guarantee <= deserved): validate says so before any sync.
    refused = _policy(tmp_path / "b", volcano)
    assert [d.rule for d in refused.diagnostics if d.severity.name == "ERROR"] == ["volcano-config"]


def test_accelerators_only_leaves_name_no_cpu_or_memory(tmp_path: Path) -> None:
    queues = _queues(_policy(tmp_path, "{guaranteePercent: 50, resources: accelerators}"))
    for name in ("beta-h100-train", "beta-l40s-infer"):
        spec = queues[name]["spec"]
        named = {*spec["deserved"], *spec["capability"], *spec["guarantee"]["resource"]}
        assert named == {"nvidia.com/gpu"}, name
    assert "cpu" in queues["alpha-h100-train"]["spec"]["deserved"]


def test_team_only_settings_need_the_team_layout(tmp_path: Path) -> None:
    for index, volcano in enumerate(
        ("{queueName: beta-all}", "{layout: pool, omitDeserved: true}")
    ):
        result = _policy(tmp_path / str(index), volcano)
        assert [d.rule for d in result.diagnostics if d.rule == "schema"] == ["schema"], volcano
    said = _policy(tmp_path / "team", "{layout: team, queueName: beta-all, omitDeserved: true}")
    assert not [d for d in said.diagnostics if d.rule == "schema"]


def test_a_team_queue_name_meeting_a_leaf_is_a_collision(tmp_path: Path) -> None:
    result = _policy(tmp_path, "{layout: team, queueName: alpha-h100-train}")
    assert "queue-name-collision" in {d.rule for d in result.diagnostics}


def test_jobs_submit_to_the_team_queue_and_still_pin_the_pool(tmp_path: Path) -> None:
    _, out = bundled.volcano_team_jobs(tmp_path)
    files = sorted(out.rglob("*.yaml"))
    assert files
    for path in files:
        text = path.read_text()
        queues = {
            line.split(":", 1)[1].strip()
            for line in text.splitlines()
            if line.strip().startswith(("queue:", "scheduling.volcano.sh/queue-name:"))
        }
        assert queues == {"all"}, path
        pools = {d["spec"]["nodeSelector"]["hetgitops.io/pool"] for d in _pod_specs(text)}
        assert len(pools) == 1, path  # the pool is pinned by the pod, not by the queue


def _pod_specs(text: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "spec" in node and isinstance(node["spec"], dict) and "containers" in node["spec"]:
                found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for doc in yaml.safe_load_all(text):
        walk(doc)
    return found


def test_the_monitoring_facts_name_the_team_queue_without_a_pool(tmp_path: Path) -> None:
    from hetgitops.compilers.monitoring.facts import facts

    result = _policy(tmp_path, "{layout: team, queueName: beta-all}")
    assert result.policy is not None and result.policy.fleet is not None
    teams = facts(result.policy, result.policy.fleet).teams
    assert teams["beta"].volcano_queues == {"beta-all": ""}
    assert teams["alpha"].volcano_queues == {
        "alpha-h100-train": "h100-train",
        "alpha-l40s-infer": "l40s-infer",
    }
