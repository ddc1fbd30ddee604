"""A busy pool's move from NVIDIA's device plugin to DRA claims (issue 36), as the day-2 busy
matrix runs it (tests/sim/test_sim_day2_busy.py `test_dra_move_under_load`), following
docs/targets/dra.md's migration sequence:

- the change: `l40s-infer` becomes `devices: {allocation: draClaims, migratingFrom:
  devicePlugin}` (Kubernetes 1.35 declared: DRA is served from 1.34), and a fifth node,
  `gpu-l40s-05`, joins the pool. Its flavor loses `topologyName` (Kueue's TAS does not count
  DRA devices), which renames it: the change carries `diff`'s `retiringFlavor` snippet with
  `holds` as `diff --kubeconfig` reads the live usage off the Workloads, so the new flavor's
  claims quota is the team quota less what the plugin pods hold;
- the GPU Operator's per-node switch on the new node, modelled here (`switch`): the node is
  labelled `nvidia.com/gpu.deploy.device-plugin=false` (the operator then runs no device plugin
  there: gpu-operator `controllers/state_manager.go:376-380`), so its kubelet advertises no
  `nvidia.com/gpu` (no plugin ever registered the resource), and NVIDIA's DRA driver's kubelet
  plugin publishes the node's ResourceSlice (`dra.publish`, `tests/dra_driver.py`: v25.12.0's
  attributes, NVML's values). The four old nodes keep the device plugin and the pods it
  serves: the driver never runs beside it (the double count docs/targets/dra.md warns of);
- Kueue: the rendered `kueue/kueue-configuration-dra.yaml` merged and the manager restarted
  (`dra.configure_kueue`), as `dra-mappings-changed` tells the user.

The harness counts the driver's devices as capacity (`busy.slice_capacity`: each device of a
claims pool's node as the mapped resource of its card), so Kueue's charge of the mapped
resource is held against what the driver publishes, as `nvidia.com/gpu` is against what the
plugin advertises.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from pathlib import Path
from typing import Any

import yaml

from hetgitops.live.workloads import condition
from hetgitops.model.policy import Policy
from hetgitops.plan import dra as dra_plan

from . import cluster, dra, policyfleet

Obj = dict[str, Any]
POOL = "l40s-infer"
SWITCHED = ("gpu-l40s-05",)  # nodes that come up on the DRA driver
NODES = ('names: "gpu-l40s-[01:04]"', 'names: "gpu-l40s-[01:05]"')
CLAIM_WORK = "llm-serving/online-inference/l40s-48gb.yaml"  # a `hetgitops jobs` template
# Plain work on the pool before the move: the pool's batch Job template (the bundled `hetgitops
# jobs` output) submitted to online-inference's queue, the team that moves (no case before this
# one removes its ClusterQueue). online-inference runs 18 of its 24 there; 8 more are above its
# nominal quota, and at the `dev` tier the Job preempts nothing, so it waits with the device
# plugin's resource when the pool moves.
PLAIN_WORK = "data-filter/finetune-vision/l40s-48gb.yaml"
PLAIN_PODS = 8
_QUEUE_LABELS = ("kueue.x-k8s.io/queue-name", "hetgitops.io/team")
LABEL = "hetgitops.io/dra-move"
_HOLDS = re.compile(r"\(holds: (\{.*\})\)")


def move(root: Path) -> None:
    """The policy change (before the transition snippet is pasted)."""
    fleet = root / "fleet.yaml"
    fleet.write_text(fleet.read_text().replace('kubernetes: "1.33"', 'kubernetes: "1.35"'))
    pools = root / "pools" / "inference.yaml"
    text = pools.read_text().replace(*NODES)
    head = "  cardType: l40s-48gb\n"
    devices = "  devices: {allocation: draClaims, migratingFrom: devicePlugin}\n"
    pools.write_text(text.replace(head, head + devices))


def paste_transition(root: Path, hazards: list[dict[str, Any]]) -> dict[str, Any]:
    """What a user does with `diff --kubeconfig`'s `kueue-flavor-renamed` for the pool: its
    snippet into the Pool's spec, `holds` the live admitted usage it prints. Returns the
    pasted `kueue` stanza."""
    (renamed,) = [
        h
        for h in hazards
        if h["rule"] == "kueue-flavor-renamed" and f"for pool {POOL}:" in h["message"]
    ]
    stanza = dict(yaml.safe_load(renamed["snippet"])["kueue"])
    found = _HOLDS.search(renamed.get("live", ""))
    assert found, f"no live usage in {renamed}"
    stanza["retiringFlavor"]["holds"] = yaml.safe_load(found.group(1))
    pools = root / "pools" / "inference.yaml"
    docs = list(yaml.safe_load_all(pools.read_text()))
    for doc in docs:
        if doc["metadata"]["name"] == POOL:
            doc["spec"]["kueue"] = stanza
    pools.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return stanza


def driver_view(policy: Policy) -> Policy:
    """The fleet as the nodes run it: the pool's switched nodes on the driver alone, the rest
    on the device plugin alone (node-by-node migration), as two pool entries of one name."""
    pool = policy.pools[POOL]
    plugin = dataclasses.replace(
        pool,
        nodes=tuple(n for n in pool.nodes if n.name not in SWITCHED),
        allocation=dra_plan.DEVICE_PLUGIN,
        migrating_from=None,
    )
    driver = dataclasses.replace(
        pool, nodes=tuple(n for n in pool.nodes if n.name in SWITCHED), migrating_from=None
    )
    pools = {name: p for name, p in policy.pools.items() if name != POOL}
    return dataclasses.replace(policy, pools={**pools, POOL: plugin, f"{POOL}@driver": driver})


def switch(sim: cluster.SimCluster, policy: Policy) -> list[Obj]:
    """Nodes as `driver_view` has them, the switched ones labelled for the GPU Operator, and
    the driver's slices of the switched nodes published; returns the slices."""
    view = driver_view(policy)
    policyfleet.create_from(sim, view)
    for name in SWITCHED:
        sim.kubectl("label", "node", name, f"{dra_plan.DEVICE_PLUGIN_SWITCH}=false", "--overwrite")
    return dra.publish(sim, view)


def claim_work(jobs_dir: Path, pods: int) -> Obj:
    """The pool's claiming Deployment from the new `hetgitops jobs` output, `pods` replicas."""
    obj = dict(yaml.safe_load((jobs_dir / CLAIM_WORK).read_text()))
    obj["metadata"]["name"] += "-claims"
    obj["metadata"].setdefault("labels", {})[LABEL] = "true"
    obj["spec"]["replicas"] = pods
    template = obj["spec"]["template"]["metadata"]["labels"]
    obj["spec"]["selector"]["matchLabels"][LABEL] = template[LABEL] = "true"
    return obj


def plain_work(jobs_dir: Path) -> Obj:
    """The case's own pending plain Job on the pool (PLAIN_WORK in the claiming team's
    namespace and queue), labelled `LABEL: plain`."""
    (obj,) = [d for d in yaml.safe_load_all((jobs_dir / PLAIN_WORK).read_text()) if d]
    (team,) = [d for d in yaml.safe_load_all((jobs_dir / CLAIM_WORK).read_text()) if d]
    obj["metadata"]["namespace"] = team["metadata"]["namespace"]
    for key in _QUEUE_LABELS:
        obj["metadata"]["labels"][key] = team["metadata"]["labels"][key]
    obj["spec"]["template"]["metadata"]["labels"]["hetgitops.io/team"] = team["metadata"]["labels"][
        "hetgitops.io/team"
    ]
    obj["metadata"]["name"] += "-dra-plain"
    obj["metadata"].setdefault("labels", {})[LABEL] = "plain"
    obj["spec"]["parallelism"] = obj["spec"]["completions"] = PLAIN_PODS
    return dict(obj)


def _workload_of(sim: cluster.SimCluster, obj: Obj) -> Obj | None:
    namespace = obj["metadata"]["namespace"]
    listed = sim.kubectl("get", "workloads.kueue.x-k8s.io", "-n", namespace, "-o", "json")
    for workload in json.loads(listed.stdout)["items"]:
        for owner in workload["metadata"].get("ownerReferences") or []:
            if owner.get("kind") == obj["kind"] and owner.get("name") == obj["metadata"]["name"]:
                return dict(workload)
    return None


def wait_pending(sim: cluster.SimCluster, obj: Obj, timeout: float = 120) -> str:
    """Until Kueue has looked at the Job's Workload and left it pending for quota (QuotaReserved
    False, reason Pending: not Inadmissible, which a missing or inactive queue gives); its
    `namespace/name`. On timeout, or if Kueue admits it, what the Workload said."""
    deadline, seen = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        seen = _workload_of(sim, obj)
        reserved = condition(seen or {}, "QuotaReserved") or {}
        if reserved.get("status") == "True":
            raise cluster.SimError(f"the plain work was admitted, not left pending: {reserved}")
        if seen is not None and reserved.get("status") == "False":
            if reserved.get("reason") != "Pending":
                raise cluster.SimError(f"the plain work cannot be admitted at all: {reserved}")
            return f"{seen['metadata']['namespace']}/{seen['metadata']['name']}"
        time.sleep(1)
    status = (seen or {}).get("status")
    raise cluster.SimError(f"the plain work's Workload not pending after {timeout:.0f}s: {status}")


def remove_plain_work(sim: cluster.SimCluster, obj: Obj) -> None:
    namespace, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
    sim.kubectl("delete", "job", name, "-n", namespace, "--wait=true", "--ignore-not-found")
    cluster.wait_for(
        lambda: _workload_of(sim, obj) is None, timeout=120, what=f"Workload of job {name} gone"
    )


def remove_claim_work(sim: cluster.SimCluster, obj: Obj) -> None:
    namespace = obj["metadata"]["namespace"]
    name = obj["metadata"]["name"]
    sim.kubectl("delete", "deployment", name, "-n", namespace, "--wait=true", "--ignore-not-found")
    sim.kubectl("delete", "pods", "-n", namespace, "-l", f"{LABEL}=true", "--wait=true")


def allocations(sim: cluster.SimCluster, pod: Obj) -> list[Obj]:
    """The allocation results of the pod's claims (kube-scheduler writes them before it binds
    the pod; kube-controller-manager made the claim from the template)."""
    namespace = pod["metadata"]["namespace"]
    found = []
    for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        name = status.get("resourceClaimName")
        if not name:
            continue
        claim = json.loads(
            sim.kubectl("get", "resourceclaims", name, "-n", namespace, "-o", "json").stdout
        )
        allocation = (claim.get("status") or {}).get("allocation") or {}
        found += list((allocation.get("devices") or {}).get("results") or [])
    return found
