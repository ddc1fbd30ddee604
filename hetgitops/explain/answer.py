"""Explain stage: the answer about one workload (`Explanation`) and the policy lines it
names (`Fix`), as plain data the formats lay out; built by explanation.py (Kueue, Volcano,
kube-scheduler) and koordinator.py (koord-scheduler)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hetgitops.diagnostics import Span
from hetgitops.explain import kueue
from hetgitops.explain.workload import Workload

if TYPE_CHECKING:
    from hetgitops.explain.advice import Advice


@dataclass(frozen=True)
class Fix:
    """A policy line to change and by how much (`amount` in the resource's units)."""

    span: Span
    what: str
    resource: str = ""
    amount: int = 0


@dataclass(frozen=True)
class Explanation:
    workload: Workload
    team: str | None
    verdict: str  # admitted | unschedulable | pending | rejected | unmanaged
    reason: str  # Kueue's reason token (or Misconfigured / Volcano's), "" when admitted
    message: str
    kueue: kueue.KueueVerdict | None = None
    volcano: tuple[str, ...] = ()
    scheduler: tuple[str, ...] = ()
    policy: tuple[str, ...] = ()
    fixes: tuple[Fix, ...] = ()
    notes: tuple[str, ...] = field(default=())
    koordinator: tuple[str, ...] = ()  # koord-scheduler's ElasticQuota view
    koord_pool: str | None = None  # the pool whose quota tree admitted it (Koordinator)
    # For a job Kueue does not admit: the policy edits that do, or why none does (advice.py).
    advice: Advice | None = None

    @property
    def flavor(self) -> str | None:
        if self.kueue is None or not self.kueue.admitted:
            return None
        chosen = [r.flavor.flavor for r in self.kueue.pod_sets if r.flavor]
        return chosen[0] if chosen else None

    @property
    def pool(self) -> str | None:
        if self.koord_pool is not None:
            return self.koord_pool
        if self.kueue is None or not self.kueue.admitted:
            return None
        chosen = [r.flavor.pool for r in self.kueue.pod_sets if r.flavor]
        return chosen[0] if chosen else None
