"""Compile stage, `monitoring` target: promtool unit tests generated from the policy.

`render --target monitoring --promtool-tests DIR` writes the three rule files and one
`<alert>.test.yaml` per alert; `cd DIR && promtool test rules *.test.yaml` runs them in the real
Prometheus rule engine. Input series are synthesised from the policy (a pool's nodes and what
their device plugin advertises, a team's namespaces and nominal quota, a tier's objective);
whether each alert fires, and with what value, is worked out here from the policy's own
arithmetic, independently of the PromQL, so a wrong join or threshold fails the test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from hetgitops.compilers.monitoring import alerts as a
from hetgitops.compilers.monitoring import rule_groups
from hetgitops.compilers.monitoring.facts import facts
from hetgitops.compilers.monitoring.policy_rules import number
from hetgitops.model.policy import Fleet, Policy
from hetgitops.output.manifests import to_yaml

# Rules run every 5 minutes in the tests (Prometheus runs them every 30 s-1 min): the alerts'
# `for` durations are multiples of it, and a fleet's thousands of policy facts stay cheap.
INTERVAL_MINUTES = 5
SAMPLE = 3  # entities per alert: enough to catch a wrong join, small at any fleet size


@dataclass
class Series:
    metric: str
    labels: dict[str, str]
    values: str

    def item(self) -> dict[str, str]:
        inner = ", ".join(f'{k}="{v}"' for k, v in sorted(self.labels.items()))
        return {"series": f"{self.metric}{{{inner}}}", "values": self.values}


@dataclass
class Fired:
    labels: dict[str, str]
    value: float


@dataclass
class Case:
    """One promtool test group: input series and the alerts expected at `minutes`."""

    name: str
    minutes: int
    series: list[Series] = field(default_factory=list)
    fired: list[Fired] = field(default_factory=list)
    samples: list[tuple[str, dict[str, str], float]] = field(default_factory=list)

    @property
    def samples_count(self) -> int:
        return self.minutes // INTERVAL_MINUTES + 1

    def add(self, metric: str, value: float, **labels: str) -> None:
        self.series.append(Series(metric, labels, f"{number(value)}x{self.samples_count}"))

    def counter(self, metric: str, step: float, **labels: str) -> None:
        self.series.append(Series(metric, labels, f"0+{number(step)}x{self.samples_count}"))


_LABEL = re.compile(r"\{\{ \$labels\.([A-Za-z_][A-Za-z0-9_]*) \}\}")
_VALUE = re.compile(r'\{\{ \$value \| printf "([^"]+)" \}\}')


def expand(template: str, labels: dict[str, str], value: float) -> str:
    """Prometheus' expansion of the templates `alerts` uses ($labels.X, printf of $value)."""
    text = _LABEL.sub(lambda m: labels.get(m.group(1), ""), template)
    return _VALUE.sub(lambda m: m.group(1) % value, text)


def _expected(alert: a.Alert, fired: Fired) -> dict[str, Any]:
    labels = {k: v for k, v in fired.labels.items() if v}
    return {
        "exp_labels": {**labels, "severity": alert.severity},
        "exp_annotations": {
            "summary": expand(alert.summary, labels, fired.value),
            "description": expand(alert.description, labels, fired.value),
        },
    }


def _test(alert: a.Alert, case: Case) -> dict[str, Any]:
    test: dict[str, Any] = {
        "name": f"{alert.name}: {case.name}",
        "interval": f"{INTERVAL_MINUTES}m",
        "input_series": [s.item() for s in case.series],
        "alert_rule_test": [
            {
                "eval_time": f"{case.minutes}m",
                "alertname": alert.name,
                "exp_alerts": [_expected(alert, f) for f in case.fired],
            }
        ],
    }
    if case.samples:
        test["promql_expr_test"] = [
            {
                "expr": f"{metric}{{{', '.join(f'{k}={v!r}' for k, v in sorted(labels.items()))}}}",
                "eval_time": f"{case.minutes}m",
                "exp_samples": [{"labels": _sample_labels(metric, labels), "value": value}],
            }
            for metric, labels, value in case.samples
        ]
    return test


def _sample_labels(metric: str, labels: dict[str, str]) -> str:
    inner = ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return f"{metric}{{{inner}}}"


def rule_files(policy: Policy, fleet: Fleet) -> dict[str, str]:
    return {
        f"{name}.rules.yaml": to_yaml(spec) for name, spec in rule_groups(policy, fleet).items()
    }


def promtool_files(policy: Policy) -> dict[str, str]:
    """File name -> text: the rule files and a `<alert>.test.yaml` per alert."""
    from hetgitops.compilers.monitoring import scenarios

    fleet = policy.fleet
    if fleet is None:
        return {}
    files = rule_files(policy, fleet)
    rules = sorted(files)
    found = facts(policy, fleet)
    for alert in a.alerts(found, fleet.monitoring, kueue="kueue" in fleet.targets):
        cases = scenarios.cases(policy, fleet, found, alert)
        if not cases:
            continue
        document = {
            "rule_files": rules,
            "evaluation_interval": f"{INTERVAL_MINUTES}m",
            "tests": [_test(alert, case) for case in cases],
        }
        files[f"{alert.name}.test.yaml"] = to_yaml(document)
    return dict(sorted(files.items()))
