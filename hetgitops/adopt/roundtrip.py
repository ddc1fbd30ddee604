"""Adopt stage: the round trip. The written policy is rendered again, in process, and every
imported object is compared with what the render makes of it, after filling in the defaults
the API server would (so a field the cluster left out and Kueue defaults is no change). Every
difference is a located finding: the first sync would change that field.

This is the offline half of the contract; `tests/e2e/test_e2e_import.py` checks the other half
with the real API server (server-side dry-run apply of the render on the imported cluster).
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

import orjson

from hetgitops.adopt import fields, koordinator
from hetgitops.adopt.findings import finding
from hetgitops.adopt.nodes import ACCELERATOR_PREFIXES
from hetgitops.adopt.sources import KUEUE, Imported
from hetgitops.compilers.kueue_queues import covered_resources, queue_flavors
from hetgitops.compilers.volcano_scheduler import as_read
from hetgitops.diagnostics import Diagnostic, Span
from hetgitops.drift.compare import compare
from hetgitops.drift.findings import shown
from hetgitops.model import quantities
from hetgitops.output.manifests import Manifest

# What the round trip compares per kind: the fields the policy declares (spec, or the
# top-level fields of kinds without a spec). Metadata is the GitOps tool's business.
COMPARED = {
    "ResourceFlavor": ("spec",),
    "ClusterQueue": ("spec",),
    "Cohort": ("spec",),
    "LocalQueue": ("spec",),
    "Topology": ("spec",),
    "WorkloadPriorityClass": ("value", "description"),
    "PriorityClass": ("value", "preemptionPolicy", "globalDefault", "description"),
    "Queue": ("spec",),
    "ConfigMap": ("data",),
    "ResourceQuota": ("spec",),
    # Koordinator's tree lives in labels and annotations too: adopt.koordinator.compared.
    "ElasticQuotaProfile": ("spec",),
    "ElasticQuota": ("spec",),
}
VOLCANO = "scheduling.volcano.sh"
# Volcano's Queue CRD defaults (weight, dequeueStrategy) and its webhook's (reclaimable, and
# root as the parent of a queue that names none).
_VOLCANO_DEFAULTS = {
    "weight": 1,
    "reclaimable": True,
    "dequeueStrategy": "traverse",
    "parent": "root",
}
# Kueue's CRD defaults (v1beta2; v1beta1 spells MayStopSearch Borrow), applied to the
# imported object as the API server applies them to what is stored.
_QUEUE_DEFAULTS = {
    "queueingStrategy": "BestEffortFIFO",
    "stopPolicy": "None",
    "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
    "preemption": {
        "withinClusterQueue": "Never",
        "reclaimWithinCohort": "Never",
        "borrowWithinCohort": {"policy": "Never"},
    },
}
QUANTITIES = ("nominalQuota", "borrowingLimit", "lendingLimit")


def key(kind: str, namespace: str, name: str) -> tuple[str, str, str]:
    return kind, namespace, name


def _compared(obj: Mapping[str, Any], *, copied: bool = False) -> dict[str, Any]:
    """The compared fields; a copy only where defaults will be filled in (compare itself
    never mutates, and deep copies of 1,000 queues cost seconds)."""
    fields = COMPARED[str(obj["kind"])]
    if not copied:
        return {f: obj[f] for f in fields if f in obj}
    return {f: orjson.loads(orjson.dumps(obj[f])) for f in fields if f in obj}


def _defaulted(item: Imported) -> dict[str, Any]:
    obj = _compared(item.obj, copied=True)
    kind = item.kind
    spec: dict[str, Any] = {}
    if "spec" in COMPARED[kind]:
        spec = obj["spec"] = obj.get("spec") or {}  # `spec: null` is no spec, as the API says
    legacy = str(item.obj.get("apiVersion", "")).endswith("/v1beta1")
    if kind == "ClusterQueue":
        for field, default in _QUEUE_DEFAULTS.items():
            value = copy.deepcopy(default)
            if field == "flavorFungibility" and legacy:
                value = {"whenCanBorrow": "Borrow", "whenCanPreempt": "TryNextFlavor"}
            spec[field] = _merge(value, spec.get(field))
        _fair_sharing(spec)
        for flavor in queue_flavors(spec):
            for resource in flavor.items:
                for name in QUANTITIES:
                    if resource.get(name) is not None:
                        resource[name] = quantities.normalize(resource[name])
    elif kind == "Queue":
        for setting, fallback in _VOLCANO_DEFAULTS.items():
            spec.setdefault(setting, fallback)
        for amounts in ("deserved", "capability"):
            if isinstance(spec.get(amounts), dict):
                spec[amounts] = {r: quantities.normalize(q) for r, q in spec[amounts].items()}
        guarantee = (spec.get("guarantee") or {}).get("resource")
        if isinstance(guarantee, dict):
            spec["guarantee"]["resource"] = {
                r: quantities.normalize(q) for r, q in guarantee.items()
            }
    elif kind == "ResourceQuota" and isinstance(spec.get("hard"), dict):
        spec["hard"] = {r: quantities.normalize(q) for r, q in spec["hard"].items()}
    elif kind == "Cohort":
        _fair_sharing(spec)
    elif kind == "LocalQueue":
        spec.setdefault("stopPolicy", "None")
    elif kind == "PriorityClass":
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
        if obj.get("globalDefault") is False:
            del obj["globalDefault"]
    return obj


def _fair_sharing(spec: dict[str, Any]) -> None:
    """A present fairSharing's weight defaults to 1 (the CRD's default), a quantity."""
    fair = spec.get("fairSharing")
    if isinstance(fair, dict):
        fair["weight"] = quantities.normalize(str(fair.get("weight", 1)))


def _merge(default: Any, value: Any) -> Any:
    if value is None:
        return default
    if isinstance(default, dict) and isinstance(value, dict):
        return {**default, **{k: _merge(default.get(k), v) for k, v in value.items()}}
    return value


def check(
    imported: Sequence[Imported],
    manifests: Iterable[Manifest],
    *,
    reported: Collection[Span] = (),
) -> Iterator[Diagnostic]:
    """Findings for every imported object of a compared kind that the render changes or does
    not render at all; an unrendered object whose span is in `reported` (infer named it
    already, with the reason) is not named a second time."""
    rendered: dict[tuple[str, str, str], Manifest] = {}
    for each in manifests:
        meta = each.obj.get("metadata") or {}
        kind = str(each.obj.get("kind"))
        rendered[key(kind, str(meta.get("namespace", "")), str(meta.get("name", "")))] = each
    parents = {
        str((i.obj.get("spec") or {}).get("parent") or "root")
        for i in imported
        if i.kind == "Queue"
    }
    koord_roots = koordinator.roots(imported)
    for item in imported:
        if item.kind not in COMPARED or not _ours(item):
            continue
        if item.kind == koordinator.QUOTA and item.name in koord_roots:
            continue  # the profile controller's root quotas and Koordinator's own
        if item.kind == "PriorityClass" and item.name.startswith("system-"):
            continue
        if item.kind == "Queue" and not _leaf(item, parents):
            continue  # Volcano's own root and default, and parent queues: reported by infer
        where = f"{item.kind} {item.namespace + '/' if item.namespace else ''}{item.name}"
        found = rendered.get(key(item.kind, item.namespace, item.name))
        if found is None and item.kind == "ResourceQuota" and _caps_accelerators(item):
            yield finding(
                "import-object-not-adopted",
                f"{where}: it caps accelerators in a namespace no team of the written policy "
                "owns, and the policy does not render it; it stays as it is, outside the policy",
                item.span,
            )
            continue
        if found is None and item.kind in ("ConfigMap", "ResourceQuota"):
            continue  # the operator's own configs; quotas beside the team's (reported by infer)
        if found is None and item.span in reported:
            continue
        if found is None:
            yield finding(
                "import-object-not-adopted",
                koordinator.not_rendered(item)
                if item.kind in koordinator.KINDS
                else f"{where}: the written policy does not render it; it stays unmanaged",
                item.span,
            )
            continue
        manifest = found
        desired = _compared(manifest.obj)
        live = _defaulted(item)
        if item.kind in koordinator.KINDS:
            desired = koordinator.compared(manifest.obj, live=False)
            live = koordinator.compared(item.obj, live=True)
        if item.kind == "ConfigMap":  # each key holds a YAML document: compare what it says
            desired, live = _parsed(desired), _parsed(live)
        elif _same_bytes(desired, live):
            continue  # the common case after import: the field walk would find nothing
        diffs, extras = compare(desired, live, schema=None)
        for diff in diffs:
            now = "absent" if diff.change == "missing" else shown(diff.live)
            yield finding(
                "import-field-changes",
                f"{where}: the first sync sets {diff.display} to {shown(diff.desired)} "
                f"(the cluster has {now})",
                manifest.origin,
                path=diff.display,
            )
        for path, value in extras:
            shown_path = ".".join(str(p) for p in path)
            yield finding(
                "import-field-changes",
                f"{where}: the policy does not declare {shown_path} (the cluster has "
                f"{shown(value)}); {_fate_of_undeclared(path)}",
                manifest.origin,
                path=shown_path,
            )


def _fate_of_undeclared(path: Sequence[str | int]) -> str:
    """What a sync does to a field the render does not set. Inside a list the render writes,
    the list is applied whole (a JSON merge patch replaces lists of custom resources under
    client-side apply; server-side apply replaces an atomic list), so the item goes. Anywhere
    else no apply removes a field it never set (server-side apply keeps the other manager's
    fields, client-side apply has no last-applied record of it on the first sync): seen on
    the real API server (tests/e2e/test_e2e_import_generated.py)."""
    if any(isinstance(part, int) for part in path):
        return "the first sync removes or replaces it"
    return (
        "a sync leaves it as it is (no apply removes a field it never set; Argo CD's "
        "Replace=true would), so the cluster keeps doing what the policy does not say: "
        "declare it, or remove it from the cluster by hand"
    )


def _caps_accelerators(quota: Imported) -> bool:
    hard = (quota.obj.get("spec") or {}).get("hard") or {}
    return isinstance(hard, Mapping) and any(
        str(k).removeprefix("requests.").removeprefix("limits.").startswith(ACCELERATOR_PREFIXES)
        for k in hard
    )


def _same_bytes(desired: Mapping[str, Any], live: Mapping[str, Any]) -> bool:
    """Identical as JSON with sorted keys (types included, so True is not 1): then `compare`
    finds no difference. Anything else (another list order, 12 for "12") takes the walk."""
    option = orjson.OPT_SORT_KEYS
    try:
        return orjson.dumps(desired, option=option) == orjson.dumps(live, option=option)
    except TypeError:  # a value JSON cannot hold: let the walk compare it
        return False


def _parsed(obj: Mapping[str, Any]) -> dict[str, Any]:
    data = obj.get("data") or {}
    # As the reader reads each (Volcano trims its actions: their spacing is no change),
    # through the bounded loader; a value it cannot read is compared as its text.
    return {
        "data": {k: _sharing_defaults(as_read(str(k), _value(str(k), v))) for k, v in data.items()}
    }


# The device plugin reads an absent renameByDefault or failRequestsGreaterThanOne as false
# (NVIDIA/k8s-device-plugin api/config/v1/replicas.go, TimeSlicing.UnmarshalJSON, commit
# 9b89da8): a hand-written config that leaves them out says what the render's `false` says.
_SHARING_FLAGS = ("renameByDefault", "failRequestsGreaterThanOne")


def _sharing_defaults(value: Any) -> Any:
    sharing = value.get("sharing") if isinstance(value, dict) else None
    for kind in ("timeSlicing", "mps"):
        setting = sharing.get(kind) if isinstance(sharing, dict) else None
        if isinstance(setting, dict):
            for flag in _SHARING_FLAGS:
                setting.setdefault(flag, False)
    return value


def _value(key: str, text: Any) -> Any:
    value, problem = fields.embedded(f"data.{key}", str(text), fields.anything)
    return str(text) if problem else value


def _leaf(item: Imported, parents: set[str]) -> bool:
    return item.name not in ("root", "default") and item.name not in parents


def _ours(item: Imported) -> bool:
    version = str(item.obj.get("apiVersion", ""))
    if item.kind in ("ConfigMap", "ResourceQuota"):
        return version == "v1"
    return version.startswith((KUEUE, "scheduling.k8s.io", VOLCANO, *koordinator.GROUPS))


# Resources every node has: a queue with quota on nothing else claims no accelerators.
_HOST_RESOURCES = {"cpu", "memory", "pods", "ephemeral-storage"}


def without_nodes(objects: list[Imported]) -> Diagnostic | None:
    """A warning when the input claims accelerators in its ClusterQueues but holds no Node
    (a `kubectl get` dump without `nodes`): pools, their cards, MIG layouts and sharing
    replicas are read from the nodes, so the policy's pools are guessed from the quotas and
    every difference the round trip then finds follows from that, not from the language."""
    if any(o.kind == "Node" for o in objects):
        return None
    claiming = next((o for o in objects if o.kind == "ClusterQueue" and _claims_cards(o)), None)
    if claiming is None:
        return None
    return finding(
        "import-no-nodes",
        f"the input holds no Node, but ClusterQueue {claiming.name} claims accelerators: import "
        "reads each pool's cards, MIG layout and time-slicing replicas from the nodes, so the "
        "pools written are guesses from the quotas alone, and every difference the round trip "
        "reports below follows from that",
        claiming.span,
        hint="add the nodes to the input (kubectl get nodes -o yaml), or import from the "
        "cluster itself (--kubeconfig)",
    )


def _claims_cards(queue: Imported) -> bool:
    return any(r not in _HOST_RESOURCES for r in covered_resources(queue.obj.get("spec")))
