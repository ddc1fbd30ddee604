"""DRA pools judged by the real kube-scheduler v1.37.2 and Kueue v0.19.2 (issue 36 item 4).

The DRA variant of the bundled fleet (tests/cases/render/dra: `l40s-infer` on `draClaims`,
`h100-infer` on `draClaims` while `migratingFrom: devicePlugin`) is created in the simulated
fleet with the ResourceSlices NVIDIA's driver would publish (harness/simcluster/dra.py) and no
DRA device in any Node's allocatable; its render is synced and Kueue restarted with the rendered
`deviceClassMappings`. Then:

- each rendered DeviceClass, claimed with `allocationMode: All` by a pod pinned to a node of its
  pool, gets exactly the devices of its card (or MIG profile) there, and a pod pinned to a node
  of the other DRA pool is unschedulable: the real CEL selects exactly its card;
- each `hetgitops jobs` template of a claims pool is admitted by Kueue to the flavor hetgitops
  routes it to, charged the mapped resource x the template's count (`resourceUsage`), and its
  pod runs on a node of the pool with a claim the scheduler allocated from that node's devices;
- for a set of requests (1 pod, the team's reach, one pod more) `explain` and Kueue agree on the
  verdict, the flavor and the message;
- a template claiming a class no mapping names is inadmissible, as `explain` says.

The bundled fleet and render are restored afterwards.
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.simcluster import cluster, dra, fleet, gitops, policyfleet

from hetgitops.explain.answer import Explanation
from hetgitops.explain.explanation import explain
from hetgitops.explain.workload import from_manifest
from hetgitops.model.policy import Policy, Pool
from hetgitops.plan import dra as dra_plan
from hetgitops.plan import dra_devices
from hetgitops.plan.job_targets import Selector
from hetgitops.plan.quota_plan import kueue_amount, reach

from .checks import converged, eventually, get, settle
from .conftest import NOW, REPO, render
from .test_sim_bundled import bound_nodes

pytestmark = pytest.mark.sim

VARIANT = REPO / "tests" / "cases" / "render" / "dra" / "policy"
LABEL = "hetgitops.io/sim-dra"
PROBES = "sim-dra-probe"  # a namespace no queue serves: the scheduler alone places its pods
USER = "hetgitops-sim-user"


@dataclass(frozen=True)
class DraFleet:
    policy: Policy
    tree: Path
    jobs: Path
    slices: list[dict[str, Any]]


@pytest.fixture(scope="module")
def dra_fleet(
    sim: cluster.SimCluster,
    synced: Path,
    fleet_policy: Policy,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[DraFleet]:
    folder = tmp_path_factory.mktemp("dra")
    policy = policyfleet.load(VARIANT, now=NOW)
    tree = render(VARIANT, folder / "tree")
    jobs = render(VARIANT, folder / "jobs", command="jobs")
    fragment = yaml.safe_load((tree / "kueue" / "kueue-configuration-dra.yaml").read_text())
    try:
        policyfleet.create_from(sim, policy)
        settle(partial(_allocatable_off, sim, policy), timeout=60, what="DRA nodes' allocatable")
        published = dra.publish(sim, policy)
        dra.configure_kueue(sim, fragment)
        gitops.sync_argocd(sim, tree, previous=synced)
        converged(sim, policy, tree)
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PROBES}}
        gitops.apply_objects(sim, [namespace], manager=USER)
        yield DraFleet(policy, tree, jobs, published)
    finally:
        sim.kubectl("delete", "namespace", PROBES, "--ignore-not-found", "--wait=false")
        sim.kubectl("delete", "jobs,deployments", "-A", "-l", LABEL, "--wait=true")
        gitops.sync_argocd(sim, synced, previous=tree)
        dra.configure_kueue(sim, None)
        dra.withdraw(sim)
        policyfleet.create_from(sim, fleet_policy)
        converged(sim, fleet_policy, synced)


def _allocatable_off(sim: cluster.SimCluster, policy: Policy) -> list[str]:
    """DRA pools' nodes whose live allocatable is not what fleet.py built (no DRA device; the
    device plugin's resources only while the pool migrates): a Node updated from the bundled
    fleet must lose its `nvidia.com/gpu`."""
    live = {n["metadata"]["name"]: n["status"] for n in get(sim, "nodes")["items"]}
    wrong = []
    for pool in policy.pools.values():
        if not dra_plan.on_dra(pool):
            continue
        for node in pool.nodes:
            want = fleet.node_resources(policy, pool, node)
            have = live.get(node.name, {}).get("allocatable", {})
            if {k: v for k, v in have.items() if "/" in k} != {
                k: v for k, v in want.items() if "/" in k
            }:
                wrong.append(f"{node.name}: {have}")
    return wrong


def _device_index(published: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(pool = node name, device name) -> the published device."""
    return {
        (s["spec"]["pool"]["name"], d["name"]): d for s in published for d in s["spec"]["devices"]
    }


def _allocated(sim: cluster.SimCluster, pod: dict[str, Any]) -> list[dict[str, Any]]:
    """The allocation results of every claim of a pod (the scheduler wrote them before it bound
    the pod)."""
    namespace = pod["metadata"]["namespace"]
    # A claim made from a template is named in the pod's status; a claim the pod names is not.
    generated = {
        s["name"]: s.get("resourceClaimName")
        for s in pod.get("status", {}).get("resourceClaimStatuses") or []
    }
    results: list[dict[str, Any]] = []
    for entry in pod["spec"].get("resourceClaims") or []:
        name = entry.get("resourceClaimName") or generated.get(entry["name"])
        assert name, f"{pod['metadata']['name']}: claim {entry['name']} not created"
        claim = get(sim, "resourceclaims", "-n", namespace, name)
        allocation = claim.get("status", {}).get("allocation") or {}
        results += allocation.get("devices", {}).get("results") or []
    return results


def _probe(name: str, device_class: str, node: str) -> list[dict[str, Any]]:
    """A claim of every device of `device_class` (allocationMode All: all matching devices of
    the one node the pod lands on) and a pod using it, pinned to `node`."""
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": PROBES},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {"deviceClassName": device_class, "allocationMode": "All"},
                    }
                ]
            }
        },
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": PROBES},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "tolerations": [{"operator": "Exists"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}
            ],
        },
    }
    return [claim, pod]


def _clear_probes(sim: cluster.SimCluster) -> None:
    """Delete the probe pods and claims, so that their devices are free for the next test."""
    sim.kubectl("delete", "pods,resourceclaims", "--all", "-n", PROBES, "--wait=true")


def _pod_verdict(sim: cluster.SimCluster, name: str) -> tuple[str, str] | None:
    pod = get(sim, "pods", "-n", PROBES, name)
    if pod.get("status", {}).get("phase") == "Running":
        return "Running", pod["spec"]["nodeName"]
    for cond in pod.get("status", {}).get("conditions") or []:
        if cond["type"] == "PodScheduled" and cond.get("reason") == "Unschedulable":
            return "Unschedulable", cond.get("message", "")
    return None


def test_each_device_class_selects_exactly_its_cards(
    sim: cluster.SimCluster, dra_fleet: DraFleet
) -> None:
    policy = dra_fleet.policy
    devices = _device_index(dra_fleet.slices)
    pools = [p for p in policy.pools.values() if dra_plan.claims(p)]
    assert len(pools) == 2, [p.name for p in pools]
    cases: dict[str, tuple[dra_plan.DeviceClassFact, Pool, bool]] = {}
    objects: list[dict[str, Any]] = []
    for fact in dra_plan.device_classes(policy):
        for pool in pools:
            own = pool in fact.pools
            name = f"probe-{fact.name.split('.')[0]}-{'own' if own else 'other'}"
            cases[name] = (fact, pool, own)
            objects += _probe(name, fact.name, pool.nodes[0].name)
    gitops.apply_objects(sim, objects, manager=USER)
    try:
        problems = _probed(sim, cases, devices)
    finally:
        _clear_probes(sim)
    assert not problems, "\n".join(problems)


def _probed(
    sim: cluster.SimCluster,
    cases: dict[str, tuple[dra_plan.DeviceClassFact, Pool, bool]],
    devices: dict[tuple[str, str], dict[str, Any]],
) -> list[str]:
    problems = []
    for name, (fact, pool, own) in sorted(cases.items()):
        state, detail = eventually(
            partial(_pod_verdict, sim, name), timeout=90, what=f"{name} placed or not"
        )
        node = pool.nodes[0]
        if not own:
            if state != "Unschedulable" or "cannot allocate all claims" not in detail:
                problems.append(f"{name}: {fact.name} on {pool.name}: {state} {detail}")
            continue
        pod = get(sim, "pods", "-n", PROBES, name)
        results = _allocated(sim, pod)
        want = dra_devices.published(pool, node.cards)[fact.profile]
        where = {r["pool"] for r in results}
        wrong = [
            f"{r['device']}: {why}"
            for r in results
            if (
                why := dra_devices.unselected(
                    fact.card, fact.profile, devices[r["pool"], r["device"]]
                )
            )
        ]
        if state != "Running" or len(results) != want or where != {node.name} or wrong:
            problems.append(
                f"{name}: {state} {detail}; {len(results)} devices (want {want}) on "
                f"{sorted(where)}; not of the class: {wrong}"
            )
    return problems


def test_a_migrating_node_gives_its_gpus_to_the_device_plugin_and_to_claims_alike(
    sim: cluster.SimCluster, dra_fleet: DraFleet
) -> None:
    """While a pool is `migratingFrom: devicePlugin` the plugin still advertises the GPUs the
    driver publishes, and kube-scheduler accounts the two apart (NodeResourcesFit against
    allocatable, DynamicResources against the claims' allocations): a pod holding every whole GPU
    through the plugin and a claim of every whole GPU both run on one node. docs/targets/dra.md
    says so; the migration sequence must keep the two off one node's GPUs."""
    pool = dra_fleet.policy.pools["h100-infer"]
    assert pool.migrating_from == dra_plan.DEVICE_PLUGIN
    node = pool.nodes[-1]
    whole = dra_devices.published(pool, node.cards)[None]
    plugin = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "plugin-whole-gpus", "namespace": PROBES},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node.name},
            "tolerations": [{"operator": "Exists"}],
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"limits": {"nvidia.com/gpu": str(whole)}},
                }
            ],
        },
    }
    (fact,) = [
        f for f in dra_plan.device_classes(dra_fleet.policy) if pool in f.pools and not f.profile
    ]
    gitops.apply_objects(
        sim, [plugin, *_probe("claim-whole-gpus", fact.name, node.name)], manager=USER
    )
    try:
        seen = {
            name: eventually(partial(_pod_verdict, sim, name), timeout=90, what=f"{name} placed")
            for name in ("plugin-whole-gpus", "claim-whole-gpus")
        }
        claimed = _allocated(sim, get(sim, "pods", "-n", PROBES, "claim-whole-gpus"))
    finally:
        _clear_probes(sim)
    assert seen == {
        "plugin-whole-gpus": ("Running", node.name),
        "claim-whole-gpus": ("Running", node.name),
    }, seen
    assert len(claimed) == whole, claimed


def _claims_templates(dra_fleet: DraFleet) -> list[tuple[str, dict[str, Any], Pool]]:
    """(file, Job, pool) of every `hetgitops jobs` batch Job that claims, with its route."""
    policy = dra_fleet.policy
    routes = {
        t.filename: t.route.pool
        for profile in policy.profiles.values()
        for t in Selector(policy).targets(profile, None)
    }
    found = []
    for path in sorted(dra_fleet.jobs.rglob("*.yaml")):
        name = str(path.relative_to(dra_fleet.jobs))
        obj = yaml.safe_load(path.read_text())
        spec = obj.get("spec", {}).get("template", {}).get("spec", {})
        if obj.get("kind") == "Job" and spec.get("resourceClaims"):
            found.append((name, obj, routes[name]))
    return found


def _workload(sim: cluster.SimCluster, namespace: str, job: str) -> dict[str, Any] | None:
    for wl in get(sim, "workloads.kueue.x-k8s.io", "-n", namespace)["items"]:
        if any(o["name"] == job for o in wl["metadata"].get("ownerReferences", [])):
            return dict(wl)
    return None


def _judged(sim: cluster.SimCluster, namespace: str, job: str) -> tuple[str, str, str] | None:
    """(admitted, flavor, '') or (pending, '', Kueue's message) once Kueue has judged."""
    wl = _workload(sim, namespace, job)
    status = (wl or {}).get("status", {})
    if status.get("admission"):
        flavors = status["admission"]["podSetAssignments"][0].get("flavors", {})
        accel = sorted(v for k, v in flavors.items() if k not in ("cpu", "memory"))
        return "admitted", (accel or sorted(flavors.values()))[0], ""
    for cond in status.get("conditions", []):
        if cond["type"] == "QuotaReserved" and cond["status"] == "False" and cond["message"]:
            return "pending", "", str(cond["message"])
    return None


def _predicted(e: Explanation) -> tuple[str, str, str]:
    if e.verdict == "admitted":
        return "admitted", e.flavor or "", ""
    return e.verdict, "", e.message


def _submit(sim: cluster.SimCluster, obj: dict[str, Any]) -> None:
    obj = copy.deepcopy(obj)
    obj["metadata"].setdefault("labels", {})[LABEL] = "true"
    gitops.apply_objects(sim, [obj], manager=USER)


def _remove(sim: cluster.SimCluster, obj: dict[str, Any]) -> None:
    namespace, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
    sim.kubectl("delete", "job", "-n", namespace, name, "--wait=true", "--cascade=foreground")
    settle(
        lambda: [] if _workload(sim, namespace, name) is None else [name],
        timeout=60,
        what="workload left",
    )


def test_claim_templates_are_charged_by_kueue_and_allocated_by_the_scheduler(
    sim: cluster.SimCluster, dra_fleet: DraFleet
) -> None:
    policy = dra_fleet.policy
    devices = _device_index(dra_fleet.slices)
    charges = dra_plan.claim_charges(policy)
    classes = {f.name: f for f in dra_plan.device_classes(policy)}
    templates = _claims_templates(dra_fleet)
    assert templates, "no claims-path batch Job among the job templates"
    for name, obj, pool in templates:
        namespace = obj["metadata"]["namespace"]
        prediction = _predicted(explain(policy, from_manifest(obj)))
        assert prediction[0] == "admitted", f"{name}: explain says {prediction}"
        _submit(sim, obj)
        try:
            seen = eventually(
                partial(_judged, sim, namespace, obj["metadata"]["name"]),
                timeout=90,
                what=f"{name}: Kueue's verdict",
            )
            assert seen == prediction, f"{name}: Kueue {seen}, explain {prediction}"
            wl = _workload(sim, namespace, obj["metadata"]["name"])
            assert wl is not None
            usage = wl["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]
            (claim,) = obj["spec"]["template"]["spec"]["resourceClaims"]
            resource, count = charges[claim["resourceClaimTemplateName"]]
            pods = obj["spec"].get("parallelism", 1)
            assert kueue_amount(resource, str(usage.get(resource, "0"))) == count * pods, (
                f"{name}: Kueue charged {usage}, hetgitops {count * pods} {resource}"
            )
            nodes = eventually(
                partial(bound_nodes, sim, namespace, pods),
                timeout=90,
                what=f"{name} Running",
            )
            assert nodes <= {n.name for n in pool.nodes}, f"{name}: on {nodes}, not {pool.name}"
            for pod in get(sim, "pods", "-n", namespace)["items"]:
                results = _allocated(sim, pod)
                assert len(results) == count, f"{name}: {pod['metadata']['name']}: {results}"
                fact = classes[_template_class(sim, namespace, claim["resourceClaimTemplateName"])]
                for r in results:
                    device = devices[r["pool"], r["device"]]
                    assert r["pool"] == pod["spec"]["nodeName"], r
                    assert not dra_devices.unselected(fact.card, fact.profile, device), r
        finally:
            _remove(sim, obj)


def _template_class(sim: cluster.SimCluster, namespace: str, template: str) -> str:
    live = get(sim, "resourceclaimtemplates.resource.k8s.io", "-n", namespace, template)
    return str(live["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"])


def _sized(obj: dict[str, Any], suffix: str, pods: int) -> dict[str, Any]:
    sized = copy.deepcopy(obj)
    sized["metadata"]["name"] = f"{obj['metadata']['name']}-{suffix}"
    sized["spec"]["parallelism"] = sized["spec"]["completions"] = pods
    return sized


def test_explain_and_kueue_agree_at_the_reach_of_each_claims_template(
    sim: cluster.SimCluster, dra_fleet: DraFleet
) -> None:
    """The team's reach in the pool (plan.quota_plan.Reach, in devices of the template's count)
    is admitted to the predicted flavor and one pod more pends with the message `explain`
    writes; each request alone on the idle queue."""
    policy = dra_fleet.policy
    charges = dra_plan.claim_charges(policy)
    problems = []
    for name, obj, pool in _claims_templates(dra_fleet):
        team = policy.teams[obj["metadata"]["labels"]["hetgitops.io/team"]]
        (claim,) = obj["spec"]["template"]["spec"]["resourceClaims"]
        resource, count = charges[claim["resourceClaimTemplateName"]]
        most = reach(policy).most(team, pool, resource)
        assert most is not None and most >= count, f"{name}: reach {most} {resource}"
        for suffix, pods in (("reach", most // count), ("over", most // count + 1)):
            sized = _sized(obj, suffix, pods)
            namespace = sized["metadata"]["namespace"]
            prediction = _predicted(explain(policy, from_manifest(sized)))
            _submit(sim, sized)
            try:
                seen = eventually(
                    partial(_judged, sim, namespace, sized["metadata"]["name"]),
                    timeout=90,
                    what=f"{name} x{pods}: Kueue's verdict",
                )
            finally:
                _remove(sim, sized)
            if seen != prediction:
                problems.append(f"{name} x{pods} pods: Kueue {seen}; explain {prediction}")
            print(f"{name} x{pods}: {seen[0]} {seen[1]}{seen[2][:160]}")
        assert most // count + 1 > 1
    assert not problems, "\n".join(problems)


def _quota_reserved(sim: cluster.SimCluster, namespace: str, job: str) -> tuple[str, str] | None:
    """(reason, message) of a Workload's QuotaReserved=False condition, once written."""
    for cond in ((_workload(sim, namespace, job) or {}).get("status") or {}).get("conditions", []):
        if cond["type"] == "QuotaReserved" and cond["status"] == "False" and cond["message"]:
            return str(cond["reason"]), str(cond["message"])
    return None


def test_a_class_no_mapping_names_is_inadmissible_as_explain_says(
    sim: cluster.SimCluster, dra_fleet: DraFleet
) -> None:
    """A hand-written template claiming a class outside the rendered deviceClassMappings: Kueue
    refuses the Workload before any flavor (reason Inadmissible), and so does `explain`."""
    name, obj, _ = next(t for t in _claims_templates(dra_fleet) if "l40s" in t[0])
    namespace = obj["metadata"]["namespace"]
    unmapped = "unmapped.sim.hetgitops.io"
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": unmapped},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{dra_plan.DRIVER}'"}}]},
    }
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "sim-unmapped", "namespace": namespace},
        "spec": dra_plan.claim_template_spec(unmapped, 1),
    }
    job = _sized(obj, "unmapped", 1)
    job["spec"]["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = (
        "sim-unmapped"
    )
    gitops.apply_objects(sim, [device_class, template], manager=USER)
    predicted = explain(dra_fleet.policy, from_manifest(job))
    _submit(sim, job)
    try:
        reason, message = eventually(
            partial(_quota_reserved, sim, namespace, job["metadata"]["name"]),
            timeout=90,
            what=f"{name} on an unmapped class: Kueue's verdict",
        )
    finally:
        _remove(sim, job)
        sim.kubectl("delete", "resourceclaimtemplate", "-n", namespace, "sim-unmapped")
        sim.kubectl("delete", "deviceclass", unmapped)
    print(f"Kueue: {reason}: {message}")
    assert f"DeviceClass {unmapped} is not mapped in DRA configuration" in message, message
    assert (predicted.verdict, predicted.reason) == ("pending", reason), predicted


@pytest.fixture(scope="module")
def extended_fleet(
    sim: cluster.SimCluster, dra_fleet: DraFleet, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DraFleet]:
    """The DRA variant with `l40s-infer` on the extended-resource path instead: its jobs keep
    `nvidia.com/gpu`, NVIDIA's chart's class `gpu.nvidia.com` carries the name, Kueue maps only
    the claims pool's classes. Back to the claims variant afterwards."""
    folder = tmp_path_factory.mktemp("dra-extended")
    source = folder / "policy"
    shutil.copytree(VARIANT, source)
    pools = source / "pools" / "inference.yaml"
    text = pools.read_text()
    claims = "  devices: {allocation: draClaims}\n"
    assert text.count(claims) == 1, "l40s-infer is no longer the variant's plain claims pool"
    pools.write_text(text.replace(claims, "  devices: {allocation: draExtendedResource}\n"))
    policy = policyfleet.load(source, now=NOW)
    assert policy.pools["l40s-infer"].allocation == dra_plan.EXTENDED
    tree = render(source, folder / "tree")
    jobs = render(source, folder / "jobs", command="jobs")
    fragment = yaml.safe_load((tree / "kueue" / "kueue-configuration-dra.yaml").read_text())
    before = yaml.safe_load((dra_fleet.tree / "kueue" / "kueue-configuration-dra.yaml").read_text())
    try:
        gitops.apply_objects(sim, [dra.DRIVER_CLASS], manager=dra.DRIVER_MANAGER)
        policyfleet.create_from(sim, policy)
        settle(partial(_allocatable_off, sim, policy), timeout=60, what="DRA nodes' allocatable")
        published = dra.publish(sim, policy)
        dra.configure_kueue(sim, fragment)
        gitops.sync_argocd(sim, tree, previous=dra_fleet.tree)
        converged(sim, policy, tree)
        yield DraFleet(policy, tree, jobs, published)
    finally:
        sim.kubectl("delete", "jobs", "-A", "-l", LABEL, "--wait=true")
        gitops.sync_argocd(sim, dra_fleet.tree, previous=tree)
        dra.configure_kueue(sim, before)
        sim.kubectl("delete", "deviceclass", dra_plan.DRIVER, "--ignore-not-found")
        policyfleet.create_from(sim, dra_fleet.policy)


def test_extended_resource_jobs_keep_nvidia_gpu_and_get_a_device_of_their_card(
    sim: cluster.SimCluster, extended_fleet: DraFleet
) -> None:
    """A plain `nvidia.com/gpu` job of an extended-resource pool: Kueue charges
    `nvidia.com/gpu` in the pool's flavor (as `explain` says), and kube-scheduler, finding no
    `nvidia.com/gpu` in the nodes' allocatable, allocates a device of the class that carries
    the name (it writes the claim it made into the pod's `extendedResourceClaimStatus`)."""
    policy = extended_fleet.policy
    pool = policy.pools["l40s-infer"]
    card = policy.card_types[pool.card_type]
    devices = _device_index(extended_fleet.slices)
    path = extended_fleet.jobs / "data-filter" / "finetune-vision" / "l40s-48gb.yaml"
    obj = yaml.safe_load(path.read_text())
    container = obj["spec"]["template"]["spec"]["containers"][0]
    assert "resourceClaims" not in obj["spec"]["template"]["spec"]
    gpus = int(container["resources"]["requests"]["nvidia.com/gpu"])
    namespace, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
    prediction = _predicted(explain(policy, from_manifest(obj)))
    assert prediction[0] == "admitted", prediction
    _submit(sim, obj)
    try:
        seen = eventually(
            partial(_judged, sim, namespace, name), timeout=90, what=f"{name}: Kueue's verdict"
        )
        assert seen == prediction, f"Kueue {seen}, explain {prediction}"
        wl = _workload(sim, namespace, name)
        assert wl is not None
        usage = wl["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]
        assert kueue_amount("nvidia.com/gpu", str(usage.get("nvidia.com/gpu", "0"))) == gpus
        nodes = eventually(partial(bound_nodes, sim, namespace, 1), timeout=90, what="Running")
        assert nodes <= {n.name for n in pool.nodes}, nodes
        (pod,) = get(sim, "pods", "-n", namespace, "-l", f"job-name={name}")["items"]
        status = pod["status"].get("extendedResourceClaimStatus") or {}
        assert status.get("resourceClaimName"), pod["status"]
        claim = get(sim, "resourceclaims", "-n", namespace, status["resourceClaimName"])
        results = claim["status"]["allocation"]["devices"]["results"]
        assert len(results) == gpus, results
        for r in results:
            assert r["pool"] == pod["spec"]["nodeName"], r
            assert not dra_devices.unselected(card, None, devices[r["pool"], r["device"]]), r
    finally:
        _remove(sim, obj)
