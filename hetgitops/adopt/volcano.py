"""Adopt stage: Volcano Queues into the policy.

A leaf Queue binds to one pool (its nodegroup affinity names the pool's nodegroup, or, with no
affinity, the only pool of its accelerator resource). It joins the team whose `<team>-<pool>`
leaf it is (the team label a rendered Queue carries, the name pattern, or a ClusterQueue of
the same name) and gives that team its weight, reclaimable, parent and, when it differs from
`<team>-<pool>`, its name (`spec.volcano.queueNames`). A Queue of no Kueue team is a team of
its own, named after the queue: deserved is its quota, capability above deserved its borrowing
limit in the `volcano` cohort (which every such team joins, so that, as in Volcano, nothing is
guaranteed unless the queue says so), guarantee what it never lends.

Parent queues (named by another queue's `spec.parent`) stay as they are: hetgitops renders
leaves only (see compilers/volcano.py on why a managed parent could not sync a shrink in one
pass); the leaves keep them as `spec.volcano.parent`. Volcano's own `root` and `default` queues
are Volcano's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hetgitops.adopt.findings import finding
from hetgitops.adopt.sources import Imported
from hetgitops.adopt.volcano_team import adopt_team_queue, names_host, team_of_spanning
from hetgitops.diagnostics import Diagnostic
from hetgitops.model import quantities
from hetgitops.plan.node_labels import pool_label

VOLCANO = "scheduling.volcano.sh"
NODEGROUP_LABEL = "volcano.sh/nodegroup-name"
ROOT = "root"
BUILTIN = {ROOT, "default"}  # created by Volcano itself
COHORT = "volcano"
HOST = ("cpu", "memory")


@dataclass(frozen=True)
class PoolRef:
    """What the queue import needs of an imported pool."""

    name: str
    resource: str
    nodegroups: frozenset[str]


def _spec(queue: Imported) -> Mapping[str, Any]:
    spec = queue.obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _amounts(values: Any) -> dict[str, Decimal]:
    found: dict[str, Decimal] = {}
    for name, value in (values or {}).items() if isinstance(values, Mapping) else ():
        try:
            found[str(name)] = quantities.value_of(str(value))
        except (ValueError, ArithmeticError):
            continue
    return found


def _groups(spec: Mapping[str, Any]) -> list[str]:
    affinity = (spec.get("affinity") or {}).get("nodeGroupAffinity") or {}
    return [str(g) for g in affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or []]


def _pool_of(spec: Mapping[str, Any], pools: Sequence[PoolRef]) -> PoolRef | None:
    groups = _groups(spec)
    if groups:
        named = set(groups)  # once, not once per pool: 1,000 queues x 40 pools
        matches = [p for p in pools if named <= p.nodegroups or groups == [p.name]]
        return matches[0] if len(matches) == 1 else None
    wanted = {
        r
        for field in ("deserved", "capability")
        for r in _amounts(spec.get(field))
        if r not in HOST and "/" in r
    }
    wanted |= {r for r in _amounts((spec.get("guarantee") or {}).get("resource")) if "/" in r}
    matches = [p for p in pools if p.resource in wanted]
    return matches[0] if len(matches) == 1 else None


def leaf_pools(
    queues: Sequence[Imported], pools: Sequence[PoolRef]
) -> list[tuple[Imported, PoolRef]]:
    """Each leaf queue (not Volcano's own, not a parent) with the pool it binds to."""
    parents = {str(_spec(q).get("parent") or ROOT) for q in queues}
    found = []
    for queue in queues:
        if queue.name in BUILTIN or queue.name in parents:
            continue
        pool = _pool_of(_spec(queue), pools)
        if pool is not None:
            found.append((queue, pool))
    return found


def _label(obj: Mapping[str, Any], suffix: str) -> str:
    for key, value in ((obj.get("metadata") or {}).get("labels") or {}).items():
        if str(key).endswith(suffix):
            return str(value)
    return ""


def _team_of(queue: Imported, pool: PoolRef, teams: Mapping[str, dict[str, Any]]) -> str:
    labelled = _label(queue.obj, "/team")
    labels = (queue.obj.get("metadata") or {}).get("labels") or {}
    if labelled and pool_label(labels, "") in ("", pool.name):
        return labelled
    suffix = f"-{pool.name}"
    if queue.name.endswith(suffix) and queue.name.removesuffix(suffix) in teams:
        return queue.name.removesuffix(suffix)
    return queue.name


@dataclass
class Adopted:
    """New team documents, whether the `volcano` cohort is needed, and the findings."""

    teams: list[dict[str, Any]]
    cohort: bool
    diagnostics: list[Diagnostic]
    queues: int = 0


def adopt_queues(
    queues: Sequence[Imported],
    pools: Sequence[PoolRef],
    teams: Mapping[str, dict[str, Any]],
    tiers: Sequence[str],
) -> Adopted:
    """Fills the existing team documents (`teams`, by name) in place; returns new ones."""
    adopted = Adopted([], False, [])
    parents = {str(_spec(q).get("parent") or ROOT) for q in queues}
    new: dict[str, dict[str, Any]] = {}
    reclaimable: dict[str, set[bool]] = {}
    host: dict[str, set[bool]] = {}  # per team: whether each of its queues names cpu or memory
    layouts: dict[str, str] = {}  # per team: "team" (one queue) or "pool" (leaves) so far

    def count(name: str, layout: str, spec: Mapping[str, Any]) -> None:
        layouts[name] = layout
        host.setdefault(name, set()).add(names_host(spec))
        reclaimable.setdefault(name, set()).add(spec.get("reclaimable") is not False)
        adopted.queues += 1

    for queue in sorted(queues, key=lambda q: q.name):
        if queue.name in BUILTIN:
            continue
        if queue.name in parents:
            adopted.diagnostics.append(
                finding(
                    "import-kind-not-imported",
                    f"Queue {queue.name} is a parent queue: hetgitops renders leaf queues "
                    "only (a managed parent could not sync a shrink in one pass); it stays as "
                    "it is, and its children keep it as spec.volcano.parent",
                    queue.span,
                )
            )
            continue
        spec = _spec(queue)
        pool = _pool_of(spec, pools)
        owner = None if _groups(spec) else team_of_spanning(queue, teams)
        if owner is not None and owner not in layouts:
            adopt_team_queue(teams[owner]["spec"], owner, queue)
            count(owner, "team", spec)
            continue
        if pool is None:
            adopted.diagnostics.append(
                finding(
                    "import-object-not-adopted",
                    f"Queue {queue.name}: binds to no single imported pool (nodegroup affinity "
                    f"{_groups(spec) or 'none'}, no single pool of its accelerator resource"
                    f"{_spanning_why(queue, owner, layouts)}); it stays unmanaged",
                    queue.span,
                )
            )
            continue
        name = _team_of(queue, pool, teams)
        if layouts.get(name) == "team":
            adopted.diagnostics.append(
                finding(
                    "import-object-not-adopted",
                    f"Queue {queue.name}: team {name} already has one queue across its pools, "
                    "and a team has either that or a leaf per pool; it stays unmanaged",
                    queue.span,
                )
            )
            continue
        team = teams.get(name) or new.get(name)
        if team is None:
            team = new[name] = _new_team(name, queue, pool, tiers)
            adopted.cohort = True
            adopted.diagnostics.append(
                finding(
                    "import-team-without-namespace",
                    f"Queue {queue.name} belongs to no ClusterQueue and names no namespace: "
                    f"its team gets namespace {name}",
                    queue.span,
                )
            )
            if not _groups(spec):  # bound by its resource alone: one queue, no affinity
                adopt_team_queue(team["spec"], name, queue)
                count(name, "team", spec)
                continue
        elif name in new and not _quota(team, pool):
            # Another leaf of a team import made from Volcano queues (`<team>-<pool>`).
            _add_quota(team["spec"], queue, pool)
        elif not _quota(team, pool):
            adopted.diagnostics.append(
                finding(
                    "import-object-not-adopted",
                    f"Queue {queue.name}: team {name} has no quota on pool {pool.name}, which "
                    "the queue binds to; it stays unmanaged",
                    queue.span,
                )
            )
            continue
        _settings(team["spec"], name, queue, pool)
        count(name, "pool", spec)
    for name, values in reclaimable.items():
        # Team-wide: a team whose queues differ keeps the default (reported by the round trip).
        if values == {False}:
            team = teams.get(name) or new[name]
            team["spec"].setdefault("volcano", {})["reclaimable"] = False
    for name, values in host.items():
        if values == {False}:  # every queue of the team names the accelerators only
            team = teams.get(name) or new[name]
            team["spec"].setdefault("volcano", {})["resources"] = "accelerators"
    adopted.teams = [new[n] for n in sorted(new)]
    return adopted


def _spanning_why(queue: Imported, owner: str | None, layouts: Mapping[str, str]) -> str:
    """Why a pool-less queue did not become its team's one queue either."""
    if _groups(_spec(queue)):
        return ""
    if owner is None:
        return ", no team of its name, team label or namespace"
    has = "a queue across its pools" if layouts[owner] == "team" else "a leaf per pool"
    return f"; team {owner} already has {has}"


def _quota(team: Mapping[str, Any], pool: PoolRef) -> bool:
    return any(q.get("pool") == pool.name for q in team["spec"].get("quotas") or [])


def _settings(team: dict[str, Any], name: str, queue: Imported, pool: PoolRef) -> None:
    spec = _spec(queue)
    volcano: dict[str, Any] = team.setdefault("volcano", {})
    weight = spec.get("weight")
    # A whole number, not `false` (a bool is an int in Python): the round trip reports the rest.
    if isinstance(weight, int) and not isinstance(weight, bool) and weight != 1:
        volcano["weight"] = weight
    if not spec.get("capability"):
        volcano["omitCapability"] = True
    parent = str(spec.get("parent") or ROOT)
    if parent != ROOT:
        volcano["parent"] = parent
    if queue.name != f"{name}-{pool.name}":
        volcano.setdefault("queueNames", {})[pool.name] = queue.name
    if not volcano:
        del team["volcano"]


def _new_team(name: str, queue: Imported, pool: PoolRef, tiers: Sequence[str]) -> dict[str, Any]:
    team: dict[str, Any] = {
        "namespaces": [name],
        "cohort": COHORT,
        "quotas": [],
        "tiers": list(tiers),
    }
    _add_quota(team, queue, pool)
    return {
        "apiVersion": "hetgitops.io/v1alpha1",
        "kind": "Team",
        "metadata": {"name": name},
        "spec": team,
    }


def _add_quota(team: dict[str, Any], queue: Imported, pool: PoolRef) -> None:
    """The queue's quota on its pool: deserved, capability above it as the borrowing limit,
    guarantee as a share of deserved (guaranteePercent, which lends nothing less) when one
    percentage gives it exactly for every queue of the team, else as what it never lends."""
    spec = _spec(queue)
    deserved = _amounts(spec.get("deserved"))
    capability = _amounts(spec.get("capability"))
    guarantee = _amounts((spec.get("guarantee") or {}).get("resource"))
    cards = int(deserved.get(pool.resource, 0))
    quota: dict[str, Any] = {"pool": pool.name, "cards": cards}
    if pool.resource in capability:
        quota["borrowingLimit"] = max(0, int(capability[pool.resource]) - cards)
    kept = int(guarantee.get(pool.resource, 0))
    volcano = team.setdefault("volcano", {})
    percent = volcano.get("guaranteePercent")
    if percent is None and kept and not team["quotas"]:
        percent = next((p for p in range(101) if cards * p // 100 == kept), None)
        if percent is not None:
            volcano["guaranteePercent"] = percent
    if (cards * (percent or 0) // 100) != kept:
        quota["lendingLimit"] = max(0, cards - kept)
    if not volcano:
        del team["volcano"]
    team["quotas"].append(quota)
    if cards and "cpuPerCard" not in team:
        for host, key, binary in (("cpu", "cpuPerCard", False), ("memory", "memoryPerCard", True)):
            if host in deserved:
                team[key] = quantities.canonical(deserved[host] / cards, binary=binary)
