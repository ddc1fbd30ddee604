"""Diff stage, day-2 hazard `jobs-unmatched`: job templates that `hetgitops jobs` rendered from
the base policy and that no flavor (Kueue) or pool's nodes (Volcano) of the head render match.

A pool renamed or split relabels its nodes and flavor (`<domain>/pool`, the card-type label), so
the templates teams copied before select labels nothing offers any more: Kueue never admits what
is submitted from them (and what is already pending from them stays pending), although nothing
about their queue changed. The templates are rendered here from the base Policy (the default
templates: a repository's own `--templates` render the same node selection, `jobs/context.py`).

How Kueue v0.19.2 matches a pod set against a flavor (pkg/scheduler/flavorassigner/
flavorassigner.go, checkFlavorForPodSets 1208-1256 and flavorSelector 1278-1315): a flavor's
`nodeTaints` that the pod's tolerations plus the flavor's do not tolerate rule it out ("untolerated
taint ... in flavor F"); then the pod's nodeSelector and required node affinity, keeping only the
keys of *that flavor's own* nodeLabels (1224-1227), must match the flavor's nodeLabels as if they
were a node's ("flavor F doesn't match node affinity"). A required-affinity term left with no
expression matches any flavor.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hetgitops.compilers.kueue_queues import queue_flavors
from hetgitops.diff.hazards.registry import Hazard, hazard_rule
from hetgitops.live.workloads import local_queue
from hetgitops.model.node_selection import requirement_holds
from hetgitops.model.tolerations import tolerates
from hetgitops.output.manifests import Manifest
from hetgitops.plan.node_labels import pool_label

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
VOLCANO_GROUP = "batch.volcano.sh/"
Obj = Mapping[str, Any]


def pod_specs(obj: Any) -> list[Obj]:
    """Every pod spec in a job manifest (a mapping with `containers`), whatever the kind."""
    found: list[Obj] = []
    if isinstance(obj, Mapping):
        if isinstance(obj.get("containers"), list):
            return [obj]
        for value in obj.values():
            found += pod_specs(value)
    elif isinstance(obj, list):
        for value in obj:
            found += pod_specs(value)
    return found


def selects(spec: Obj, labels: Mapping[str, str], keys: set[str]) -> bool:
    """Kueue's flavorSelector(spec, keys).Match(node with `labels`)."""
    for key, value in (spec.get("nodeSelector") or {}).items():
        if key in keys and labels.get(str(key)) != str(value):
            return False
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        or {}
    ).get("nodeSelectorTerms") or []
    terms = []
    for term in required:
        kept = [e for e in term.get("matchExpressions") or [] if str(e.get("key")) in keys]
        if not kept:
            return True  # an emptied term matches any flavor (flavorassigner.go:1303-1308)
        terms.append(kept)
    return not terms or any(all(requirement_holds(e, labels) for e in term) for term in terms)


@dataclass(frozen=True)
class Flavor:
    name: str
    labels: Mapping[str, str]
    taints: tuple[Obj, ...]
    tolerations: tuple[Obj, ...]

    def admits(self, spec: Obj) -> bool:
        """checkFlavorForPodSets for one pod set: taints first, then the selector."""
        tolerations = [*(spec.get("tolerations") or []), *self.tolerations]
        for taint in self.taints:
            effect = taint.get("effect", "")
            if effect in ("NoSchedule", "NoExecute") and not tolerates(
                tolerations, taint.get("key", ""), taint.get("value"), effect
            ):
                return False
        return selects(spec, self.labels, set(self.labels))

    def as_json(self) -> dict[str, Any]:
        return {
            "labels": dict(self.labels),
            "taints": list(self.taints),
            "tolerations": list(self.tolerations),
        }

    @staticmethod
    def from_json(value: Mapping[str, Any]) -> Flavor:
        return Flavor("", value["labels"], tuple(value["taints"]), tuple(value["tolerations"]))


def _api(m: Manifest) -> str:
    return str(m.obj.get("apiVersion", ""))


def _spec(m: Manifest) -> Obj:
    spec = m.obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


_QUEUE_KINDS = frozenset(
    {"LocalQueue", "ClusterQueue", "ResourceFlavor", "Queue", "NodeFeatureRule"}
)


class Queues:
    """LocalQueue -> its ClusterQueue's flavors, in one render."""

    def __init__(self, manifests: Sequence[Manifest]) -> None:
        self.local: dict[str, str] = {}
        self.cluster: dict[str, list[str]] = {}
        self.flavors: dict[str, Flavor] = {}
        self.volcano: set[str] = set()
        self.rules: list[Mapping[str, str]] = []
        for m in manifests:
            kind = m.kind
            if kind not in _QUEUE_KINDS:  # most of a large fleet's objects are Node plans
                continue
            spec = _spec(m)
            if kind == "LocalQueue":
                self.local[f"{m.namespace}/{m.name}"] = str(spec.get("clusterQueue"))
            elif kind == "ClusterQueue":
                self.cluster[m.name] = [f.name for f in queue_flavors(spec)]
            elif kind == "ResourceFlavor":
                self.flavors[m.name] = Flavor(
                    m.name,
                    {str(k): str(v) for k, v in (spec.get("nodeLabels") or {}).items()},
                    tuple(spec.get("nodeTaints") or ()),
                    tuple(spec.get("tolerations") or ()),
                )
            elif kind == "Queue" and _api(m).startswith("scheduling.volcano.sh/"):
                self.volcano.add(m.name)
            elif kind == "NodeFeatureRule":
                self.rules += [
                    {str(k): str(v) for k, v in (rule_.get("labels") or {}).items()}
                    for rule_ in spec.get("rules") or []
                ]

    def of(self, local: str) -> list[Flavor] | None:
        """The flavors a LocalQueue's ClusterQueue lists; None when the LocalQueue is gone."""
        queue = self.local.get(local)
        if queue is None:
            return None
        names = self.cluster.get(queue, [])
        return [self.flavors[n] for n in names if n in self.flavors]


def selection_changed(before: Sequence[Manifest], after: Sequence[Manifest]) -> bool:
    """Whether node selection differs at all (flavors' labels and taints, queues, the labels
    NodeFeatureRules give nodes): if not, no template can stop matching, and the templates
    need not be rendered."""

    def key(queues: Queues) -> Any:
        return json.dumps(
            [
                sorted(json.dumps(f.as_json(), sort_keys=True) for f in queues.flavors.values()),
                sorted(json.dumps(r, sort_keys=True) for r in queues.rules),
                sorted(queues.local.items()),
                sorted(queues.volcano),
            ]
        )

    return bool(key(Queues(before)) != key(Queues(after)))


def _flavors_of(specs: Sequence[Obj], flavors: Sequence[Flavor]) -> list[Flavor] | None:
    """The first flavor each pod set fits, in pod set order; None when one fits none. Kueue
    gives every pod set its own flavor (flavorassigner.go, assignFlavors: one
    PodSetAssignment per pod set), so a RayJob's worker groups may sit on two card types."""
    found = []
    for spec in specs:
        flavor = next((f for f in flavors if f.admits(spec)), None)
        if flavor is None:
            return None
        found.append(flavor)
    return found


def _lost(specs: Sequence[Obj], before: Sequence[Flavor], after: Sequence[Flavor]) -> Flavor | None:
    """The old flavor of the first pod set no flavor admits after the change, when every pod
    set had one before; else None."""
    was = _flavors_of(specs, before)
    if was is None:
        return None
    return next((f for f, s in zip(was, specs, strict=True) if not _fits_any(s, after)), None)


def _fits_any(spec: Obj, flavors: Sequence[Flavor]) -> bool:
    return any(f.admits(spec) for f in flavors)


def _listed(names: Sequence[str]) -> str:
    return ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")


@dataclass
class _Group:
    templates: list[str]
    queues: dict[str, list[dict[str, Any]]]
    was: dict[str, dict[str, Any]]
    span: Any
    volcano: bool = False


@hazard_rule(
    "jobs-unmatched",
    when=(
        "Job templates `hetgitops jobs` rendered from the base policy select node labels the "
        "change takes away (a pool renamed or split, a card label changed): no flavor of their "
        "ClusterQueue matches their nodeSelector any more (Kueue keeps only the flavor's own "
        "label keys and compares them: flavor ... doesn't match node affinity), so jobs "
        "submitted from them, and workloads pending from them, are never admitted; Volcano jobs "
        "from them match no node."
    ),
    fix=(
        "re-render the templates (`hetgitops jobs`) from the change, resubmit pending jobs from "
        "the new ones, or keep the pool's name and card labels until the old templates are out "
        "of use."
    ),
)
def jobs_unmatched(
    templates: Sequence[Manifest], before: Sequence[Manifest], after: Sequence[Manifest]
) -> Iterator[Hazard]:
    """Templates whose pods some flavor of their queue admitted before and none admits after
    (Kueue), or whose pool's nodes no NodeFeatureRule labels any more (Volcano)."""
    old, new = Queues(before), Queues(after)
    managed = {key for labels in old.rules for key in labels}
    groups: dict[str, _Group] = {}
    for template in templates:
        specs = pod_specs(template.obj.get("spec"))
        if not specs:
            continue
        name = template.filename or template.name
        labels = template.obj.get("metadata", {}).get("labels") or {}
        if _api(template).startswith(VOLCANO_GROUP):
            queue = str(_spec(template).get("queue") or "")
            was = [r for r in old.rules if all(selects(s, r, managed) for s in specs)]
            now = [r for r in new.rules if all(selects(s, r, managed) for s in specs)]
            if not was or now:
                continue  # a Volcano queue gone alone is its team's or pool's removal
            pool = pool_label(was[0], queue)
            group = groups.setdefault(pool, _Group([], {}, {}, template.origin, volcano=True))
            group.templates.append(name)
            continue
        local = f"{template.namespace}/{labels.get(QUEUE_LABEL, '')}"
        before_flavors, after_flavors = old.of(local), new.of(local)
        if before_flavors is None or after_flavors is None:
            continue  # no queue before, or its LocalQueue is pruned: localqueue-removed's case
        previous = _lost(specs, before_flavors, after_flavors)
        if previous is None:
            continue
        group = groups.setdefault(
            pool_label(previous.labels, previous.name), _Group([], {}, {}, template.origin)
        )
        group.templates.append(name)
        group.queues[local] = [f.as_json() for f in after_flavors]
        for flavor in _flavors_of(specs, before_flavors) or ():
            group.was[flavor.name] = flavor.as_json()
    for pool, group in sorted(groups.items()):
        count = len(group.templates)
        if group.volcano:
            why = (
                "no NodeFeatureRule labels nodes with what they select any more, so the "
                "Volcano jobs submitted from them never start"
            )
        else:
            why = (
                "no flavor of their ClusterQueue matches their nodeSelector any more (Kueue: "
                '"flavor ... doesn\'t match node affinity"), so jobs submitted from them, and '
                "the workloads already pending from them, are never admitted"
            )
        scope: tuple[tuple[str, str], ...] = ()
        if group.queues:
            value = json.dumps({"queues": group.queues, "was": group.was}, sort_keys=True)
            scope = (("unmatched", value),)
        yield Hazard(
            rule="jobs-unmatched",
            subject=f"Job templates for pool {pool}",
            message=f"{count} job template(s) that `hetgitops jobs` rendered before this change "
            f"({_listed(sorted(group.templates))}) select pool {pool}'s old node labels: {why}",
            action="re-render the job templates from this change (`hetgitops jobs`) and give teams "
            "the new ones; delete the pending jobs made from the old ones and resubmit them "
            "from the new; or keep the pool's name and card labels until the old templates "
            "are out of use",
            span=group.span,
            scope=scope,
        )


def unmatched_workload(workload: Obj, value: str) -> bool:
    """A live Workload (diff --kubeconfig) in one of the scope's LocalQueues whose pod sets
    some old flavor admitted and no flavor of its queue admits after the change."""
    scope = json.loads(value)
    namespace = str(workload.get("metadata", {}).get("namespace", ""))
    local = f"{namespace}/{local_queue(workload)}"
    if local not in scope["queues"]:
        return False
    specs = [
        (podset.get("template") or {}).get("spec") or {}
        for podset in (workload.get("spec") or {}).get("podSets") or []
    ]
    if not specs:
        return False
    was = [Flavor.from_json(v) for v in scope["was"].values()]
    now = [Flavor.from_json(v) for v in scope["queues"][local]]
    return _lost(specs, was, now) is not None
