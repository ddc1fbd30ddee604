"""The bundled fleet rendered with the `koordinator` target, on the real Koordinator v1.8.0
(tests/harness/simcluster/koordinator.py): the whole tree is accepted by koord-manager's webhooks in
Argo CD's apply order, a pod of every team x pool quota is bound by koord-scheduler to a node of
its pool, and every change of the day-2 matrix (tests/sim/test_sim_day2.py CHANGES) is synced
in apply order through the real webhook and reverted the same way.

koord-scheduler runs with the rendered ElasticQuotaArgs and both daemons with the rendered
feature gates (koordinator/helm-values.yaml, koordinator/elasticquota-args.yaml).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.simcluster import cluster, gitops, koordinator, policyfleet

from hetgitops.model.policy import Policy

from .checks import converged, settle
from .conftest import NOW, POLICIES, render
from .test_sim_day2 import CHANGES

pytestmark = pytest.mark.sim

Obj = dict[str, Any]
LABEL = "quota.scheduling.koordinator.sh"
KINDS = ("ElasticQuotaProfile", "ElasticQuota")
TARGET = "koordinator"
POOL_LABEL = "hetgitops.io/pool"


def with_koordinator(policy_dir: Path) -> None:
    """Add the `koordinator` target to the Fleet's targets (the bundled Fleet lists five)."""
    path = policy_dir / "fleet.yaml"
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    for doc in docs:
        if doc["kind"] == "Fleet" and TARGET not in doc["spec"]["targets"]:
            doc["spec"]["targets"].append(TARGET)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))


def render_with_koordinator(out: Path, change: str | None = None) -> tuple[Policy, Path]:
    """(policy, rendered tree) of the bundled policy after `change`, rendered with
    `koordinator` added to its targets (the policy's nodes do not depend on the targets)."""
    policy_dir = out / "policy"
    shutil.copytree(POLICIES, policy_dir)
    if change is not None:
        CHANGES[change](policy_dir)
    policy = policyfleet.load(policy_dir, now=NOW)
    with_koordinator(policy_dir)
    return policy, render(policy_dir, out / "tree")


def koord_objects(tree: Path) -> list[Obj]:
    return [d for d in gitops.documents(tree / TARGET) if d["kind"] in KINDS]


def scheduler_args(tree: Path) -> dict[str, Any]:
    """The rendered ElasticQuotaArgs (its pluginConfig entry), without apiVersion and kind."""
    entry = yaml.safe_load((tree / TARGET / "elasticquota-args.yaml").read_text())
    return {k: v for k, v in entry["args"].items() if k not in ("apiVersion", "kind")}


def feature_gates(tree: Path) -> tuple[str, str]:
    values = yaml.safe_load((tree / TARGET / "helm-values.yaml").read_text())
    return values["featureGates"], values["scheduler"]["featureGates"]


def live_quotas(sim: cluster.SimCluster) -> dict[str, Obj]:
    listed = json.loads(sim.kubectl("get", "elasticquotas", "-A", "-o", "json").stdout)["items"]
    return {q["metadata"]["name"]: q for q in listed}


def missing(sim: cluster.SimCluster, tree: Path) -> list[str]:
    """Quotas and profiles of `tree` that are not live, or whose spec differs."""
    live = live_quotas(sim)
    problems = []
    for obj in koord_objects(tree):
        name = obj["metadata"]["name"]
        if obj["kind"] == "ElasticQuota":
            found = live.get(name)
            if found is None:
                problems.append(f"ElasticQuota {name} missing")
            elif not _same(found["spec"], obj["spec"]):
                problems.append(f"ElasticQuota {name}: live {found['spec']} vs {obj['spec']}")
    return problems


def _same(live: Obj, want: Obj) -> bool:
    from hetgitops.model import quantities

    def norm(block: dict[str, str]) -> dict[str, Any]:
        return {k: quantities.value_of(v) for k, v in block.items()}

    return all(norm(live.get(k, {})) == norm(want.get(k, {})) for k in ("min", "max"))


@pytest.fixture(scope="module")
def koord_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render_with_koordinator(tmp_path_factory.mktemp("koord-bundled"))[1]


@pytest.fixture(scope="module")
def koord_fleet(
    sim: cluster.SimCluster, synced: Path, fleet_policy: Policy, koord_tree: Path
) -> Iterator[Path]:
    """Koordinator with the rendered settings, then the koordinator-enabled bundled tree
    synced the Argo CD way after the bundled one; at the end the bundled tree again (Argo CD
    prunes the quotas, children first) and Koordinator stopped."""
    if koordinator.missing_prerequisites():
        pytest.skip("; ".join(koordinator.missing_prerequisites()))
    manager_gates, scheduler_gates = feature_gates(koord_tree)
    assert manager_gates == scheduler_gates == koordinator.FEATURE_GATES
    koordinator.start(sim, scheduler_args=scheduler_args(koord_tree))
    try:
        gitops.sync_argocd(sim, koord_tree, synced)
        yield koord_tree
    finally:
        try:
            gitops.sync_argocd(sim, synced, koord_tree)
            _delete_roots(sim, sorted(roots(koord_tree)))  # left behind by the profiles
        finally:
            koordinator.stop(sim)


def test_bundled_fleet_is_accepted_whole(
    sim: cluster.SimCluster, koord_fleet: Path, fleet_policy: Policy
) -> None:
    converged(sim, fleet_policy, koord_fleet)
    assert missing(sim, koord_fleet) == []
    live = live_quotas(sim)
    for obj in koord_objects(koord_fleet):
        if obj["kind"] == "ElasticQuota":
            labels = live[obj["metadata"]["name"]]["metadata"]["labels"]
            # The rendered tree-id is the one the profile controller gave the pool's root.
            assert labels[f"{LABEL}/tree-id"] == obj["metadata"]["labels"][f"{LABEL}/tree-id"]


def _leaf_pods(tree: Path) -> list[tuple[Obj, str]]:
    """One pod per leaf quota asking for one unit of the quota's first accelerator with a
    positive min, in the quota's first namespace; with the pool it must land in."""
    leaves = [
        obj
        for obj in koord_objects(tree)
        if obj["kind"] == "ElasticQuota"
        and obj["metadata"]["labels"].get(f"{LABEL}/is-parent") != "true"
    ]
    # A namespace is bound to one quota only (the webhook refuses a second,
    # quota_topology.go:74-78), so a team's namespaces annotate one of its leaves; the quota
    # label on the pod picks the leaf whatever its namespace.
    team_namespaces: dict[str, list[str]] = {}
    for obj in leaves:
        annotated = obj["metadata"].get("annotations", {}).get(f"{LABEL}/namespaces")
        if annotated:
            team = obj["metadata"]["labels"]["hetgitops.io/team"]
            team_namespaces.setdefault(team, []).extend(json.loads(annotated))
    pods = []
    for obj in leaves:
        labels = obj["metadata"]["labels"]
        namespaces = team_namespaces[labels["hetgitops.io/team"]]
        cards = [
            k
            for k, v in obj["spec"].get("min", {}).items()
            if k not in ("cpu", "memory") and v not in ("0", 0)
        ]
        if not cards:
            continue
        name = obj["metadata"]["name"]
        request = {"cpu": "1", "memory": "1Gi", cards[0]: "1"}
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"koord-{name}",
                "namespace": namespaces[0],
                "labels": {f"{LABEL}/name": name},
            },
            "spec": {
                "schedulerName": koordinator.SCHEDULER_NAME,
                "tolerations": [{"operator": "Exists"}],
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox",
                        "resources": {"requests": request, "limits": request},
                    }
                ],
            },
        }
        pods.append((pod, labels[POOL_LABEL]))
    return pods


def test_a_pod_of_every_leaf_quota_binds_in_its_pool(
    sim: cluster.SimCluster, koord_fleet: Path
) -> None:
    pods = _leaf_pods(koord_fleet)
    assert pods, "no leaf quota with an accelerator min"
    created = []
    try:
        for pod, _ in pods:
            result = sim.kubectl("create", "-f", "-", input=json.dumps(pod), check=False)
            assert result.returncode == 0, result.stderr
            created.append(pod)
        pools = _node_pools(sim)

        def placement() -> dict[str, str]:
            return {
                p["metadata"]["name"]: _bound(sim, p) or f"pending: {_why(sim, p)}" for p, _ in pods
            }

        deadline = time.monotonic() + 120
        seen = placement()
        while time.monotonic() < deadline and any(v.startswith("pending") for v in seen.values()):
            time.sleep(1)
            seen = placement()
        wrong = {
            p["metadata"]["name"]: f"{seen[p['metadata']['name']]} (pool {pool})"
            for p, pool in pods
            if pools.get(seen[p["metadata"]["name"]]) != pool
        }
        assert not wrong, wrong
    finally:
        for pod in created:
            meta = pod["metadata"]
            sim.kubectl("delete", "pod", "-n", meta["namespace"], meta["name"], "--wait=false")


def _node_pools(sim: cluster.SimCluster) -> dict[str, str]:
    listed = json.loads(sim.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    return {n["metadata"]["name"]: n["metadata"]["labels"].get(POOL_LABEL, "") for n in listed}


def _get_pod(sim: cluster.SimCluster, pod: Obj) -> Obj:
    meta = pod["metadata"]
    result = sim.kubectl(
        "get", "pod", "-n", meta["namespace"], meta["name"], "-o", "json", check=False
    )
    return json.loads(result.stdout) if result.returncode == 0 else {}


def _bound(sim: cluster.SimCluster, pod: Obj) -> str:
    return str(_get_pod(sim, pod).get("spec", {}).get("nodeName") or "")


def _why(sim: cluster.SimCluster, pod: Obj) -> str:
    conditions = _get_pod(sim, pod).get("status", {}).get("conditions", [])
    return "; ".join(c.get("message", "") for c in conditions if c.get("type") == "PodScheduled")


# Day-2 changes the real webhook refuses in Argo CD's order (waves ascending: profiles,
# parents, leaves; prunes last), by (change, direction): the outcome and the rule.
# - "staged": converges once the removed quotas are pruned first and the rest applied leaves
#   before parents (a parent's min may not drop under its children's sum,
#   quota_topology_check.go:292-300). None since the render labels every quota
#   allow-force-update (:266-268).
# - "recreate": no order converges: the set of resource keys changes, and a quota's max keys
#   must equal its parent's and children's (quota_topology_check.go:213-253, koordinator
#   #1747); only deleting the tree and creating it again does. hetgitops' `diff` must say
#   so with the hazard koordinator-key-set-changed (checked below).
KEYS_DIFFER = "max keys are not the same with"
EXPECTED: dict[tuple[str, str], tuple[str, str]] = {
    ("repartition-mig", "forward"): ("recreate", KEYS_DIFFER),
    ("repartition-mig", "revert"): ("recreate", KEYS_DIFFER),
}
KEY_HAZARD = "koordinator-key-set-changed"
# A new pool's root quota counts its nodes only once nfd-master has labelled them and the
# profile controller has requeued (profile_controller.go:236, every 10 s): until then its
# children are refused (:276-284). Argo CD's retry converges; so does the replay's.
ROOT_LAGS = "checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: "


def sync_or_refusal(sim: cluster.SimCluster, tree: Path, previous: Path) -> str:
    """Argo CD's sync of `tree` after `previous`; "" when it succeeds, else what refused it."""
    try:
        gitops.sync_argocd(sim, tree, previous, attempts=2)
    except gitops.SyncFailed as error:
        return str(error)
    return ""


def replay(sim: cluster.SimCluster, tree: Path, previous: Path) -> tuple[str, str]:
    """Sync `tree` after `previous` as Argo CD would; if refused, converge the way the
    outcome allows. (outcome, refusal): ("", "") | ("staged", why) | ("recreate", why)."""
    refusal = sync_or_refusal(sim, tree, previous)
    if any(ROOT_LAGS + root in refusal for root in roots(tree)):
        wait_roots_counted(sim, tree)
        refusal = sync_or_refusal(sim, tree, previous)
    if not refusal:
        return "", ""
    if not staged(sim, tree, previous):
        return "staged", refusal
    gitops.prune(sim, _quotas(previous) + _quotas(tree))
    gitops.sync_argocd(sim, tree, previous)
    return "recreate", refusal


def _quotas(tree: Path) -> list[Obj]:
    return [o for o in koord_objects(tree) if o["kind"] == "ElasticQuota"]


def wait_roots_counted(sim: cluster.SimCluster, tree: Path) -> None:
    """Until each profile's root quota holds at least its children's min sum (the nodes
    labelled and counted by the controller)."""
    from hetgitops.model import quantities

    def short() -> list[str]:
        live = live_quotas(sim)
        problems = []
        for root in roots(tree):
            need: dict[str, Any] = {}
            for child in _quotas(tree):
                if child["metadata"]["labels"].get(f"{LABEL}/parent") == root:
                    for key, value in child["spec"].get("min", {}).items():
                        need[key] = need.get(key, 0) + quantities.value_of(value)
            have = live.get(root, {}).get("spec", {}).get("min", {})
            problems += [
                f"{root} {key}: {have.get(key)} < {amount}"
                for key, amount in need.items()
                if quantities.value_of(have.get(key, "0")) < amount
            ]
        return problems

    settle(short, timeout=90, what="profile root quotas counting their labelled nodes")


def staged(sim: cluster.SimCluster, tree: Path, previous: Path) -> list[str]:
    """The staged sequence: the quotas that left the tree pruned first (deepest wave first),
    then each quota of `tree` applied alone, deepest wave first, then ascending, until all
    are admitted; then the plain sync. Returns the refusals left ([] = converged)."""
    gone = gitops.stale(_quotas(previous), _quotas(tree))
    if gone:
        gitops.prune(sim, gone)
    refused: list[str] = []
    for _ in range(3):
        refused = []
        for obj in [*sorted(_quotas(tree), key=gitops.wave, reverse=True), *_quotas(tree)]:
            result = sim.kubectl(
                "apply",
                "--server-side",
                "--force-conflicts",
                f"--field-manager={gitops.ARGOCD_MANAGER}",
                "-f",
                "-",
                input=json.dumps(obj),
                check=False,
            )
            if result.returncode:
                refused.append(result.stderr.strip())
        if not missing(sim, tree):
            gitops.sync_argocd(sim, tree, previous)
            return []
    return refused


def roots(tree: Path) -> set[str]:
    return {o["spec"]["quotaName"] for o in koord_objects(tree) if o["kind"] == KINDS[0]}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_day2_change_replays_through_the_real_webhook(
    sim: cluster.SimCluster, koord_fleet: Path, fleet_policy: Policy, tmp_path: Path, change: str
) -> None:
    """Sync the change after the bundled koordinator tree in Argo CD's order, then revert it
    the same way, every object through koord-manager's webhooks: exactly the EXPECTED steps
    are refused, with their rule, and each converges the way EXPECTED says. A pruned profile
    leaves its root quota behind (the controller sets no owner reference,
    profile_controller.go:202-215): the harness deletes it by hand, as an operator must."""
    after, after_tree = render_with_koordinator(tmp_path, change)
    predicted = {h.rule for h in diff_hazards(koord_fleet.parent / "policy", after_tree)}
    policyfleet.create_from(sim, after)  # new nodes come before the policy that uses them
    seen: dict[tuple[str, str], tuple[str, str]] = {}
    orphans = sorted(roots(koord_fleet) - roots(after_tree))
    try:
        seen[change, "forward"] = replay(sim, after_tree, koord_fleet)
        converged(sim, after, after_tree)
        assert missing(sim, after_tree) == []
        assert set(orphans) <= set(live_quotas(sim)), orphans
    finally:
        _delete_roots(sim, orphans)
        policyfleet.create_from(sim, fleet_policy)
        seen[change, "revert"] = replay(sim, koord_fleet, after_tree)
        _delete_roots(sim, sorted(roots(after_tree) - roots(koord_fleet)))
    converged(sim, fleet_policy, koord_fleet)
    assert missing(sim, koord_fleet) == []
    refused = {k: (outcome, why[-300:]) for k, (outcome, why) in seen.items() if outcome}
    expected = {k: v for k, v in EXPECTED.items() if k[0] == change}
    assert {k: v[0] for k, v in refused.items()} == {k: v[0] for k, v in expected.items()}, refused
    for key, (_, rule) in expected.items():
        assert rule in refused[key][1], refused[key]
    # `diff` predicts exactly the changes no order syncs.
    recreated = any(outcome == "recreate" for outcome, _ in refused.values())
    assert (KEY_HAZARD in predicted) == recreated, predicted


def diff_hazards(before_policy: Path, after_tree: Path) -> list[Any]:
    """hetgitops' day-2 hazards of the Koordinator objects, before -> after (as `diff`)."""
    from hetgitops import api
    from hetgitops.diff.hazards import hazards

    def manifests(policy_dir: Path) -> list[Any]:
        result = api.render([policy_dir], api.Options(targets=(TARGET,), now=NOW))
        assert not result.failed()
        return [m for m in result.manifests if m.applied]

    return hazards(manifests(before_policy), manifests(after_tree.parent / "policy"), [])


def _delete_roots(sim: cluster.SimCluster, names: list[str]) -> None:
    namespace = koordinator.NAMESPACE
    for name in names:
        sim.kubectl("delete", "elasticquota", "-n", namespace, name, "--ignore-not-found")
