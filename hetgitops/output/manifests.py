"""Write stage: Manifest (object + policy origin), deterministic YAML, atomic output trees."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from hetgitops.diagnostics import NOWHERE, Span
from hetgitops.model.policy import Fleet

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


# Marks a directory as an output tree, so `--output` may replace it; never in `tree()`.
MARKER = ".hetgitops-output"
MARKER_TEXT = "Written by hetgitops render/jobs --output: the whole directory is replaced.\n"


class UnsafeOutput(ValueError):
    """An output directory that replacing as a whole would destroy something (a usage error)."""


def check_output_dir(output: Path, inputs: Iterable[Path] = ()) -> None:
    """Raise UnsafeOutput unless `output` may be replaced: not the working directory or one
    of its parents, apart from every input path, and absent, empty or a tree we wrote."""
    out = output.resolve()
    cwd = Path.cwd().resolve()
    if out == cwd or out in cwd.parents:
        raise UnsafeOutput(f"{output} is the current directory or one of its parents")
    for source in inputs:
        src = source.resolve()
        if out == src or out in src.parents or src in out.parents:
            raise UnsafeOutput(f"{output} overlaps the input {source}; write the tree elsewhere")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise UnsafeOutput(
            f"{output} is not empty and has no {MARKER} marker (not a hetgitops output tree); "
            "remove it or choose another directory"
        )


def write_tree(files: Mapping[str, str], output: Path, *, inputs: Iterable[Path] = ()) -> None:
    """Replace `output` with `files` plus the MARKER file, after check_output_dir()."""
    check_output_dir(output, inputs)
    replace_tree({**files, MARKER: MARKER_TEXT}, output)


def replace_tree(files: Mapping[str, str], output: Path) -> None:
    """Write into a temporary sibling, then swap it in: never a half-written tree. A failure
    after the old tree was moved aside puts it back, so DIR is either old or new. No safety
    checks: callers outside tests use write_tree()."""
    output = output.resolve()
    output.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.tmp-", dir=output.parent))
    retired: Path | None = None
    try:
        _fill(staging, files)
        if output.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{output.name}.old-", dir=output.parent))
            os.replace(output, retired / output.name)
        os.replace(staging, output)
    except BaseException:
        if retired is not None and not output.exists():
            os.replace(retired / output.name, output)
        shutil.rmtree(staging, ignore_errors=True)
        if retired is not None:
            shutil.rmtree(retired, ignore_errors=True)
        raise
    if retired is not None:
        shutil.rmtree(retired, ignore_errors=True)


def _fill(staging: Path, files: Mapping[str, str]) -> None:
    # mkdtemp makes the directory 0700; the swapped-in tree should get the usual mode.
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)
    for relative, text in files.items():
        path = staging / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))


@dataclass(frozen=True)
class TreeDiff:
    """How an existing output directory differs from the tree a render would write."""

    stale: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.stale or self.missing or self.extra)


def compare_tree(files: Mapping[str, str], output: Path) -> TreeDiff:
    """Byte-for-byte comparison of `files` with the files under `output` (for `--check`);
    the MARKER file is not part of the render."""
    existing: dict[str, Path] = {}
    if output.is_dir():
        existing = {p.relative_to(output).as_posix(): p for p in output.rglob("*") if p.is_file()}
        existing.pop(MARKER, None)
    stale = [r for r in files if r in existing and existing[r].read_bytes() != files[r].encode()]
    return TreeDiff(
        stale=tuple(sorted(stale)),
        missing=tuple(sorted(set(files) - set(existing))),
        extra=tuple(sorted(set(existing) - set(files))),
    )
