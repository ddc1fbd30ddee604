"""Volcano's pieces that are data, not processes: its webhook configurations and scheduler config.

Volcano's webhook-manager does not create its webhook configurations: the Helm chart does
(installer/helm/chart/volcano/templates/webhooks.yaml), and the manager only waits for them and
patches their caBundle (cmd/webhook-manager/app/util.go, configuration names
`volcano-admission-service-<path with - for />`). The harness renders that template itself: it
drops the template lines (the `{{- if ... }}` guards, optional labels and selector additions),
fills the two values it uses (release name and namespace) and points every webhook at loopback.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from typing import Any

import yaml

NAMESPACE = "volcano-system"
RELEASE = "volcano"
SCHEDULER_NAME = "volcano"
# webhook-manager's default --enabled-admission (cmd/webhook-manager/app/options/options.go).
ADMISSIONS = (
    "/jobs/mutate",
    "/jobs/validate",
    "/podgroups/mutate",
    "/pods/validate",
    "/pods/mutate",
    "/queues/mutate",
    "/queues/validate",
)
# Controllers for what hetgitops renders and `hetgitops jobs` submits: vcjobs, their PodGroups,
# queue state (Open/Closed) and finished-job cleanup. Not jobflow/cronjob/hypernode/colocation:
# nothing rendered uses them and their CRDs are not installed.
CONTROLLERS = ("job-controller", "pg-controller", "queue-controller", "gc-controller")
CONFIG_MAP = ("volcano-system", "volcano-scheduler-configmap", "volcano-scheduler.conf")

_TEMPLATE_LINE = re.compile(r"^\s*\{\{.*\}\}\s*$")


def webhook_configurations(
    chart_template: str, *, port: int, ca_bundle: bytes, admissions: Sequence[str] = ADMISSIONS
) -> list[dict[str, Any]]:
    """The chart's webhook configurations for `admissions`, each webhook calling
    https://127.0.0.1:`port`<path> with `ca_bundle` (PEM)."""
    lines = [line for line in chart_template.splitlines() if not _TEMPLATE_LINE.match(line)]
    text = (
        "\n".join(lines)
        .replace("{{ .Release.Name }}", RELEASE)
        .replace("{{ .Release.Namespace }}", NAMESPACE)
    )
    if "{{" in text:
        raise ValueError("unexpected Helm template expression left in the webhook chart")
    encoded = base64.b64encode(ca_bundle).decode("ascii")
    found: dict[str, dict[str, Any]] = {}
    for document in yaml.safe_load_all(text):
        if not isinstance(document, dict):
            continue
        meta = document["metadata"]
        if meta.get("labels") is None:
            meta.pop("labels", None)  # `labels:` whose template body was dropped
        for hook in document["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": encoded}
            found[path] = document
    missing = sorted(set(admissions) - set(found))
    if missing:
        raise ValueError(f"the webhook chart has no configuration for {', '.join(missing)}")
    return [found[path] for path in admissions]
