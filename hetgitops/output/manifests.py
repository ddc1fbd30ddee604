"""Output stage: Manifest (object + policy origin) and deterministic YAML (files: `writer`)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from hetgitops.diagnostics import NOWHERE, Span
from hetgitops.model.policy import Fleet
from hetgitops.output import fastyaml
from hetgitops.output.yamlsafe import ambiguous

# The file-writing half of this stage lives in `writer`; its names stay importable from here,
# loaded on first use: validate and render to stdout never write (writer pulls in ctypes,
# fcntl and secrets).
_WRITER_NAMES = frozenset(
    {
        "MARKER",
        "MARKER_TEXT",
        "TreeDiff",
        "UnsafeOutput",
        "check_output_dir",
        "compare_tree",
        "replace_tree",
        "write_tree",
    }
)


def __getattr__(name: str) -> Any:
    if name in _WRITER_NAMES:
        from hetgitops.output import writer

        return getattr(writer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    "MultiKueueCluster",
    "MultiKueueConfig",
    "AdmissionCheck",
    "ClusterQueue",
    "LocalQueue",
    "Queue",
)


_KIND_RANK = {kind: rank for rank, kind in enumerate(KIND_ORDER)}
_NO_METADATA: Mapping[str, Any] = {}


@dataclass(frozen=True)
class Manifest:
    """One generated object. `origin` is the policy line that caused it; `depth` orders trees
    (parent cohorts/queues before children); `applied=False` keeps a file out of the
    kustomization and out of the stdout stream (node label plans, Helm values). Manifests
    with the same `filename` share one file, a stream of their documents (a pool's plan)."""

    target: str
    obj: Mapping[str, Any]
    origin: Span = NOWHERE
    depth: int = 0
    applied: bool = True
    filename: str | None = None
    # Multi-cluster fleets: the Cluster whose tree holds the object (`<cluster>/<target>/...`).
    cluster: str | None = None
    # Parts of the object made from another policy line than `origin`: (path into `obj`, that
    # line), e.g. a ClusterQueue's flavor entry and its team's quota entry for the pool. A
    # finding about a field under such a path points there (`origin_of`).
    parts: tuple[tuple[tuple[str | int, ...], Span], ...] = ()

    def origin_of(self, path: Sequence[str | int]) -> Span:
        """The policy line that produced the field at `path`: the longest part that holds it,
        else the object's origin."""
        found, length = self.origin, -1
        for prefix, span in self.parts:
            if len(prefix) > length and tuple(path[: len(prefix)]) == prefix:
                found, length = span, len(prefix)
        return found

    # Read hundreds of thousands of times in a large fleet's diff: no str() for what is a str.
    @property
    def kind(self) -> str:
        kind = self.obj.get("kind", "")
        return kind if type(kind) is str else str(kind)

    @property
    def name(self) -> str:
        name = self.obj.get("metadata", _NO_METADATA).get("name", "")
        return name if type(name) is str else str(name)

    @property
    def namespace(self) -> str:
        namespace = self.obj.get("metadata", _NO_METADATA).get("namespace", "")
        return namespace if type(namespace) is str else str(namespace)

    def relative_path(self) -> str:
        """`<target>/<kind>-<name>.yaml`, under `<cluster>/` in a multi-cluster render."""
        prefix = f"{self.cluster}/" if self.cluster else ""
        return prefix + self.path_in_cluster()

    def path_in_cluster(self) -> str:
        if self.filename:
            return f"{self.target}/{self.filename}"
        stem = f"{self.namespace}.{self.name}" if self.namespace else self.name
        return f"{self.target}/{self.kind.lower()}-{stem}.yaml"

    def sort_key(self) -> tuple[int, int, str, str, str]:
        return self._sort_key

    @functools.cached_property
    def _sort_key(self) -> tuple[int, int, str, str, str]:
        # Remembered: a render sorts its objects for the stream, the tree and each
        # kustomization (the object never changes: frozen, and `obj` is not mutated).
        kind = self.kind
        rank = _KIND_RANK.get(kind, len(KIND_ORDER))
        return (rank, self.depth, kind, self.namespace, self.name)


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


class _PyDumper(yaml.SafeDumper):
    """Block style, no aliases (a shared dict must print twice, not as &id001), and every
    string a YAML reader could take for something else quoted (see `yamlsafe`). The reference
    emitter: its bytes are the contract."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


# libyaml's emitter behind the same representers: the same bytes as _PyDumper (a test compares
# them over every golden tree and generated text), several times faster on fleet-sized trees.
# libyaml escapes some characters PyYAML writes raw (emoji and other non-BMP text, tab, CR,
# NEL, ...), so an object with any such string is written by _PyDumper instead.
class _Dumper(getattr(yaml, "CSafeDumper", _PyDumper)):  # type: ignore[misc]
    ignore_aliases = _PyDumper.ignore_aliases

    def represent(self, data: Any) -> None:
        self.serialize(self._node(data))

    def _node(self, data: Any) -> yaml.Node:
        """The nodes PyYAML's representers would build for the JSON-like types of a manifest,
        built directly: the generic representer is most of the cost of a fleet's tree."""
        kind = type(data)
        if kind is str:
            style = _libyaml_style(data)
            if style == _EXOTIC_STYLE:
                raise _Exotic
            return yaml.ScalarNode(_STR, data, style=style)
        if kind is dict:
            if any(_awkward_key(key) for key in data):
                raise _Exotic
            node = self._node
            pairs = [(node(key), node(value)) for key, value in data.items()]
            return yaml.MappingNode(_MAP, pairs, flow_style=False)
        if kind is list:
            return yaml.SequenceNode(_SEQ, [self._node(item) for item in data], flow_style=False)
        if kind is int:
            return yaml.ScalarNode(_INT, str(data))
        if kind is bool:
            return yaml.ScalarNode(_BOOL, "true" if data else "false")
        if data is None:
            return yaml.ScalarNode(_NULL, "null")
        other: yaml.Node = self.represent_data(data)  # floats, FlowList, the rest: PyYAML's
        return other

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        """The resolver's answer for a scalar, remembered: libyaml asks twice per scalar, and
        a fleet's labels and names repeat."""
        if kind is not yaml.ScalarNode:
            return super().resolve(kind, value, implicit)
        key = (value, implicit)
        tag = _RESOLVED.get(key)
        if tag is None:
            if len(_RESOLVED) > 200_000:
                _RESOLVED.clear()
            tag = _RESOLVED[key] = super().resolve(kind, value, implicit)
        return tag


_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_INT, _BOOL, _NULL = "tag:yaml.org,2002:int", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"
_RESOLVED: dict[tuple[Any, Any], str] = {}


class _Exotic(Exception):
    """A string libyaml would write differently from PyYAML."""


@functools.cache
def _exotic() -> re.Pattern[str]:
    """Anything but printable ASCII, newline, and the BMP characters both emitters write raw.
    Compiled on first use: a class over most of the BMP takes ~8 ms to compile (~100 ms on a
    loaded machine), and only a string fastyaml leaves to libyaml is ever tested."""
    return re.compile(r"[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd]")


_EXOTIC_STYLE = "exotic"


# Line breaks besides \n (NEL, LS, PS): only a double-quoted escape keeps them.
_BREAKS = re.compile("[\x85\u2028\u2029]")


def _awkward_key(key: Any) -> bool:
    """Empty keys, and keys near 128 characters with their tag (PyYAML counts characters and
    `< 128`, libyaml bytes and `<= 128`), are explicit `? key` to one emitter, not the other."""
    return key == "" or (isinstance(key, str) and len(key) > 40 and len(key.encode()) >= 118)


def _dict_presenter(dumper: yaml.SafeDumper, data: dict[Any, Any]) -> yaml.Node:
    if not isinstance(dumper, _PyDumper) and any(_awkward_key(key) for key in data):
        raise _Exotic
    return dumper.represent_dict(data)


def _style(data: str) -> str | None:
    if _BREAKS.search(data):
        return '"'  # PyYAML writes NEL raw in quotes, where readers fold it
    if "\n" in data:
        return "|"
    if ambiguous(data):
        return "'"  # what PyYAML picks itself for the strings its own resolver would misread
    return None


@functools.lru_cache(maxsize=1 << 16)
def _libyaml_style(data: str) -> str | None:
    """_style(), or _EXOTIC_STYLE when libyaml would write the string differently from PyYAML
    (also `|+` scalars: libyaml ends the document with `...` after them)."""
    if _exotic().search(data) or data == "\n" or data.endswith("\n\n"):
        return _EXOTIC_STYLE
    return _style(data)


def _str_presenter(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    style = _style(data) if isinstance(dumper, _PyDumper) else _libyaml_style(data)
    if style == _EXOTIC_STYLE:
        raise _Exotic
    return dumper.represent_scalar(_STR, data, style=style)


class FlowList(list[Any]):
    """A list printed inline (`[0, 1, 2]`), e.g. GPU indexes in a mig-parted config."""


def _flow_presenter(dumper: yaml.SafeDumper, data: FlowList) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)


for _dumper in (_PyDumper, _Dumper):
    _dumper.add_representer(str, _str_presenter)
    _dumper.add_representer(dict, _dict_presenter)
    _dumper.add_representer(FlowList, _flow_presenter)

_OPTIONS: dict[str, Any] = {
    "sort_keys": False,
    "default_flow_style": False,
    "allow_unicode": True,
    "width": 1_000_000,
}


def to_yaml(obj: Any, memo: fastyaml.Memo | None = None) -> str:
    """The object as one YAML document: written directly when it is plain (fastyaml), else by
    libyaml, else (characters libyaml writes otherwise) by PyYAML; the same bytes each way.
    `memo`: see fastyaml.dump."""
    try:
        return fastyaml.dump(obj, memo)
    except fastyaml.NotPlain:
        pass
    try:
        return str(yaml.dump(obj, Dumper=_Dumper, **_OPTIONS))
    except _Exotic:
        return str(yaml.dump(obj, Dumper=_PyDumper, **_OPTIONS))


def ordered(manifests: Iterable[Manifest]) -> list[Manifest]:
    return sorted(manifests, key=Manifest.sort_key)


def stream(manifests: Iterable[Manifest]) -> str:
    """The applied objects as one multi-document stream, in apply order."""
    return "".join("---\n" + to_yaml(m.obj) for m in ordered(manifests) if m.applied)


def kustomization(manifests: Iterable[Manifest]) -> dict[str, Any]:
    files = [m.path_in_cluster() for m in ordered(manifests) if m.applied]
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
            by_target.setdefault(m.target, []).append(m.path_in_cluster().split("/", 1)[1])
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
    """Relative path -> file text for the whole output directory. A multi-cluster render is
    one tree per cluster, `<cluster>/...`, each with its own kustomizations and none at the
    top: one kustomization applying every cluster's objects to one cluster would be wrong."""
    by_cluster: dict[str | None, list[Manifest]] = {}
    for manifest in manifests:
        by_cluster.setdefault(manifest.cluster, []).append(manifest)
    files: dict[str, str] = {}
    for cluster, members in by_cluster.items():
        prefix = f"{cluster}/" if cluster else ""
        files.update((prefix + path, text) for path, text in _one_tree(members).items())
    return dict(sorted(files.items()))


def file_text(manifest: Manifest) -> str:
    """YAML, or JSON for a (never applied) `.json` file such as a Grafana dashboard model."""
    if manifest.filename and manifest.filename.endswith(".json"):
        return json.dumps(manifest.obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return to_yaml(manifest.obj)


def _one_tree(manifests: Iterable[Manifest]) -> dict[str, str]:
    items = ordered(manifests)
    by_path: dict[str, list[Manifest]] = {}
    for m in items:
        by_path.setdefault(m.path_in_cluster(), []).append(m)
    files = {path: _file_text(members) for path, members in by_path.items()}
    files["kustomization.yaml"] = to_yaml(kustomization(items))
    files.update(stage_kustomizations(items))
    return files


def _file_text(members: list[Manifest]) -> str:
    """One object as a plain document; several sharing a file (a pool's node plan) as a
    stream, each document after `---`, in apply order."""
    if len(members) == 1:
        return file_text(members[0])
    memo: fastyaml.Memo = {}  # the members share their label mappings (a rack's nodes)
    return "".join("---\n" + to_yaml(m.obj, memo) for m in members)
