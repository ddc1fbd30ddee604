"""Adopt stage: a MultiKueue manager's objects, reported with what the policy would say.

A manager's AdmissionChecks (controllerName kueue.x-k8s.io/multikueue), MultiKueueConfigs and
MultiKueueClusters are, in the policy language, Cluster documents: one `role: manager`, one
`role: worker` per MultiKueueCluster with its credentials referenced by name
(`credentials.secret`, the kubeConfig Secret's name, or `credentials.clusterProfile`). They are
not written yet: the manager's ClusterQueues hold the sum of the workers' quotas on one
`multikueue` flavor, so a policy from the manager alone has no pools to give the teams, and the
workers must be imported too (one policy, a Cluster per context). Until then each object is a
located finding naming the Cluster document it would be. The kubeconfig Secrets are never
read: import lists no Secrets, and a finding names a Secret only by its name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hetgitops.adopt.findings import finding
from hetgitops.adopt.sources import Imported
from hetgitops.diagnostics import Diagnostic

CONTROLLER = "kueue.x-k8s.io/multikueue"
KINDS = ("MultiKueueCluster", "MultiKueueConfig")
_WHY = (
    "import reads one cluster, and a manager's queues hold the sum of their workers' quotas "
    "on one multikueue flavor: import each worker as well and write the Cluster documents "
    "(docs/multicluster); until then it stays as it is"
)


def _spec(item: Imported) -> Mapping[str, Any]:
    spec = item.obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def is_multikueue_check(item: Imported) -> bool:
    return item.kind == "AdmissionCheck" and _spec(item).get("controllerName") == CONTROLLER


def report(by_kind: Mapping[str, Sequence[Imported]]) -> list[Diagnostic]:
    """One finding per MultiKueue object and per MultiKueue AdmissionCheck."""
    found: list[Diagnostic] = []
    for item in by_kind.get("AdmissionCheck", ()):
        if is_multikueue_check(item):
            config = (_spec(item).get("parameters") or {}).get("name", "")
            found.append(
                finding(
                    "import-kind-not-imported",
                    f"AdmissionCheck {item.name} is MultiKueue's (MultiKueueConfig {config}): "
                    "this cluster is a MultiKueue manager, a Cluster document with role "
                    f"manager in the policy; {_WHY}",
                    item.span,
                )
            )
    for item in by_kind.get("MultiKueueConfig", ()):
        clusters = [str(c) for c in _spec(item).get("clusters") or []]
        found.append(
            finding(
                "import-kind-not-imported",
                f"MultiKueueConfig {item.name} dispatches to {', '.join(clusters) or 'no cluster'}"
                f": each a Cluster document with role worker in the policy; {_WHY}",
                item.span,
            )
        )
    for item in by_kind.get("MultiKueueCluster", ()):
        found.append(
            finding(
                "import-kind-not-imported",
                f"MultiKueueCluster {item.name}: a Cluster document `{item.name}` with role "
                f"worker and credentials {_credentials(item)} (a reference only: the Secret is "
                f"never read); {_WHY}",
                item.span,
            )
        )
    return found


def _credentials(item: Imported) -> str:
    """The policy's `credentials` for the cluster's source: names only, never contents."""
    source = _spec(item).get("clusterSource") or _spec(item)
    profile = (source.get("clusterProfileRef") or {}).get("name")
    if profile:
        return f"{{clusterProfile: {profile}}}"
    kubeconfig = source.get("kubeConfig") or {}
    if kubeconfig.get("locationType", "Secret") == "Secret" and kubeconfig.get("location"):
        return f"{{secret: {kubeconfig['location']}}}"
    return "(a kubeconfig path on the manager: the policy references Secrets or ClusterProfiles)"
