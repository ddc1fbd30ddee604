"""Diff stage, day-2 hazards of GPU sharing: a pool's time-slicing or MPS removed entirely
(whole GPUs again), which `retiringReplicas` cannot stage (the schema takes `replicas` >= 2 in
either stanza, so there is no `replicas: 1` to stage towards).

The mode and resource come from the OLD pool: the new one has no `timeSlicing` or `mps` left.
The staged path that the schema accepts is the same one `retiringReplicas` spells, in two
changes: (1) keep the sharing stanza as it is and lower the pool's quotas to what its nodes
hold as whole GPUs, so the device plugin keeps advertising the replicas that run while Kueue
admits nothing new above the GPUs; (2) remove the stanza once no node has more of the
resource in use than it has GPUs (`diff --kubeconfig` says 'safe now', per node: the
scheduler packs replicas per node, not per pool). Step 1 is what `sharing-staged` measured
on the simulated fleet (docs/day2.md: a lowered quota stops new admissions and evicts
nothing), and the device plugin deletes no pod when it re-registers fewer devices (sharing.py).

With `renameByDefault` the pods request `<resource>.shared`, which the nodes stop advertising,
while the whole GPUs under them become `<resource>` that Kueue and the scheduler see as free:
no quota step keeps the two apart, so the answer is to drain those nodes.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from hetgitops.diff.hazards.registry import Hazard
from hetgitops.model.policy import Policy, Pool
from hetgitops.plan import capacity


def field_of(pool: Pool) -> str:
    """The sharing stanza a (sharing) pool is written with."""
    return "timeSlicing" if pool.time_slicing_replicas else "mps"


def shares(pool: Pool) -> bool:
    return bool(pool.time_slicing_replicas or pool.mps_replicas)


def per_node(pool: Pool, nodes: Collection[str], per_gpu: int) -> str:
    """`n1=4,n2=4`: the units each of `nodes` holds at `per_gpu` replicas (a "node-capacity"
    scope, which the live radius checks node by node)."""
    return ",".join(f"{n.name}={n.cards * per_gpu}" for n in pool.nodes if n.name in nodes)


def turned_off(old: Policy, new: Policy, was: Pool, now: Pool, hazard: Hazard) -> Hazard:
    """`sharing-reduced` for a pool whose sharing goes away: drain (renamed resource), the two
    steps (the old quotas exceed the whole GPUs), or step 2 (they already fit)."""
    nodes = set(dict(hazard.scope).get("nodes", "").split(",")) - {""}
    card = old.card_types[was.card_type]
    stanza, a = field_of(was), was.advertised_replicas
    shared, whole = capacity.main_resource(was, card), card.resource_name
    gpus = sum(n.cards for n in now.nodes if n.name in nodes)
    span = now.origin.at("spec")
    text = (
        f"turns GPU sharing off on {len(nodes)} node(s): the device plugin goes from {a} "
        f"{stanza} replicas per GPU to whole GPUs ({gpus} {whole})"
    )
    if shared != whole:
        return replace(
            hazard,
            message=f"{text}; the running pods request {shared}, which the nodes stop advertising, "
            f"while the GPUs they still share become {gpus} free {whole} to Kueue and the "
            "scheduler, so new whole-GPU work lands on GPUs in use; no staged change keeps "
            "the two apart",
            action=f"drain those nodes (or wait for their {shared} pods to finish) before the sync",
            span=span,
            scope=(*hazard.scope, ("capacity", f"{shared}|0")),
        )
    scope = (
        *hazard.scope,
        ("capacity", f"{shared}|{gpus}"),
        ("node-capacity", f"{shared}|{per_node(now, nodes, 1)}"),
    )
    quotas = capacity.pool_quota_total(old, was, shared)
    if quotas > gpus:
        return replace(
            hazard,
            message=f"{text}, while the base policy's quotas on pool {was.name} admit {quotas} "
            f"{shared}: the replicas running above each node's GPUs overbook it until they "
            "finish, and new pods wait",
            action=f"do it in two steps: first keep spec.{stanza} as it is and lower the quotas on "
            f"pool {was.name} to {gpus} {shared} in all (now {quotas}: Kueue admits nothing "
            "new above that, what runs stays), sync; then remove spec."
            f"{stanza} once `hetgitops diff --kubeconfig` on that change says 'safe now' (no "
            "node with more in use than its GPUs); or drain those nodes before this sync",
            span=span,
            scope=scope,
        )
    return replace(
        hazard,
        message=f"{text}; the quotas on pool {was.name} already fit {gpus} {shared} (step 1 done), "
        "but replicas still running above a node's GPUs overbook it until they finish",
        action=f"merge only when `hetgitops diff --kubeconfig` says 'safe now' (no node with "
        f"more {shared} in use than its GPUs); until then keep spec.{stanza}",
        span=span,
        scope=scope,
    )
