"""Diff stage, day-2 hazards of GPU sharing: where a change lowers a pool's time-slicing or MPS
replicas, which step of the two-step reduction it is (docs/day2.md "Time-slicing down").

The NVIDIA device plugin advertises `replicas` annotated devices per GPU and, when the
config-manager sidecar SIGHUPs it after a config label change, restarts its plugin servers and
re-registers with the smaller list; nothing in it lists or deletes pods. The pods sharing the GPUs
keep running, the node's allocatable drops below what they hold, and Kueue (quota) and the scheduler
(allocatable) both admit nothing new until they finish. Lowering the replicas and the quotas in one
change therefore overbooks the nodes; step 1 (`retiringReplicas`: the plugin keeps the old count,
the quotas count the new) does not, and step 2 (removing it) is safe once the replicas in use fit
the new count.

The manifest-level `sharing-reduced` sees a device-plugin label going to fewer replicas; the
policies say which step that is (`staged`). Each hazard carries a ("capacity", "<resource>|<units>")
scope: what the pool's nodes hold after the change, which the live radius (blast.py) compares with
the replicas in use on them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

import yaml

from hetgitops.diff.hazards.nodes import nfd_rules, rule_nodes
from hetgitops.diff.hazards.reading import listed_nodes, of_kind
from hetgitops.diff.hazards.registry import Hazard, hazard_rule
from hetgitops.diff.hazards.sharing_off import field_of, per_node, shares, turned_off
from hetgitops.model.policy import Policy, Pool
from hetgitops.output.manifests import Manifest
from hetgitops.plan import capacity

DEVICE_PLUGIN_LABEL = "nvidia.com/device-plugin.config"


def _replicas(manifests: Sequence[Manifest]) -> dict[str, int]:
    """Replicas per GPU of each device-plugin config (the ConfigMap's keys)."""
    found: dict[str, int] = {}
    for m in of_kind(manifests, "ConfigMap"):
        if "device-plugin" not in m.name:
            continue
        for key, text in (m.obj.get("data") or {}).items():
            try:
                config = yaml.safe_load(str(text)) or {}
            except yaml.YAMLError:
                continue
            sharing = config.get("sharing") if isinstance(config, dict) else None
            replicas = 1
            for mode in ("timeSlicing", "mps"):
                for resource in ((sharing or {}).get(mode) or {}).get("resources") or []:
                    replicas = max(replicas, int(resource.get("replicas", 1)))
            found[str(key)] = replicas
    return found


@hazard_rule(
    "sharing-reduced",
    when=(
        "A pool's time-slicing or MPS replicas per GPU go down: the device plugin advertises "
        "fewer replicas while the pods already sharing each GPU keep running, so the nodes are "
        "over-allocated until they finish and new pods wait."
    ),
    fix=(
        "reduce in two steps: first `retiringReplicas` (the old count) next to the new "
        "`replicas` and lowered quotas, then remove it once `diff --kubeconfig` says 'safe now'; "
        "to turn sharing off, first lower the quotas to the whole GPUs keeping the stanza, then "
        "remove it once 'safe now' (with renameByDefault: drain the nodes); or drain the nodes "
        "before the sync."
    ),
)
def sharing_reduced(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """A node's device-plugin config label points at a config with fewer replicas per GPU."""
    old_replicas, new_replicas = _replicas(before), _replicas(after)
    old_rules, new_rules = nfd_rules(before), nfd_rules(after)
    for name in sorted(set(old_rules) & set(new_rules)):
        was = str((old_rules[name][0].get("labels") or {}).get(DEVICE_PLUGIN_LABEL, "default"))
        now = str((new_rules[name][0].get("labels") or {}).get(DEVICE_PLUGIN_LABEL, "default"))
        a, b = old_replicas.get(was, 1), new_replicas.get(now, 1)
        if b >= a:
            continue
        nodes = rule_nodes(new_rules[name][0])
        yield Hazard(
            rule="sharing-reduced",
            subject=f"NodeFeatureRule rule {name}",
            message=f"lowers GPU sharing from {a} to {b} replicas per GPU on {len(nodes)} node(s) "
            f"({listed_nodes(nodes)}): the device plugin then advertises {b} per GPU while the "
            "pods already sharing each GPU keep running, so those nodes stay over-allocated until "
            "they finish and new pods wait",
            action="drain those nodes, or wait for their shared pods to finish, before the sync",
            span=new_rules[name][1].origin,
            scope=(("nodes", ",".join(nodes)),),
        )


def _pool_of(policy: Policy | None, node: str) -> Pool | None:
    if policy is None:
        return None
    return next((p for p in policy.pools.values() if any(n.name == node for n in p.nodes)), None)


def _held(policy: Policy, pool: Pool, nodes: set[str], replicas: int) -> tuple[str, int]:
    """(resource, units) the device plugin advertises on `nodes` of `pool` at `replicas`."""
    card = policy.card_types[pool.card_type]
    resource = capacity.main_resource(pool, card)
    subset = replace(
        pool,
        nodes=tuple(n for n in pool.nodes if n.name in nodes),
        time_slicing_replicas=replicas if pool.time_slicing_replicas else None,
        mps_replicas=None if pool.time_slicing_replicas else replicas,
        retiring_replicas=None,
    )
    return resource, capacity.pool_resources(subset, card, policy.fleet).get(resource, 0)


@hazard_rule(
    "sharing-retired",
    when=(
        "Step 2 of a staged sharing reduction (`retiringReplicas` removed): the device plugin "
        "drops to the new replicas per GPU; replicas still in use above what the nodes then hold "
        "overbook them until they finish."
    ),
    fix=(
        "merge only when `diff --kubeconfig` says 'safe now'; until then keep `retiringReplicas`."
    ),
)
def _reduced(old: Policy | None, new: Policy | None, hazard: Hazard) -> Hazard:
    """Step 2, or the whole reduction in one step (the unsafe way)."""
    nodes = set(dict(hazard.scope).get("nodes", "").split(",")) - {""}
    first = min(nodes) if nodes else ""
    was, now = _pool_of(old, first), _pool_of(new, first)
    if old is None or new is None or now is None or was is None:
        return hazard
    if shares(was) and not shares(now):
        return turned_off(old, new, was, now, hazard)
    resource, held = _held(new, now, nodes, now.advertised_replicas)
    scope = (
        *hazard.scope,
        ("capacity", f"{resource}|{held}"),
        ("node-capacity", f"{resource}|{per_node(now, nodes, now.advertised_replicas)}"),
    )
    span = now.origin.at("spec", field_of(now), "replicas")
    if was.retiring_replicas:
        return replace(
            hazard,
            rule="sharing-retired",
            message=f"ends pool {now.name}'s staged reduction: the device plugin goes from "
            f"{was.advertised_replicas} to {now.advertised_replicas} replicas per GPU on "
            f"{len(nodes)} node(s), which then hold {held} {resource}; pods already sharing "
            "the GPUs keep running (the plugin deletes none), so any replicas in use above "
            f"{held} overbook the nodes until they finish",
            action="merge only when `hetgitops diff --kubeconfig` says 'safe now' (no more "
            f"than {held} {resource} in use on those nodes); until then keep "
            f"spec.{field_of(was)}.retiringReplicas: {was.advertised_replicas}",
            span=span,
            scope=scope,
        )
    return replace(
        hazard,
        message=hazard.message + f" (the nodes then hold {held} {resource}); in one change "
        "with the quotas this overbooks the pool by whatever runs above that",
        action=f"do it in two steps: first keep the device plugin at {was.advertised_replicas} "
        f"with spec.{field_of(was)}.retiringReplicas: {was.advertised_replicas} next to "
        f"replicas: {now.shared_replicas} (Kueue's quotas shrink, the nodes still hold what "
        "runs), sync, then remove retiringReplicas once `hetgitops diff --kubeconfig` says "
        "'safe now'; or drain those nodes before this sync",
        span=span,
        scope=scope,
    )


@hazard_rule(
    "sharing-staged",
    when=(
        "Step 1 of a staged sharing reduction (`retiringReplicas`): the device plugin keeps the "
        "old replicas per GPU while Kueue's quotas fit the new count; nothing is evicted and new "
        "work waits until what runs fits."
    ),
    fix=(
        "none needed; remove `retiringReplicas` in its own change once `diff --kubeconfig` on "
        "that change says 'safe now'."
    ),
)
def _started(old: Policy | None, new: Policy) -> Iterator[Hazard]:
    """Step 1: a pool that starts (or changes) a staged reduction."""
    for pool in new.pools.values():
        retiring = pool.retiring_replicas
        if not retiring or retiring <= pool.shared_replicas:
            continue
        before = old.pools.get(pool.name) if old is not None else None
        if before is not None and before.retiring_replicas == retiring:
            continue
        nodes = {n.name for n in pool.nodes}
        resource, held = _held(new, pool, nodes, pool.shared_replicas)
        _, advertised = _held(new, pool, nodes, retiring)
        listed = sorted(nodes)
        yield Hazard(
            rule="sharing-staged",
            subject=f"Pool {pool.name}",
            message=f"starts a staged reduction to {pool.shared_replicas} replicas per GPU: the "
            "device "
            f"plugin keeps advertising {retiring} ({advertised} {resource} on {len(nodes)} "
            f"node(s)) while Kueue's quotas drop to fit {held}; nothing is evicted and what "
            f"runs above {held} stays counted, new work on the pool waits until it fits",
            action=f"when `hetgitops diff --kubeconfig` on the change removing "
            f"spec.{field_of(pool)}.retiringReplicas says 'safe now', merge that change",
            span=pool.origin.at("spec", field_of(pool), "retiringReplicas"),
            scope=(
                ("nodes", ",".join(listed)),
                ("capacity", f"{resource}|{held}"),
                ("node-capacity", f"{resource}|{per_node(pool, nodes, pool.shared_replicas)}"),
            ),
        )


def staged(old: Policy | None, new: Policy | None, found: Sequence[Hazard]) -> list[Hazard]:
    """`found` with each `sharing-reduced` told its step, plus the step-1 hazards."""
    out = [_reduced(old, new, h) if h.rule == "sharing-reduced" else h for h in found]
    if new is not None:
        out += _started(old, new)
    return sorted(out, key=lambda h: (h.rule, h.subject))
