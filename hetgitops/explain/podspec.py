"""Explain stage, pod templates: a manifest's pod template as Kueue reads it, checked first as
the API server would (ValidateResourceRequirements, node affinity, tolerations), so a pod it
would refuse is never explained as admitted."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from decimal import ROUND_CEILING, Decimal
from typing import Any

from hetgitops.explain.manifest import Field
from hetgitops.live import workloads
from hetgitops.model import quantities
from hetgitops.plan.quota_plan import kueue_amount

STANDARD = ("cpu", "memory", "ephemeral-storage")
OPERATORS = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}
TOLERATION_OPERATORS = {"Exists", "Equal"}
EFFECTS = {"", "NoSchedule", "PreferNoSchedule", "NoExecute"}


def _extended(name: str) -> bool:
    """Kubernetes' IsExtendedResourceName: a domain-prefixed name outside kubernetes.io."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


HUGEPAGES = "hugepages-"


def _overcommit_allowed(name: str) -> bool:
    """helper.IsOvercommitAllowed (pkg/apis/core/helper/helpers.go): a native resource that
    is not hugepages; the others' request must equal their limit."""
    return not _extended(name) and not name.startswith(HUGEPAGES)


def _hugepages(name: str, value: Field, amount: Decimal) -> None:
    """validateResourceQuantityHugePageValue (core/validation/validation.go:7955): a whole
    multiple of the page size the name carries, parsed as a quantity (helpers.go:43-78:
    `hugepages-2Mi`; a name whose size is no whole positive quantity takes no value)."""
    try:
        page = quantities.value_of(name[len(HUGEPAGES) :])
    except (quantities.QuantityError, ArithmeticError):
        page = Decimal(0)
    whole = amount.to_integral_value(rounding=ROUND_CEILING)  # Quantity.Value() rounds up
    if page <= 0 or page != page.to_integral_value() or whole % page:
        value.refuse(f"{value.value!r} is not a positive integer multiple of {name}")


def _containers(spec: Field) -> Iterator[Field]:
    for container in (*spec["containers"].each(), *spec["initContainers"].each()):
        if container.absent:
            container.refuse("expected a container, got null")
        yield container


def _amounts(resources: Field, key: str) -> dict[str, tuple[Field, Decimal]]:
    found = {}
    for name, value in resources[key].items():
        if "/" not in name and name not in STANDARD and not name.startswith("hugepages-"):
            value.refuse(f"{name!r} is not a standard resource (cpu, memory, ...)")
        amount = value.quantity()
        if amount < 0:
            value.refuse(f"{value.value!r}: must be greater than or equal to 0")
        if _extended(name) and amount != amount.to_integral_value():
            value.refuse(f"{value.value!r}: {name} must be a whole number")
        if name.startswith(HUGEPAGES):
            _hugepages(name, value, amount)
        found[name] = (value, amount)
    return found


def check_resources(resources: Field) -> None:
    """ValidateResourceRequirements (core/validation/validation.go:7826-7890): non-negative
    quantities, whole extended resources, hugepages in whole pages and only beside cpu or
    memory, the request of a resource that cannot be overcommitted equal to a limit that is
    set, no request above its limit."""
    limits, requests = _amounts(resources, "limits"), _amounts(resources, "requests")
    for name, (value, amount) in requests.items():
        limit = limits.get(name)
        if not _overcommit_allowed(name) and (limit is None or limit[1] != amount):
            kind = "hugepages" if name.startswith(HUGEPAGES) else "extended resources"
            value.refuse(f"{name} request must equal its limit ({kind})")
        if limit is not None and amount > limit[1]:
            value.refuse(f"{name} request {value.value!r} is more than its limit")
    names = {*limits, *requests}
    if any(n.startswith(HUGEPAGES) for n in names) and not names & {"cpu", "memory"}:
        resources.refuse("HugePages require cpu or memory")


def pod_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    """Kueue's pod request (Σ containers, at least each init container's, limits standing in
    for absent requests) in Kueue's integers: the one reader, `live.workloads.pod_requests`."""
    return workloads.pod_requests(spec, lambda name, q: kueue_amount(name, str(q)))


def requests(spec: Field) -> dict[str, int]:
    for container in _containers(spec):
        check_resources(container["resources"])
    return pod_requests(spec.mapping())


def tolerations(spec: Field) -> tuple[Mapping[str, Any], ...]:
    found = []
    for each in spec["tolerations"].each():
        for key in ("key", "operator", "value", "effect"):
            each[key].text()
        operator, effect = each["operator"].text("Equal"), each["effect"].text("")
        if operator not in TOLERATION_OPERATORS:
            each["operator"].refuse(f"{operator!r} is not Exists or Equal")
        if effect not in EFFECTS:
            each["effect"].refuse(f"{effect!r} is not a taint effect")
        if operator == "Exists" and each["value"].text(""):
            each["value"].refuse("must be empty when operator is Exists")
        seconds = each["tolerationSeconds"].value
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)):
            each["tolerationSeconds"].refuse("expected a whole number of seconds")
        found.append(dict(each.mapping()))
    return tuple(found)


def _expression(expression: Field) -> dict[str, Any]:
    expression["key"].text()
    operator = expression["operator"].text() or ""
    values = [str(v.text()) for v in expression["values"].each()]
    if operator not in OPERATORS:
        expression["operator"].refuse(f"{operator!r} is not one of {', '.join(sorted(OPERATORS))}")
    if operator in ("In", "NotIn") and not values:
        expression["values"].refuse(f"{operator} needs at least one value")
    if operator in ("Exists", "DoesNotExist") and values:
        expression["values"].refuse(f"{operator} takes no values")
    if operator in ("Gt", "Lt") and (len(values) != 1 or not _integer(values[0])):
        expression["values"].refuse(f"{operator} takes one integer value")
    return {**expression.mapping(), "values": values}


def _integer(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def required_affinity(spec: Field) -> tuple[tuple[Mapping[str, Any], ...], ...] | None:
    node = spec["affinity"]["nodeAffinity"]
    terms = node["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    found = []
    for term in terms.each():
        term["matchFields"].list()
        found.append(tuple(_expression(e) for e in term["matchExpressions"].each()))
    return tuple(found) or None
