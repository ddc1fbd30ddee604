"""explain's Koordinator view against the live cluster (issue 34): a pod is judged against
what every quota's pods already ask and use (hetgitops/explain/koord_state.py), with
koord-scheduler v1.8.0's runtime calculator replayed over the whole tree
(hetgitops/explain/koord_runtime.py). tests/sim/test_sim_koordinator_explain.py holds the same
against the real koord-scheduler."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import bundled
import pytest

from hetgitops.explain import run
from hetgitops.explain.explanation import explain
from hetgitops.explain.koord_runtime import Charged, KoordUsage, _redistribute, _Share
from hetgitops.explain.state import read_state
from hetgitops.explain.workload import from_manifest
from hetgitops.live.client import Resource

NOW = dt.date(2026, 12, 1)
GPU = "nvidia.com/gpu"
LABEL = "quota.scheduling.koordinator.sh/name"
FT = "finetune-nlp-a100-transition"
PT = "pretraining-a100-transition"
ROOT = "pool-a100-transition"
GI = 2**30


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The bundled fleet with the `koordinator` target added (resourceRatio 1)."""
    root = bundled.copy(tmp_path_factory.mktemp("koord-live"), koordinator=True)
    return run.load_policy([root], NOW)


def pod_spec(gpus: int, cpu: str = "1", memory: str = "1Gi") -> dict[str, Any]:
    limits = {"cpu": cpu, "memory": memory, GPU: str(gpus)}
    return {
        "schedulerName": "koord-scheduler",
        "containers": [{"name": "main", "resources": {"limits": limits, "requests": limits}}],
    }


def job(quota: str, pods: int, gpus: int) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ft-nlp"},
        "spec": {
            "parallelism": pods,
            "template": {"metadata": {"labels": {LABEL: quota}}, "spec": pod_spec(gpus)},
        },
    }


def charged(gpus: int, pods: int, *, bound: bool = True) -> Charged:
    asked = {"cpu": 1000 * pods, "memory": GI * pods, GPU: gpus}
    return Charged(asked, asked if bound else {}, pods)


TOTAL = {"cpu": 208_000, "memory": 1_000 * GI, GPU: 16}


def test_a_filled_quota_leaves_no_room_for_a_job_the_empty_fleet_admits(policy: Any) -> None:
    """finetune-nlp uses its whole max (16 cards): one more pod of 8 is refused, with the
    used koord-scheduler prints (plugin.go:280-282); on the empty fleet it runs."""
    workload = from_manifest(job(FT, 1, 8))
    assert explain(policy, workload).verdict == "admitted"
    live = KoordUsage({FT: charged(16, 2)}, {ROOT: TOTAL})
    found = explain(policy, workload, koord=live)
    assert (found.verdict, found.reason) == ("pending", "Unschedulable")
    assert found.message == (
        f"Insufficient quotas, quotaName: {FT}, runtime: cpu:3,memory:3Gi,nvidia.com/gpu:16, "
        "used: cpu:2,memory:2Gi,nvidia.com/gpu:16, pod's request: "
        "cpu:1,memory:1Gi,nvidia.com/gpu:8, exceedDimensions: [nvidia.com/gpu]"
    )
    assert found.koordinator[1] == (
        f"live: 2 pod(s) of quota {FT} ask 2 cpu, 2Gi memory, 16 nvidia.com/gpu; "
        "bound ones use 2 cpu, 2Gi memory, 16 nvidia.com/gpu"
    )


def test_a_siblings_pods_take_what_the_parent_would_have_lent(policy: Any) -> None:
    """pretraining's pods ask 16 of the tree's 16 cards: both leaves ask above their min (8),
    so each keeps its min and nothing is left to share (runtime_quota_calculator.go:117-147).
    finetune-nlp's 2 pods of 6 cards need 12: the second is refused, though the empty fleet
    (where pretraining asks nothing and lends its min) runs both."""
    workload = from_manifest(job(FT, 2, 6))
    assert explain(policy, workload).verdict == "admitted"
    live = KoordUsage({PT: charged(16, 2)}, {ROOT: TOTAL})
    found = explain(policy, workload, koord=live)
    assert found.verdict == "pending"
    assert (
        "runtime: cpu:2,memory:2Gi,nvidia.com/gpu:8, used: cpu:1,memory:1Gi,nvidia.com/gpu:6"
        in (found.message)
    )
    assert any("pod 2 of 2 is refused" in line for line in found.koordinator)
    # pending pods ask too: the same sibling, not yet bound, takes the same share
    unbound = KoordUsage({PT: charged(16, 2, bound=False)}, {ROOT: TOTAL})
    assert explain(policy, workload, koord=unbound).verdict == "pending"
    # within its min the job runs whatever the sibling asks
    assert explain(policy, from_manifest(job(FT, 1, 8)), koord=live).verdict == "admitted"


def test_what_is_left_is_shared_by_weight_and_rounded_half_up() -> None:
    """runtime_quota_calculator.go:154-175: a delta of int64(w * left / W + 0.5), handed out
    again while something comes back. 8 left over weights 30 and 10: 6 and 2. 7 left over
    two equal weights: 3.5 rounds up to 4 each, 8 handed out of 7, as upstream does."""
    shares = [_Share("a", 0, 10, True, 30), _Share("b", 0, 10, True, 10)]
    assert _redistribute(8, shares) == {"a": 6, "b": 2}
    assert _redistribute(7, [_Share("a", 0, 10, True, 1), _Share("b", 0, 10, True, 1)]) == {
        "a": 4,
        "b": 4,
    }
    # b asks only 1 above its min: the rest comes back and goes to a
    shares = [_Share("a", 2, 20, True, 1), _Share("b", 2, 3, True, 1)]
    assert _redistribute(12, shares) == {"a": 9, "b": 3}
    # a non-lending quota keeps its min whatever it asks; a lending one only what it asks
    shares = [_Share("a", 4, 1, False, 1), _Share("b", 4, 1, True, 1)]
    assert _redistribute(12, shares) == {"a": 4, "b": 1}


class _Cluster:
    """What read_state LISTs: the given items per plural, nothing else."""

    server = "https://fake"

    def __init__(self, items: dict[str, list[dict[str, Any]]]) -> None:
        self.items = items

    def list(self, resource: Resource) -> list[dict[str, Any]]:
        return self.items.get(resource.plural, [])


def _pod(name: str, namespace: str, gpus: int, *, quota: str | None, node: str = "") -> Any:
    spec = pod_spec(gpus)
    if node:
        spec["nodeName"] = node
    labels = {LABEL: quota} if quota else {}
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}, "spec": spec}


def test_the_live_reading_charges_each_pod_to_its_quota(policy: Any) -> None:
    """Labelled pods to their quota, unlabelled ones to the quota binding their namespace
    (ft-nlp: finetune-nlp-a800-train), a misspelled label to the default quota (left out);
    bound pods in used, pending ones in request only; the tree's total from the root
    quota's total-resource annotation."""
    total = {"cpu": "208", "memory": "1000Gi", GPU: "16"}
    root = {
        "metadata": {
            "name": ROOT,
            "namespace": "koordinator-system",
            "annotations": {"quota.scheduling.koordinator.sh/total-resource": json.dumps(total)},
        }
    }
    pods = [
        _pod("a", "ft-nlp", 8, quota=FT, node="a100-0"),
        _pod("b", "ft-nlp", 8, quota=FT),
        _pod("c", "ft-nlp", 4, quota=None, node="a800-0"),
        _pod("d", "ft-nlp", 4, quota=FT + "x", node="a100-1"),
    ]
    cluster: Any = _Cluster({"pods": pods, "elasticquotas": [root]})
    state = read_state(policy, cluster)
    live = state.koordinator
    assert live is not None
    assert live.charged[FT] == Charged(
        {"cpu": 2000, "memory": 2 * GI, GPU: 16}, {"cpu": 1000, "memory": GI, GPU: 8}, 2
    )
    assert live.charged["finetune-nlp-a800-train"].used == {"cpu": 1000, "memory": GI, GPU: 4}
    assert set(live.charged) == {FT, "finetune-nlp-a800-train"}
    assert live.totals == {ROOT: {"cpu": 208_000, "memory": 1000 * GI, GPU: 16}}
    # the pending pod asks (runtime 16 of max 16) but uses nothing: one more pod of 8 fits,
    # a second does not
    (found,) = run.explain_all(policy, [from_manifest(job(FT, 1, 8))], state)
    assert found.verdict == "admitted"
    (found,) = run.explain_all(policy, [from_manifest(job(FT, 2, 8))], state)
    assert found.verdict == "pending"
    assert (
        "runtime: cpu:4,memory:4Gi,nvidia.com/gpu:16, used: cpu:2,memory:2Gi,nvidia.com/gpu:16"
        in (found.message)
    )
    assert "root quota pool-a800-train not counted yet" in " ".join(state.notes)


def test_an_overused_dimension_refuses_a_pod_that_does_not_ask_it(policy: Any) -> None:
    """finetune-nlp's bound pods use 12 cards; pretraining then asks 16, so finetune-nlp's
    runtime drops to its min, 8. koord-scheduler checks used + request against the runtime in
    every dimension the sum holds (quotav1.LessThanOrEqual, plugin.go:278-279): a cpu-only pod
    is refused on the cards it does not ask."""
    obj = job(FT, 1, 0)
    limits = {"cpu": "1", "memory": "1Gi"}
    obj["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": limits,
        "requests": limits,
    }
    live = KoordUsage({FT: charged(12, 2), PT: charged(16, 2)}, {ROOT: TOTAL})
    found = explain(policy, from_manifest(obj), koord=live)
    assert found.message == (
        f"Insufficient quotas, quotaName: {FT}, runtime: cpu:3,memory:3Gi,nvidia.com/gpu:8, "
        "used: cpu:2,memory:2Gi,nvidia.com/gpu:12, pod's request: cpu:1,memory:1Gi, "
        "exceedDimensions: [nvidia.com/gpu]"
    )


def test_pods_past_the_namespaces_resource_quota_are_never_created(policy: Any) -> None:
    """render's ResourceQuota hetgitops-accelerators caps dataproc's Ascend cards at what team
    data-preprocessing can ever hold (8): the API server refuses the fifth pod of 2 cards at
    creation (quota admission), so koord-scheduler binds the four it sees and nothing waits.
    Found by tests/sim/test_sim_koordinator_explain.py (explain said: pending)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "prep",
            "namespace": "dataproc",
            "labels": {LABEL: "data-preprocessing-ascend-910b"},
        },
        "spec": pod_spec(0),
    }
    limits = {"cpu": "1", "memory": "1Gi", "huawei.com/Ascend910": "2"}
    pod["spec"]["containers"][0]["resources"] = {"limits": limits, "requests": limits}
    obj = job("data-preprocessing-ascend-910b", 6, 0)
    obj["metadata"]["namespace"] = "dataproc"
    obj["spec"]["template"]["spec"] = pod["spec"]
    found = explain(policy, from_manifest(obj))
    assert (found.verdict, found.reason) == ("rejected", "Forbidden")
    assert found.message == (
        'pods "train-<pod 5>" is forbidden: exceeded quota: hetgitops-accelerators, '
        "requested: requests.huawei.com/Ascend910=2, used: requests.huawei.com/Ascend910=8, "
        "limited: requests.huawei.com/Ascend910=8"
    )
    assert "the API server creates 4 of 6 pod(s)" in found.koordinator[-1]
    # live: the namespace's other pods count in the quota's used
    live = KoordUsage(namespaces={"dataproc": {"huawei.com/Ascend910": 7}})
    found = explain(policy, from_manifest(pod), koord=live)
    assert found.verdict == "rejected" and "used: requests.huawei.com/Ascend910=7" in found.message
