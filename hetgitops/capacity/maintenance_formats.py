"""`capacity --without` as text, JSON (schemas/maintenance.schema.json) and Markdown."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hetgitops.capacity.maintenance import MaintenancePlan
from hetgitops.capacity.maintenance_live import LiveOnNodes
from hetgitops.plan.maintenance import victim_json

RESOURCE_HEADER = ["pool", "card type", "resource", "kind", "before", "after", "Σ nominal", "short"]
SHORT_HEADER = ["team", "pool", "resource", "kind", "nominal", "unbacked (at most)"]
BORROW_HEADER = [
    "team",
    "pool",
    "resource",
    "kind",
    "nominal",
    "reach",
    "borrowable before",
    "after",
]
LIVE_HEADER = ["priority", "workload", "cluster queue", "pods there", "nodes"]
READMIT_TITLE = (
    "What Kueue does with them and those they preempt, in the order it processes them "
    "(priority, then queue-order time)"
)
OUTCOME_WORDS = {
    "readmitted": "re-admitted, no preemption",
    "preempts": "re-admitted by preempting",
    "pending": "stays pending",
    "unknown": "not modelled",
}


def _readmit_lines(plan: MaintenancePlan, bullet: str) -> list[str]:
    """One line per Workload from the nodes, its victims and its why under it."""
    out = []
    for i, r in enumerate(plan.readmissions or (), 1):
        where = ", ".join(r.pools) or "no pool"
        head = f"{i}. {r.name} (priority {r.priority}, ClusterQueue {r.cluster_queue}, {where})"
        if r.preempted_by:
            head += f", preempted by {r.preempted_by}"
        out.append(f"{bullet}{head}: {OUTCOME_WORDS[r.outcome]}")
        out += [
            f"{bullet}   - preempts {v.name} (ClusterQueue {v.cluster_queue}, priority "
            f"{v.priority}): {v.reason}, {v.setting}"
            for v in r.victims
        ]
        out += [f"{bullet}   - {why}" for why in r.why]
    return out or [f"{bullet}none"]


def _sections(plan: MaintenancePlan) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of each table, in order; empty tables are said in words."""
    return [
        (
            "Cards left per card type",
            ["card type", "before", "after"],
            [[c.card_type, str(c.before), str(c.after)] for c in plan.cards],
        ),
        (
            "What remains per pool and resource (units of the resource)",
            RESOURCE_HEADER,
            [
                [
                    *(r.pool, r.card_type, r.resource, r.kind, str(r.before), str(r.after)),
                    *(str(r.nominal), str(r.shortfall) if r.shortfall else "-"),
                ]
                for r in plan.resources
            ],
        ),
        (
            "Teams whose nominal quota the remaining nodes no longer back",
            SHORT_HEADER,
            [
                [s.team, s.pool, s.resource, s.kind, str(s.nominal), str(s.unbacked)]
                for s in plan.short
            ],
        ),
        (
            "Borrowing that ends or shrinks (above nominal, every other team idle)",
            BORROW_HEADER,
            [
                [
                    *(b.team, b.pool, b.resource, b.kind, str(b.nominal), str(b.reach)),
                    *(str(b.before), str(b.after)),
                ]
                for b in plan.borrowing
            ],
        ),
        (
            "MIG layouts that must drain",
            ["pool", "node", "GPUs: profiles"],
            [[d.pool, d.node, _layout(d.gpus)] for d in plan.drains],
        ),
    ]


def _layout(gpus: tuple[tuple[int, tuple[tuple[str, int], ...]], ...]) -> str:
    groups: dict[str, list[int]] = {}
    for index, profiles in gpus:
        groups.setdefault(", ".join(f"{n}x {p}" for p, n in profiles), []).append(index)
    return "; ".join(f"GPU {','.join(map(str, ix))}: {text}" for text, ix in groups.items())


def _live_rows(live: LiveOnNodes) -> list[list[str]]:
    return [
        [
            str(w.priority),
            f"{w.namespace}/{w.name}",
            w.cluster_queue,
            str(w.pods),
            ",".join(w.nodes),
        ]
        for w in live.workloads
    ]


def _live_note(live: LiveOnNodes) -> str:
    return (
        f"{len(live.workloads)} admitted Workload(s) on the nodes, lowest priority first "
        f"(read from {live.server}); {live.other_pods} other pod(s), "
        f"{live.daemon_pods} DaemonSet pod(s) (drain leaves them)"
    )


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(x) for x in col) for col in zip(header, *rows, strict=False)]
    lines = [header, *rows]
    return [
        "  " + "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in lines
    ]


def _headline(plan: MaintenancePlan) -> str:
    nodes = sum(len(n) for _, n, _ in plan.nodes)
    cards = sum(c for _, _, c in plan.nodes)
    pools = ", ".join(f"{p} ({len(n)})" for p, n, _ in plan.nodes)
    named = " ".join(plan.selectors)
    return f"Without {named}: {nodes} node(s), {cards} card(s) out of pool(s) {pools}"


def render_text(plan: MaintenancePlan) -> str:
    out = [_headline(plan)]
    for title, header, rows in _sections(plan):
        out += ["", f"{title}:", *(_table(header, rows) if rows else ["  none"])]
    if plan.live is not None:
        out += ["", _live_note(plan.live) + ":"]
        out += _table(LIVE_HEADER, _live_rows(plan.live)) if plan.live.workloads else ["  none"]
    if plan.readmissions is not None:
        out += ["", READMIT_TITLE + ":", *_readmit_lines(plan, "  ")]
    out += ["", "Sequence (run in this order):"]
    out += [f"  {i}. {s.command}\n     # {s.why}" for i, s in enumerate(plan.steps, 1)]
    return "\n".join(out) + "\n"


def render_markdown(plan: MaintenancePlan) -> str:
    def table(header: list[str], rows: list[list[str]]) -> list[str]:
        return [
            "| " + " | ".join(header) + " |",
            "|" + "---|" * len(header),
            *("| " + " | ".join(r) + " |" for r in rows),
        ]

    out = [f"## {_headline(plan)}"]
    for title, header, rows in _sections(plan):
        out += ["", f"### {title}", "", *(table(header, rows) if rows else ["None."])]
    if plan.live is not None:
        out += ["", "### Admitted Workloads on the nodes", "", _live_note(plan.live) + ".", ""]
        out += table(LIVE_HEADER, _live_rows(plan.live)) if plan.live.workloads else ["None."]
    if plan.readmissions is not None:
        out += ["", f"### {READMIT_TITLE}", ""]
        out += _readmit_lines(plan, "") if plan.readmissions else ["None."]
    out += ["", "### Sequence", "", "```sh"]
    out += [f"{s.command}  # {s.why}" for s in plan.steps]
    return "\n".join([*out, "```"]) + "\n"


def as_data(plan: MaintenancePlan) -> dict[str, Any]:
    data: dict[str, Any] = {
        "schemaVersion": 1,
        "selectors": list(plan.selectors),
        "nodes": [{"pool": p, "nodes": list(n), "cards": c} for p, n, c in plan.nodes],
        "cardTypes": [
            {"cardType": c.card_type, "before": c.before, "after": c.after} for c in plan.cards
        ],
        "resources": [
            {
                "pool": r.pool,
                "cardType": r.card_type,
                "resource": r.resource,
                "kind": r.kind,
                "before": r.before,
                "after": r.after,
                "nominal": r.nominal,
                "shortfall": r.shortfall,
            }
            for r in plan.resources
        ],
        "teamsShort": [
            {
                "team": s.team,
                "pool": s.pool,
                "resource": s.resource,
                "nominal": s.nominal,
                "unbacked": s.unbacked,
            }
            for s in plan.short
        ],
        "borrowingEnds": [
            {
                "team": b.team,
                "pool": b.pool,
                "resource": b.resource,
                "nominal": b.nominal,
                "reach": b.reach,
                "before": b.before,
                "after": b.after,
            }
            for b in plan.borrowing
        ],
        "migDrains": [
            {
                "pool": d.pool,
                "node": d.node,
                "gpus": [{"index": i, "profiles": dict(p)} for i, p in d.gpus],
            }
            for d in plan.drains
        ],
        "steps": [{"command": s.command, "why": s.why} for s in plan.steps],
    }
    if plan.live is not None:
        data["live"] = {
            "server": plan.live.server,
            "workloads": [
                {
                    "namespace": w.namespace,
                    "name": w.name,
                    "clusterQueue": w.cluster_queue,
                    "priority": w.priority,
                    "pods": w.pods,
                    "nodes": list(w.nodes),
                }
                for w in plan.live.workloads
            ],
            "otherPods": plan.live.other_pods,
            "daemonPods": plan.live.daemon_pods,
        }
    if plan.readmissions is not None:
        data["readmissions"] = [
            {
                "name": r.name,
                "clusterQueue": r.cluster_queue,
                "priority": r.priority,
                "pools": list(r.pools),
                "outcome": r.outcome,
                "preempts": [victim_json(v) for v in r.victims],
                "why": list(r.why),
                **({"preemptedBy": r.preempted_by} if r.preempted_by else {}),
            }
            for r in plan.readmissions
        ]
    return data


def render_json(plan: MaintenancePlan) -> str:
    return json.dumps(as_data(plan), indent=2) + "\n"


FORMATS: dict[str, Callable[[MaintenancePlan], str]] = {
    "text": render_text,
    "json": render_json,
    "markdown": render_markdown,
}
