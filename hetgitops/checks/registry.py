"""The rule registry: every semantic rule registers here under a stable kebab-case id."""

from __future__ import annotations

import datetime as dt
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from hetgitops.diagnostics import Diagnostic, Severity, register_rules
from hetgitops.model.policy import Policy


@dataclass(frozen=True)
class CheckContext:
    """Inputs a rule may need besides the policy; `now` makes expiry checks deterministic."""

    now: dt.date
    # The targets asked for (`render --target`), when not the Fleet's `spec.targets`.
    targets: tuple[str, ...] | None = None


RuleFunction = Callable[[Policy, CheckContext], Iterator[Diagnostic]]


@dataclass(frozen=True)
class Rule:
    """A registered rule: stable id, default severity, docs (the docstring), the function."""

    id: str
    severity: Severity
    function: RuleFunction

    @property
    def doc(self) -> str:
        return (self.function.__doc__ or "").strip()


RULES: dict[str, Rule] = {}


def rule(
    rule_id: str, severity: Severity = Severity.ERROR
) -> Callable[[RuleFunction], RuleFunction]:
    """Register a rule function under a stable kebab-case id."""

    def register(function: RuleFunction) -> RuleFunction:
        if rule_id in RULES:
            raise ValueError(f"rule id {rule_id!r} registered twice")
        RULES[rule_id] = Rule(rule_id, severity, function)
        # The docstring is the rule's documentation, in the one registry of emitted ids.
        doc = inspect.cleandoc(function.__doc__ or "")
        register_rules("check", {rule_id: doc}, {rule_id: severity})
        return function

    return register
