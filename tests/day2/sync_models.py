"""How Argo CD, Flux and `kubectl apply -k` send a rendered tree's Volcano Queues to the API
server, replayed against `volcano_admission.Cluster` (the webhook's rules).

- kubectl apply -k: the objects in `kubectl kustomize` order (the real kubectl decides it),
  one request each; a rejected object does not stop the others; nothing is pruned.
- Argo CD (gitops-engine sync_context.go): waves in ascending order; the objects of one wave
  are sent concurrently, so each is judged against the cluster as it was before the wave;
  a failed wave ends the sync. Pruned objects run in reverse wave order ("symmetric swap" of
  the prune waves), modelled here as extra waves after the last apply wave.
- Flux (kustomize-controller + fluxcd/pkg/ssa ApplyAll): stages in dependsOn order; a stage
  first dry-runs every object against the current cluster and applies nothing if one fails;
  then applies them in order and prunes what left its inventory; a failed stage blocks every
  stage that depends on it.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from volcano_admission import Cluster, Queue, Rejected

Obj = Mapping[str, Any]
WAVE = "argocd.argoproj.io/sync-wave"


@dataclass
class Outcome:
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def queues(objects: Iterable[Obj]) -> list[Obj]:
    return [o for o in objects if o.get("kind") == "Queue"]


def _names(objects: Iterable[Obj]) -> set[str]:
    return {o["metadata"]["name"] for o in objects}


def _try(outcome: Outcome, what: str, action: Any) -> bool:
    try:
        action()
    except Rejected as problem:
        outcome.errors.append(f"{what}: {problem}")
        return False
    return True


def kustomize_order(tree: Path, kubectl: str = "kubectl") -> list[Obj]:
    """The objects of a written tree in the order `kubectl apply -k` sends them."""
    built = subprocess.run([kubectl, "kustomize", str(tree)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    return [d for d in yaml.safe_load_all(built.stdout) if isinstance(d, dict)]


def kubectl_apply(cluster: Cluster, ordered: Sequence[Obj]) -> Outcome:
    outcome = Outcome()
    for obj in queues(ordered):
        name = obj["metadata"]["name"]
        _try(outcome, f"apply {name}", lambda o=obj: cluster.apply(o))
    return outcome


def _wave(obj: Obj) -> int:
    return int((obj.get("metadata", {}).get("annotations") or {}).get(WAVE, "0"))


def argocd_sync(cluster: Cluster, old: Sequence[Obj], new: Sequence[Obj]) -> Outcome:
    outcome = Outcome()
    waves: dict[int, list[tuple[str, Obj]]] = {}
    for obj in queues(new):
        waves.setdefault(_wave(obj), []).append(("apply", obj))
    gone = [o for o in queues(old) if o["metadata"]["name"] not in _names(queues(new))]
    prune_waves = sorted({_wave(o) for o in gone}, reverse=True)
    last = max(waves, default=0)
    for offset, wave in enumerate(prune_waves, start=1):
        for obj in gone:
            if _wave(obj) == wave:
                waves.setdefault(last + offset, []).append(("delete", obj))
    for wave in sorted(waves):
        before = cluster.copy()  # concurrent requests: each sees the cluster before the wave
        for action, obj in waves[wave]:
            name = obj["metadata"]["name"]
            if action == "apply":
                if _try(
                    outcome,
                    f"wave {wave} apply {name}",
                    lambda o=obj, b=before: b.apply(o, dry_run=True),
                ):
                    cluster.queues[name] = Queue.of(obj)
            elif _try(
                outcome,
                f"wave {wave} prune {name}",
                lambda n=name, b=before: b.delete(n, dry_run=True),
            ):
                cluster.queues.pop(name, None)
        if not outcome.ok:
            break
    return outcome


@dataclass(frozen=True)
class Stage:
    name: str
    objects: tuple[Obj, ...]
    depends_on: tuple[str, ...] = ()


def flux_reconcile(
    cluster: Cluster, old: Mapping[str, Sequence[Obj]], new: Sequence[Stage]
) -> Outcome:
    """`old`: each stage's previous inventory (its objects at the last revision)."""
    outcome = Outcome()
    ready: set[str] = set()
    pending = list(new)
    while pending:
        stage = next((s for s in pending if set(s.depends_on) <= ready), None)
        if stage is None:
            outcome.errors += [f"stage {s.name}: dependency not ready" for s in pending]
            break
        pending.remove(stage)
        if _flux_stage(cluster, stage, old.get(stage.name, ()), outcome):
            ready.add(stage.name)
    return outcome


def _flux_stage(cluster: Cluster, stage: Stage, old: Sequence[Obj], outcome: Outcome) -> bool:
    objects = queues(stage.objects)
    for obj in objects:  # ApplyAll: dry-run everything first
        name = obj["metadata"]["name"]
        if not _try(
            outcome, f"{stage.name} dry-run {name}", lambda o=obj: cluster.apply(o, dry_run=True)
        ):
            return False
    for obj in objects:
        if not _try(
            outcome, f"{stage.name} apply {obj['metadata']['name']}", lambda o=obj: cluster.apply(o)
        ):
            return False
    stale = [o for o in queues(old) if o["metadata"]["name"] not in _names(objects)]
    for obj in reversed(stale):
        name = obj["metadata"]["name"]
        if not _try(outcome, f"{stage.name} prune {name}", lambda n=name: cluster.delete(n)):
            return False
    return True
