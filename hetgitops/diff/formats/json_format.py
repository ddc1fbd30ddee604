"""JSON in the versioned shape of schemas/diff.schema.json (both layers, machine-readable)."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

from hetgitops.diagnostics import Diagnostic, Span
from hetgitops.diff.formats import common as c
from hetgitops.diff.impact import Amount, QuotaRow
from hetgitops.diff.objects import ObjectChange
from hetgitops.diff.run import SCHEMA_VERSION, DiffResult, SideResult
from hetgitops.diff.structure import FieldChange, Key


def _num(value: Fraction | float | int | None) -> float | int | None:
    if value is None:
        return None
    if isinstance(value, Fraction) and value.denominator == 1:
        return value.numerator
    return int(value) if isinstance(value, int) else round(float(value), 4)


def _span(span: Span) -> dict[str, Any]:
    return {"file": span.file, "line": span.line, "column": span.column}


def _finding(d: Diagnostic) -> dict[str, Any]:
    return {
        "rule": d.rule,
        "severity": d.severity.label,
        "message": d.message,
        "hint": d.hint,
        "location": _span(d.span),
    }


def _side(side: SideResult) -> dict[str, Any]:
    errors = sum(1 for d in side.result.diagnostics if d.severity.label == "error")
    return {
        "label": side.label,
        "valid": side.valid,
        "errors": errors,
        "objects": len(side.result.manifests),
    }


def _amount(amount: Amount | None) -> dict[str, Any] | None:
    if amount is None:
        return None
    return {
        "cards": _num(amount.cards),
        "normalized": _num(amount.normalized),
        "reach": _num(amount.reach),
        "resources": [
            {"resource": r.resource, "kind": r.label, "nominal": r.nominal, "reach": r.reach}
            for r in amount.resources
        ],
    }


def _path(field: FieldChange) -> list[Any]:
    return [{"field": p.shown, "value": p.value} if isinstance(p, Key) else p for p in field.path]


def _field(field: FieldChange) -> dict[str, Any]:
    found: dict[str, Any] = {"path": field.dotted, "segments": _path(field), "op": field.op}
    if field.op != "add":
        found["before"] = field.before
    if field.op != "remove":
        found["after"] = field.after
    if field.index is not None:
        found["index"] = field.index
    return found


def _object(change: ObjectChange) -> dict[str, Any]:
    found: dict[str, Any] = {
        "op": change.op,
        "target": change.target,
        "kind": change.kind,
        "namespace": change.namespace,
        "name": change.name,
        "oldName": change.old_name,
        "file": change.file,
        "applied": change.applied,
        "fields": [_field(f) for f in change.fields],
        "embedded": {k: [_field(f) for f in v] for k, v in change.embedded.items()},
    }
    if change.op in ("added", "removed"):
        found["object"] = change.after if change.op == "added" else change.before
    if change.cluster:  # multi-cluster fleets only: single-cluster reports keep their shape
        found["cluster"] = change.cluster
    return found


def _quota(r: QuotaRow) -> dict[str, Any]:
    found: dict[str, Any] = {
        "team": r.team,
        "pool": r.pool,
        "cardType": r.card_type,
        "before": _amount(r.before),
        "after": _amount(r.after),
        "deltaCards": _num(c.delta(c.cards(r.before), c.cards(r.after))),
        "deltaPercent": c.percent(c.cards(r.before), c.cards(r.after)),
    }
    if r.cluster:  # multi-cluster fleets only: single-cluster reports keep their shape
        found["cluster"] = r.cluster
    host = c.host_change(r.before, r.after)
    if host:  # only where cpu or memory change: other reports keep their shape
        found["hostChange"] = host
    return found


def _impact(result: DiffResult) -> dict[str, Any]:
    impact = result.impact
    return {
        "quotas": [_quota(r) for r in impact.quotas],
        "capacity": [
            {
                "cardType": r.card_type,
                "before": {"cards": r.before_cards, "quota": _num(r.before_quota)},
                "after": {"cards": r.after_cards, "quota": _num(r.after_quota)},
            }
            for r in impact.capacity
        ],
        "costs": [
            {
                "team": r.team,
                "currency": r.currency,
                "before": _num(r.before),
                "after": _num(r.after),
                "delta": _num(c.cost_delta(r)),
                "budgetBefore": _num(r.budget_before),
                "budgetAfter": _num(r.budget_after),
                "headroomBefore": _num(c.headroom(r.before, r.budget_before)),
                "headroomAfter": _num(c.headroom(r.after, r.budget_after)),
            }
            for r in impact.costs
        ],
        "changes": [
            {
                "topic": p.topic,
                "subject": p.subject,
                "before": p.before,
                "after": p.after,
                "flag": p.flag,
            }
            for p in impact.changes
        ],
    }


def document(result: DiffResult) -> dict[str, Any]:
    return {
        "schemaVersion": SCHEMA_VERSION,
        "base": _side(result.base),
        "head": _side(result.head),
        "changed": result.changed,
        "risks": result.risks,
        "ignored": list(result.ignored),
        "impact": _impact(result),
        "drains": [
            {
                "node": d.node,
                "pool": d.pool,
                "before": d.before,
                "after": d.after,
                "gpus": list(d.gpus),
                "modeFlip": d.mode_flip,
                "location": _span(d.span),
            }
            for d in result.drains
        ],
        "hazards": [
            {
                "rule": h.rule,
                "subject": h.subject,
                "message": h.message,
                "action": h.action,
                "location": _span(h.span),
                **({"live": h.live} if h.live else {}),
                **({"snippet": h.snippet} if h.snippet else {}),
            }
            for h in result.hazards
        ],
        "findings": {
            "introduced": [_finding(d) for d in result.introduced],
            "resolved": [_finding(d) for d in result.resolved],
        },
        "objects": [_object(o) for o in result.objects],
    }


def render(result: DiffResult) -> str:
    return json.dumps(document(result), indent=2, ensure_ascii=False, default=str) + "\n"
