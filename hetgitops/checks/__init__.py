"""Check stage: semantic rules over the Policy, one module per family, one explicit registry."""

from __future__ import annotations

from hetgitops.checks import (
    borrowing,
    budget,
    capacity_rules,
    coefficients,
    fleet,
    host_quota,
    inventory,
    labels,
    lifecycle,
    mig_rules,
    node_agents,
    priorities,
    profiles,
    queues,
    references,
    sharing,
    twins,
)
from hetgitops.checks.registry import RULES, CheckContext, Rule
from hetgitops.diagnostics import Diagnostic
from hetgitops.model.policy import Policy

# Importing a family module registers its rules; this tuple is the explicit list of families.
FAMILIES: tuple[str, ...] = tuple(
    module.__name__.rsplit(".", 1)[-1]
    for module in (
        fleet,
        references,
        inventory,
        capacity_rules,
        budget,
        borrowing,
        mig_rules,
        sharing,
        priorities,
        labels,
        lifecycle,
        profiles,
        host_quota,
        coefficients,
        queues,
        twins,
        node_agents,
    )
)

__all__ = ["FAMILIES", "RULES", "CheckContext", "Rule", "run_checks"]


def run_checks(policy: Policy, context: CheckContext) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    for registered in RULES.values():
        found.extend(registered.function(policy, context))
    return found
