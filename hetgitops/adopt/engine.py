"""Adopt stage: objects -> policy files -> render -> round-trip findings, in one call."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from hetgitops import api
from hetgitops.adopt import roundtrip
from hetgitops.adopt.findings import finding
from hetgitops.adopt.infer import infer
from hetgitops.adopt.sources import Imported, Read
from hetgitops.adopt.write import policy_files
from hetgitops.diagnostics import Diagnostic
from hetgitops.load.resources import data_dir
from hetgitops.model.catalogue import card_types


@dataclass
class ImportResult:
    files: dict[str, str]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    rendered: api.Result | None = None
    requests: int = 0


def bundled_versions() -> dict[str, str]:
    text = (data_dir("policies") / "fleet.yaml").read_text("utf-8")
    fleet = next(d for d in yaml.safe_load_all(text) if d and d.get("kind") == "Fleet")
    return {str(k): str(v) for k, v in fleet["spec"]["versions"].items()}


def import_objects(read: Read, output: Path, *, cluster: str) -> ImportResult:
    """The policy files for `read`'s objects (named under `output`, not yet written) and the
    findings: what could not be read, what is not translated, and the round trip's."""
    inferred = infer(read.objects, card_types(), cluster=cluster, versions=bundled_versions())
    files = policy_files(inferred)
    result = ImportResult(files, [*read.diagnostics, *inferred.diagnostics], requests=read.requests)
    sources = [(str(output / name), text.encode()) for name, text in files.items()]
    rendered = api.validate_sources(sources, api.Options(check_output=False))
    result.rendered = rendered
    result.diagnostics.extend(rendered.diagnostics)
    if not rendered.failed():
        blind = _without_nodes(read.objects)
        cause = None if blind is None else blind.cause
        result.diagnostics.extend(
            d.because(cause) for d in roundtrip.check(read.objects, rendered.manifests)
        )
        if blind is not None:
            result.diagnostics.append(blind)
    return result


# Resources every node has: a queue with quota on nothing else claims no accelerators.
_HOST_RESOURCES = {"cpu", "memory", "pods", "ephemeral-storage"}


def _without_nodes(objects: list[Imported]) -> Diagnostic | None:
    """A warning when the input claims accelerators in its ClusterQueues but holds no Node
    (a `kubectl get` dump without `nodes`): pools, their cards, MIG layouts and sharing
    replicas are read from the nodes, so the policy's pools are guessed from the quotas and
    every difference the round trip then finds follows from that, not from the language."""
    if any(o.kind == "Node" for o in objects):
        return None
    claiming = next((o for o in objects if o.kind == "ClusterQueue" and _claims_cards(o)), None)
    if claiming is None:
        return None
    return finding(
        "import-no-nodes",
        f"the input holds no Node, but ClusterQueue {claiming.name} claims accelerators: import "
        "reads each pool's cards, MIG layout and time-slicing replicas from the nodes, so the "
        "pools written are guesses from the quotas alone, and every difference the round trip "
        "reports below follows from that",
        claiming.span,
        hint="add the nodes to the input (kubectl get nodes -o yaml), or import from the "
        "cluster itself (--kubeconfig)",
    )


def _claims_cards(queue: Imported) -> bool:
    groups = (queue.obj.get("spec") or {}).get("resourceGroups") or []
    return any(
        str(resource) not in _HOST_RESOURCES
        for group in groups
        if isinstance(group, dict)
        for resource in group.get("coveredResources") or []
    )
