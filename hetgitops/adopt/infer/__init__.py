"""Adopt stage: policy documents from cluster objects, in phases whose order the types state.

    pools.find_pools     nodes, flavors, GPU configs  -> Pools    (frozen Pool facts)
    cards.card_types     Pools                        -> Cards    (+ MIG table, strategy)
    lending.pool_lending Cards, ClusterQueues         -> Lending  (+ isolated, maxPercent)
    teams.teams          Lending's pools, tiers       -> Team documents

Each phase takes the previous one's frozen result and returns a new one, so no phase can
read a pool fact a later one settles. The documents, the notes above them and the findings
are collected in `Inferred`. What the language cannot say is not guessed: the round trip
(`adopt.roundtrip`) reports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hetgitops.adopt import dra, koordinator, multikueue, nvidia
from hetgitops.adopt.infer import fleet
from hetgitops.adopt.infer.cards import card_types
from hetgitops.adopt.infer.documents import Inferred, document
from hetgitops.adopt.infer.lending import pool_lending
from hetgitops.adopt.infer.pools import find_pools
from hetgitops.adopt.infer.teams import namespace_quotas, teams, tiers, volcano_teams
from hetgitops.adopt.kueue_config import adopt_configuration
from hetgitops.adopt.sources import Imported

__all__ = ["Inferred", "document", "infer"]


def infer(
    objects: Sequence[Imported],
    catalogue: Mapping[str, Mapping[str, Any]],
    *,
    cluster: str,
    versions: Mapping[str, str],
) -> Inferred:
    by_kind: dict[str, list[Imported]] = {}
    for item in objects:
        by_kind.setdefault(item.kind, []).append(item)
    inferred = Inferred(fleet.fleet(by_kind, cluster, versions))
    inferred.diagnostics.extend(fleet.not_imported(by_kind))
    inferred.diagnostics.extend(multikueue.report(by_kind))
    gpu = nvidia.read(by_kind)
    inferred.diagnostics.extend(gpu.diagnostics)
    inferred.diagnostics.extend(nvidia.missing(gpu, by_kind.get("Node", [])))
    claimed = dra.read(by_kind)
    inferred.diagnostics.extend(claimed.diagnostics)
    found = find_pools(by_kind, catalogue, inferred, gpu, claimed)
    fleet.gpu_operator(gpu, found.strategy, inferred)
    cards = card_types(found, catalogue, inferred)
    lending = pool_lending(by_kind, cards)
    inferred.pools.extend(lending.documents())
    spec = inferred.fleet["spec"]
    koord_classes = koordinator.adopt(
        by_kind, {p.name: [n.labels for n in p.nodes] for p in found.pools}, spec
    )
    if not koordinator.adopted(spec["targets"]):  # else the round trip compares the trees
        inferred.diagnostics.extend(koordinator.report(by_kind))
    tier_names = tiers(by_kind, inferred, skip=koord_classes)
    koordinator.preemptible(by_kind, koord_classes, inferred.tiers)
    teams(by_kind, lending.pools, cards.lifecycles, tier_names, inferred)
    volcano_teams(by_kind, found.pools, tier_names, inferred)
    namespace_quotas(by_kind, inferred)
    fleet.cohorts(by_kind, inferred)
    fleet.topology(by_kind, inferred)
    kueue = inferred.fleet["spec"].get("kueue")
    if isinstance(kueue, dict):  # a Kueue cluster: what its Configuration says the policy needs
        inferred.diagnostics.extend(adopt_configuration(by_kind.get("ConfigMap", []), kueue))
    return inferred
