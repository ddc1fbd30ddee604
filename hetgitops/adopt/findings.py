"""Adopt stage: the rule ids `hetgitops import` emits, with their documentation."""

from __future__ import annotations

from hetgitops.diagnostics import Diagnostic, Severity, Span, register_rules

RULES: dict[str, str] = {
    "import-field-changes": "The policy written by import renders this imported object with "
    "another value here: the first sync would change the field. The policy language cannot "
    "(yet) say what the cluster says.",
    "import-object-not-adopted": "An object of a kind import reads has no counterpart in the "
    "written policy: the first sync leaves it alone, unmanaged (and a GitOps prune would not "
    "touch it), but the policy does not describe it.",
    "import-kind-not-imported": "Objects of a kind import does not translate yet (Volcano "
    "Queues, Topologies, AdmissionChecks, ...): they stay as they are, outside the policy.",
    "import-flavor-without-accelerators": "A ResourceFlavor selects no node with accelerators "
    "and no ClusterQueue gives it accelerator quota: a hetgitops Pool is a set of accelerator "
    "nodes, so the flavor (and the quota on it) is not part of the policy.",
    "import-team-without-namespace": "A ClusterQueue has no LocalQueue: no namespace submits "
    "to it. The policy gives the team a namespace named after it, which the first sync creates.",
    "import-unknown-card": "A node's accelerator matches no card type of hetgitops' catalogue: "
    "import wrote a new CardType whose performance coefficient is a TODO.",
    "import-system-namespace": "A LocalQueue lives in a system namespace (default, "
    "kube-system, ...), which no hetgitops team may own: the queue stays outside the policy.",
    "import-unreadable": "Something import was given could not be read: a manifest file or "
    "document that is no Kubernetes object, an object whose field import reads has the wrong "
    "type or an impossible value (a label list, `nominalQuota: abc`, an accelerator count of "
    "`1.5`: the object is left out of the policy), YAML inside a ConfigMap (a mig-parted, "
    "device-plugin, Kueue or Volcano config) that is not YAML, too deep, an alias bomb or "
    "typed wrongly, or an input that held no object at all (then no policy is written).",
    "import-setting-not-managed": "Kueue's manager Configuration (kueue-manager-config) sets "
    "something the policy cannot say. hetgitops does not render that Configuration: Kueue's "
    "installer (Helm values, the kustomize base) owns it, changing it restarts the manager, and "
    "a GitOps tool applying it beside Helm would fight over it. Import keeps in the Fleet's "
    "spec.kueue.configuration only what the policy's checks need (integrations, whether fair "
    "sharing is on); the setting named stays as the installer set it, and the finding says what "
    "it does to the queues the policy renders.",
    "import-forbidden": "The credentials may not list a kind import reads: its objects are not "
    "in the written policy.",
    "import-no-nodes": "The input holds ClusterQueues with accelerator quota but no Node: "
    "import reads each pool's cards, MIG layout and time-slicing or MPS replicas from the "
    "nodes, so without them the pools are guessed from the quotas, and the round trip's "
    "differences are consequences of that guess (reports show them under this finding).",
    "import-config-missing": "A node names a GPU Operator config (its `nvidia.com/mig.config` "
    "or `nvidia.com/device-plugin.config` label) that no ConfigMap of the input holds: import "
    "cannot read the pool's MIG layout or sharing replicas, so the pool is written without "
    "them and its MIG (or shared) quotas cannot be kept. The missing config is the cause of "
    "the round trip's differences on that pool, not the cluster.",
    "import-first-sync-creates": "An object the written policy renders that the input does "
    "not hold: the first sync creates it (a team namespace's accelerator ResourceQuota, a "
    "LocalQueue, the PriorityClass of a tier). Review the list before the first sync.",
    "import-device-class-unread": "A DeviceClass whose CEL selector hetgitops cannot read "
    "(not the shape `plan/dra.py` writes: driver, device type, product names, architecture, "
    "memory or MIG profile over NVIDIA's pinned vocabulary): import cannot tell which card it "
    "selects, so no pool is put on DRA through it, and the class stays outside the policy.",
}
WARNINGS = {
    "import-device-class-unread",
    "import-object-not-adopted",
    "import-setting-not-managed",
    "import-kind-not-imported",
    "import-unknown-card",
    "import-team-without-namespace",
    "import-no-nodes",
}
_FIXES = {
    "import-field-changes": "accept the change (review it in the pull request), or change the "
    "cluster's object first so that it matches what the policy can say.",
    "import-object-not-adopted": "leave it unmanaged, or delete it once the policy's own "
    "objects serve the same workloads.",
    "import-kind-not-imported": "keep managing those objects as before, next to the policy.",
    "import-flavor-without-accelerators": "keep the flavor and its ClusterQueue entries "
    "outside the policy, or give the flavor's nodes accelerators.",
    "import-team-without-namespace": "list the namespaces that should submit to the team in "
    "its spec.namespaces.",
    "import-unknown-card": "measure the card and fill in spec.performance.coefficient.",
    "import-system-namespace": "move the team's workloads to a namespace of its own.",
    "import-unreadable": "fix the YAML or the field named (the message says where), or "
    "leave the file out of -f.",
    "import-setting-not-managed": "keep the setting in Kueue's installer values, and review "
    "what it does to the policy's queues (the finding says).",
    "import-forbidden": "grant list on the kind, or import from manifests with -f.",
    "import-no-nodes": "add the Nodes to the input (`kubectl get nodes -o yaml`), or import "
    "from the cluster itself with --kubeconfig.",
    "import-config-missing": "add the ConfigMaps to the input (`kubectl get configmaps -n "
    "gpu-operator -o yaml`, and the ClusterPolicy that names them), or import from the cluster "
    "itself with --kubeconfig.",
    "import-first-sync-creates": "nothing, if the objects are wanted; if the cluster has "
    "them under other names, rename them in the policy (or import from the cluster with "
    "--kubeconfig, which reads every kind).",
    "import-device-class-unread": "select the card by productName and architecture (as "
    "`hetgitops render` writes it), or keep the class and its pools' claims outside the policy.",
}
INFOS = {"import-first-sync-creates"}
register_rules(
    "import",
    {rule: f"{doc}\nFix: {_FIXES[rule]}" for rule, doc in RULES.items()},
    {**dict.fromkeys(WARNINGS, Severity.WARNING), **dict.fromkeys(INFOS, Severity.INFO)},
)


def finding(rule: str, message: str, span: Span, *, path: str = "", hint: str = "") -> Diagnostic:
    severity = (
        Severity.INFO if rule in INFOS else Severity.WARNING if rule in WARNINGS else Severity.ERROR
    )
    return Diagnostic(
        rule=rule,
        severity=severity,
        message=message,
        span=span,
        path=path,
        hint=hint or _FIXES[rule],
    )
