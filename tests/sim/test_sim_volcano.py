"""Volcano on the simulated fleet (webhook-manager, controller-manager and scheduler v1.14.1, the
scheduler running the rendered volcano-scheduler.conf): every rendered Queue becomes Open, every
Volcano job template of `hetgitops jobs` is scheduled onto nodes of the pool hetgitops routes it
to, and a gang larger than its queue's capability pends."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.simcluster import cluster, gitops, policyfleet

from hetgitops.compilers.volcano_scheduler import CONFIG_KEY
from hetgitops.model import quantities
from hetgitops.model.policy import Policy
from hetgitops.plan.job_targets import VOLCANO, JobTarget, Selector

from .checks import closed_volcano_queues, eventually, get, settle
from .conftest import NOW, POLICIES, render

pytestmark = pytest.mark.sim

JOB_NAME_LABEL = "volcano.sh/job-name"


def volcano_predictions(policy: Policy) -> dict[str, JobTarget]:
    selector = Selector(policy)
    return {
        target.filename: target
        for profile in policy.profiles.values()
        for target in selector.targets(profile, None)
        if target.scheduler == VOLCANO
    }


def volcano_templates() -> list[str]:
    return sorted(volcano_predictions(policyfleet.load(POLICIES, now=NOW)))


def test_every_rendered_queue_is_open(sim: cluster.SimCluster, synced: Path) -> None:
    queues = [o for o in gitops.documents(synced) if o["kind"] == "Queue"]
    assert queues, "the bundled render has no Volcano Queue"
    settle(lambda: closed_volcano_queues(sim, synced), timeout=60, what="Volcano queues not Open")


def test_scheduler_runs_the_rendered_config(sim: cluster.SimCluster, synced: Path) -> None:
    (config_map,) = [
        o
        for o in gitops.documents(synced)
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "volcano-scheduler-configmap"
    ]
    running = (sim.run_dir / "volcano-scheduler.conf").read_text()
    assert running == config_map["data"][CONFIG_KEY]


@pytest.fixture(scope="module")
def job_templates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render(POLICIES, tmp_path_factory.mktemp("vcjobs") / "jobs", command="jobs")


def _submit(sim: cluster.SimCluster, obj: dict[str, Any]) -> None:
    gitops.apply_objects(sim, [obj], manager="hetgitops-sim-user")


def _remove(sim: cluster.SimCluster, obj: dict[str, Any]) -> None:
    gitops.prune(sim, [obj])
    namespace, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
    settle(lambda: _job_pods(sim, namespace, name), timeout=60, what=f"pods of {name} left")


def _job_pods(sim: cluster.SimCluster, namespace: str, name: str) -> list[str]:
    pods = get(sim, "pods", "-n", namespace, "-l", f"{JOB_NAME_LABEL}={name}")["items"]
    return [p["metadata"]["name"] for p in pods]


@pytest.fixture
def vcjob(
    sim: cluster.SimCluster, synced: Path, job_templates: Path, request: pytest.FixtureRequest
) -> Iterator[dict[str, Any]]:
    obj = yaml.safe_load((job_templates / request.param).read_text())
    _submit(sim, obj)
    yield obj
    _remove(sim, obj)


def _replicas(obj: dict[str, Any]) -> int:
    return sum(int(task.get("replicas", 1)) for task in obj["spec"]["tasks"])


def running_on(sim: cluster.SimCluster, obj: dict[str, Any]) -> set[str] | None:
    """The nodes of the job's pods once all `replicas` are bound and Running, else None."""
    namespace, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
    pods = get(sim, "pods", "-n", namespace, "-l", f"{JOB_NAME_LABEL}={name}")["items"]
    running = [p for p in pods if p.get("status", {}).get("phase") == "Running"]
    if len(running) < _replicas(obj) or any(not p["spec"].get("nodeName") for p in running):
        return None
    assert all(p["spec"].get("schedulerName") == "volcano" for p in running)
    return {p["spec"]["nodeName"] for p in running}


@pytest.mark.parametrize("vcjob", volcano_templates(), indirect=True)
def test_volcano_template_scheduled_in_its_pool(
    sim: cluster.SimCluster,
    fleet_policy: Policy,
    vcjob: dict[str, Any],
    request: pytest.FixtureRequest,
) -> None:
    template = request.node.callspec.params["vcjob"]
    pool = volcano_predictions(fleet_policy)[template].route.pool
    nodes = eventually(
        lambda: running_on(sim, vcjob), timeout=90, what=f"{template}: pods bound by vc-scheduler"
    )
    assert nodes <= {n.name for n in pool.nodes}, (
        f"{template}: Volcano bound its pods to {sorted(nodes)}, outside pool {pool.name}"
    )


def _amount(resources: dict[str, Any], name: str) -> Decimal:
    return quantities.value_of(resources[name]) if name in resources else Decimal(0)


@pytest.mark.parametrize("template", volcano_templates())
def test_gang_larger_than_queue_capability_pends(
    sim: cluster.SimCluster, synced: Path, job_templates: Path, template: str
) -> None:
    """The template's pod, `capability // request + 1` times in one gang (minAvailable = all):
    Volcano keeps the PodGroup Pending for lack of queue quota although the pool's nodes have
    room for the whole gang; the gang of exactly the capability runs."""
    base = yaml.safe_load((job_templates / template).read_text())
    queues = {o["metadata"]["name"]: o for o in gitops.documents(synced) if o["kind"] == "Queue"}
    capability = queues[base["spec"]["queue"]]["spec"]["capability"]
    (task,) = base["spec"]["tasks"]
    requests = task["template"]["spec"]["containers"][0]["resources"]["requests"]
    accelerator = next(r for r in requests if "/" in r)
    per_pod = _amount(requests, accelerator)
    fits = int(_amount(capability, accelerator) // per_pod)
    assert fits >= 1, f"{template}: one pod exceeds its queue's capability"
    room = _pool_room(sim, task["template"]["spec"]["nodeSelector"], accelerator)
    assert room >= (fits + 1) * per_pod, "the pool itself is too small to prove anything"

    exact = _gang(base, "exact", fits)
    _submit(sim, exact)
    try:
        eventually(lambda: running_on(sim, exact), timeout=90, what="the gang of capability")
    finally:
        _remove(sim, exact)

    larger = _gang(base, "larger", fits + 1)
    _submit(sim, larger)
    try:
        message = eventually(
            lambda: _quota_pending(sim, larger), timeout=60, what="the larger gang pending"
        )
        assert f"insufficient {accelerator}" in message
        assert running_on(sim, larger) is None
        namespace, name = larger["metadata"]["namespace"], larger["metadata"]["name"]
        pods = get(sim, "pods", "-n", namespace, "-l", f"{JOB_NAME_LABEL}={name}")["items"]
        assert not [p for p in pods if p["spec"].get("nodeName")], "part of the gang was bound"
    finally:
        _remove(sim, larger)


def _gang(base: dict[str, Any], suffix: str, size: int) -> dict[str, Any]:
    obj = copy.deepcopy(base)
    obj["metadata"]["name"] = f"{base['metadata']['name']}-{suffix}"
    obj["spec"]["minAvailable"] = size
    obj["spec"]["tasks"][0]["replicas"] = size
    return obj


def _pool_room(sim: cluster.SimCluster, selector: dict[str, str], resource: str) -> Decimal:
    labels = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    nodes = get(sim, "nodes", "-l", labels)["items"]
    return sum((_amount(n["status"].get("allocatable", {}), resource) for n in nodes), Decimal(0))


def _quota_pending(sim: cluster.SimCluster, obj: dict[str, Any]) -> str | None:
    """The scheduler's event once the job's PodGroup is Pending for lack of queue quota."""
    namespace, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
    groups = [
        g
        for g in get(sim, "podgroups.scheduling.volcano.sh", "-n", namespace)["items"]
        if any(ref.get("name") == name for ref in g["metadata"].get("ownerReferences", []))
    ]
    if len(groups) != 1 or groups[0].get("status", {}).get("phase") != "Pending":
        return None
    events = json.loads(
        sim.kubectl(
            "get",
            "events",
            "-n",
            namespace,
            "--field-selector",
            f"involvedObject.name={groups[0]['metadata']['name']}",
            "-o",
            "json",
        ).stdout
    )["items"]
    quota = [e["message"] for e in events if "queue resource quota insufficient" in e["message"]]
    return quota[-1] if quota else None
