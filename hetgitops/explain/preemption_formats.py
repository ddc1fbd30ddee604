"""`explain --preempt` reports as text, JSON (schemas/explain-preempt.schema.json) and
Markdown for a PR comment."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from hetgitops.explain.kueue_messages import fmt
from hetgitops.explain.preemption_report import PreemptReport
from hetgitops.plan.maintenance import victim_json

SCHEMA_VERSION = 1

# The headline per outcome (habit 13: the words live with the outcome).
HEADLINES: dict[str, str] = {
    "fits": "admitted without preemption in pool {pool}",
    "preempt": "Kueue preempts {count} workload(s) in pool {pool} to admit it",
    "none": "no preemption admits it",
    "unknown": "not predicted",
}


def as_data(r: PreemptReport) -> dict[str, Any]:
    return {
        "workload": r.workload,
        "team": r.team,
        "priority": r.priority,
        "requests": dict(sorted(r.requests.items())),
        "pool": r.pool,
        "outcome": r.outcome,
        "victims": [victim_json(v) for v in r.victims],
        "why": list(r.why),
    }


def render_json(reports: Sequence[PreemptReport], source: str) -> str:
    body = {
        "schemaVersion": SCHEMA_VERSION,
        "source": source,
        "reports": [as_data(r) for r in reports],
    }
    return json.dumps(body, indent=2) + "\n"


def _lines(r: PreemptReport, source: str, bullet: str, code: Callable[[str], str]) -> list[str]:
    asks = ", ".join(f"{fmt(k, v)} {k}" for k, v in sorted(r.requests.items())) or "nothing"
    head = f"{r.workload} (team {r.team or '?'}, priority {r.priority}; {asks})"
    said = HEADLINES[r.outcome].format(pool=r.pool or "?", count=len(r.victims))
    out = [head, f"{bullet}{said} (running workloads from {source})"]
    for v in r.victims:
        out.append(
            f"{bullet}preempts {code(v.name)} of ClusterQueue {v.cluster_queue}, priority "
            f"{v.priority}: {v.reason}, allowed by ClusterQueue {r.team}'s {v.setting}"
        )
    out += [f"{bullet}{why}" for why in r.why]
    return out


def render_text(reports: Sequence[PreemptReport], source: str) -> str:
    return "\n\n".join("\n".join(_lines(r, source, "  ", lambda s: s)) for r in reports) + "\n"


def render_markdown(reports: Sequence[PreemptReport], source: str) -> str:
    blocks = []
    for r in reports:
        first, *rest = _lines(r, source, "- ", lambda s: f"`{s}`")
        blocks.append("\n".join([f"### {first}", "", *rest]))
    return "\n\n".join(blocks) + "\n"


FORMATS: dict[str, Callable[[Sequence[PreemptReport], str], str]] = {
    "text": render_text,
    "json": render_json,
    "markdown": render_markdown,
}


def live_lines(reports: Iterable[PreemptReport]) -> tuple[str, ...]:
    """explain's live mode: the same answer as one line per victim, or why none helps."""
    found: list[str] = []
    for r in reports:
        if r.outcome == "fits":
            continue
        found += _lines(r, "the cluster", "", lambda s: s)[1:]
    return tuple(f"preemption: {line}" for line in found)
