"""Plan stage: what each pool's Kueue ResourceFlavor selects, tolerates and is called, and the
Topology's levels and name: the facts ClusterQueues, job templates, checks, explain and drift
name flavors by. compilers/kueue_flavors.py spells them as objects and says why a flavor whose
immutable fields change gets a new name (`<pool>-<digest>`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from hetgitops.model.policy import Fleet, Policy, Pool, Taint
from hetgitops.plan import dra
from hetgitops.plan.node_labels import domain, flavor_node_labels, topology_label

HOSTNAME = "kubernetes.io/hostname"


def toleration(taint: Taint) -> dict[str, str]:
    """Kueue adds a flavor's tolerations to admitted pods, so they land on the tainted pool."""
    if taint.value is None:
        return {"key": taint.key, "operator": "Exists", "effect": taint.effect}
    return {"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect}


# Kueue v0.19.2 CRD (config/components/crd/bases/kueue.x-k8s.io_resourceflavors.yaml): with
# topologyName set, these spec fields are `self == oldSelf` (main ff69552 keeps topologyName).
IMMUTABLE_WITH_TOPOLOGY = ("nodeLabels", "tolerations", "topologyName")
DIGEST_LENGTH = 8


def immutable_flavor_fields(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The fields of a ResourceFlavor spec the API server will not let change (for `diff`)."""
    return IMMUTABLE_WITH_TOPOLOGY if spec.get("topologyName") else ()


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_LENGTH]


def identity(name: str, spec: Mapping[str, Any], fields: tuple[str, ...]) -> str:
    """`name`, or `name-<digest of the immutable fields>` when some are immutable."""
    if not fields:
        return name
    return f"{name}-{_digest({f: spec.get(f) for f in fields})}"


def flavor_spec(policy: Policy, fleet: Fleet, pool: Pool) -> dict[str, Any]:
    """The ResourceFlavor's spec: the labels it selects, the pool taints it lists
    (`node_taints`) and tolerates, its Topology. Its immutable fields digest into
    `flavor_name`."""
    labels = pool.flavor_node_labels
    spec: dict[str, Any] = {
        "nodeLabels": dict(labels if labels is not None else flavor_node_labels(policy, pool))
    }
    if taints := node_taints(pool):
        spec["nodeTaints"] = taints
    if pool.taints:
        spec["tolerations"] = [toleration(t) for t in pool.taints]
    # Kueue's topology-aware scheduling does not count DRA devices (plan/dra.py): a pool whose
    # pods claim them gets a flavor without a Topology.
    if fleet.topology_name and not dra.on_dra(pool):
        spec["topologyName"] = topology_name(policy, fleet)
    return spec


def flavor_name(policy: Policy, fleet: Fleet, pool: Pool) -> str:
    """The ResourceFlavor of `pool`, as ClusterQueues name it."""
    spec = flavor_spec(policy, fleet, pool)
    if pool.flavor_name:  # an adopted flavor keeps its name (`spec.kueue.flavorName`)
        return pool.flavor_name
    return identity(pool.name, spec, immutable_flavor_fields(spec))


def node_taint(taint: Taint) -> dict[str, str]:
    """A pool taint as a flavor's `nodeTaints` entry: the Node taint's own fields."""
    if taint.value is None:
        return {"key": taint.key, "effect": taint.effect}
    return {"key": taint.key, "value": taint.value, "effect": taint.effect}


def node_taints(pool: Pool) -> list[dict[str, str]]:
    """The pool flavor's `nodeTaints`: the pool's taints, in their order, when
    `spec.kueue.flavorNodeTaints` says so. Kueue's flavor assigner checks them against the pod
    set's tolerations plus the flavor's own (effects NoSchedule and NoExecute only), and the
    flavor tolerates every pool taint (`toleration`), so they rule no job out; explain reads
    them here all the same, so a flavor's taints have one reader."""
    return [node_taint(t) for t in pool.taints] if pool.flavor_node_taints else []


RETIRING_TAINT_SUFFIX = "/retiring-flavor"


def retiring_taint(policy: Policy) -> dict[str, str]:
    """The Kueue-side taint of a retiring flavor: only Kueue reads a flavor's `nodeTaints`
    (no node carries it), so it stops new admissions there and moves no pod."""
    return {"key": f"{domain(policy)}{RETIRING_TAINT_SUFFIX}", "effect": "NoSchedule"}


def retiring_node_taints(policy: Policy, pool: Pool) -> list[dict[str, str]]:
    """A retiring flavor's `nodeTaints`: the retiring taint first (Kueue names the first
    untolerated taint of the list, so its message keeps naming the retirement), then the
    pool's own (`node_taints`), any of them that has the retiring taint's key and effect left
    out (the flavor webhook refuses a key and effect listed twice)."""
    first = retiring_taint(policy)
    same = (first["key"], first["effect"])
    return [first, *(t for t in node_taints(pool) if (t["key"], t["effect"]) != same)]


def topology_levels(policy: Policy, fleet: Fleet) -> list[str]:
    """Broadest level first; Kueue accepts the hostname label only as the last level."""
    if fleet.topology_node_labels:  # an adopted Topology's labels, exactly
        return list(fleet.topology_node_labels)
    labels = [topology_label(policy, level) for level in fleet.topology_levels]
    return [label for label in labels if label != HOSTNAME] + (
        [HOSTNAME] if HOSTNAME in labels else []
    )


def topology_name(policy: Policy, fleet: Fleet) -> str:
    """The Topology's name: the Fleet's, plus a digest of its (immutable) levels."""
    if fleet.topology_kueue_name:  # an adopted Topology keeps its name
        return fleet.topology_kueue_name
    levels = topology_levels(policy, fleet)
    return identity(fleet.topology_name or "", {"levels": levels}, ("levels",))
