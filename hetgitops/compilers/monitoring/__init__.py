"""Compile stage, `monitoring` target: PrometheusRules, Grafana dashboards and the exporter
settings they rely on, generated from the policy (off unless the Fleet lists `monitoring`).

Three PrometheusRules: `hetgitops-policy` (the policy's numbers as series), `hetgitops-recording`
(exporter series joined to pool, card type, team) and `hetgitops-alerts`. Their names never
depend on the policy's content, so a threshold change updates objects in place.
"""

from __future__ import annotations

import json
from typing import Any

from hetgitops.compilers import COMPILERS
from hetgitops.compilers.monitoring import alerts, exporters, recording
from hetgitops.compilers.monitoring.facts import Facts, facts
from hetgitops.compilers.monitoring.policy_rules import policy_group
from hetgitops.diagnostics import NOWHERE, Span
from hetgitops.model.policy import Fleet, Policy
from hetgitops.output.manifests import Manifest, metadata

TARGET = "monitoring"
API_VERSION = "monitoring.coreos.com/v1"


def _origin(fleet: Fleet) -> Span:
    m = fleet.monitoring
    return m.origin.span if m.origin else fleet.origin.at("spec", "targets")


def rule_groups(policy: Policy, fleet: Fleet) -> dict[str, dict[str, Any]]:
    """PrometheusRule name -> its spec (`groups:`, also a plain promtool rule file)."""
    found = facts(policy, fleet)
    return {
        "hetgitops-policy": {"groups": [policy_group(found)]},
        "hetgitops-recording": {"groups": [_recording(policy, fleet, found)]},
        "hetgitops-alerts": {"groups": [_alerts(fleet, found)]},
    }


def _recording(policy: Policy, fleet: Fleet, found: Facts) -> dict[str, Any]:
    from hetgitops.plan.node_labels import domain

    m = fleet.monitoring
    prefix = domain(policy)
    on_dra = [f.name for f in found.pools.values() if f.dra]
    rules = recording.node_rules(f"{prefix}/pool", f"{prefix}/card-type", on_dra)
    if "kueue" in fleet.targets:
        rules += recording.kueue_rules(found, m.wait_window, m.wait_percentile)
    rules += recording.gpu_rules(found)
    rules += recording.mig_rules(found, f"{prefix}/pool")
    rules += recording.volcano_rules(found)
    return {"name": "hetgitops-recording", "rules": rules}


def _alerts(fleet: Fleet, found: Facts) -> dict[str, Any]:
    chosen = alerts.alerts(found, fleet.monitoring, kueue="kueue" in fleet.targets)
    return {"name": "hetgitops-alerts", "rules": [a.rule() for a in chosen]}


def _prometheus_rule(fleet: Fleet, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    m = fleet.monitoring
    return {
        "apiVersion": API_VERSION,
        "kind": "PrometheusRule",
        "metadata": metadata(fleet, name, namespace=m.namespace, labels=m.rule_labels),
        "spec": spec,
    }


def _values(policy: Policy, fleet: Fleet, origin: Span) -> list[Manifest]:
    found = facts(policy, fleet)
    volcano = found.volcano
    on_dra = any(f.dra and f.nvidia for f in found.pools.values())
    files = {
        "kube-state-metrics-helm-values.yaml": exporters.kube_state_metrics_values(
            policy, volcano=volcano
        ),
        "gpu-operator-helm-values.yaml": exporters.gpu_operator_values(dra=on_dra),
    }
    if "kueue" in fleet.targets:
        files["kueue-helm-values.yaml"] = exporters.kueue_values()
        files["kueue-configuration-metrics.yaml"] = exporters.kueue_configuration()
    return [
        Manifest(TARGET, values, origin, applied=False, filename=name)
        for name, values in files.items()
    ]


def _dashboards(fleet: Fleet, origin: Span) -> list[Manifest]:
    """A ConfigMap per dashboard for the Grafana sidecar, and the plain JSON beside it."""
    # The Grafana SDK is imported only for a Fleet with this target: every other command
    # line (validate, render, jobs of a fleet without monitoring) paid ~40 ms CPU for it.
    from hetgitops.compilers.monitoring import dashboards

    m = fleet.monitoring
    found: list[Manifest] = []
    for uid, board in dashboards.dashboards(fleet.currency).items():
        text = json.dumps(board, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        meta = metadata(fleet, uid, namespace=m.namespace, labels={m.dashboard_label: "1"})
        config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                      "data": {f"{uid}.json": text}}  # fmt: skip
        found.append(Manifest(TARGET, config_map, origin))
        found.append(
            Manifest(TARGET, board, origin, applied=False, filename=f"dashboards/{uid}.json")
        )
    return found


def compile_monitoring(policy: Policy) -> list[Manifest]:
    fleet = policy.fleet
    if fleet is None:
        return []
    origin = _origin(fleet) if fleet.origin else NOWHERE
    objects = [
        Manifest(TARGET, _prometheus_rule(fleet, name, spec), origin)
        for name, spec in rule_groups(policy, fleet).items()
    ]
    return objects + _dashboards(fleet, origin) + _values(policy, fleet, origin)


COMPILERS[TARGET] = compile_monitoring
