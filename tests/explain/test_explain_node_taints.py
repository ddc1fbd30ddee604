"""A pool's `spec.kueue.flavorNodeTaints`: the render lists the pool's taints as its flavor's
`nodeTaints` (after the retiring taint on a retiring flavor), and explain reads that list through
plan.flavors, judged as Kueue v0.19.2's checkFlavorForPodSets does: the pod set's tolerations
plus the flavor's own, effects NoSchedule and NoExecute only, the first untolerated taint named
(pkg/scheduler/flavorassigner/flavorassigner.go:1239-1245)."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

from hetgitops import api
from hetgitops.explain import run
from hetgitops.explain.explanation import explain
from hetgitops.explain.quotas import flavors
from hetgitops.explain.workload import from_manifest
from tests.checks.test_retiring import LIVE, _policy

REPO = Path(__file__).resolve().parents[2]
NOW = dt.date(2026, 12, 1)
A800_TAINT = "    - {key: hetgitops.io/pool, value: a800-train, effect: NoSchedule}\n"
POOL_TAINT = {"key": "hetgitops.io/pool", "value": "a800-train", "effect": "NoSchedule"}
RETIRING = {"key": "hetgitops.io/retiring-flavor", "effect": "NoSchedule"}
SERVING = {"key": "hetgitops.io/dedicated", "value": "serving", "effect": "NoSchedule"}


def _a800(tmp_path: Path) -> Path:
    """The bundled fleet with a800-train's flavor listing the pool's taint."""
    root = tmp_path / "policy"
    shutil.copytree(REPO / "policies", root)
    path = root / "pools" / "training.yaml"
    text = path.read_text()
    path.write_text(text.replace(A800_TAINT, A800_TAINT + "  kueue: {flavorNodeTaints: true}\n"))
    return root


def _retiring(tmp_path: Path) -> Path:
    """l40s-infer tainted (its flavor renamed, the old one retiring), listing its taint."""
    root = _policy(tmp_path, LIVE)
    path = root / "pools" / "inference.yaml"
    path.write_text(
        path.read_text().replace("  kueue:\n", "  kueue:\n    flavorNodeTaints: true\n")
    )
    return root


def _flavor_specs(root: Path) -> dict[str, dict[str, Any]]:
    result = api.render([root], api.Options(now=NOW))
    assert not [d for d in result.diagnostics if d.severity.name == "ERROR"]
    return {m.name: m.obj["spec"] for m in result.manifests if m.kind == "ResourceFlavor"}


def _job(namespace: str, queue: str, pool: str, tolerations: list[Any]) -> Any:
    pod = {
        "containers": [
            {"name": "c", "resources": {"limits": {"nvidia.com/gpu": 8}, "requests": {"cpu": "2"}}}
        ],
        "nodeSelector": {"hetgitops.io/pool": pool},
        "tolerations": tolerations,
    }
    return from_manifest(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "x",
                "namespace": namespace,
                "labels": {"kueue.x-k8s.io/queue-name": queue},
            },
            "spec": {"parallelism": 1, "completions": 1, "template": {"spec": pod}},
        }
    )


def test_the_flavor_lists_the_pool_taints_and_explain_reads_the_same_list(
    tmp_path: Path,
) -> None:
    """nodeTaints are mutable and outside the flavor's digest: the name does not change."""
    root = _a800(tmp_path)
    specs, bundled = _flavor_specs(root), _flavor_specs(REPO / "policies")
    assert specs.keys() == bundled.keys()
    (name,) = [n for n in specs if n.startswith("a800-train-")]
    assert specs[name]["nodeTaints"] == [POOL_TAINT]
    assert {n: s for n, s in specs.items() if n != name} == {
        n: s for n, s in bundled.items() if n != name
    }
    policy = run.load_policy([root], NOW)
    (flavor,) = [f for f in flavors(policy, policy.teams["pretraining"]) if f.name == name]
    assert list(flavor.node_taints) == specs[name]["nodeTaints"]


def test_kueue_counts_the_flavors_own_tolerations_so_a_job_without_any_is_admitted(
    tmp_path: Path,
) -> None:
    """Kueue appends the flavor's tolerations to the pod set's before it checks nodeTaints
    (flavorassigner.go:1239): the pool's taint, which the flavor tolerates, rules no job out."""
    policy = run.load_policy([_a800(tmp_path)], NOW)
    found = explain(policy, _job("pretrain", "pretraining", "a800-train", []))
    assert found.verdict == "admitted", found.message
    assert found.kueue.pod_sets[0].attempts[-1].pool == "a800-train"


def test_a_retiring_flavor_lists_the_retiring_taint_first_then_the_pools(
    tmp_path: Path,
) -> None:
    """Kueue names the first untolerated taint in the list's order: a job that tolerates no
    taint is refused by the retiring one; a job that tolerates the retiring taint but not the
    pool's (which the live flavor, frozen without tolerations, does not tolerate either) is
    refused by the pool's; a job that tolerates both matches the retiring flavor."""
    root = _retiring(tmp_path)
    specs = _flavor_specs(root)
    assert specs[LIVE["name"]]["nodeTaints"] == [RETIRING, SERVING]
    (new,) = [n for n in specs if n.startswith("l40s-infer-") and n != LIVE["name"]]
    assert specs[new]["nodeTaints"] == [SERVING]
    policy = run.load_policy([root], NOW)
    retire = {"key": RETIRING["key"], "operator": "Exists"}
    serve = {**SERVING, "operator": "Equal"}
    said = {}
    for label, tolerations in (("none", []), ("retire", [retire]), ("both", [retire, serve])):
        found = explain(policy, _job("serving", "online-inference", "l40s-infer", tolerations))
        last = found.kueue.pod_sets[0].attempts[-1]
        assert last.flavor == LIVE["name"]
        said[label] = [m for m in last.messages if m.startswith("untolerated")]
    assert said == {
        "none": [
            "untolerated taint {hetgitops.io/retiring-flavor  NoSchedule <nil>} in flavor "
            + LIVE["name"]
        ],
        "retire": [
            "untolerated taint {hetgitops.io/dedicated serving NoSchedule <nil>} in flavor "
            + LIVE["name"]
        ],
        "both": [],
    }
