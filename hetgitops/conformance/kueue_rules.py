"""Output-validation stage: Kueue's CEL rules and webhook limits, checked in Python.

A schema cannot express these (order of resources, cross-field conditions, totals), and the API
server only reports them at apply time; checked here, they point at the policy line instead.
Each finding is (rule, field path, message) with rule `kueue-cel` or `kueue-limits`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

# kueue-limits is the id of the check rule of the same limits; importing it registers the id.
from hetgitops.checks import queues as _queues  # noqa: F401
from hetgitops.diagnostics import register_rules
from hetgitops.model import quantities

Finding = tuple[str, str, str]
CEL, LIMITS = "kueue-cel", "kueue-limits"
register_rules(
    "conformance",
    {
        CEL: "A rendered Kueue object breaks a CEL or webhook rule of Kueue (limits need a "
        "cohort, borrowWithinCohort needs reclaimWithinCohort, flavors list the covered "
        "resources); the API server would refuse it at apply time.\n"
        "Fix: change the policy field the finding points at (e.g. give the team a cohort).",
    },
)
HOSTNAME = "kubernetes.io/hostname"
MAX_GROUPS, MAX_FLAVORS_PER_CQ, MAX_RESOURCES_PER_CQ, MAX_CELLS_PER_GROUP = 16, 256, 256, 512
MAX_PER_GROUP, MAX_PER_GROUP_LEGACY = 64, 16  # Kueue < 0.14 capped each list at 16
MAX_FLAVOR_LIST, MAX_DESCRIPTION, MAX_LOCAL_QUEUE_NAME = 8, 2048, 63
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, Sequence) and not isinstance(value, str) else []


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _limits_without_parent(groups: list[Any], *, where: str, parent: str) -> Iterator[Finding]:
    """One finding per object (at the first offending field), not one per resource."""
    paths = [
        f"spec.resourceGroups[{g}].flavors[{f}].resources[{r}].{limit}"
        for g, group in enumerate(groups)
        for f, flavor in enumerate(_list(_map(group).get("flavors")))
        for r, res in enumerate(_list(_map(flavor).get("resources")))
        for limit in ("borrowingLimit", "lendingLimit")
        if limit in _map(res)
    ]
    if paths:
        yield (
            CEL,
            paths[0],
            f"borrowingLimit/lendingLimit ({len(paths)} set) need {parent} on the {where}",
        )


def _flavor_order(g: int, covered: list[Any], flavors: list[Any]) -> Iterator[Finding]:
    for f, flavor in enumerate(flavors):
        names = [_map(r).get("name") for r in _list(_map(flavor).get("resources"))]
        if names != covered:
            yield (
                CEL,
                f"spec.resourceGroups[{g}].flavors[{f}].resources",
                f"flavor {_map(flavor).get('name')!r} must list exactly the coveredResources "
                f"in order {covered}, not {names}",
            )


def _lending_within_nominal(g: int, flavors: list[Any]) -> Iterator[Finding]:
    for f, flavor in enumerate(flavors):
        for r, res in enumerate(_list(_map(flavor).get("resources"))):
            res = _map(res)
            path = f"spec.resourceGroups[{g}].flavors[{f}].resources[{r}]"
            try:
                amounts = {
                    k: quantities.value_of(res[k])
                    for k in ("nominalQuota", "borrowingLimit", "lendingLimit")
                    if k in res
                }
            except quantities.QuantityError:
                continue  # the schema check reports a malformed quantity
            for key, amount in amounts.items():
                if amount < 0:
                    yield CEL, f"{path}.{key}", f"{key} must not be negative"
            if amounts.get("lendingLimit", 0) > amounts.get("nominalQuota", 0):
                yield CEL, f"{path}.lendingLimit", "lendingLimit must be <= nominalQuota"


def _group_limits(g: int, group: Mapping[str, Any], *, cap: int) -> Iterator[Finding]:
    path = f"spec.resourceGroups[{g}]"
    covered, flavors = _list(group.get("coveredResources")), _list(group.get("flavors"))
    if len(covered) > cap:
        yield LIMITS, f"{path}.coveredResources", f"{len(covered)} resources; at most {cap}"
    if len(flavors) > cap:
        yield LIMITS, f"{path}.flavors", f"{len(flavors)} flavors in one group; at most {cap}"
    for f, flavor in enumerate(flavors):
        count = len(_list(_map(flavor).get("resources")))
        if count > cap:
            yield LIMITS, f"{path}.flavors[{f}].resources", f"{count} resources; at most {cap}"
    if len(covered) * len(flavors) > MAX_CELLS_PER_GROUP:
        yield (
            LIMITS,
            path,
            f"{len(covered)} resources x {len(flavors)} flavors; at most "
            f"{MAX_CELLS_PER_GROUP} entries per group",
        )


def _groups(spec: Mapping[str, Any], *, cap: int, is_queue: bool) -> Iterator[Finding]:
    groups = _list(spec.get("resourceGroups"))
    if len(groups) > MAX_GROUPS:
        yield LIMITS, "spec.resourceGroups", f"{len(groups)} groups; at most {MAX_GROUPS}"
    seen_flavors: set[Any] = set()
    seen_resources: set[Any] = set()
    for g, group in enumerate(groups):
        covered = _list(_map(group).get("coveredResources"))
        flavors = _list(_map(group).get("flavors"))
        yield from _flavor_order(g, covered, flavors)
        yield from _group_limits(g, _map(group), cap=cap)
        if is_queue:
            yield from _lending_within_nominal(g, flavors)
        for name in covered:
            if name in seen_resources:
                yield CEL, f"spec.resourceGroups[{g}]", f"resource {name!r} is in two groups"
            seen_resources.add(name)
        for name in (_map(f).get("name") for f in flavors):
            if name in seen_flavors:
                yield CEL, f"spec.resourceGroups[{g}]", f"flavor {name!r} is in two groups"
            seen_flavors.add(name)
    if len(seen_flavors) > MAX_FLAVORS_PER_CQ:
        yield LIMITS, "spec.resourceGroups", f"{len(seen_flavors)} flavors; at most 256"
    if len(seen_resources) > MAX_RESOURCES_PER_CQ:
        yield LIMITS, "spec.resourceGroups", f"{len(seen_resources)} resources; at most 256"


def _preemption(spec: Mapping[str, Any]) -> Iterator[Finding]:
    preemption = _map(spec.get("preemption"))
    borrow = _map(preemption.get("borrowWithinCohort")).get("policy", "Never")
    if borrow != "Never" and preemption.get("reclaimWithinCohort", "Never") == "Never":
        yield (
            CEL,
            "spec.preemption.borrowWithinCohort.policy",
            "borrowWithinCohort needs reclaimWithinCohort other than Never",
        )
    fungibility = _map(spec.get("flavorFungibility"))
    both = (
        fungibility.get("whenCanBorrow", "MayStopSearch"),
        fungibility.get("whenCanPreempt", "TryNextFlavor"),
    )
    if "preference" in fungibility and both != ("TryNextFlavor", "TryNextFlavor"):
        yield (
            CEL,
            "spec.flavorFungibility.preference",
            "preference needs whenCanBorrow and whenCanPreempt both TryNextFlavor",
        )


def cluster_queue(obj: Mapping[str, Any], *, legacy: bool) -> Iterator[Finding]:
    spec = _map(obj.get("spec"))
    if not (spec.get("cohortName") or spec.get("cohort")):
        yield from _limits_without_parent(
            _list(spec.get("resourceGroups")), where="ClusterQueue", parent="a cohort"
        )
    yield from _groups(spec, cap=MAX_PER_GROUP_LEGACY if legacy else MAX_PER_GROUP, is_queue=True)
    yield from _preemption(spec)


def cohort(obj: Mapping[str, Any], *, legacy: bool) -> Iterator[Finding]:
    spec = _map(obj.get("spec"))
    if not spec.get("parentName"):
        yield from _limits_without_parent(
            _list(spec.get("resourceGroups")), where="Cohort", parent="parentName"
        )
    yield from _groups(spec, cap=MAX_PER_GROUP_LEGACY if legacy else MAX_PER_GROUP, is_queue=False)


def _toleration(i: int, tol: Mapping[str, Any]) -> Iterator[Finding]:
    path, operator = f"spec.tolerations[{i}]", tol.get("operator")
    if "key" not in tol and operator != "Exists":
        yield CEL, f"{path}.operator", "a toleration without key needs operator Exists"
    if "tolerationSeconds" in tol and tol.get("effect") != "NoExecute":
        yield CEL, f"{path}.tolerationSeconds", "tolerationSeconds needs effect NoExecute"
    if operator is not None and operator not in ("Equal", "Exists"):
        yield CEL, f"{path}.operator", f"operator {operator!r} is not Equal or Exists"
    if operator == "Exists" and "value" in tol:
        yield CEL, f"{path}.value", "operator Exists forbids a value"
    if "effect" in tol and tol["effect"] not in EFFECTS:
        yield CEL, f"{path}.effect", f"effect {tol['effect']!r} is not one of {list(EFFECTS)}"


def resource_flavor(obj: Mapping[str, Any], *, legacy: bool) -> Iterator[Finding]:
    spec = _map(obj.get("spec"))
    for field in ("nodeLabels", "nodeTaints", "tolerations"):
        count = len(spec.get(field) or ())
        if count > MAX_FLAVOR_LIST:
            yield LIMITS, f"spec.{field}", f"{count} {field}; at most {MAX_FLAVOR_LIST}"
    for i, tol in enumerate(_list(spec.get("tolerations"))):
        yield from _toleration(i, _map(tol))
    taints = [(_map(t).get("key"), _map(t).get("effect")) for t in _list(spec.get("nodeTaints"))]
    for i, (key, effect) in enumerate(taints):
        if effect not in EFFECTS:
            yield CEL, f"spec.nodeTaints[{i}].effect", f"effect {effect!r} is not allowed"
        if (key, effect) in taints[:i]:
            yield CEL, f"spec.nodeTaints[{i}]", f"taint {key}:{effect} is listed twice"
    if "topologyName" in spec and not spec.get("nodeLabels"):
        yield CEL, "spec.topologyName", "topologyName needs at least one nodeLabel"


def topology(obj: Mapping[str, Any], *, legacy: bool) -> Iterator[Finding]:
    levels = [_map(level).get("nodeLabel") for level in _list(_map(obj.get("spec")).get("levels"))]
    if not 1 <= len(levels) <= MAX_GROUPS:
        yield LIMITS, "spec.levels", f"{len(levels)} levels; 1 to {MAX_GROUPS} allowed"
    for i, label in enumerate(levels):
        if label in levels[:i]:
            yield CEL, f"spec.levels[{i}]", f"level {label!r} is listed twice"
        if label == HOSTNAME and i != len(levels) - 1:
            yield CEL, f"spec.levels[{i}]", f"{HOSTNAME} may only be the last level"


def workload_priority_class(obj: Mapping[str, Any], *, legacy: bool) -> Iterator[Finding]:
    description = obj.get("description")
    if isinstance(description, str) and len(description) > MAX_DESCRIPTION:
        yield LIMITS, "description", f"{len(description)} characters; at most {MAX_DESCRIPTION}"


def local_queue(obj: Mapping[str, Any], *, legacy: bool) -> Iterator[Finding]:
    name = str(_map(obj.get("metadata")).get("name", ""))
    if len(name) > MAX_LOCAL_QUEUE_NAME:
        yield (
            LIMITS,
            "metadata.name",
            f"jobs name a LocalQueue in a label value: "
            f"{len(name)} characters; at most {MAX_LOCAL_QUEUE_NAME}",
        )


class Rule(Protocol):
    def __call__(self, obj: Mapping[str, Any], *, legacy: bool) -> Iterator[Finding]: ...


RULES: dict[str, Rule] = {
    "ClusterQueue": cluster_queue,
    "Cohort": cohort,
    "ResourceFlavor": resource_flavor,
    "Topology": topology,
    "WorkloadPriorityClass": workload_priority_class,
    "LocalQueue": local_queue,
}


def check_object(obj: Mapping[str, Any], *, legacy: bool = False) -> Iterator[Finding]:
    """Findings for one Kueue object; `legacy` applies Kueue < 0.14's per-group cap of 16."""
    rule = RULES.get(str(obj.get("kind")))
    if rule is not None:
        yield from rule(obj, legacy=legacy)
