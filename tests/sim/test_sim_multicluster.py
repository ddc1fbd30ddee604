"""MultiKueue on two real clusters: the manager `hub` and the worker `hopper-east` of
examples/multicluster, each a named simulated cluster (own API server, Kueue v0.19.2, kwok,
nfd-master, ...), with hetgitops' render of the example applied the Argo CD way to each.

The worker's credentials reach the manager as a fleet operator gives them: a ServiceAccount
token with the CA embedded, in the Secret the policy's Cluster document names. Then a job of
`hetgitops jobs`, submitted to the hub's LocalQueue, is admitted on the hub, copied to the
worker and runs there on a node of the pool with the cards; a job no worker can admit waits
on the hub with the reason hetgitops predicts; `hetgitops drift` reads both clusters, each
with its own context. The third cluster of the example (`ampere-west`) is not started: its
MultiKueueCluster stays inactive, which Kueue reports and hetgitops' drift is told to skip.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.controlplane import harness
from harness.simcluster import cluster, gitops, policyfleet

from hetgitops import api
from hetgitops.model.policy import Policy
from hetgitops.plan.clusters import cluster_policy

from .checks import condition, converged, eventually, get, inactive_queues, settle
from .conftest import NOW, REPO, render, unavailable

pytestmark = pytest.mark.sim

EXAMPLE = REPO / "examples" / "multicluster"
MANAGER, WORKER, ABSENT = "hub", "hopper-east", "ampere-west"
# Named simulated clusters, beside (never instead of) the session's default instance.
INSTANCES = {MANAGER: "mk-hub", WORKER: "mk-hopper-east"}
SERVICE_ACCOUNT = "multikueue-sa"
PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"
# What the tests measured, printed at the end of the module (pytest -s) for the notes.
TIMINGS: dict[str, float] = {}


@pytest.fixture(scope="module")
def pair() -> Iterator[dict[str, cluster.SimCluster]]:
    """Both clusters, started once for the module and stopped after it (two full clusters
    are heavy on a small machine) unless a developer's instances were already running."""
    problems = cluster.missing_prerequisites()
    if problems:
        unavailable("; ".join(problems))
    running = {name: cluster.status(i) is not None for name, i in INSTANCES.items()}
    started: dict[str, cluster.SimCluster] = {}
    try:
        for name, instance in INSTANCES.items():
            began = time.monotonic()
            started[name] = cluster.up(instance)
            TIMINGS[f"up {name}"] = time.monotonic() - began
    except harness.Unavailable as error:
        unavailable(str(error))
        raise
    yield started
    for name, instance in INSTANCES.items():
        if not running[name]:
            cluster.down(instance)
    print("\nMultiKueue timings (s): " + json.dumps(TIMINGS, sort_keys=True, indent=1))


@pytest.fixture(scope="module")
def policy() -> Policy:
    return policyfleet.load(EXAMPLE, now=NOW)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`hetgitops render examples/multicluster --output DIR`: DIR/<cluster>/<target>/..."""
    out = render(EXAMPLE, tmp_path_factory.mktemp("multicluster") / "tree")
    assert {p.name for p in out.iterdir() if p.is_dir()} == {MANAGER, WORKER, ABSENT}
    return out


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render(EXAMPLE, tmp_path_factory.mktemp("multicluster-jobs") / "jobs", command="jobs")


def _credential_secret(policy: Policy, name: str) -> str:
    secret = policy.clusters[name].secret
    assert secret, f"the example's worker {name} names a credentials Secret"
    return secret


@pytest.fixture(scope="module")
def connected(
    pair: dict[str, cluster.SimCluster], policy: Policy, tree: Path
) -> dict[str, cluster.SimCluster]:
    """The worker's fleet and tree, its credentials on the hub, the hub's tree; converged."""
    hub, worker = pair[MANAGER], pair[WORKER]
    own = cluster_policy(policy, WORKER)
    began = time.monotonic()
    policyfleet.create_from(worker, own)
    gitops.sync_argocd(worker, tree / WORKER)
    converged(worker, own, tree / WORKER)
    TIMINGS["worker fleet + sync + converged"] = time.monotonic() - began
    # The worker lets the hub's Kueue in through the rendered ServiceAccount and its rights
    # over every MultiKueue adapter kind (the hub watches them all).
    assert _rendered_rbac_for(tree / WORKER, SERVICE_ACCOUNT)
    kubeconfig = cluster.remote_kubeconfig(worker, service_account=SERVICE_ACCOUNT)
    cluster.store_kubeconfig(hub, _credential_secret(policy, WORKER), kubeconfig)
    began = time.monotonic()
    gitops.sync_argocd(hub, tree / MANAGER)
    eventually(
        lambda: _active(hub, "multikueueclusters.kueue.x-k8s.io", WORKER),
        timeout=120,
        what=f"MultiKueueCluster {WORKER} Active",
    )
    TIMINGS["hub sync -> MultiKueueCluster Active"] = time.monotonic() - began
    return pair


def _rendered_rbac_for(tree: Path, account: str) -> bool:
    return any(
        obj["kind"] in ("ClusterRoleBinding", "RoleBinding")
        and any(s.get("name") == account for s in obj.get("subjects", []))
        for obj in gitops.documents(tree)
    )


def _active(sim: cluster.SimCluster, resource: str, name: str) -> dict[str, Any] | None:
    obj = get(sim, resource, name)
    return obj if condition(obj, "Active") == "True" else None


def _reason(obj: dict[str, Any], kind: str) -> tuple[str, str, str]:
    for cond in obj.get("status", {}).get("conditions", []):
        if cond.get("type") == kind:
            return cond.get("status", ""), cond.get("reason", ""), cond.get("message", "")
    return "", "", ""


def test_manager_objects_are_active(
    connected: dict[str, cluster.SimCluster], policy: Policy, tree: Path
) -> None:
    hub = connected[MANAGER]
    worker_cluster = get(hub, "multikueueclusters.kueue.x-k8s.io", WORKER)
    assert _reason(worker_cluster, "Active") == ("True", "Active", "Connected")
    absent = get(hub, "multikueueclusters.kueue.x-k8s.io", ABSENT)
    status, reason, message = _reason(absent, "Active")
    assert (status, reason) == ("False", "BadKubeConfig"), message
    assert f'Secret "{_credential_secret(policy, ABSENT)}" not found' in message
    rendered = [o for o in gitops.documents(tree / MANAGER) if o["kind"] == "AdmissionCheck"]
    assert rendered
    # The checks, then the queues, follow the MultiKueueCluster the fixture waited for, each a
    # reconcile later: a ClusterQueue is Active once every check it names is (Kueue's
    # clusterqueue controller), which on a loaded CI machine took longer than one read.
    settle(
        lambda: _checks_not_as_wanted(hub, tree / MANAGER, rendered),
        timeout=90,
        what="AdmissionChecks Active",
    )
    settle(lambda: inactive_queues(hub, tree / MANAGER), timeout=90, what="hub queues Active")


def _checks_not_as_wanted(
    hub: cluster.SimCluster, tree: Path, rendered: list[dict[str, Any]]
) -> list[str]:
    problems = []
    for check in rendered:
        name = check["metadata"]["name"]
        clusters = _config_clusters(tree, check)
        status, reason, message = _reason(
            get(hub, "admissionchecks.kueue.x-k8s.io", name), "Active"
        )
        # Kueue keeps a check active while one of its clusters is: SomeActiveClusters.
        want = "Active" if clusters == [WORKER] else "SomeActiveClusters"
        if (status, reason) != ("True", want):
            problems.append(f"{name} ({clusters}): {status} {reason}, not True {want}: {message}")
    return problems


def _config_clusters(tree: Path, check: dict[str, Any]) -> list[str]:
    config = check["spec"]["parameters"]["name"]
    (found,) = [
        o
        for o in gitops.documents(tree)
        if o["kind"] == "MultiKueueConfig" and o["metadata"]["name"] == config
    ]
    return list(found["spec"]["clusters"])


# ---- a job dispatched --------------------------------------------------------------------


def _template(templates: Path, profile: str, team: str, card: str) -> dict[str, Any]:
    """The `hetgitops jobs` template of (profile, team, card type)."""
    for path in sorted(templates.rglob("*.yaml")):
        for obj in yaml.safe_load_all(path.read_text()):
            labels = (obj or {}).get("metadata", {}).get("labels", {})
            if (
                labels.get("hetgitops.io/profile") == profile
                and labels.get("hetgitops.io/team") == team
                and labels.get("hetgitops.io/card-type") == card
            ):
                return dict(obj)
    raise AssertionError(f"`hetgitops jobs` rendered no {profile}/{team}/{card} template")


def _workload(sim: cluster.SimCluster, namespace: str, job: str) -> dict[str, Any] | None:
    for item in get(sim, "workloads.kueue.x-k8s.io", "-n", namespace)["items"]:
        owners = item["metadata"].get("ownerReferences", [])
        if any(o.get("kind") == "Job" and o.get("name") == job for o in owners):
            return dict(item)
    return None


def _copy(worker: cluster.SimCluster, hub_workload: dict[str, Any]) -> dict[str, Any] | None:
    """The worker's copy of a hub Workload: same namespace and name. MultiKueue creates the
    Job itself there only once the copy is admitted, so nothing owns the copy before."""
    meta = hub_workload["metadata"]
    listed = get(worker, "workloads.kueue.x-k8s.io", "-n", meta["namespace"])["items"]
    return next((dict(w) for w in listed if w["metadata"]["name"] == meta["name"]), None)


def _admitted(found: dict[str, Any] | None) -> dict[str, Any] | None:
    return found if found and condition(found, "Admitted") == "True" else None


def _check_state(workload: dict[str, Any]) -> tuple[str, str]:
    (check,) = workload.get("status", {}).get("admissionChecks", [{}])
    return check.get("state", ""), check.get("message", "")


def _withdraw(connected: dict[str, cluster.SimCluster], obj: dict[str, Any]) -> None:
    """Delete the job on the hub; MultiKueue removes its copies on the worker."""
    namespace, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
    on_hub = _workload(connected[MANAGER], namespace, name)
    gitops.prune(connected[MANAGER], [obj])
    worker = connected[WORKER]
    selector = f"batch.kubernetes.io/job-name={name}"
    eventually(
        lambda: (
            (on_hub is None or _copy(worker, on_hub) is None)
            and not get(worker, "pods", "-n", namespace, "-l", selector)["items"]
        ),
        timeout=90,
        what=f"the worker's copies of {namespace}/{name} removed",
    )


@pytest.fixture
def smoke_job(
    connected: dict[str, cluster.SimCluster], templates: Path
) -> Iterator[dict[str, Any]]:
    obj = _template(templates, "smoke-test", "research", "h100-80gb")
    gitops.apply_objects(connected[MANAGER], [obj], manager="hetgitops-sim-user")
    TIMINGS["_submitted"] = time.monotonic()
    yield obj
    _withdraw(connected, obj)


def test_job_on_the_hub_runs_on_the_worker_with_the_cards(
    connected: dict[str, cluster.SimCluster], policy: Policy, tree: Path, smoke_job: dict[str, Any]
) -> None:
    hub, worker = connected[MANAGER], connected[WORKER]
    namespace, name = smoke_job["metadata"]["namespace"], smoke_job["metadata"]["name"]
    submitted = TIMINGS.pop("_submitted")
    on_hub = eventually(
        lambda: _admitted(_workload(hub, namespace, name)),
        timeout=120,
        what=f"{namespace}/{name} admitted on the hub",
    )
    TIMINGS["submit -> admitted on hub"] = time.monotonic() - submitted
    status = on_hub["status"]
    assert status.get("clusterName") == WORKER
    assert _check_state(on_hub) == ("Ready", f'The workload was admitted on "{WORKER}"')
    hub_flavors = {
        o["metadata"]["name"]
        for o in gitops.documents(tree / MANAGER)
        if o["kind"] == "ResourceFlavor"
    }
    (assignment,) = status["admission"]["podSetAssignments"]
    assert set(assignment["flavors"].values()) <= hub_flavors
    # The copy on the worker: admitted there to the flavor of the pool with the cards, its
    # pods bound by kube-scheduler to that pool's nodes and running.
    pool = next(
        p for p in policy.pools.values() if p.cluster == WORKER and p.card_type == "h100-80gb"
    )
    remote = eventually(
        lambda: _admitted(_copy(worker, on_hub)),
        timeout=60,
        what=f"{namespace}/{name} admitted on {WORKER}",
    )
    assert remote["metadata"]["labels"].get("kueue.x-k8s.io/multikueue-origin")
    (remote_assignment,) = remote["status"]["admission"]["podSetAssignments"]
    worker_flavors = {
        o["metadata"]["name"]: o
        for o in gitops.documents(tree / WORKER)
        if o["kind"] == "ResourceFlavor"
    }
    (flavor,) = set(remote_assignment["flavors"].values())
    assert worker_flavors[flavor]["spec"]["nodeLabels"]["hetgitops.io/pool"] == pool.name
    job = get(worker, "jobs", "-n", namespace, name)
    # Kueue v0.19 links the copy to its Workload by annotation (gate
    # WorkloadIdentifierAnnotations, on by default), a label before.
    meta = job["metadata"]
    prebuilt = meta.get("annotations", {}).get(PREBUILT) or meta.get("labels", {}).get(PREBUILT)
    assert prebuilt == remote["metadata"]["name"], meta

    def running() -> list[dict[str, Any]] | None:
        pods = get(worker, "pods", "-n", namespace, "-l", f"batch.kubernetes.io/job-name={name}")
        found = [p for p in pods["items"] if p.get("status", {}).get("phase") == "Running"]
        return found or None

    pods = eventually(running, timeout=60, what=f"pods of {namespace}/{name} Running on {WORKER}")
    TIMINGS["submit -> pod Running on worker"] = time.monotonic() - submitted
    nodes = {n["metadata"]["name"]: n for n in get(worker, "nodes")["items"]}
    for pod in pods:
        node = nodes[pod["spec"]["nodeName"]]
        assert node["metadata"]["labels"].get("hetgitops.io/pool") == pool.name
        assert node["metadata"]["name"] in {n.name for n in pool.nodes}
    # The hub never runs it: no pods there, and its status comes back from the worker.
    assert not get(hub, "pods", "-n", namespace)["items"]
    eventually(
        lambda: condition(_workload(hub, namespace, name) or {}, "PodsReady") == "True",
        timeout=60,
        what="the worker's pod readiness synced back to the hub",
    )


# ---- a job no worker can admit -----------------------------------------------------------

# pretraining's hub quota raised above what its workers hold (16 H100 on hopper-east): the
# hub then admits jobs of up to 24 cards that no worker can ever run.
OVERBOOKED = {"nvidia.com/gpu": "24", "cpu": "192", "memory": "3Ti"}


@pytest.fixture(scope="module")
def overbooked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Policy, Path]:
    """examples/multicluster with `managerQuota` for pretraining, rendered by hetgitops."""
    folder = tmp_path_factory.mktemp("overbooked") / "policy"
    folder.mkdir()
    for path in EXAMPLE.iterdir():
        (folder / path.name).write_text(path.read_text())
    teams = folder / "teams.yaml"
    anchor = "  tiers: [training]\n  memoryPerCard: 128Gi\n"
    text = teams.read_text()
    assert text.count(anchor) == 1
    quota = "".join(f'    {k}: "{v}"\n' for k, v in OVERBOOKED.items())
    teams.write_text(text.replace(anchor, anchor + "  managerQuota:\n" + quota))
    loaded = policyfleet.load(folder, now=NOW)
    return loaded, render(folder, folder.parent / "tree")


def _big_job(template: dict[str, Any], *, pods: int, cards: int) -> dict[str, Any]:
    """The smoke test's Job as pretraining's: `pods` pods of `cards` cards, each with the
    team's cpu and memory per card (8 cpu, 128Gi)."""
    obj = json.loads(json.dumps(template))
    obj["metadata"]["name"] = "overbooked"
    obj["metadata"]["namespace"] = "pretrain"
    labels = obj["metadata"]["labels"]
    labels.update({"kueue.x-k8s.io/queue-name": "pretraining", "hetgitops.io/team": "pretraining"})
    labels["kueue.x-k8s.io/priority-class"] = "training"
    obj["spec"].update(parallelism=pods, completions=pods)
    spec = obj["spec"]["template"]["spec"]
    spec["priorityClassName"] = "training"
    amounts = {"cpu": str(8 * cards), "memory": f"{128 * cards}Gi", "nvidia.com/gpu": str(cards)}
    for container in spec["containers"]:
        container["resources"] = {"requests": dict(amounts), "limits": dict(amounts)}
    return obj


def test_a_job_no_worker_can_admit_waits_on_the_hub(
    connected: dict[str, cluster.SimCluster],
    tree: Path,
    templates: Path,
    overbooked: tuple[Policy, Path],
) -> None:
    from hetgitops.plan.clusters import manager_quota, worker_sums

    policy, overbooked_tree = overbooked
    team = policy.teams["pretraining"]
    # What hetgitops says: the hub holds 24, the workers together 16, and jobs above that wait
    # on the hub holding its quota (warning multikueue-quota-mismatch).
    assert manager_quota(policy, team)["nvidia.com/gpu"] == "24"
    assert worker_sums(policy, team)["nvidia.com/gpu"] == "16"
    folder = overbooked_tree.parent / "policy"
    found = api.validate([folder], api.Options(now=NOW, check_output=False)).diagnostics
    (predicted,) = [
        d
        for d in found
        if d.rule == "multikueue-quota-mismatch" and "nvidia.com/gpu 24" in d.message
    ]
    assert "above what its workers hold (16)" in predicted.message
    assert "it waits on the workers forever" in predicted.message
    hub, worker = connected[MANAGER], connected[WORKER]
    gitops.sync_argocd(hub, overbooked_tree / MANAGER, tree / MANAGER)
    obj = _big_job(_template(templates, "smoke-test", "research", "h100-80gb"), pods=3, cards=8)
    try:
        gitops.apply_objects(hub, [obj], manager="hetgitops-sim-user")
        submitted = time.monotonic()
        namespace, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
        on_hub = eventually(
            lambda: _workload(hub, namespace, name), timeout=60, what="the hub's Workload"
        )
        remote = eventually(
            lambda: (c := _copy(worker, on_hub)) and condition(c, "QuotaReserved") == "False" and c,
            timeout=60,
            what="the copy on the worker judged",
        )
        TIMINGS["overbooked: submit -> worker refuses"] = time.monotonic() - submitted
        message = _reason(remote, "QuotaReserved")[2]
        # The worker's Kueue names the cap hetgitops computed as the workers' sum.
        assert "insufficient quota for nvidia.com/gpu in flavor h100-train" in message, message
        assert "> maximum capacity (16)" in message, message
        time.sleep(10)  # it stays that way: nothing on the hub gives up
        on_hub = _workload(hub, namespace, name) or {}
        assert condition(on_hub, "QuotaReserved") == "True"  # the hub holds 24 cards for it
        assert condition(on_hub, "Admitted") != "True"
        assert _check_state(on_hub)[0] == "Pending"
        assert on_hub["status"].get("nominatedClusterNames") == [WORKER]
        assert "clusterName" not in on_hub["status"]
        assert condition(_copy(worker, on_hub) or {}, "QuotaReserved") == "False"
        # Only the Workload was copied: the Job goes to a worker once one admits it.
        assert not get(worker, "jobs", "-n", namespace)["items"]
    finally:
        _withdraw(connected, obj)
        gitops.sync_argocd(hub, tree / MANAGER, overbooked_tree / MANAGER)


# ---- drift, cluster by cluster -----------------------------------------------------------


def _kubeconfig(pair: dict[str, cluster.SimCluster], path: Path) -> Path:
    """One kubeconfig with a read-only context per cluster (`sim-<cluster>`)."""
    config: dict[str, Any] = {"apiVersion": "v1", "kind": "Config"}
    config.update(clusters=[], users=[], contexts=[], **{"current-context": "sim-" + MANAGER})
    for name, sim in sorted(pair.items()):
        one = yaml.safe_load(sim.plane.readonly_kubeconfig.read_text())
        config["clusters"].append({"name": name, "cluster": one["clusters"][0]["cluster"]})
        config["users"].append({"name": f"{name}-reader", "user": one["users"][0]["user"]})
        context = {"cluster": name, "user": f"{name}-reader"}
        config["contexts"].append({"name": f"sim-{name}", "context": context})
    path.write_text(json.dumps(config))
    return path


def _drift(config: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    args = [f"--context={name}=sim-{name}" for name in INSTANCES]
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "hetgitops"),
            "drift",
            str(EXAMPLE),
            "--kubeconfig",
            str(config),
            *args,
            f"--skip-cluster={ABSENT}",
            *extra,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    body = json.loads(result.stdout) if "--format=json" in extra else {}
    return result.returncode, body, result.stdout + result.stderr


def _quota_bot(worker: cluster.SimCluster, cards: str) -> None:
    """Someone edits the worker's research ClusterQueue by hand (field manager quota-bot)."""
    live = get(worker, "clusterqueues.kueue.x-k8s.io", "research")
    groups = live["spec"]["resourceGroups"]
    for group in groups:
        for flavor in group["flavors"]:
            for resource in flavor["resources"]:
                if resource["name"] == "nvidia.com/gpu":
                    resource["nominalQuota"] = cards
    patch = json.dumps({"spec": {"resourceGroups": groups}})
    worker.kubectl(
        "patch",
        "clusterqueues.kueue.x-k8s.io",
        "research",
        "--type=merge",
        "--field-manager=quota-bot",
        "-p",
        patch,
    )


def test_drift_reads_each_cluster_with_its_own_context(
    connected: dict[str, cluster.SimCluster], tree: Path, tmp_path: Path
) -> None:
    hub, worker = connected[MANAGER], connected[WORKER]
    config = _kubeconfig(connected, tmp_path / "kubeconfig")
    began = time.monotonic()
    code, body, output = _drift(config, "--format=json")
    TIMINGS["drift, 2 clusters (clean)"] = time.monotonic() - began
    findings = [(d["rule"], d.get("cluster"), d["message"]) for d in body["diagnostics"]]
    # The absent cluster is reported, never silently skipped; the two live ones are clean.
    assert code == 1, output
    assert [f[:2] for f in findings] == [("drift-cluster-not-checked", ABSENT)], findings
    _quota_bot(worker, "12")
    try:
        code, body, output = _drift(config, "--format=json")
        changed = [d for d in body["diagnostics"] if d["rule"] == "drift-changed"]
        assert [d["cluster"] for d in changed] == [WORKER], body["diagnostics"]
        (finding,) = changed
        assert finding["message"].startswith(f"[{WORKER}] ClusterQueue research: ")
        assert "desired '16', live '12'; changed by quota-bot" in finding["message"]
        assert finding["file"].endswith("teams.yaml")
        # The hub's research queue (the sum, 48) is untouched and not reported.
        assert get(hub, "clusterqueues.kueue.x-k8s.io", "research")
        code, _, text = _drift(config, "--format=text")
        assert code == 1 and f"[{WORKER}] ClusterQueue research" in text
        assert f"drift: {MANAGER} (context sim-{MANAGER}): read " in text
        assert f"drift: {WORKER} (context sim-{WORKER}): read " in text
        code, _, sarif = _drift(config, "--format=sarif")
        results = json.loads(sarif)["runs"][0]["results"]
        assert {r["properties"]["cluster"] for r in results} == {WORKER, ABSENT}
        # Read-only and credential-free: the worker's token in the hub's Secret never shows.
        secret = get(hub, "secret", "-n", cluster.KUEUE_NAMESPACE, "hopper-east-kubeconfig")
        token = yaml.safe_load(base64.b64decode(secret["data"]["kubeconfig"]))["users"][0]
        assert token["user"]["token"] not in output + text + sarif
    finally:
        gitops.sync_argocd(worker, tree / WORKER)
