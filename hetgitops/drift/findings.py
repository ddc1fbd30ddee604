"""Drift stage: the rule ids of `drift` and the helpers that word its findings."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from hetgitops.diagnostics import Diagnostic, Severity, Span, register_rules
from hetgitops.drift.ownership import Writer

# Rule id -> one-line documentation (the catalogue of `drift`'s findings; SARIF uses it).
RULES: dict[str, str] = {
    "drift-missing": "An object the policy renders is not in the cluster.",
    "drift-changed": "A field the policy declares has another value in the cluster; the field "
    "manager that wrote the live value, and when, is named.",
    "drift-field-missing": "A field the policy declares is absent from the live object.",
    "drift-removed": "A field the policy no longer declares is still live, owned by the GitOps "
    "applier (--manager): the next sync with pruning of fields would remove it.",
    "drift-added": "A live field the policy does not declare, written by another field manager.",
    "drift-co-owned": "A field the policy no longer declares is still live and owned by the "
    "GitOps applier (--manager) and another field manager: server-side apply removes a field "
    "only when no other manager owns it, so no sync will remove it.",
    "drift-terminating": "An object the policy renders is being deleted (it has a "
    "deletionTimestamp) and a finalizer holds it: it stops existing once the finalizer's "
    "controller lets go, whatever it looks like now.",
    "drift-orphan": "An object carries hetgitops' labels for this fleet, but the policy no longer "
    "renders it.",
    "drift-target-missing": "A kind the policy renders is not served by the cluster (its CRD or "
    "CRD version is not installed).",
    "drift-forbidden": "The credentials may not list a kind that drift needs to read.",
    "drift-apply-changes": "--mode server-dry-run: a server-side apply of the policy as field "
    "manager hetgitops would change this field.",
    "drift-node-absent": "Nodes the policy lists are not in the cluster (one finding per pool, the "
    "nodes as ranges; `details` has each).",
    "drift-node-unpooled": "A node advertises accelerators but belongs to no policy pool.",
    "drift-node-labels": "Pool nodes lack labels the policy gives them, or carry other values (one "
    "finding per pool, the nodes as ranges; `details` has each node and label).",
    "drift-node-taints": "Pool nodes lack a taint of their pool, or carry it with another value "
    "(one finding per pool, the nodes as ranges).",
    "drift-accelerators": "Nodes advertise fewer accelerators than the policy counts (a failed "
    "or missing card); the pool's live quota is then compared with the live capacity (one "
    "finding per pool, the nodes as ranges).",
    "drift-dra-devices": "Nodes of a DRA pool publish, in their ResourceSlices of NVIDIA's DRA "
    "driver, fewer devices of the card type than the policy counts (node count x cards, MIG "
    "devices per its layout), or devices the pool's DeviceClass would not select (another "
    "product, architecture, memory or MIG profile), or no slice at all (the driver's kubelet "
    "plugin is not running there).",
    "drift-mig-failed": "The GPU Operator's MIG manager reports nvidia.com/mig.config.state "
    "failed on a node.",
    "drift-mig-pending": "nvidia.com/mig.config.state has been pending for longer than "
    "--mig-pending-timeout.",
    "drift-mig-config": "Nodes' nvidia.com/mig.config differs from the layout the policy gives "
    "their pool (one finding per pool).",
    "drift-usage-above-quota": "A ClusterQueue's live usage exceeds the nominal quota the policy "
    "now sets: admitted work keeps running above the new quota until it finishes.",
    "drift-unmanaged": "An object of a rendered name exists without hetgitops' labels (made by "
    "hand or by another tool, e.g. before hetgitops import): the first sync adopts it and "
    "changes the fields listed.",
    "drift-competing-queue": "An unmanaged Kueue ClusterQueue has quota on a managed "
    "ResourceFlavor, or an unmanaged Volcano Queue is bound to a managed pool: it competes "
    "with the policy's teams for the same nodes.",
    "drift-cluster-not-checked": "A cluster of a multi-cluster policy was left out with "
    "--skip-cluster: its objects and nodes were not compared, so drift cannot call it clean.",
}
WARNINGS = {"drift-usage-above-quota", "drift-mig-pending", "drift-cluster-not-checked",
            "drift-unmanaged", "drift-competing-queue"}  # fmt: skip
# How to act on each drift finding; the catalogue (`hetgitops rules RULE`) prints it.
_FIXES = {
    "drift-missing": "sync the rendered tree (Argo CD / Flux), or find why the apply failed.",
    "drift-changed": "sync, or put the live value into the policy if it is the one you want.",
    "drift-field-missing": "sync; if it comes back missing, a webhook or controller drops it.",
    "drift-removed": "sync with pruning, or declare the field again in the policy.",
    "drift-added": "declare the field in the policy, or stop the other field manager.",
    "drift-co-owned": "have each other manager let go (apply once as it without the field), "
    "or remove the field with a JSON patch; then stop that manager from applying it again.",
    "drift-terminating": "find why it was deleted; let the finalizer's controller finish (a "
    "ClusterQueue waits for its admitted workloads), then sync to create it again.",
    "drift-orphan": "delete the object, or render it again from the policy.",
    "drift-target-missing": "install the target's CRDs, or drop the target from the Fleet.",
    "drift-forbidden": "grant list on the kind (render the drift-rbac target) or use other "
    "credentials.",
    "drift-apply-changes": "sync; the listed fields are what the next apply changes.",
    "drift-node-absent": "add the node to the cluster, or remove it from the pool.",
    "drift-node-unpooled": "add the node to a pool's spec.nodes.",
    "drift-node-labels": "check that NFD runs on the node and its NodeFeatureRule matches it.",
    "drift-node-taints": "check that nfd-master runs with taints enabled and the rule matches.",
    "drift-accelerators": "repair or replace the card, or lower the pool's cards until it is.",
    "drift-mig-failed": "read the mig-manager logs on the node; fix the layout or the node.",
    "drift-mig-pending": "drain the GPU pods on the node so mig-manager can apply the layout.",
    "drift-dra-devices": "check the DRA driver's kubelet plugin on the node (its logs, the "
    "GPU's health), or correct the pool's card type, cards or MIG layout.",
    "drift-mig-config": "wait for mig-manager, or check the node's nvidia.com/mig.config label.",
    "drift-usage-above-quota": "nothing, or preempt: the usage falls as admitted work finishes.",
    "drift-unmanaged": "sync: the applier takes the object over (review the fields first), or "
    "rename it in the policy (spec.kueue) if it is not the same object.",
    "drift-competing-queue": "import the queue into the policy (hetgitops import), or move its "
    "quota off the managed flavor.",
    "drift-cluster-not-checked": "run drift without --skip-cluster once that cluster is reachable.",
}
register_rules(
    "drift",
    {rule: f"{doc}\nFix: {_FIXES[rule]}" for rule, doc in RULES.items()},
    dict.fromkeys(WARNINGS, Severity.WARNING),
)


def severity(rule: str) -> Severity:
    return Severity.WARNING if rule in WARNINGS else Severity.ERROR


def finding(
    rule: str,
    message: str,
    span: Span,
    *,
    path: str = "",
    hint: str = "",
    details: Sequence[str] = (),
) -> Diagnostic:
    return Diagnostic(
        rule=rule,
        severity=severity(rule),
        message=message,
        span=span,
        path=path,
        hint=hint,
        details=tuple(details),
    )


def writers_text(writers: Iterable[Writer]) -> str:
    names = [str(w) for w in writers]
    return ", ".join(names) if names else "no field manager recorded"


def shown(value: Any) -> str:
    """A value as one short line (JSON, cut at 120 characters)."""
    import json

    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    text = repr(text) if isinstance(value, str) else text
    return text if len(text) <= 120 else text[:117] + "..."


def some_nodes(nodes: Sequence[Any]) -> str:
    """`node gpu-01` for one node, `3 nodes` for more: how a pool's finding opens."""
    return f"node {nodes[0].name}" if len(nodes) == 1 else f"{len(nodes)} nodes"
