"""Diff stage, day-2 hazard of the fleet's MIG strategy: switching to `single` turns the
whole-GPU requests that land on a MIG pool into MIG slices.

Under `single` the NVIDIA device plugin advertises every MIG instance under the card's own
resource name
(`config.Resources.AddMIGResource("*", "gpu")`) and requires every GPU of a node to carry the
same layout. A pod asking for `nvidia.com/gpu: 1` on such
a node therefore gets one slice: nothing changes for the pods running now (their devices were
allocated at start), but every pod a controller creates after the sync (a retry, a rollout,
a reschedule) that lands on the pool's nodes runs on a slice, and Kueue's `nvidia.com/gpu`
quota on the pool's flavor counts slices (plan/capacity.py `node_units`).
"""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.diff.hazards.reading import listed_nodes
from hetgitops.diff.hazards.registry import Hazard, hazard_rule
from hetgitops.model.policy import Policy, Pool
from hetgitops.plan import capacity


def _profiles(pool: Pool) -> list[str]:
    return sorted({profile for device in pool.mig for profile in device.profiles})


@hazard_rule(
    "mig-strategy-single",
    when=(
        "The fleet's migStrategy becomes `single`: the device plugin then advertises each MIG "
        "instance of a MIG pool as the card's own resource (nvidia.com/gpu), so a whole-GPU "
        "pod (`nvidia.com/gpu: 1`) that a controller recreates on the pool's nodes runs on one "
        "MIG slice, and Kueue's nvidia.com/gpu quota there counts slices."
    ),
    fix=(
        "before the sync, move whole-GPU work off the MIG pools (a node selector or a queue "
        "for a pool without MIG) or make it request the slice it needs; or keep migStrategy "
        "mixed."
    ),
)
def strategy_single(old: Policy | None, new: Policy | None) -> Iterator[Hazard]:
    """One hazard per MIG pool when the strategy turns to single (from mixed or none)."""
    if old is None or new is None or new.fleet is None:
        return
    if capacity.mig_strategy(old.fleet) == "single":
        return
    if capacity.mig_strategy(new.fleet) != "single":
        return
    span = new.fleet.origin.at("spec", "gpuOperator", "migStrategy")
    for pool in sorted(new.pools.values(), key=lambda p: p.name):
        card = new.card_type_of(pool)
        if card is None or not pool.mig:
            continue
        nodes = sorted(n.name for n in pool.nodes)
        resource, slices = card.resource_name, " or ".join(_profiles(pool))
        yield Hazard(
            rule="mig-strategy-single",
            subject=f"Pool {pool.name}",
            message="migStrategy becomes single: the device plugin advertises each MIG instance "
            "on "
            f"the pool's {len(nodes)} node(s) ({listed_nodes(nodes)}) as {resource}, so a "
            f"whole-GPU pod ({resource}: 1) recreated there after the sync (a retry, a "
            f"rollout, a reschedule) runs on one {slices} slice, not a GPU; pods running now "
            f"keep their devices, and Kueue's {resource} quota on the pool counts slices",
            action=f"before the sync, move whole-GPU work off pool {pool.name} (a queue or node "
            f"selector for a pool without MIG), or make it request a {slices} slice; or keep "
            "migStrategy mixed",
            span=span,
            scope=(("nodes", ",".join(nodes)), ("requests", resource)),
        )
