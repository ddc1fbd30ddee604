"""Output stage: Manifest (object + policy origin) and deterministic YAML (files: `writer`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from hetgitops.diagnostics import NOWHERE, Span
from hetgitops.model.policy import Fleet

# The file-writing half of this stage lives in `writer`; these names stay importable from here.
from hetgitops.output.writer import MARKER as MARKER
from hetgitops.output.writer import MARKER_TEXT as MARKER_TEXT
from hetgitops.output.writer import TreeDiff as TreeDiff
from hetgitops.output.writer import UnsafeOutput as UnsafeOutput
from hetgitops.output.writer import check_output_dir as check_output_dir
from hetgitops.output.writer import compare_tree as compare_tree
from hetgitops.output.writer import replace_tree as replace_tree
from hetgitops.output.writer import write_tree as write_tree

MANAGED_BY = "hetgitops"
# Apply order: what others refer to comes first (namespaces, classes, flavors, parent queues).
KIND_ORDER = (
    "Namespace",
    "PriorityClass",
    "WorkloadPriorityClass",
    "ConfigMap",
    "ResourceQuota",
    "NodeFeatureRule",
    "Topology",
    "ResourceFlavor",
    "Cohort",
    "ClusterQueue",
    "LocalQueue",
    "Queue",
)


@dataclass(frozen=True)
class Manifest:
    """One generated object. `origin` is the policy line that caused it; `depth` orders trees
    (parent cohorts/queues before children); `applied=False` keeps a file out of the
    kustomization and out of the stdout stream (node label plans, Helm values)."""

    target: str
    obj: Mapping[str, Any]
    origin: Span = NOWHERE
    depth: int = 0
    applied: bool = True
    filename: str | None = None

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind", ""))

    @property
    def name(self) -> str:
        return str(self.obj.get("metadata", {}).get("name", ""))

    @property
    def namespace(self) -> str:
        return str(self.obj.get("metadata", {}).get("namespace", ""))

    def relative_path(self) -> str:
        if self.filename:
            return f"{self.target}/{self.filename}"
        stem = f"{self.namespace}.{self.name}" if self.namespace else self.name
        return f"{self.target}/{self.kind.lower()}-{stem}.yaml"

    def sort_key(self) -> tuple[int, int, str, str, str]:
        rank = KIND_ORDER.index(self.kind) if self.kind in KIND_ORDER else len(KIND_ORDER)
        return (rank, self.depth, self.kind, self.namespace, self.name)


def common_labels(fleet: Fleet) -> dict[str, str]:
    return {"app.kubernetes.io/managed-by": MANAGED_BY, fleet.label("fleet"): fleet.cluster}


def metadata(
    fleet: Fleet,
    name: str,
    *,
    namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Kubernetes metadata with the labels every hetgitops object carries."""
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = dict(sorted({**common_labels(fleet), **(labels or {})}.items()))
    if annotations:
        meta["annotations"] = dict(sorted(annotations.items()))
    return meta


class _Dumper(yaml.SafeDumper):
    """Block style, no aliases (a shared dict must print twice, not as &id001)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str_presenter(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str_presenter)


class FlowList(list[Any]):
    """A list printed inline (`[0, 1, 2]`), e.g. GPU indexes in a mig-parted config."""


def _flow_presenter(dumper: yaml.SafeDumper, data: FlowList) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)


_Dumper.add_representer(FlowList, _flow_presenter)


def to_yaml(obj: Any) -> str:
    return yaml.dump(
        obj,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1_000_000,
    )


def ordered(manifests: Iterable[Manifest]) -> list[Manifest]:
    return sorted(manifests, key=Manifest.sort_key)


def stream(manifests: Iterable[Manifest]) -> str:
    """The applied objects as one multi-document stream, in apply order."""
    return "".join("---\n" + to_yaml(m.obj) for m in ordered(manifests) if m.applied)


def kustomization(manifests: Iterable[Manifest]) -> dict[str, Any]:
    files = [m.relative_path() for m in ordered(manifests) if m.applied]
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": files,
    }


def stage_kustomizations(manifests: Iterable[Manifest]) -> dict[str, str]:
    """`<target>/kustomization.yaml` per target directory, each listing that target's applied
    files in apply order: a Flux Kustomization (integrations/flux/) applies one target per
    stage, and Flux needs a kustomization.yaml where the directory also holds files that are
    not applied (Helm values, the node plan)."""
    by_target: dict[str, list[str]] = {}
    for m in ordered(manifests):
        if m.applied:
            by_target.setdefault(m.target, []).append(m.relative_path().split("/", 1)[1])
    return {
        f"{target}/kustomization.yaml": to_yaml(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": files,
            }
        )
        for target, files in by_target.items()
    }


def tree(manifests: Iterable[Manifest]) -> dict[str, str]:
    """Relative path -> file text for the whole output directory."""
    items = ordered(manifests)
    files = {m.relative_path(): to_yaml(m.obj) for m in items}
    files["kustomization.yaml"] = to_yaml(kustomization(items))
    files.update(stage_kustomizations(items))
    return dict(sorted(files.items()))
