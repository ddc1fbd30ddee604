"""Adopt stage: a Volcano Queue that spans a team's pools, into the team (`layout: team`).

Hand-written Volcano clusters often have one queue per team with no nodegroup affinity, its
capability (and maybe deserved) summed over the team's pools. Such a queue binds to no single
pool (adopt/volcano.py), so it is bound to a Kueue team instead: the team its team label names,
the team of its name, or the team owning a namespace of its name. The team gets
`spec.volcano.layout: team` (its render is one queue, not a leaf per pool), the queue's name
when it is not the team's (`queueName`), `omitDeserved` when the queue has no deserved, and the
queue's deserved and capability as written (`deserved`, `capability`: hand-written numbers,
which the volcano-kueue-mismatch check compares with Kueue's nominal quota and reach).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hetgitops.adopt.sources import Imported
from hetgitops.model import quantities

ROOT = "root"
HOST = ("cpu", "memory")


def _spec(queue: Imported) -> Mapping[str, Any]:
    spec = queue.obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _label(obj: Mapping[str, Any], suffix: str) -> str:
    for key, value in ((obj.get("metadata") or {}).get("labels") or {}).items():
        if str(key).endswith(suffix):
            return str(value)
    return ""


def team_of_spanning(queue: Imported, teams: Mapping[str, dict[str, Any]]) -> str | None:
    """The Kueue team a pool-less queue belongs to: by its team label, its name, or the team
    that owns a namespace of its name; None when no team (or more than one) fits."""
    labelled = _label(queue.obj, "/team")
    if labelled in teams:
        return labelled
    if queue.name in teams:
        return queue.name
    owners = [n for n, t in teams.items() if queue.name in (t["spec"].get("namespaces") or [])]
    return owners[0] if len(owners) == 1 else None


def names_host(spec: Mapping[str, Any]) -> bool:
    """Whether any amount of the queue (deserved, capability, guarantee) names cpu or memory;
    a queue naming nothing at all counts as naming them (nothing tells it apart)."""
    amounts = [spec.get("deserved"), spec.get("capability")]
    amounts.append((spec.get("guarantee") or {}).get("resource"))
    named = [set(a) for a in amounts if isinstance(a, Mapping) and a]
    return not named or any(set(HOST) & n for n in named)


def adopt_team_queue(team: dict[str, Any], name: str, queue: Imported) -> None:
    """Writes the `spec.volcano` of team `name` (`team`: its spec) for its one queue."""
    spec = _spec(queue)
    volcano: dict[str, Any] = team.setdefault("volcano", {})
    volcano["layout"] = "team"
    if queue.name != name:
        volcano["queueName"] = queue.name
    weight = spec.get("weight")
    if isinstance(weight, int) and not isinstance(weight, bool) and weight != 1:
        volcano["weight"] = weight
    parent = str(spec.get("parent") or ROOT)
    if parent != ROOT:
        volcano["parent"] = parent
    for field, omit in (("deserved", "omitDeserved"), ("capability", "omitCapability")):
        amounts = spec.get(field)
        if not amounts:
            volcano[omit] = True
        elif isinstance(amounts, Mapping):
            volcano[field] = {
                str(r): quantities.canonical(quantities.value_of(str(q)), binary=r == "memory")
                for r, q in sorted(amounts.items())
                if _quantity(q)
            }


def _quantity(value: Any) -> bool:
    try:
        quantities.value_of(str(value))
    except (ValueError, ArithmeticError):
        return False
    return True
