"""Adopt stage: what every import phase writes into (`Inferred`: the documents, the notes
above them, the findings) and the small readers the phases share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hetgitops.adopt.sources import KUEUE, Imported
from hetgitops.diagnostics import Diagnostic
from hetgitops.model import quantities


@dataclass
class Inferred:
    """Policy documents by file (fleet, cards, pools, teams, tiers) and the notes for a
    reader, keyed by (kind, name): written as comments above the document. The phases only
    add to it; what one phase tells the next travels in their frozen results instead."""

    fleet: dict[str, Any]
    cards: list[dict[str, Any]] = field(default_factory=list)
    pools: list[dict[str, Any]] = field(default_factory=list)
    teams: list[dict[str, Any]] = field(default_factory=list)
    tiers: list[dict[str, Any]] = field(default_factory=list)
    notes: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # Per team, the accelerator caps of the ResourceQuota its namespaceQuota adopts, by
    # resource (`requests.<resource>`): kept where they are not the queue's reach
    # (adopt/quota_caps.py, once the written policy is built).
    quota_caps: dict[str, dict[str, str]] = field(default_factory=dict)

    def note(self, kind: str, name: str, text: str) -> None:
        self.notes.setdefault((kind, name), []).append(text)


def document(kind: str, name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "hetgitops.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": dict(spec),
    }


def whole(value: Any) -> int:
    """A quantity as a whole number, 0 when it is none: a malformed quota claims nothing
    here, and the round trip reports the object as the cluster has it."""
    try:
        return int(quantities.value_of(str(value)))
    except (ValueError, ArithmeticError):
        return 0


def is_queueing(items: list[Imported]) -> bool:
    """Whether the objects are Kueue's (served under its API group)."""
    return any(str(i.obj.get("apiVersion", "")).startswith(KUEUE) for i in items)
