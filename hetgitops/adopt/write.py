"""Adopt stage: the imported documents as the files of a policy directory, laid out like
`init`'s (fleet, cards, pools, teams, tiers), each document under the notes a reader needs."""

from __future__ import annotations

import unicodedata
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


def comment(text: str) -> str:
    """`text` as one YAML comment line: every character that could end the line or hide
    (control and format characters, and the line and paragraph separators YAML 1.1 breaks
    lines at) escaped. The notes carry names read from the input: a name holding a newline
    and a document must stay inside the comment, never become a document of the file."""
    shown = "".join(
        f"\\u{ord(c):04x}" if unicodedata.category(c) in _HIDDEN or c == "\x85" else c for c in text
    )
    return f"# {shown}\n"


_HIDDEN = {"Cc", "Cf", "Zl", "Zp", "Cs"}


def _file(header: str, docs: Sequence[Mapping[str, Any]], inferred: Inferred) -> str:
    parts = []
    for doc in docs:
        notes = inferred.notes.get((str(doc["kind"]), str(doc["metadata"]["name"])), [])
        parts.append("".join(comment(line) for line in notes) + to_yaml(dict(doc)))
    return comment(header) + comment("Written by hetgitops import.") + "---\n".join(parts)


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
