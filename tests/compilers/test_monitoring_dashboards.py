"""The `monitoring` target's dashboards and rule expressions: every PromQL expression parses
(promql-parser) and names only series the rules record or the exporters provide."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import promql_parser
import pytest

from hetgitops import api
from hetgitops.compilers.monitoring import dashboards, names, rule_groups
from hetgitops.model.policy import Policy

REPO = Path(__file__).resolve().parents[2]
PROMETHEUS_SERIES = {"ALERTS", "ALERTS_FOR_STATE"}  # written by Prometheus for alerting rules
CHILDREN = ("lhs", "rhs", "expr", "param", "vector_selector")
LABEL_VALUES = re.compile(r"^label_values\((.+), *[A-Za-z_][A-Za-z0-9_]*\)$")


@pytest.fixture(scope="module")
def policy() -> Policy:
    result = api.render([REPO / "policies"], api.Options(now=dt.date(2026, 9, 1)))
    assert result.policy is not None
    return result.policy


def selectors(node: Any) -> Iterator[str]:
    """The metric names of every vector selector in a parsed expression."""
    if isinstance(node, promql_parser.VectorSelector):
        if node.name:
            yield node.name
        return
    for attribute in CHILDREN:
        child = getattr(node, attribute, None)
        if child is not None:
            yield from selectors(child)
    for argument in getattr(node, "args", None) or ():
        yield from selectors(argument)


def names_in(expr: str) -> set[str]:
    found = LABEL_VALUES.match(expr)
    parsed = promql_parser.parse(found.group(1) if found else expr)
    return set(selectors(parsed))


def _base(name: str) -> str:
    for suffix in names.HISTOGRAM_SUFFIXES:
        if name.endswith(suffix) and name.removesuffix(suffix) in names.EXPORTER_SERIES:
            return name.removesuffix(suffix)
    return name


def _rules(policy: Policy) -> list[dict[str, Any]]:
    assert policy.fleet is not None
    specs = rule_groups(policy, policy.fleet).values()
    return [rule for spec in specs for group in spec["groups"] for rule in group["rules"]]


def known(policy: Policy) -> set[str]:
    recorded = {rule["record"] for rule in _rules(policy) if "record" in rule}
    return recorded | names.EXPORTER_SERIES | PROMETHEUS_SERIES


def test_selector_walker_finds_every_name() -> None:
    expr = 'sum(rate(a_bucket{x="1"}[5m])) / on (y) group_left () b * max by (z) (c) or vector(1)'
    assert names_in(expr) == {"a_bucket", "b", "c"}
    assert names_in("label_values(hetgitops:team_info, team)") == {"hetgitops:team_info"}


def test_every_dashboard_query_parses_and_names_known_series(policy: Policy) -> None:
    allowed = known(policy)
    boards = dashboards.dashboards("USD")
    assert set(boards) == {"hetgitops-fleet", "hetgitops-team", "hetgitops-pool"}
    for uid, board in boards.items():
        queries = dashboards.panel_queries(board)
        assert queries, uid
        for expr in queries:
            unknown = {_base(n) for n in names_in(expr)} - allowed
            assert not unknown, (uid, expr, unknown)


def test_every_rule_expression_names_known_series(policy: Policy) -> None:
    allowed = known(policy)
    for rule in _rules(policy):
        unknown = {_base(n) for n in names_in(rule["expr"])} - allowed
        assert not unknown, (rule.get("record") or rule.get("alert"), unknown)


def test_an_unknown_series_is_caught(policy: Policy) -> None:
    assert {_base(n) for n in names_in("sum(kueue_cluster_queue_nominal_quotas)")} - known(policy)


def test_dashboards_are_configmaps_for_the_sidecar_and_plain_json() -> None:
    result = api.render(
        [REPO / "policies"], api.Options(now=dt.date(2026, 9, 1), targets=("monitoring",))
    )
    maps = {m.name: m for m in result.manifests if m.kind == "ConfigMap"}
    files = {m.filename: m for m in result.manifests if m.filename}
    assert set(maps) == {"hetgitops-fleet", "hetgitops-team", "hetgitops-pool"}
    for uid, config_map in maps.items():
        assert config_map.obj["metadata"]["labels"]["grafana_dashboard"] == "1"
        board = json.loads(config_map.obj["data"][f"{uid}.json"])
        assert board["uid"] == uid
        plain = files[f"dashboards/{uid}.json"]
        assert not plain.applied and plain.obj == board
    team = json.loads(maps["hetgitops-team"].obj["data"]["hetgitops-team.json"])
    units = {p["fieldConfig"]["defaults"].get("unit") for p in team["panels"]}
    assert "currencyUSD" in units


def test_dashboards_are_deterministic() -> None:
    assert json.dumps(dashboards.dashboards("EUR")) == json.dumps(dashboards.dashboards("EUR"))
