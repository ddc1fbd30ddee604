"""Compile stage, `monitoring` target: Grafana dashboards built with grafana-foundation-sdk.

Three dashboards — fleet (capacity vs commitment vs use per card type), team (quota, borrowed,
unused, pending, wait, cost, utilisation) and pool (nodes, cordoned nodes, failed cards, MIG
state) — each querying only the series the rules record and the exporters provide (a test
parses every query with promql-parser and checks the names). Emitted as ConfigMaps the Grafana
sidecar loads (label `Fleet.spec.monitoring.dashboardLabel`) and as plain JSON files.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from grafana_foundation_sdk.builders import dashboard as gd
from grafana_foundation_sdk.builders import prometheus, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef, GridPos

from hetgitops.compilers.monitoring import names
from hetgitops.compilers.monitoring import policy_rules as p
from hetgitops.compilers.monitoring import recording as r

DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
WIDTH, HEIGHT = 12, 8
CURRENCY = "currency"  # replaced by Grafana's unit for the Fleet's currency
TEAM = f'* on (cluster_queue) group_left (team) {p.TEAM_INFO}{{team="$team"}}'

# (title, unit, [(legend, query)]) per panel, per dashboard.
Panels = Sequence[tuple[str, str, Sequence[tuple[str, str]]]]

FLEET: Panels = (
    (
        "Cards per card type: declared, committed, schedulable, admitted",
        "none",
        (
            ("declared {{card_type}}", f"sum by (card_type) ({p.DECLARED})"),
            ("committed {{card_type}}", f"sum by (card_type) ({p.COMMITTED})"),
            ("schedulable {{card_type}}", f"sum by (card_type) ({r.POOL_ALLOCATABLE})"),
            ("admitted {{card_type}}", f"sum by (card_type) ({r.POOL_USAGE})"),
        ),
    ),
    (
        "GPU utilisation per card type",
        "percentunit",
        (("{{card_type}}", f"avg by (card_type) ({r.GPU_UTILISATION})"),),
    ),
    (
        "Cost per hour per team",
        CURRENCY,
        (("{{team}}", f"sum by (team) ({r.TEAM_COST})"),),
    ),
    (
        "Firing hetgitops alerts",
        "none",
        (
            (
                "{{alertname}}",
                'count by (alertname) (ALERTS{alertname=~"HetGitOps.*", alertstate="firing"})',
            ),
        ),
    ),
)

TEAM_PANELS: Panels = (
    (
        "Quota and admitted cards per flavor",
        "none",
        (
            ("quota {{flavor}}", f'sum by (flavor) ({p.TEAM_NOMINAL}{{team="$team"}})'),
            ("admitted {{flavor}}", f"sum by (flavor) ({r.CQ_USAGE} {TEAM})"),
        ),
    ),
    (
        "Borrowed and unused (lendable) cards per flavor",
        "none",
        (
            (
                "borrowed {{flavor}}",
                f"sum by (flavor) (clamp_min({r.CQ_USAGE} - {r.CQ_NOMINAL}, 0) {TEAM})",
            ),
            ("unused {{flavor}}", f"sum by (flavor) ({r.CQ_FREE} {TEAM})"),
        ),
    ),
    (
        "Pending workloads",
        "none",
        (("pending", f"sum ({r.CQ_PENDING} {TEAM})"),),
    ),
    (
        "Admission wait per tier",
        "s",
        (("{{priority_class}}", f"max by (priority_class) ({r.CQ_WAIT} {TEAM})"),),
    ),
    (
        "Cost per hour against the monthly budget / 730",
        CURRENCY,
        (
            ("cost", f'sum ({r.TEAM_COST}{{team="$team"}})'),
            ("budget", f'sum ({p.BUDGET}{{team="$team"}}) / 730'),
        ),
    ),
    (
        "GPU utilisation and allocated cards per pool",
        "none",
        (
            ("utilisation {{pool}}", f'avg by (pool) ({r.TEAM_UTILISATION}{{team="$team"}})'),
            ("allocated {{pool}}", f'sum by (pool) ({r.TEAM_ALLOCATED}{{team="$team"}})'),
        ),
    ),
)

POOL_PANELS: Panels = (
    (
        "Cards: declared, committed, schedulable",
        "none",
        (
            ("declared", f'sum ({p.DECLARED}{{pool="$pool"}})'),
            ("committed", f'sum ({p.COMMITTED}{{pool="$pool"}})'),
            ("schedulable", f'sum ({r.POOL_ALLOCATABLE}{{pool="$pool"}})'),
        ),
    ),
    (
        "Nodes and cordoned nodes",
        "none",
        (
            ("nodes", f'count ({r.NODE_POOL}{{pool="$pool"}})'),
            (
                "cordoned",
                f'count ({r.NODE_POOL}{{pool="$pool"}}'
                f" * on (node) group_left () ({names.NODE_UNSCHEDULABLE} == 1))",
            ),
        ),
    ),
    (
        "Cards missing (declared - schedulable)",
        "none",
        (
            (
                "missing",
                f'sum ({p.DECLARED}{{pool="$pool"}}) - sum ({r.POOL_ALLOCATABLE}{{pool="$pool"}})',
            ),
        ),
    ),
    (
        "MIG state of the nodes",
        "none",
        (
            (
                "{{mig_config}} {{mig_state}}",
                f'count by (mig_config, mig_state) ({r.NODE_MIG}{{pool="$pool"}})',
            ),
        ),
    ),
    (
        "GPU utilisation per node",
        "percentunit",
        (("{{node}}", f'avg by (node) ({r.GPU_UTILISATION}{{pool="$pool"}})'),),
    ),
)


def _panel(
    index: int, title: str, unit: str, queries: Sequence[tuple[str, str]], currency: str
) -> Any:
    panel = (
        timeseries.Panel()
        .id(index + 1)
        .title(title)
        .unit(f"currency{currency}" if unit == CURRENCY else unit)
        .datasource(DATASOURCE)
        .grid_pos(GridPos(h=HEIGHT, w=WIDTH, x=(index % 2) * WIDTH, y=(index // 2) * HEIGHT))
    )
    for ref, (legend, expr) in enumerate(queries):
        query = prometheus.Dataquery().expr(expr).legend_format(legend).ref_id(chr(65 + ref))
        panel = panel.with_target(query.datasource(DATASOURCE))
    return panel


def _variable(name: str, query: str) -> gd.QueryVariable:
    return gd.QueryVariable(name).label(name).query(query).datasource(DATASOURCE)


def _datasource() -> gd.DatasourceVariable:
    return gd.DatasourceVariable("datasource").label("Prometheus").type("prometheus")


def _dashboard(
    uid: str, title: str, panels: Panels, variables: Sequence[Any], currency: str
) -> dict[str, Any]:
    board = (
        gd.Dashboard(title)
        .uid(uid)
        .tags(["hetgitops"])
        .editable()
        .time("now-24h", "now")
        .refresh("1m")
        .with_variable(_datasource())
    )
    for variable in variables:
        board = board.with_variable(variable)
    for index, (name, unit, queries) in enumerate(panels):
        board = board.with_panel(_panel(index, name, unit, queries, currency))
    built: dict[str, Any] = json.loads(json.dumps(board.build(), cls=JSONEncoder, sort_keys=True))
    return built


def dashboards(currency: str) -> dict[str, dict[str, Any]]:
    """uid -> dashboard JSON model. The uids are fixed: Grafana keeps a dashboard's history
    and links by uid, so they must not change with the policy."""
    team = _variable("team", f"label_values({p.TEAM_INFO}, team)")
    pool = _variable("pool", f"label_values({p.DECLARED}, pool)")
    boards = (
        ("hetgitops-fleet", "hetgitops / fleet", FLEET, ()),
        ("hetgitops-team", "hetgitops / team", TEAM_PANELS, [team]),
        ("hetgitops-pool", "hetgitops / pool", POOL_PANELS, [pool]),
    )
    return {
        uid: _dashboard(uid, title, panels, variables, currency)
        for uid, title, panels, variables in boards
    }


def panel_queries(board: dict[str, Any]) -> list[str]:
    """Every PromQL expression of a dashboard: panel targets and query variables."""
    found = [t["expr"] for panel in board.get("panels", []) for t in panel.get("targets", [])]
    for variable in board.get("templating", {}).get("list", []):
        if variable.get("type") == "query":
            found.append(str(variable["query"]))
    return found
