"""Diff stage, day-2 hazards: the `Hazard` a rule yields and the registry of hazard rules.

Each hazard rule's user text (when it fires, what to do) is registered once, with
`@hazard_rule` on the function that yields it, like `@rule` for checks: `hetgitops rules`,
docs/troubleshooting.md and the table in docs/diff.md are all made from it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from hetgitops.diagnostics import NOWHERE, Severity, Span, register_rules


@dataclass(frozen=True, kw_only=True)
class Hazard:
    """A change that needs a human: `rule` is a stable id, `action` what to do about it."""

    rule: str
    subject: str
    message: str
    action: str
    span: Span = NOWHERE
    # What live work the hazard reaches, for `diff --kubeconfig` (diff/blast.py): pairs of
    # (what, name) such as ("flavor", NAME), ("nodes", "n1,n2"), ("taint", KEY),
    # ("namespace", NS), ("localqueue", "NS/NAME"), ("clusterqueue", NAME),
    # ("priorityclass", NAME), ("resource", "CQ|RESOURCE").
    scope: tuple[tuple[str, str], ...] = ()
    # The live blast radius, filled in by diff/blast.py when a cluster was read.
    live: str = ""
    # Policy YAML the reviewer can paste to take the safe path (kueue-flavor-renamed).
    snippet: str = ""


@dataclass(frozen=True)
class HazardRule:
    """A registered hazard rule: its stable id (public API, like rule ids), `when` it fires and
    what it breaks (the summary), and the `fix`."""

    id: str
    when: str
    fix: str

    @property
    def doc(self) -> str:
        """The rule's documentation as the rule registry keeps it (`Fix:` ends it)."""
        return f"{self.when}\nFix: {self.fix}"


# Every hazard rule by id, in registration order (schemas/diff.schema.json lists the ids).
HAZARDS: dict[str, HazardRule] = {}
Detector = TypeVar("Detector", bound=Callable[..., Any])


def hazard_rule(rule_id: str, *, when: str, fix: str) -> Callable[[Detector], Detector]:
    """Register the hazard rule `rule_id`, yielded by the decorated function. Hazards become
    GitHub annotations (warnings) in `diff --format github`, so their ids are rule ids too."""

    def register(function: Detector) -> Detector:
        if rule_id in HAZARDS:
            raise ValueError(f"hazard rule {rule_id!r} registered twice")
        HAZARDS[rule_id] = entry = HazardRule(rule_id, when, fix)
        register_rules("diff", {rule_id: entry.doc}, {rule_id: Severity.WARNING})
        return function

    return register
