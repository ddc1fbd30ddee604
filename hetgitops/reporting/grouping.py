"""Root causes and their consequences, shared by the report formats."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from hetgitops.diagnostics import Cause, Diagnostic


@dataclass(frozen=True)
class Group:
    """An independent finding and the findings that follow from it (in report order)."""

    root: Diagnostic
    consequences: list[Diagnostic] = field(default_factory=list)


def grouped(diagnostics: Iterable[Diagnostic]) -> list[Group]:
    """Each independent finding in report order, with its consequences under it. A
    consequence whose cause is not in the report (a caller filtered it) stands on its own, so
    nothing is ever dropped from a report."""
    found = list(diagnostics)
    groups: list[Group] = []
    by_cause: dict[Cause, Group] = {}
    for d in found:
        if d.consequence_of is None:
            group = Group(d)
            groups.append(group)
            by_cause.setdefault(d.cause, group)
    for d in found:
        if d.consequence_of is not None:
            root = by_cause.get(d.consequence_of)
            if root is None:
                groups.append(Group(d))
            else:
                root.consequences.append(d)
    return sorted(groups, key=lambda g: g.root.sort_key())
