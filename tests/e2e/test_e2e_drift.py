"""E2E: `hetgitops drift` against a real API server, with exactly the rendered drift-rbac
permissions: zero findings after a GitOps-style apply, one finding per scripted mutation, and
a bounded number of requests."""

from __future__ import annotations

import copy
import datetime as dt
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from drift_fleet import (
    ARGOCD,
    FLUX,
    applied,
    create_nodes,
    drift_kubeconfig,
    render,
    reset,
    server_side_apply,
    set_node_status,
)
from harness.controlplane.harness import ControlPlane

from hetgitops.cli.main import main
from hetgitops.diagnostics import Diagnostic
from hetgitops.drift.run import DriftOptions, DriftResult, drift

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "tests" / "cases" / "render"
SCENARIOS = sorted(p.parent.name for p in CASES.glob("*/policy"))
BUNDLED = REPO / "policies"


@pytest.fixture(scope="module", autouse=True)
def _clean_up(control_plane: ControlPlane) -> Iterator[None]:
    """Leave no Argo CD- or Flux-owned objects behind: other e2e tests apply the same trees
    with their own field manager and would conflict."""
    yield
    reset(control_plane)


def _policy(scenario: str) -> Path:
    return BUNDLED if scenario == "bundled" else CASES / scenario / "policy"


class Counter:
    """Counts HTTP requests at the kubernetes client's REST layer (below hetgitops)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from kubernetes.client import rest

        self.calls: list[tuple[str, str]] = []
        original = rest.RESTClientObject.request

        def request(this: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            self.calls.append((method, url))
            return original(this, method, url, *args, **kwargs)

        monkeypatch.setattr(rest.RESTClientObject, "request", request)


def _drift(policy: Path, kubeconfig: Path, **options: Any) -> DriftResult:
    return drift([policy], DriftOptions(kubeconfig=kubeconfig, **options))


def _lines(found: list[Diagnostic]) -> list[str]:
    return [f"{d.rule}: {d.message}" for d in found]


def _deploy(plane: ControlPlane, scenario: str, manager: str, tmp: Path) -> Path:
    """Reset, apply the scenario's tree as `manager`, create its nodes; the drift kubeconfig."""
    reset(plane)
    result = render(_policy(scenario))
    server_side_apply(plane, applied(result), manager=manager)
    assert result.policy is not None
    create_nodes(plane, result.policy)
    return drift_kubeconfig(plane, _policy(scenario), tmp)


def _expected(scenario: str) -> list[str]:
    """Kueue v1beta1 output on a server without Kueue's conversion webhook: the upstream CRD
    (as installed here, without the webhook patch Kueue's own deployment adds) has conversion
    strategy None, so a v1beta1 object is stored against the v1beta2 schema and `spec.cohort`
    (v1beta2: `cohortName`) is pruned silently. drift reports exactly that, nothing else."""
    if scenario != "kueue-v1beta1":
        return []
    cohorts = [
        o
        for o in applied(render(_policy(scenario)))
        if o["kind"] == "ClusterQueue" and "cohort" in o["spec"]
    ]
    assert cohorts
    return [
        f"drift-field-missing: ClusterQueue {o['metadata']['name']}: spec.cohort is absent "
        f"(desired {o['spec']['cohort']!r})"
        for o in cohorts
    ]


CASES_AND_MANAGERS = [("bundled", ARGOCD), ("bundled", FLUX)] + [
    (s, (ARGOCD, FLUX)[i % 2]) for i, s in enumerate(SCENARIOS)
]


@pytest.mark.parametrize(("scenario", "manager"), CASES_AND_MANAGERS)
def test_no_drift_after_gitops_apply(
    control_plane: ControlPlane,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    scenario: str,
    manager: str,
) -> None:
    kubeconfig = _deploy(control_plane, scenario, manager, tmp_path)
    counter = Counter(monkeypatch)
    found = _drift(_policy(scenario), kubeconfig)
    assert _lines(found.result.diagnostics) == _expected(scenario)
    assert found.kinds > 0
    # One LIST per kind, plus the CRDs and the nodes; never a GET per object.
    assert len(counter.calls) == found.requests <= found.kinds + 5
    assert all(method == "GET" and "?" in url for method, url in counter.calls)
    dry = _drift(_policy(scenario), control_plane.admin_kubeconfig, mode="server-dry-run")
    assert _lines(dry.result.diagnostics) == []


def test_server_dry_run_with_read_only_rights_is_an_environment_error(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    kubeconfig = _deploy(control_plane, "no-mig", ARGOCD, tmp_path)
    result = CliRunner().invoke(
        main,
        [
            "drift",
            str(_policy("no-mig")),
            "--kubeconfig",
            str(kubeconfig),
            "--mode",
            "server-dry-run",
        ],
    )
    assert result.exit_code == 4, result.output
    assert "needs `patch`" in result.output


def test_unreachable_cluster_is_exit_4(tmp_path: Path, control_plane: ControlPlane) -> None:
    config = json.loads(control_plane.readonly_kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:9"
    path = tmp_path / "gone.kubeconfig"
    path.write_text(json.dumps(config))
    result = CliRunner().invoke(main, ["drift", str(BUNDLED), "--kubeconfig", str(path)])
    assert result.exit_code == 4, result.output
    assert "cannot reach the API server" in result.output
    assert "client-key-data" not in result.output and "BEGIN" not in result.output


# --- scripted mutations on the bundled fleet, applied by Argo CD's manager -----------------


@pytest.fixture(scope="module")
def fleet(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _deploy(control_plane, "bundled", ARGOCD, tmp_path_factory.mktemp("drift"))


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    return applied(render(BUNDLED))


def _one(kubeconfig: Path, policy: Path = BUNDLED) -> Diagnostic:
    found = _drift(policy, kubeconfig).result.diagnostics
    assert len(found) == 1, _lines(found)
    return found[0]


def _first(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == kind)


@pytest.fixture
def restore(
    control_plane: ControlPlane, fleet: Path, objects: list[dict[str, Any]]
) -> Iterator[None]:
    """After a mutation: re-apply the tree (taking every field back) and check it is clean."""
    yield
    server_side_apply(control_plane, objects, manager=ARGOCD, force=True)


def test_quota_patched_by_another_manager(
    control_plane: ControlPlane, fleet: Path, objects: list[dict[str, Any]], restore: None
) -> None:
    cq = _first(objects, "ClusterQueue")
    name = cq["metadata"]["name"]
    path = "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota"
    patch = json.dumps([{"op": "replace", "path": path, "value": "7"}])
    control_plane.kubectl(
        "patch", "clusterqueue", name, "--type=json", "-p", patch, "--field-manager=quota-bot"
    )
    found = _one(fleet)
    assert found.rule == "drift-changed"
    assert f"ClusterQueue {name}" in found.message and "nominalQuota" in found.message
    assert "quota-bot (updated at" in found.message and "live '7'" in found.message
    # The API server agrees: a server-side apply as hetgitops would set the quota back.
    dry = _drift(BUNDLED, control_plane.admin_kubeconfig, mode="server-dry-run").result
    assert [d.rule for d in dry.diagnostics] == ["drift-apply-changes"], _lines(dry.diagnostics)
    assert "nominalQuota to '" in dry.diagnostics[0].message
    assert "live '7'; written by quota-bot" in dry.diagnostics[0].message


def test_local_queue_deleted(
    control_plane: ControlPlane, fleet: Path, objects: list[dict[str, Any]], restore: None
) -> None:
    lq = _first(objects, "LocalQueue")["metadata"]
    control_plane.kubectl("delete", "localqueue", lq["name"], "-n", lq["namespace"])
    found = _one(fleet)
    assert found.rule == "drift-missing"
    assert f"LocalQueue {lq['namespace']}/{lq['name']}" in found.message


def test_local_queue_being_deleted_held_by_a_finalizer(
    control_plane: ControlPlane, fleet: Path, objects: list[dict[str, Any]], restore: None
) -> None:
    """The real API server keeps a deleted object with a finalizer, deletionTimestamp set,
    until the finalizer goes: drift used to call it in sync (issue 23 item 7)."""
    lq = _first(objects, "LocalQueue")["metadata"]
    where = ["localqueue", lq["name"], "-n", lq["namespace"]]
    hold = json.dumps({"metadata": {"finalizers": ["e2e.hetgitops.io/hold"]}})
    control_plane.kubectl("patch", *where, "--type=merge", "-p", hold)
    control_plane.kubectl("delete", *where, "--wait=false")
    try:
        found = _one(fleet)
        assert found.rule == "drift-terminating"
        assert f"LocalQueue {lq['namespace']}/{lq['name']} is being deleted (since " in (
            found.message
        )
        assert found.message.endswith("; held by e2e.hetgitops.io/hold")
    finally:
        release = json.dumps([{"op": "remove", "path": "/metadata/finalizers"}])
        control_plane.kubectl("patch", *where, "--type=json", "-p", release)


def test_orphan_queue_with_our_labels(
    control_plane: ControlPlane, fleet: Path, objects: list[dict[str, Any]]
) -> None:
    queue = copy.deepcopy(_first(objects, "Queue"))
    queue["metadata"]["name"] = "e2e-orphan"
    queue["spec"].pop("parent", None)
    server_side_apply(control_plane, [queue], manager="kubectl-someone")
    try:
        found = _one(fleet)
        assert found.rule == "drift-orphan"
        assert "Queue e2e-orphan" in found.message and "kubectl-someone" in found.message
    finally:
        control_plane.kubectl("delete", "queue.scheduling.volcano.sh", "e2e-orphan")


def test_field_removed_from_policy_is_still_owned_by_the_applier(
    control_plane: ControlPlane, fleet: Path, objects: list[dict[str, Any]], restore: None
) -> None:
    # An older policy declared fairSharing; the current one does not: Argo CD still owns it.
    cq = copy.deepcopy(_first(objects, "ClusterQueue"))
    cq["spec"]["fairSharing"] = {"weight": "2"}
    server_side_apply(control_plane, [cq], manager=ARGOCD)
    found = _one(fleet)
    assert found.rule == "drift-removed"
    assert "spec.fairSharing" in found.message and "argocd-controller (applied at" in found.message
    # Re-applying the current tree (the sync) removes it: clean again.
    server_side_apply(control_plane, objects, manager=ARGOCD)
    assert _drift(BUNDLED, fleet).result.diagnostics == []


def _a_gpu_node(objects: list[dict[str, Any]]) -> tuple[str, str]:
    """A node of a whole-card NVIDIA pool (from the NFD rules), and its pool label key."""
    for rule in (o for o in objects if o["kind"] == "NodeFeatureRule"):
        for entry in rule["spec"]["rules"]:
            labels = entry["labels"]
            if (
                labels.get("hetgitops.io/vendor") == "nvidia"
                and "nvidia.com/mig.config" not in labels
            ):
                names = entry["matchFeatures"][0]["matchExpressions"]["nodename"]["value"]
                return names[0], "hetgitops.io/pool"
    raise AssertionError("the bundled fleet has no whole-card NVIDIA node")


def test_node_loses_a_pool_label(
    control_plane: ControlPlane, fleet: Path, objects: list[dict[str, Any]]
) -> None:
    node, key = _a_gpu_node(objects)
    value = json.loads(control_plane.kubectl("get", "node", node, "-o", "json").stdout)["metadata"][
        "labels"
    ][key]
    control_plane.kubectl("label", "node", node, f"{key}-")
    try:
        found = _one(fleet)
        assert found.rule == "drift-node-labels"
        assert f"node {node} lacks {key}={value!r}" in found.message
    finally:
        control_plane.kubectl("label", "node", node, f"{key}={value}")


def test_node_mig_state_failed(
    control_plane: ControlPlane, fleet: Path, objects: list[dict[str, Any]]
) -> None:
    node, _ = _a_gpu_node(objects)
    control_plane.kubectl("label", "node", node, "nvidia.com/mig.config.state=failed")
    try:
        found = _one(fleet)
        assert found.rule == "drift-mig-failed"
        assert node in found.message
    finally:
        control_plane.kubectl("label", "node", node, "nvidia.com/mig.config.state-")


def test_node_reports_seven_of_eight_gpus(
    control_plane: ControlPlane, fleet: Path, objects: list[dict[str, Any]]
) -> None:
    node, _ = _a_gpu_node(objects)
    status = json.loads(control_plane.kubectl("get", "node", node, "-o", "json").stdout)["status"]
    before = copy.deepcopy(status)
    assert status["allocatable"]["nvidia.com/gpu"] == "8"
    status["allocatable"]["nvidia.com/gpu"] = "7"
    set_node_status(control_plane, node, {"allocatable": status["allocatable"]})
    try:
        found = _one(fleet)
        assert found.rule == "drift-accelerators"
        assert f"node {node} advertises 7 of 8 nvidia.com/gpu" in found.message
    finally:
        set_node_status(control_plane, node, {"allocatable": before["allocatable"]})


def test_node_lacks_its_pool_taint(control_plane: ControlPlane, fleet: Path) -> None:
    policy = render(BUNDLED).policy
    assert policy is not None
    pool = next(p for p in policy.pools.values() if p.taints)
    node = pool.nodes[0].name
    taints = json.loads(control_plane.kubectl("get", "node", node, "-o", "json").stdout)["spec"]
    assert any(t["key"] == pool.taints[0].key for t in taints["taints"])
    control_plane.kubectl(
        "patch", "node", node, "--type=json", "-p", '[{"op":"remove","path":"/spec/taints"}]'
    )
    try:
        found = _one(fleet)
        assert found.rule == "drift-node-taints" and f"node {node} lacks the taint" in found.message
    finally:
        patch = json.dumps({"spec": {"taints": taints["taints"]}})
        control_plane.kubectl("patch", "node", node, "--type=merge", "-p", patch)


def test_gpu_node_in_no_pool(control_plane: ControlPlane, fleet: Path) -> None:
    stray = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "e2e-stray-gpu", "labels": {"e2e.hetgitops.io/drift": "yes"}},
        "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"}},
    }
    body = json.dumps(stray)
    control_plane.kubectl(
        "apply", "--server-side", "--field-manager=e2e-nodes", "-f", "-", input=body
    )
    control_plane.kubectl(
        "apply",
        "--server-side",
        "--subresource=status",
        "--field-manager=e2e-kubelet",
        "-f",
        "-",
        input=body,
    )
    try:
        found = _one(fleet)
        assert found.rule == "drift-node-unpooled" and "e2e-stray-gpu" in found.message
    finally:
        control_plane.kubectl("delete", "node", "e2e-stray-gpu")


def _a_mig_node(objects: list[dict[str, Any]]) -> tuple[str, str]:
    for rule in (o for o in objects if o["kind"] == "NodeFeatureRule"):
        for entry in rule["spec"]["rules"]:
            config = entry["labels"].get("nvidia.com/mig.config")
            if config and config != "all-disabled":
                names = entry["matchFeatures"][0]["matchExpressions"]["nodename"]["value"]
                return names[0], config
    raise AssertionError("the bundled fleet has no MIG node")


def test_mig_config_differs_from_the_policy(
    control_plane: ControlPlane, fleet: Path, objects: list[dict[str, Any]]
) -> None:
    node, config = _a_mig_node(objects)
    control_plane.kubectl(
        "label", "node", node, "--overwrite", "nvidia.com/mig.config=all-disabled"
    )
    try:
        found = _one(fleet)
        assert found.rule == "drift-mig-config"
        assert (
            f"node {node} has mig.config 'all-disabled'" in found.message
            and config in found.message
        )
    finally:
        control_plane.kubectl(
            "label", "node", node, "--overwrite", f"nvidia.com/mig.config={config}"
        )


def test_mig_pending_only_after_the_timeout(
    control_plane: ControlPlane, fleet: Path, objects: list[dict[str, Any]]
) -> None:
    node, _ = _a_mig_node(objects)
    control_plane.kubectl("label", "node", node, "nvidia.com/mig.config.state=pending")
    try:
        assert _drift(BUNDLED, fleet).result.diagnostics == []  # pending for seconds: fine
        later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
        found = _drift(BUNDLED, fleet, now=later).result.diagnostics
        assert [d.rule for d in found] == ["drift-mig-pending"], _lines(found)
        assert node in found[0].message
    finally:
        control_plane.kubectl("label", "node", node, "nvidia.com/mig.config.state-")


def test_usage_above_a_quota_the_policy_has_cut(
    control_plane: ControlPlane, fleet: Path, objects: list[dict[str, Any]], restore: None
) -> None:
    # The cluster still runs an older render with a higher GPU quota, and uses all of it.
    cq = copy.deepcopy(_first(objects, "ClusterQueue"))
    name = cq["metadata"]["name"]
    flavor = next(
        f
        for g in cq["spec"]["resourceGroups"]
        for f in g["flavors"]
        if any(r["name"] == "nvidia.com/gpu" and r["nominalQuota"] != "0" for r in f["resources"])
    )
    gpu = next(r for r in flavor["resources"] if r["name"] == "nvidia.com/gpu")
    new = int(gpu["nominalQuota"])
    gpu["nominalQuota"] = str(new + 4)
    server_side_apply(control_plane, [cq], manager=ARGOCD)
    usage = {
        "status": {
            "flavorsUsage": [
                {
                    "name": flavor["name"],
                    "resources": [{"name": "nvidia.com/gpu", "total": str(new + 3)}],
                }
            ]
        }
    }
    control_plane.kubectl(
        "patch",
        "clusterqueue",
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(usage),
    )
    found = _drift(BUNDLED, fleet).result.diagnostics
    assert sorted(d.rule for d in found) == ["drift-changed", "drift-usage-above-quota"], _lines(
        found
    )
    usage_finding = next(d for d in found if d.rule == "drift-usage-above-quota")
    assert (
        f"in use at {new + 3}, above the new nominal quota {new} (live {new + 4})"
        in usage_finding.message
    )
    changed = next(d for d in found if d.rule == "drift-changed")
    assert "argocd-controller (applied at" in changed.message


def test_ignore_rules_in_the_fleet(
    control_plane: ControlPlane,
    fleet: Path,
    objects: list[dict[str, Any]],
    tmp_path: Path,
    restore: None,
) -> None:
    policy = tmp_path / "policy"
    shutil.copytree(BUNDLED, policy)
    fleet_file = policy / "fleet.yaml"
    documents = list(yaml.safe_load_all(fleet_file.read_text()))
    document = next(d for d in documents if d["kind"] == "Fleet")
    document["spec"]["drift"] = {"ignore": [{"kind": "ClusterQueue", "managers": ["quota-bot"]}]}
    fleet_file.write_text(yaml.safe_dump_all(documents))
    name = _first(objects, "ClusterQueue")["metadata"]["name"]
    path = "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota"
    patch = json.dumps([{"op": "replace", "path": path, "value": "5"}])
    control_plane.kubectl(
        "patch", "clusterqueue", name, "--type=json", "-p", patch, "--field-manager=quota-bot"
    )
    assert _drift(policy, fleet).result.diagnostics == []
    assert [d.rule for d in _drift(BUNDLED, fleet).result.diagnostics] == ["drift-changed"]


def test_a_kind_the_credentials_may_not_list_is_a_finding(
    control_plane: ControlPlane, fleet: Path
) -> None:
    role = json.loads(
        control_plane.kubectl("get", "clusterrole", "hetgitops-drift", "-o", "json").stdout
    )
    rules = role["rules"]
    narrowed = [r for r in rules if r["apiGroups"] != ["scheduling.volcano.sh"]]
    assert len(narrowed) == len(rules) - 1
    patch = json.dumps({"rules": narrowed})
    control_plane.kubectl("patch", "clusterrole", "hetgitops-drift", "--type=merge", "-p", patch)
    try:
        result = CliRunner().invoke(main, ["drift", str(BUNDLED), "--kubeconfig", str(fleet)])
        assert result.exit_code == 1, result.output
        assert (
            "error[drift-forbidden]: Queue (scheduling.volcano.sh/v1beta1): "
            "the credentials may not list queues" in result.output
        )
    finally:
        control_plane.kubectl(
            "patch",
            "clusterrole",
            "hetgitops-drift",
            "--type=merge",
            "-p",
            json.dumps({"rules": rules}),
        )


def test_a_label_lost_on_a_whole_pool_is_one_finding_with_each_node_in_verbose(
    control_plane: ControlPlane, fleet: Path
) -> None:
    """Issue 22 item 13: a label gone from a pool's 16 nodes (an NFD rule that stopped
    matching) is one finding naming them as a range, not 16; `--verbose` and the JSON report
    list each node."""
    policy = render(BUNDLED).policy
    assert policy is not None
    names = [n.name for n in policy.pools["a800-train"].nodes]
    key = "hetgitops.io/card-type"
    control_plane.kubectl("label", "node", *names, f"{key}-")
    try:
        found = _one(fleet)
        assert found.rule == "drift-node-labels"
        assert found.message == (
            "16 nodes of pool a800-train lack or contradict its labels: "
            f"{key} missing on gpu-a800-[001:016]"
        )
        each = [f"node {name} lacks {key}='a800-80gb'" for name in names]
        assert list(found.details) == each
        argv = ["drift", str(BUNDLED), "--kubeconfig", str(fleet)]
        quiet = CliRunner().invoke(main, argv)
        assert quiet.exit_code == 1 and "gpu-a800-016 lacks" not in quiet.output, quiet.output
        verbose = CliRunner().invoke(main, [*argv, "--verbose"])
        assert all(f"    - {line}\n" in verbose.output for line in each), verbose.output
        report = json.loads(CliRunner().invoke(main, [*argv, "--format", "json"]).output)
        assert [d["details"] for d in report["diagnostics"]] == [each]
    finally:
        control_plane.kubectl("label", "node", *names, f"{key}=a800-80gb")
