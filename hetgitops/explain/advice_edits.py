"""Explain stage, advice: one edit of a policy document (`Edit`), written as the user sees it
(`file:line field: from -> to`) and as an RFC 6902 operation on the document, and applied to
the model the same way, so the advice can be explained again before it is given.

Why both: the advice is only given after the edited policy passed `validate`'s rules and
explain admitted the job on it (`advice.py`); the document form is what the user (or a bot)
applies. The two are written side by side in each constructor below so they cannot drift."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hetgitops.diagnostics import Span
from hetgitops.load.sourcemap import format_path
from hetgitops.model.policy import Node, Policy, Pool, Quota, Team

PathKey = tuple[str | int, ...]


@dataclass(frozen=True)
class Edit:
    """One change of one policy document: `op` (replace | add) at `path` inside the document
    of `kind`/`name`; `before` is None for an add. `span` is the line to change (for an add,
    the list the value goes in)."""

    kind: str
    name: str
    path: PathKey
    op: str
    before: Any
    value: Any
    span: Span
    # The same change on the model (not compared: two equal edits apply alike).
    model: Callable[[Policy], Policy] = field(compare=False, repr=False)
    # A move's source path (RFC 6902 `from`).
    source: PathKey = ()

    @property
    def field(self) -> str:
        return format_path(self.path)

    @property
    def pointer(self) -> str:
        """The RFC 6901 JSON pointer of `path` inside the document."""
        return _pointer(self.path)

    def change(self) -> str:
        """`field: from -> to`."""
        before = "(none)" if self.op == "add" else show(self.before)
        field = format_path(self.path[:-1]) + " (pools in order)" if self.op == "move" else None
        return f"{field or self.field}: {before} -> {show(self.value)}"

    def line(self) -> str:
        """`file:line Kind name field: from -> to`, the form every `policy:` edit line takes."""
        where = f"{self.span.file}:{self.span.line}" if self.span.line > 0 else self.span.file
        return f"{where} {self.kind} {self.name} {self.change()}"

    def patch(self) -> dict[str, Any]:
        """The JSON form: an RFC 6902 operation plus where the document is (a move shows the
        list before and after in `old` and `value`, which RFC 6902 ignores)."""
        return {
            "op": self.op,
            **({"from": _pointer(self.source)} if self.op == "move" else {}),
            "path": self.pointer,
            "value": self.value,
            "old": self.before,
            "kind": self.kind,
            "name": self.name,
            "file": self.span.file,
            "line": self.span.line,
            "field": self.field,
        }


def _pointer(path: PathKey) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def show(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(show(v) for v in value) + "]"
    return str(value)


def apply(policy: Policy, edits: tuple[Edit, ...]) -> Policy:
    """The policy with every edit made to its model (a new Policy: nothing derived carried)."""
    for edit in edits:
        policy = edit.model(policy)
    return dataclasses.replace(policy)


def _with_team(policy: Policy, team: Team) -> Policy:
    teams = {**policy.teams, team.name: team}
    return dataclasses.replace(policy, teams=teams)


def _with_quota(policy: Policy, team_name: str, index: int, quota: Quota) -> Policy:
    team = policy.teams[team_name]
    quotas = list(team.quotas)
    if index == len(quotas):
        quotas.append(quota)
    else:
        quotas[index] = quota
    return _with_team(policy, dataclasses.replace(team, quotas=tuple(quotas)))


def set_quota(team: Team, index: int, part: PathKey, value: int | float) -> Edit:
    """A quota entry's `cards`, `normalized`, `borrowingLimit` or `mig.<profile>` set to
    `value` (as written: a grant in force is not part of `cards` in the document)."""
    quota = team.quotas[index]
    before: Any
    model_value: int | float
    if part == ("cards",):
        before = None if quota.cards is None else quota.cards - quota.granted
        model_value = int(value) + quota.granted
    elif part == ("normalized",):
        before, model_value = quota.normalized, value
    elif part == ("borrowingLimit",):
        before, model_value = quota.borrowing_limit, value
    else:
        before, model_value = quota.mig.get(str(part[1])), value

    def model(policy: Policy) -> Policy:
        now = policy.teams[team.name].quotas[index]
        if part == ("cards",):
            changed = dataclasses.replace(now, cards=int(model_value))
        elif part == ("normalized",):
            changed = dataclasses.replace(now, normalized=float(model_value))
        elif part == ("borrowingLimit",):
            changed = dataclasses.replace(now, borrowing_limit=int(model_value))
        else:
            changed = dataclasses.replace(now, mig={**now.mig, str(part[1]): int(model_value)})
        return _with_quota(policy, team.name, index, changed)

    path: PathKey = ("spec", "quotas", index, *part)
    written: Any = value
    if part[0] == "mig" and not quota.mig:  # no `mig` mapping yet: it is the one added
        path, written = path[:-1], {str(part[1]): value}
    op = "add" if before is None else "replace"
    span = quota.origin.at(*part) if op == "replace" else quota.origin.span
    return Edit("Team", team.name, path, op, before, written, span, model)


def add_quota(
    team: Team,
    pool: str,
    *,
    cards: int = 0,
    mig: Mapping[str, int] | None = None,
    first: bool = False,
) -> Edit:
    """A new quota entry for `pool` at the end of the team's list (its last flavor), or
    `first` (the flavor Kueue tries first)."""
    index = 0 if first else len(team.quotas)
    value: dict[str, Any] = {"pool": pool}
    if mig:
        value["mig"] = dict(mig)
    else:
        value["cards"] = cards

    def model(policy: Policy) -> Policy:
        origin = policy.teams[team.name].origin.child("spec", "quotas", index)
        quota = Quota(pool, None if mig else cards, None, dict(mig or {}), None, None, origin)
        if first:
            now = policy.teams[team.name]
            return _with_team(policy, dataclasses.replace(now, quotas=(quota, *now.quotas)))
        return _with_quota(policy, team.name, index, quota)

    span = team.origin.at("spec", "quotas")
    return Edit("Team", team.name, ("spec", "quotas", index), "add", None, value, span, model)


def move_first(team: Team, index: int, added: str | None = None) -> Edit:
    """The quota entry at `index` moved to the front: Kueue tries its flavor first. `added`:
    the pool of an entry appended just before (at `index`, one past the team's list)."""
    order = [q.pool for q in team.quotas] + ([added] if added else [])
    after = [order[index], *order[:index], *order[index + 1 :]]

    def model(policy: Policy) -> Policy:
        now = policy.teams[team.name]
        quotas = (now.quotas[index], *now.quotas[:index], *now.quotas[index + 1 :])
        return _with_team(policy, dataclasses.replace(now, quotas=quotas))

    span = team.origin.at("spec", "quotas")
    path: PathKey = ("spec", "quotas", 0)
    source: PathKey = ("spec", "quotas", index)
    return Edit("Team", team.name, path, "move", order, after, span, model, source)


def set_budget(team: Team, monthly: float) -> Edit:
    def model(policy: Policy) -> Policy:
        now = policy.teams[team.name]
        return _with_team(policy, dataclasses.replace(now, budget_monthly=float(monthly)))

    path = ("spec", "budget", "monthly")
    span = team.origin.at(*path)
    return Edit("Team", team.name, path, "replace", team.budget_monthly, monthly, span, model)


def add_nodes(pool: Pool, count: int, template: Node) -> Edit:
    """`count` nodes like `template` (its cards, zone, rack, NVLink domain) appended to the
    pool's `spec.nodes`, named `<pool>-added-<n>`."""
    index = _entries(pool)
    names = [f"{pool.name}-added-{n}" for n in range(1, count + 1)]
    value: dict[str, Any] = {"names": names, "cardsPerNode": template.cards}
    for key, attr in (("zone", template.zone), ("rack", template.rack)):
        if attr is not None:
            value[key] = attr
    if template.nvlink_domain is not None:
        value["nvlinkDomain"] = template.nvlink_domain

    def model(policy: Policy) -> Policy:
        now = policy.pools[pool.name]
        at = now.origin.child("spec", "nodes", index)
        added = tuple(
            Node(n, template.cards, template.zone, template.rack, template.nvlink_domain, at)
            for n in names
        )
        changed = dataclasses.replace(now, nodes=(*now.nodes, *added))
        return dataclasses.replace(policy, pools={**policy.pools, pool.name: changed})

    span = pool.origin.at("spec", "nodes")
    return Edit("Pool", pool.name, ("spec", "nodes", index), "add", None, value, span, model)


def _entries(pool: Pool) -> int:
    """How many entries the pool's `spec.nodes` list has (each node's origin names its own)."""
    found = [n.origin.base[2] for n in pool.nodes if len(n.origin.base) > 2]
    return max((int(i) for i in found if isinstance(i, int)), default=-1) + 1


def budget_after(monthly: float) -> int:
    """A budget that holds `monthly`: rounded up to a whole unit of the currency."""
    return math.ceil(monthly)
