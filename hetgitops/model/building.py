"""Model stage, second half: turn schema-valid documents into the immutable Policy. Each kind
is built by its module (`build_fleet`, `build_pools`, `build_teams`); this one groups the
documents by kind, refuses a second singleton, and records what lost input left unknown."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from hetgitops.diagnostics import Cause, Diagnostic, error, register_rules
from hetgitops.load.documents import Document, Loss
from hetgitops.model import build_fleet, build_pools, build_teams
from hetgitops.model.dangling import with_dangling
from hetgitops.model.policy import Origin, Policy, Pool
from hetgitops.model.unknowns import unknowns

# Rule ids the model stage reports while building the Policy (the checks register their own).
register_rules(
    "model",
    {
        "node-range-invalid": "A node name range in a Pool cannot be expanded: malformed, "
        "ending before it starts, over 10,000 names, or giving invalid node names.\n"
        "Fails: `names: gpu-[10:1]`.\nPasses: `names: gpu-[01:10]`.\n"
        "Fix: write ranges as name-[001:064] or name-[1,3,5:7], low bound first.",
        "duplicate-singleton": "A policy has one Fleet and one LabelTaxonomy; a second one is "
        "refused, since which one wins would depend on file order.\n"
        "Fails: two files each with `kind: Fleet`.\nPasses: one Fleet document.\n"
        "Fix: merge the two documents into one.",
    },
)


def _tracked_pool(
    doc: Document,
    spec: dict[str, Any],
    origin: Origin,
    problems: list[Diagnostic],
    incomplete: dict[str, Cause],
) -> Pool:
    """A pool whose inventory did not expand is `incomplete`: its capacity is unknown, and
    findings computed from it would only repeat the node-range error."""
    before = len(problems)
    pool = build_pools.pool(doc, spec, origin, problems)
    if len(problems) > before:
        incomplete[pool.name] = problems[before].cause
    return pool


def _by_name(items: Iterable[Any]) -> dict[str, Any]:
    return {item.name: item for item in sorted(items, key=lambda i: i.name)}


def build_policy(
    documents: list[Document], losses: Iterable[Loss] = ()
) -> tuple[Policy, list[Diagnostic]]:
    """Build the model from documents that passed the schema; `losses` (files and documents
    that did not load or failed the schema) become the policy's unknown facts."""
    problems: list[Diagnostic] = []
    by_kind: dict[str, list[Document]] = {}
    for doc in documents:
        by_kind.setdefault(doc.kind, []).append(doc)
    problems.extend(_singletons(by_kind))
    fleet = next(
        (build_fleet.fleet(d, d.data["spec"], Origin(d.source)) for d in by_kind.get("Fleet", [])),
        None,
    )
    taxonomy = next(
        (
            build_fleet.taxonomy(d, d.data["spec"], Origin(d.source))
            for d in by_kind.get("LabelTaxonomy", [])
        ),
        None,
    )

    def build(kind: str, make: Callable[[Document, dict[str, Any], Origin], Any]) -> dict[str, Any]:
        return _by_name(make(d, d.data["spec"], Origin(d.source)) for d in by_kind.get(kind, []))

    incomplete: dict[str, Cause] = {}
    pools = build("Pool", lambda d, s, o: _tracked_pool(d, s, o, problems, incomplete))
    policy = Policy(
        fleet=fleet,
        taxonomy=taxonomy,
        card_types=build("CardType", build_pools.card_type),
        pools=pools,
        teams=build("Team", lambda d, s, o: build_teams.team(d, s, o, fleet)),
        tiers=build("PriorityTier", build_teams.tier),
        profiles=build("WorkloadProfile", build_teams.profile),
        unknown=unknowns(losses, [(d.kind, d.name) for d in documents], incomplete),
        clusters=build("Cluster", build_fleet.cluster),
    )
    return with_dangling(policy), problems


def _singletons(by_kind: dict[str, list[Document]]) -> Iterable[Diagnostic]:
    for kind in ("Fleet", "LabelTaxonomy"):
        for extra in by_kind.get(kind, [])[1:]:
            first = by_kind[kind][0]
            yield error(
                "duplicate-singleton",
                f"a policy has one {kind}; another is at {first.span}",
                extra.source.at(("kind",)),
                "kind",
                f"merge the two {kind} documents",
            )
