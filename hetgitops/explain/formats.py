"""Explanations as text, JSON (schemas/explain.schema.json) and Markdown."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from hetgitops.explain.answer import Explanation
from hetgitops.explain.existing import WorkloadReport
from hetgitops.explain.kueue import Attempt, KueueVerdict
from hetgitops.explain.kueue_messages import fmt
from hetgitops.plan.quota_plan import HOST_RESOURCES as HOST

SCHEMA_VERSION = 1


def _request(e: Explanation) -> str:
    parts = []
    for ps in e.workload.pod_sets:
        ask = ", ".join(
            f"{v} {r}" for r, v in sorted(ps.requests.items()) if r not in ("cpu", "memory")
        )
        parts.append(f"{ps.name}: {ps.count} pod(s) x {ask or 'no accelerator'}")
    return "; ".join(parts)


def _attempt(a: Attempt) -> str:
    if a.mode == "fit":
        return "fits"
    if a.mode == "borrow":
        lent = ", ".join(
            f"{fmt(r, n)} {r}" for r, n in sorted(a.borrowing.items()) if r not in HOST
        )
        return f"fits, borrowing {lent}"
    return f"{a.reason}: " + ", ".join(a.messages)


def as_data(e: Explanation) -> dict[str, Any]:
    w = e.workload
    data: dict[str, Any] = {
        "workload": {
            "kind": w.kind,
            "name": w.name,
            "namespace": w.namespace,
            "queue": w.queue,
            "tier": w.tier,
            "scheduler": w.scheduler,
            "podSets": [
                {
                    "name": ps.name,
                    "count": ps.count,
                    "requests": dict(sorted(ps.requests.items())),
                    "nodeSelector": dict(sorted(ps.node_selector.items())),
                }
                for ps in w.pod_sets
            ],
        },
        "team": e.team,
        "verdict": e.verdict,
        "reason": e.reason,
        "message": e.message,
        "flavor": e.flavor,
        "pool": e.pool,
        "kueue": None,
        "volcano": list(e.volcano),
        "koordinator": list(e.koordinator),
        "kubeScheduler": list(e.scheduler),
        "policy": list(e.policy),
        "live": list(e.notes),
        "fixes": [
            {"at": str(f.span), "change": f.what, "resource": f.resource, "amount": f.amount}
            for f in e.fixes
        ],
        "advice": None
        if e.advice is None
        else {
            "kind": e.advice.kind,
            "reason": e.advice.reason,
            "patches": [edit.patch() for edit in e.advice.edits],
        },
    }
    if e.kueue is not None:
        data["kueue"] = {
            "clusterQueue": e.kueue.cluster_queue,
            "admitted": e.kueue.admitted,
            "podSets": _pod_set_data(e.kueue),
        }
        if e.kueue.cycles:
            data["kueue"]["cycles"] = [
                {"reason": c.reason, "message": c.message, "podSets": _pod_set_data(c)}
                for c in e.kueue.cycles
            ]
    return data


def _pod_set_data(verdict: KueueVerdict) -> list[dict[str, Any]]:
    return [
        {
            "name": r.pod_set.name,
            "flavor": r.flavor.flavor if r.flavor else None,
            "pool": r.flavor.pool if r.flavor else None,
            "reason": r.reason,
            "attempts": [
                {
                    "flavor": a.flavor,
                    "pool": a.pool,
                    "mode": a.mode,
                    "reason": a.reason,
                    "messages": list(a.messages),
                    "borrowing": dict(sorted(a.borrowing.items())),
                }
                for a in r.attempts
            ],
            "placement": None
            if r.placement is None
            else {
                "level": r.placement.level,
                "domain": list(r.placement.domain),
                "nodes": list(r.placement.nodes),
            },
        }
        for r in verdict.pod_sets
    ]


def render_json(explanations: Iterable[Explanation]) -> str:
    body = {"schemaVersion": SCHEMA_VERSION, "explanations": [as_data(e) for e in explanations]}
    return json.dumps(body, indent=2, sort_keys=False) + "\n"


def _lines(e: Explanation, bullet: str, code: Callable[[str], str]) -> list[str]:
    w = e.workload
    head = f"{w.kind} {w.name}" + (f" in {w.namespace}" if w.namespace else "")
    out = [f"{head} (team {e.team or '?'}; {_request(e)})"]
    if e.kueue is not None:
        cq = e.kueue.cluster_queue
        for number, cycle in enumerate(e.kueue.cycles, 1):
            out.append(f"{bullet}Kueue, ClusterQueue {cq}, scheduling cycle {number}:")
            out += _pod_sets(cycle, bullet, code)
            out.append(
                f"  {bullet}{cycle.reason}: Kueue requeues the Workload at once and resumes "
                "each pod set's flavor scan after the flavor it tried (LastTriedFlavorIdx)"
            )
        again = f", scheduling cycle {len(e.kueue.cycles) + 1}" if e.kueue.cycles else ""
        out.append(f"{bullet}Kueue, ClusterQueue {cq}{again}, flavors in order:")
        out += _pod_sets(e.kueue, bullet, code)
    if e.verdict == "admitted":
        out.append(f"{bullet}verdict: admitted{_where(e)}")
    else:
        out.append(f"{bullet}verdict: {e.verdict}, {e.reason}: {code(e.message)}")
        if e.kueue is not None and e.kueue.cycles:
            out.append(
                f"{bullet}the Workload's QuotaReserved condition shows this or, after the resumed "
                f"cycle, {e.kueue.reason}: {code(e.kueue.message)} (it alternates as Kueue "
                "requeues the Workload)"
            )
    for title, lines in (
        ("Volcano", e.volcano),
        ("Koordinator", e.koordinator),
        ("kube-scheduler", e.scheduler),
        ("policy", e.policy),
        ("live", e.notes),
    ):
        for line in lines:
            out.append(f"{bullet}{title}: {line}")
    return out


def _where(e: Explanation) -> str:
    """The flavor of an admitted workload; per pod set when they differ (a RayJob's worker
    groups on two card types: Kueue gives each pod set its own flavor)."""
    chosen = [(r.pod_set.name, r.flavor) for r in e.kueue.pod_sets if r.flavor] if e.kueue else []
    flavors = dict.fromkeys((f.flavor, f.pool) for _, f in chosen)
    if len(flavors) <= 1:
        if e.flavor is None and e.pool is not None:  # Koordinator: a quota tree per pool
            return f" in pool {e.pool}"
        return f" in flavor {e.flavor} (pool {e.pool})" if e.flavor else ""
    parts = [
        f"{', '.join(n for n, f in chosen if (f.flavor, f.pool) == key)} in flavor {key[0]} "
        f"(pool {key[1]})"
        for key in flavors
    ]
    return ": " + "; ".join(parts)


def _pod_sets(verdict: KueueVerdict, bullet: str, code: Callable[[str], str]) -> list[str]:
    out = []
    for result in verdict.pod_sets:
        name = result.pod_set.name
        for a in result.attempts:
            out.append(f"  {bullet}{name} {a.index + 1}. {a.flavor} (pool {a.pool}): {_attempt(a)}")
        if result.flavor is None:
            # What stopped the pod set besides its flavors: a resource no group covers, or
            # the topology placement of the flavor it was given.
            shown = {m for a in result.attempts for m in a.messages}
            for message in result.messages:
                if message not in shown:
                    out.append(f"  {bullet}pod set {name}: {code(message)}")
        if result.placement is not None:
            p = result.placement
            dom = f" domain {'/'.join(p.domain)} ({p.level})" if p.domain else ""
            out.append(f"  {bullet}{name} placed{dom} on {', '.join(p.nodes)}")
    return out


def render_text(explanations: Iterable[Explanation]) -> str:
    blocks = ["\n".join(_lines(e, "  ", lambda s: s)) for e in explanations]
    return "\n\n".join(blocks) + "\n"


def render_markdown(explanations: Iterable[Explanation]) -> str:
    blocks = []
    for e in explanations:
        first, *rest = _lines(e, "- ", lambda s: f"`{s}`")
        blocks.append("\n".join([f"### {first}", "", *rest]))
    return "\n\n".join(blocks) + "\n"


FORMATS: dict[str, Callable[[Iterable[Explanation]], str]] = {
    "text": render_text,
    "json": render_json,
    "markdown": render_markdown,
}


def render_workload(report: WorkloadReport, output_format: str) -> str:
    """`explain workload NS/NAME`: the Workload's conditions, then the policy terms."""
    if output_format == "json":
        body = {
            "schemaVersion": SCHEMA_VERSION,
            "kind": report.kind,
            "workload": report.name,
            "clusterQueue": report.cluster_queue,
            "state": report.state,
            "conditions": list(report.conditions),
            "policy": list(report.policy),
            "events": list(report.events),
        }
        return json.dumps(body, indent=2) + "\n"
    bullet = "- " if output_format == "markdown" else "  "
    queue = "Volcano queue" if report.kind == "PodGroup" else "ClusterQueue"
    head = f"{report.kind} {report.name} ({queue} {report.cluster_queue or '?'}): {report.state}"
    out = [f"### {head}" if output_format == "markdown" else head]
    out += [f"{bullet}condition {c}" for c in report.conditions]
    out += [f"{bullet}policy: {line}" for line in report.policy]
    out += [f"{bullet}kube-scheduler: {line}" for line in report.events]
    return "\n".join(out) + "\n"
