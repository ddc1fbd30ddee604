"""Adopt stage: the imported documents as the files of a policy directory, laid out like
`init`'s (fleet, cards, pools, teams, tiers), each document under the notes a reader needs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hetgitops.adopt.infer import Inferred
from hetgitops.output.manifests import to_yaml

HEADERS = {
    "fleet.yaml": "The cluster, as hetgitops import found it. Review versions and targets.",
    "cards.yaml": "Card types of the imported nodes (hetgitops' catalogue where they match).",
    "pools.yaml": "Pools: one per ResourceFlavor with accelerators, then nodes no flavor selects.",
    "teams.yaml": "Teams: one per ClusterQueue, with the same name, namespaces and quotas.",
    "tiers.yaml": "Priority tiers: the cluster's PriorityClasses and WorkloadPriorityClasses.",
}


def _file(header: str, docs: Sequence[Mapping[str, Any]], inferred: Inferred) -> str:
    parts = []
    for doc in docs:
        notes = inferred.notes.get((str(doc["kind"]), str(doc["metadata"]["name"])), [])
        comment = "".join(f"# {line}\n" for line in notes)
        parts.append(comment + to_yaml(dict(doc)))
    return f"# {header}\n# Written by hetgitops import.\n" + "---\n".join(parts)


def policy_files(inferred: Inferred) -> dict[str, str]:
    """File name (relative to the policy directory) -> text; empty kinds get no file."""
    groups = {
        "fleet.yaml": [inferred.fleet],
        "cards.yaml": inferred.cards,
        "pools.yaml": inferred.pools,
        "teams.yaml": inferred.teams,
        "tiers.yaml": inferred.tiers,
    }
    return {name: _file(HEADERS[name], docs, inferred) for name, docs in groups.items() if docs}
