"""MIG claims charged by the real Kueue v0.19.2 and allocated by the real kube-scheduler v1.37.2
(issue 36): the DRA variant of test_sim_dra.py with batch profiles on MIG slices.

The variant (tests/cases/render/dra: `h100-infer` on `draClaims` while migrating, GPUs 0-1 as
7 x 1g.10gb, GPUs 2-3 as 2 x 3g.40gb) gets three Job profiles on slices (`MIG_PROFILES`), so that
`hetgitops jobs` renders MIG-claiming Jobs and `hetgitops render` the ResourceClaimTemplates
they claim in every namespace of the teams that hold the slices: `online-inference` holds both
profiles of the H100 (and whole cards), `research` holds only 1g.10gb slices. The fleet is
created with the ResourceSlices NVIDIA's driver would publish, the render synced and Kueue
restarted with the rendered `deviceClassMappings` (as in test_sim_dra.py). Then:

- every MIG-claiming Job, in each namespace of its team, is admitted by Kueue to the flavor
  `explain` predicts, its Workload's `resourceUsage` holds exactly the mapped quota resource of
  its profile x the devices the policy says (no other accelerator), and its pod is bound on the
  pool with a claim the scheduler allocated one MIG device of that profile to;
- at the team's reach in that profile (nominal + borrowable, `quota_plan.Reach`) the Job is
  admitted by Kueue and by `explain` and every pod is bound with a device of the profile; one
  pod more and both say pending with the same message.

The bundled fleet and render are restored afterwards.
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.simcluster import cluster, dra, gitops, policyfleet

from hetgitops.explain.explanation import explain
from hetgitops.explain.workload import from_manifest
from hetgitops.model.policy import Policy
from hetgitops.plan import dra as dra_plan
from hetgitops.plan import dra_devices
from hetgitops.plan.quota_plan import kueue_amount, reach

from .checks import converged, eventually, get, settle
from .conftest import NOW, render
from .test_sim_dra import (
    LABEL,
    USER,
    VARIANT,
    DraFleet,
    _allocatable_off,
    _allocated,
    _device_index,
    _judged,
    _predicted,
    _quota_reserved,
    _remove,
    _sized,
    _submit,
    _workload,
)

pytestmark = pytest.mark.sim

# Batch Job profiles on slices of the variant's H100s: two profiles of one card for the team that
# holds both (online-inference), and one for the team that holds only 1g.10gb slices (research,
# tiers dev and training). `migProfile` means one instance of the profile per pod.
MIG_PROFILES = """\
apiVersion: hetgitops.io/v1alpha1
kind: WorkloadProfile
metadata:
  name: mig-small-batch
spec:
  description: Batch inference on one 1g.10gb MIG slice.
  framework: job
  tier: online-inference
  requirements: {cardsPerNode: 1, migProfile: 1g.10gb}
  image: pytorch
  command: [python, batch.py]
  cpuPerCard: 1500m
  memoryPerCard: 12Gi
---
apiVersion: hetgitops.io/v1alpha1
kind: WorkloadProfile
metadata:
  name: mig-batch
spec:
  description: Batch inference on one 3g.40gb MIG slice.
  framework: job
  tier: online-inference
  requirements: {cardsPerNode: 1, migProfile: 3g.40gb}
  image: pytorch
  command: [python, batch.py]
  cpuPerCard: 4
  memoryPerCard: 32Gi
---
apiVersion: hetgitops.io/v1alpha1
kind: WorkloadProfile
metadata:
  name: mig-eval
spec:
  description: Evaluation batch on one 1g.10gb MIG slice.
  framework: job
  tier: training
  requirements: {cardsPerNode: 1, migProfile: 1g.10gb}
  image: pytorch
  command: [python, eval.py]
  cpuPerCard: 1500m
  memoryPerCard: 12Gi
"""
POOL = "h100-infer"


@pytest.fixture(scope="module")
def mig_fleet(
    sim: cluster.SimCluster,
    synced: Path,
    fleet_policy: Policy,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[DraFleet]:
    folder = tmp_path_factory.mktemp("dra-mig")
    source = folder / "policy"
    shutil.copytree(VARIANT, source)
    (source / "profiles" / "mig.yaml").write_text(MIG_PROFILES)
    policy = policyfleet.load(source, now=NOW)
    tree = render(source, folder / "tree")
    jobs = render(source, folder / "jobs", command="jobs")
    fragment = yaml.safe_load((tree / "kueue" / "kueue-configuration-dra.yaml").read_text())
    try:
        policyfleet.create_from(sim, policy)
        settle(partial(_allocatable_off, sim, policy), timeout=60, what="DRA nodes' allocatable")
        published = dra.publish(sim, policy)
        dra.configure_kueue(sim, fragment)
        gitops.sync_argocd(sim, tree, previous=synced)
        converged(sim, policy, tree)
        yield DraFleet(policy, tree, jobs, published)
    finally:
        sim.kubectl("delete", "jobs", "-A", "-l", LABEL, "--wait=true")
        gitops.sync_argocd(sim, synced, previous=tree)
        dra.configure_kueue(sim, None)
        dra.withdraw(sim)
        policyfleet.create_from(sim, fleet_policy)
        converged(sim, fleet_policy, synced)


def _mig_jobs(fleet: DraFleet) -> list[tuple[str, dict[str, Any], str]]:
    """(file, Job, MIG profile) of every `hetgitops jobs` batch Job of a MIG profile; each claims
    a rendered template (checked against the policy's own charge in the tests)."""
    found = []
    for path in sorted(fleet.jobs.rglob("*.yaml")):
        obj = yaml.safe_load(path.read_text())
        profile = fleet.policy.profiles.get(obj["metadata"]["labels"].get("hetgitops.io/profile"))
        if obj.get("kind") == "Job" and profile is not None and profile.mig_profile:
            found.append((str(path.relative_to(fleet.jobs)), obj, profile.mig_profile))
    return found


def _policy_charge(fleet: DraFleet, obj: dict[str, Any], profile: str) -> tuple[str, int]:
    """What the policy says one pod of the Job is charged: one device of the profile's class, as
    the mapped quota resource; the rendered template must say the same."""
    card = fleet.policy.card_types[fleet.policy.pools[POOL].card_type]
    want = (dra_plan.quota_resource(card, profile), 1)
    (claim,) = obj["spec"]["template"]["spec"]["resourceClaims"]
    rendered = dra_plan.claim_charges(fleet.policy)[claim["resourceClaimTemplateName"]]
    assert rendered == want, f"template {claim['resourceClaimTemplateName']}: {rendered}"
    return want


def test_the_variant_covers_two_profiles_of_one_card_and_a_team_holding_only_slices(
    mig_fleet: DraFleet,
) -> None:
    held = {(o["metadata"]["labels"]["hetgitops.io/team"], p) for _, o, p in _mig_jobs(mig_fleet)}
    assert held == {
        ("online-inference", "1g.10gb"),
        ("online-inference", "3g.40gb"),
        ("research", "1g.10gb"),
    }, held
    research = mig_fleet.policy.teams["research"]
    slices_only = [q for q in research.quotas if q.pool == POOL]
    assert slices_only and all(not q.cards and not q.normalized and q.mig for q in slices_only), (
        slices_only
    )


def _job_pods(sim: cluster.SimCluster, namespace: str, job: str) -> list[dict[str, Any]]:
    return list(get(sim, "pods", "-n", namespace, "-l", f"job-name={job}")["items"])


def _all_bound(sim: cluster.SimCluster, namespace: str, job: str, pods: int) -> list[str]:
    """The Job's pods not yet bound and Running (and how many are not created yet): [] once all
    `pods` are."""
    found = _job_pods(sim, namespace, job)
    waiting = [
        f"{p['metadata']['name']}: {p.get('status', {}).get('phase')} on "
        f"{p['spec'].get('nodeName')}"
        for p in found
        if p.get("status", {}).get("phase") != "Running" or not p["spec"].get("nodeName")
    ]
    return waiting if len(found) >= pods else [f"{len(found)} of {pods} pods created", *waiting]


def _devices_wrong(
    sim: cluster.SimCluster, fleet: DraFleet, namespace: str, job: str, profile: str, count: int
) -> list[str]:
    """Every pod of the Job: its claim's allocation is `count` devices of the MIG profile on the
    node the pod is bound to, of the pool's card; what is not."""
    pool = fleet.policy.pools[POOL]
    card = fleet.policy.card_types[pool.card_type]
    devices = _device_index(fleet.slices)
    nodes = {n.name for n in pool.nodes}
    wrong = []
    taken: set[tuple[str, str]] = set()
    for pod in _job_pods(sim, namespace, job):
        name, node = pod["metadata"]["name"], pod["spec"].get("nodeName")
        results = _allocated(sim, pod)
        if node not in nodes or len(results) != count:
            wrong.append(f"{name} on {node}: {len(results)} devices {results}")
        for r in results:
            key = (r["pool"], r["device"])
            why = dra_devices.unselected(card, profile, devices[key]) if key in devices else "?"
            if r["pool"] != node or why or key in taken:
                wrong.append(f"{name} on {node}: {key} {why or 'given twice'}")
            taken.add(key)
    return wrong


def _usage(sim: cluster.SimCluster, namespace: str, job: str) -> dict[str, int]:
    """The accelerators (every resource but cpu and memory) of the Workload's admitted
    `resourceUsage`, in Kueue's integer units."""
    wl = _workload(sim, namespace, job)
    assert wl is not None, f"{namespace}/{job}: no Workload"
    (assignment,) = wl["status"]["admission"]["podSetAssignments"]
    return {
        k: kueue_amount(k, str(v))
        for k, v in assignment["resourceUsage"].items()
        if k not in ("cpu", "memory")
    }


def test_each_mig_claim_is_charged_its_profile_and_bound_to_a_device_of_it(
    sim: cluster.SimCluster, mig_fleet: DraFleet
) -> None:
    """Each MIG-claiming Job in every namespace of its team: the claim template of that namespace
    resolves, Kueue admits to the predicted flavor, charges the mapped resource x count and
    nothing else, and the scheduler allocates a device of the profile where the pod runs."""
    problems = []
    for name, obj, profile in _mig_jobs(mig_fleet):
        resource, count = _policy_charge(mig_fleet, obj, profile)
        team = mig_fleet.policy.teams[obj["metadata"]["labels"]["hetgitops.io/team"]]
        for namespace in team.namespaces:
            job = copy.deepcopy(obj)
            job["metadata"]["namespace"] = namespace
            where = f"{name} in {namespace}"
            prediction = _predicted(explain(mig_fleet.policy, from_manifest(job)))
            assert prediction[:2] == ("admitted", POOL), f"{where}: explain says {prediction}"
            _submit(sim, job)
            try:
                seen = eventually(
                    partial(_judged, sim, namespace, job["metadata"]["name"]),
                    timeout=90,
                    what=f"{where}: Kueue's verdict",
                )
                usage = (
                    _usage(sim, namespace, job["metadata"]["name"]) if seen == prediction else {}
                )
                settle(
                    partial(_all_bound, sim, namespace, job["metadata"]["name"], 1),
                    timeout=90,
                    what=f"{where}: pod bound",
                )
                wrong = _devices_wrong(
                    sim, mig_fleet, namespace, job["metadata"]["name"], profile, count
                )
            finally:
                _remove(sim, job)
            print(f"{where}: Kueue {seen}, usage {usage}, devices wrong {wrong}")
            if seen != prediction or usage != {resource: count} or wrong:
                problems.append(
                    f"{where}: Kueue {seen}, explain {prediction}; usage {usage}, policy "
                    f"{ {resource: count} }; devices: {wrong}"
                )
    assert not problems, "\n".join(problems)


def test_at_the_mig_reach_kueue_admits_and_one_pod_more_pends_as_explain_says(
    sim: cluster.SimCluster, mig_fleet: DraFleet
) -> None:
    """The team's reach in the profile's quota resource, in pods of one device each: admitted by
    Kueue to the flavor `explain` names, every pod bound with a device of the profile; one pod
    more pends in Kueue with `explain`'s message. Each request alone on the idle queue."""
    problems = []
    pool = mig_fleet.policy.pools[POOL]
    for name, obj, profile in _mig_jobs(mig_fleet):
        resource, count = _policy_charge(mig_fleet, obj, profile)
        team = mig_fleet.policy.teams[obj["metadata"]["labels"]["hetgitops.io/team"]]
        most = reach(mig_fleet.policy).most(team, pool, resource)
        assert most is not None and most >= count, f"{name}: reach {most} {resource}"
        pods = most // count
        for suffix, size in (("reach", pods), ("over", pods + 1)):
            sized = _sized(obj, suffix, size)
            namespace, job = sized["metadata"]["namespace"], sized["metadata"]["name"]
            prediction = _predicted(explain(mig_fleet.policy, from_manifest(sized)))
            want = ("admitted", POOL) if suffix == "reach" else ("pending", "")
            assert prediction[:2] == want, f"{name} x{size}: explain says {prediction}"
            _submit(sim, sized)
            usage: dict[str, int] = {}
            wrong: list[str] = []
            try:
                seen = eventually(
                    partial(_judged, sim, namespace, job),
                    timeout=90,
                    what=f"{name} x{size}: Kueue's verdict",
                )
                if suffix == "reach" and seen == prediction:
                    usage = _usage(sim, namespace, job)
                    settle(
                        partial(_all_bound, sim, namespace, job, size),
                        timeout=240,
                        what=f"{name} x{size}: pods bound",
                    )
                    wrong = _devices_wrong(sim, mig_fleet, namespace, job, profile, count)
            finally:
                _remove(sim, sized)
            print(f"{name} x{size}: {seen[0]} {seen[1]}{seen[2][:200]} usage {usage}")
            if (
                seen != prediction
                or wrong
                or (suffix == "reach" and usage != {resource: size * count})
            ):
                problems.append(
                    f"{name} x{size} pods: Kueue {seen}; explain {prediction}; usage {usage} "
                    f"(policy {size * count} {resource}); devices: {wrong}"
                )
    assert not problems, "\n".join(problems)


def _moved(obj: dict[str, Any], namespace: str, team: str, claim: dict[str, str]) -> dict[str, Any]:
    """The Job in another namespace and queue, its pod claiming through `claim`."""
    job = _sized(obj, "by-hand", 1)
    job["metadata"]["namespace"] = namespace
    job["metadata"]["labels"] |= {"hetgitops.io/team": team, "kueue.x-k8s.io/queue-name": team}
    job["spec"]["template"]["spec"]["resourceClaims"] = [{"name": "gpu", **claim}]
    return job


def test_mig_claims_kueue_cannot_charge_are_inadmissible_as_explain_says(
    sim: cluster.SimCluster, mig_fleet: DraFleet
) -> None:
    """Two ways a pod's MIG claim reaches no quota: it names a ResourceClaim (Kueue's DRA
    integration supports templates only), or it claims a template the policy renders only in
    other namespaces (finetune-nlp could borrow 1g.10gb slices, but Kueue reads the template in
    the pod's namespace and finds none). Kueue pends both, reason Inadmissible, before any
    flavor; `explain` says the same (it used to admit both)."""
    name, obj, _ = next(j for j in _mig_jobs(mig_fleet) if j[0].startswith("mig-small-batch/"))
    (claim,) = obj["spec"]["template"]["spec"]["resourceClaims"]
    template = claim["resourceClaimTemplateName"]
    direct = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "sim-direct-slice", "namespace": obj["metadata"]["namespace"]},
        "spec": get(sim, "resourceclaimtemplates", "-n", obj["metadata"]["namespace"], template)[
            "spec"
        ]["spec"],
    }
    gitops.apply_objects(sim, [direct], manager=USER)
    cases = {
        "direct claim": _moved(
            obj,
            obj["metadata"]["namespace"],
            obj["metadata"]["labels"]["hetgitops.io/team"],
            {"resourceClaimName": "sim-direct-slice"},
        ),
        "template of other namespaces": _moved(
            obj, "ft-nlp", "finetune-nlp", {"resourceClaimTemplateName": template}
        ),
    }
    problems = []
    try:
        for case, job in cases.items():
            namespace, job_name = job["metadata"]["namespace"], job["metadata"]["name"]
            predicted = explain(mig_fleet.policy, from_manifest(job))
            _submit(sim, job)
            try:
                reason, message = eventually(
                    partial(_quota_reserved, sim, namespace, job_name),
                    timeout=90,
                    what=f"{name} as {case}: Kueue's verdict",
                )
            finally:
                _remove(sim, job)
            print(
                f"{case}: Kueue {reason}: {message}; explain {predicted.verdict} "
                f"{predicted.reason}: {predicted.message}"
            )
            same = (predicted.verdict, predicted.reason) == ("pending", reason)
            if case == "direct claim":
                same = same and predicted.message == message
            else:
                same = same and "not found" in message and template in message
            if not same:
                problems.append(f"{case}: Kueue {reason}: {message}; explain {predicted}")
    finally:
        sim.kubectl(
            "delete",
            "resourceclaim",
            "-n",
            direct["metadata"]["namespace"],
            "sim-direct-slice",
            "--ignore-not-found",
        )
    assert not problems, "\n".join(problems)
