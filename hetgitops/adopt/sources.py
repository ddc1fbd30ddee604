"""Adopt stage: the Kubernetes objects to import, from manifests or from a live cluster.

Manifests: YAML files (a directory is read recursively, `-` is standard input), `kind: List`
dumps (`kubectl get -o yaml`) unpacked; each object remembers its file and line. A live
cluster is read through `hetgitops.live` with exactly one LIST per kind (plus one more only
for a Kueue that serves v1beta1 alone), never a GET per object and never a write.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from hetgitops.adopt.bounds import NodeBudget, TooCostly, data_too_deep, read_bounded
from hetgitops.adopt.fields import object_problems
from hetgitops.adopt.findings import finding
from hetgitops.diagnostics import Diagnostic, Span
from hetgitops.live import resources
from hetgitops.live.client import Cluster, Forbidden, NotServed, Resource

KUEUE = "kueue.x-k8s.io"
# libyaml's parser when PyYAML has it: a 5,000-node dump parses several times faster, with
# the same marks (lines) on every node.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# What import reads, in the order it reads it. Kinds import does not translate are read too,
# so that they are reported (import-kind-not-imported) instead of silently left out.
RESOURCES = (
    resources.NODES,
    resources.NAMESPACES,
    Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False),
    Resource(KUEUE, "v1beta2", "resourceflavors", "ResourceFlavor", False),
    Resource(KUEUE, "v1beta2", "clusterqueues", "ClusterQueue", False),
    Resource(KUEUE, "v1beta2", "cohorts", "Cohort", False),
    Resource(KUEUE, "v1beta2", "localqueues", "LocalQueue", True),
    Resource(KUEUE, "v1beta2", "workloadpriorityclasses", "WorkloadPriorityClass", False),
    Resource(KUEUE, "v1beta2", "topologies", "Topology", False),
    Resource(KUEUE, "v1beta2", "admissionchecks", "AdmissionCheck", False),
    # A MultiKueue manager's (reported, with the Cluster documents they would be). Secrets,
    # which hold the workers' kubeconfigs, are never listed.
    Resource(KUEUE, "v1beta2", "multikueueconfigs", "MultiKueueConfig", False),
    Resource(KUEUE, "v1beta2", "multikueueclusters", "MultiKueueCluster", False),
    resources.VOLCANO_QUEUES,
    # Koordinator's quota trees (reported: adopt.koordinator).
    Resource(
        "quota.koordinator.sh", "v1alpha1", "elasticquotaprofiles", "ElasticQuotaProfile", True
    ),
    Resource("scheduling.sigs.k8s.io", "v1alpha1", "elasticquotas", "ElasticQuota", True),
    Resource("", "v1", "resourcequotas", "ResourceQuota", True),
    Resource("nvidia.com", "v1", "clusterpolicies", "ClusterPolicy", False),
    # DRA (Kubernetes 1.34+; absent before): a pool's allocation mode (adopt.dra).
    resources.DEVICE_CLASSES,
    resources.CLAIM_TEMPLATES,
    # Every ConfigMap, in one LIST: only the GPU Operator's and Volcano's are kept (`_relevant`).
    Resource("", "v1", "configmaps", "ConfigMap", True),
)
# What marks a ConfigMap import reads: mig-parted, device-plugin and Volcano scheduler configs,
# and Kueue's manager Configuration.
_CONFIG_MARKS = ("mig-configs", "sharing:", "flags:", "actions:", "config.kueue.x-k8s.io/")


@dataclass(frozen=True)
class Imported:
    """One object and where it was read (a manifest's file:line, or the cluster's kind)."""

    obj: dict[str, Any]
    span: Span

    @functools.cached_property
    def labels(self) -> dict[str, str]:
        """metadata.labels as strings, computed once (pool inference asks for a node's labels
        several times; 5,000 nodes)."""
        found = (self.obj.get("metadata") or {}).get("labels") or {}
        return {str(k): str(v) for k, v in found.items()}

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind", ""))

    @property
    def name(self) -> str:
        return str((self.obj.get("metadata") or {}).get("name", ""))

    @property
    def namespace(self) -> str:
        return str((self.obj.get("metadata") or {}).get("namespace", ""))


@dataclass
class Read:
    objects: list[Imported] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    requests: int = 0
    insecure_server: str = ""  # the (redacted) server read without TLS verification
    source: str = ""  # what was read: the -f paths, or the cluster's server

    def nothing_read(self) -> Diagnostic | None:
        """An error when no object was read: an empty policy is never what was asked."""
        if self.objects:
            return None
        return finding(
            "import-unreadable",
            f"0 objects read from {self.source or 'the input'}: nothing to import, and no "
            "policy was written",
            Span(self.source or "<input>"),
        )


def from_text(name: str, text: str, read: Read) -> None:
    """Every object of one YAML stream; `kind: List` items (nested Lists too) and JSON arrays
    unpacked, each at its line. A JSON document (`kubectl get -o json`, `jq .items`) is
    parsed by orjson, ten times faster than any YAML loader on a 5,000-node dump; its objects
    are located by file and item number."""
    if text.lstrip().startswith(("{", "[")) and _from_json(name, text, read):
        return
    loader, budget = _LOADER(text), NodeBudget()
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            at = Span(name, node.start_mark.line + 1, 1)
            try:  # bounded before anything is built from it (`bounds`)
                budget.check(node)
            except TooCostly as exc:
                read.diagnostics.append(finding("import-unreadable", str(exc), at))
                if budget.alias_nodes or budget.alias_chars:
                    return  # an alias bomb: the rest of the file is not read
                continue
            data = loader.construct_document(node)
            if data is not None:
                _add(read, data, node, at)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 0
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        read.diagnostics.append(
            finding("import-unreadable", f"not YAML: {problem}", Span(name, line, 1))
        )
    finally:
        loader.dispose()


def _from_json(name: str, text: str, read: Read) -> bool:
    import orjson

    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return False  # YAML that starts with a flow collection: the YAML loader reads it
    deep = data_too_deep(data)
    if deep:
        read.diagnostics.append(finding("import-unreadable", deep, Span(name)))
        return True
    _add(read, data, None, Span(name))
    return True


def _add(read: Read, data: Any, node: yaml.Node | None, span: Span, depth: int = 0) -> None:
    """One document or item: a List (or a JSON array) unpacked item by item, an object
    checked (`fields`) and kept, anything else an import-unreadable finding at `span`."""
    items = data if isinstance(data, list) else None
    kind = data.get("kind") if isinstance(data, dict) else None
    if isinstance(kind, str) and kind.endswith("List") and isinstance(data.get("items"), list):
        items = data["items"]
        node = _items_node(node)
    if items is not None and depth < _MAX_LISTS:
        lines = _item_lines(node)
        for index, item in enumerate(items):
            if item is None:
                continue
            inner = node.value[index] if isinstance(node, yaml.SequenceNode) else None
            at = Span(span.file, lines[index], 1) if index < len(lines) else _nth(span, index)
            _add(read, item, inner, at, depth + 1)
        return
    problem = _not_an_object(data)
    if problem:
        read.diagnostics.append(finding("import-unreadable", problem, span))
        return
    wrong = object_problems(data)
    if wrong:
        path, what = wrong[0]
        meta = data.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
        read.diagnostics.append(
            finding(
                "import-unreadable",
                f"{data['kind']} {name if isinstance(name, str) else '(unnamed)'}: "
                f"{path} is {what}{more}; "
                "the object is left out of the policy",
                span,
                path=path,
            )
        )
        return
    read.objects.append(Imported(data, span))


_MAX_LISTS = 8  # Lists inside Lists: deeper nesting is no dump's


def _not_an_object(data: Any) -> str:
    if not isinstance(data, dict):
        what = "a list" if isinstance(data, list) else f"a {type(data).__name__} value"
        return f"{what}, not a Kubernetes object (no kind)"
    kind, version = data.get("kind"), data.get("apiVersion", "")
    if not isinstance(kind, str) or not kind:
        return "not a Kubernetes object: its kind is missing or not a string"
    if not isinstance(version, str):
        return f"{kind}: apiVersion is not a string; the object is left out of the policy"
    return ""


def _nth(span: Span, index: int) -> Span:
    return Span(f"{span.file}#items[{index}]") if not span.line else span


def _items_node(node: yaml.Node | None) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if getattr(key, "value", None) == "items" and isinstance(value, yaml.SequenceNode):
                return value
    return None


def _item_lines(node: yaml.Node | None) -> list[int]:
    if isinstance(node, yaml.SequenceNode):
        return [item.start_mark.line + 1 for item in node.value]
    return []


# Files a folder is searched for (any case: `dump.YAML`); a file named with -f is read
# whatever its name (`dump.txt`, /dev/stdin).
SUFFIXES = (".yaml", ".yml", ".json")


def from_paths(paths: Iterable[Path], stdin: str | BinaryIO | None = None) -> Read:
    """Every object of the files and folders named; one that holds none is a finding.
    Standard input (`-`) is `stdin`: its text, or the stream to read (bounded) and decode."""
    read = Read()
    paths = list(paths)
    read.source = ", ".join("<stdin>" if str(p) == "-" else str(p) for p in paths)
    for path in paths:
        before = len(read.objects), len(read.diagnostics)
        if str(path) == "-":
            _from_stdin(stdin, read)
        elif path.is_dir():
            for file in sorted(path.rglob("*")):
                if file.suffix.lower() in SUFFIXES and file.is_file():
                    _from_file(file, read)
        else:
            _from_file(path, read)
        if (len(read.objects), len(read.diagnostics)) == before:
            where = "<stdin>" if str(path) == "-" else str(path)
            what = "no YAML or JSON file" if path.is_dir() else "no Kubernetes object"
            read.diagnostics.append(finding("import-unreadable", f"{what} in {where}", Span(where)))
    return read


def _from_stdin(stdin: str | BinaryIO | None, read: Read) -> None:
    if stdin is None or isinstance(stdin, str):
        from_text("<stdin>", stdin or "", read)
    else:
        _from_stream("<stdin>", stdin, read)


def _from_file(file: Path, read: Read) -> None:
    try:
        with file.open("rb") as stream:
            _from_stream(str(file), stream, read)
    except OSError as exc:
        problem = f"cannot read: {exc}"
        read.diagnostics.append(finding("import-unreadable", problem, Span(str(file))))


def _from_stream(name: str, stream: BinaryIO, read: Read) -> None:
    """A file or standard input, no larger than `bounds.MAX_INPUT_BYTES`, as UTF-8."""
    try:
        text = read_bounded(stream, name).decode("utf-8")
    except (TooCostly, UnicodeDecodeError) as exc:
        problem = str(exc) if isinstance(exc, TooCostly) else f"cannot read: {exc}"
        read.diagnostics.append(finding("import-unreadable", problem, Span(name)))
        return
    from_text(name, text, read)


def from_cluster(kubeconfig: Path | None, context: str | None) -> Read:
    """One LIST per kind of `RESOURCES`; a kind the cluster does not serve is simply absent.
    Raises live.client.ClusterError when the cluster cannot be read at all."""
    read = Read()
    cluster = Cluster(kubeconfig, context)
    try:
        for resource in RESOURCES:
            for obj in _list(cluster, resource, read):
                if resource.kind == "ConfigMap" and not _relevant(obj):
                    continue
                span = Span(f"{LIVE_PREFIX}{resource.plural}.{resource.group or 'core'}")
                _add(read, obj, None, span, _MAX_LISTS)  # checked like a manifest's
    finally:
        read.requests = cluster.requests
        read.insecure_server = cluster.server if cluster.insecure else ""
        read.source = cluster.server
        cluster.close()
    return read


LIVE_PREFIX = "cluster:"


def read_live(item: Imported) -> bool:
    """Whether `item` was listed from a cluster (not read from a file): its span names the
    resource it was listed from, with no line."""
    return item.span.file.startswith(LIVE_PREFIX)


def _relevant(obj: dict[str, Any]) -> bool:
    data = obj.get("data")
    if not isinstance(data, dict):
        return False
    return any(isinstance(v, str) and any(m in v for m in _CONFIG_MARKS) for v in data.values())


def _list(cluster: Cluster, resource: Resource, read: Read) -> list[dict[str, Any]]:
    try:
        return cluster.list(resource)
    except NotServed:
        if resource.group == KUEUE and resource.version == "v1beta2":  # Kueue < 0.15
            older = Resource(KUEUE, "v1beta1", resource.plural, resource.kind, resource.namespaced)
            return _list(cluster, older, read)
        return []
    except Forbidden as exc:
        where = Span(f"{LIVE_PREFIX}{resource.plural}.{resource.group or 'core'}")
        read.diagnostics.append(finding("import-forbidden", str(exc), where))
        return []
