"""Apply a rendered tree the way Argo CD and Flux do, including pruning what a change removed.

Argo CD: `sync_argocd` is the model below unless HETGITOPS_ARGOCD=real, when it is the real
Argo CD (tests/harness/simcluster/argocd.py: application-controller, repo-server and the hetgitops
CMP, the `argocd` component, built on first use); `sync_argocd_real` always is. `argocd_plan` is
what the model prunes, keeps and replaces, which tests/sim/test_sim_argocd.py holds against
the real tool.

Flux is the real one: `sync_flux` commits the tree to a Git repository served on loopback and
lets the real source-controller and kustomize-controller reconcile the Kustomizations of
`integrations/flux/kustomizations.yaml` (tests/harness/simcluster/flux.py); no model of it is left.

The Argo CD model follows gitops-engine sync_tasks.go: objects sorted by sync wave, then
kind (its kindOrder: Namespace first ... Job, CronJob, Ingress, APIService; kinds it does not
know, i.e. every custom resource, last), then name; each wave is applied before the next starts;
objects that left the tree are pruned afterwards, highest wave first. (Argo CD's own pre-sync
dry-run is client-side: it never reaches a webhook.) It retries a failed sync (its retry policy):
`attempts`. Argo CD pauses ARGOCD_SYNC_WAVE_DELAY (2 s by default) between waves, "to give other
controllers a chance to react to the spec change that was just applied" (its sync-waves docs);
so does this.

Objects whose immutable fields change (a PriorityClass's value) carry
`argocd.argoproj.io/sync-options: Force=true,Replace=true` (gitops-engine 5baed56
pkg/sync/sync_context.go:1171-1200): the object is synced with `kubectl replace --force`
(delete, wait, create; pkg/utils/kube/resource_ops.go:223-243, 555-560) when it exists, with
`kubectl create` when it does not; with the shipped Application's ApplyOutOfSyncOnly=true only
when it is out of sync (before, this model recreated every PriorityClass on every sync, which
the real Argo CD as hetgitops configures it never does).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import argocd, flux
from .cluster import SimCluster

Obj = dict[str, Any]
ARGOCD_MANAGER = "argocd-controller"
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
ARGOCD_WAVE_DELAY = 2.0
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"

# gitops-engine pkg/sync/sync_tasks.go kindOrder (the kinds a hetgitops tree can hold matter).
_ARGO_KIND_ORDER = [
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
]


class SyncFailed(RuntimeError):
    """The tool's sync did not succeed within its retries; the message holds kubectl's error."""


def documents(tree: Path) -> list[Obj]:
    """The objects a GitOps tool syncs from `tree`: what its kustomization.yaml lists."""
    kustomization = yaml.safe_load((tree / "kustomization.yaml").read_text())
    docs: list[Obj] = []
    for resource in kustomization.get("resources", []):
        text = (tree / resource).read_text()
        docs += [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    return docs


def key(obj: Obj) -> tuple[str, str, str, str]:
    meta = obj["metadata"]
    return (
        obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else "",
        obj["kind"],
        meta.get("namespace", ""),
        meta["name"],
    )


def wave(obj: Obj) -> int:
    return int(obj["metadata"].get("annotations", {}).get(SYNC_WAVE, "0"))


def argo_sort_key(obj: Obj) -> tuple[int, int, str]:
    kind = obj["kind"]
    # Unknown kinds get 0 in gitops-engine, which sorts after every known (negative) one.
    order = _ARGO_KIND_ORDER.index(kind) - len(_ARGO_KIND_ORDER) if kind in _ARGO_KIND_ORDER else 0
    return wave(obj), order, obj["metadata"]["name"]


def stale(old: Sequence[Obj], new: Sequence[Obj]) -> list[Obj]:
    kept = {key(o) for o in new}
    return [o for o in old if key(o) not in kept]


ARGOCD_SWITCH = "HETGITOPS_ARGOCD"  # "real": sync_argocd runs the real Argo CD


@dataclass(frozen=True)
class ArgoPlan:
    """What the model does to the objects of a change, named as Argo CD's sync result names
    them (Kind/namespace/name): the real tool's ArgoSync has the same three lists."""

    pruned: list[str]
    prune_skipped: list[str]
    replaced: list[str]


def subject(obj: Obj) -> str:
    meta = obj["metadata"]
    return "/".join(p for p in (obj["kind"], meta.get("namespace", ""), meta["name"]) if p)


def argocd_plan(tree: Path, previous: Path | None, *, live: set[str] | None = None) -> ArgoPlan:
    """The model's decisions for syncing `tree` after `previous` (`live`: subjects that exist
    now; a Replace object that does not exist is created, not replaced)."""
    new = documents(tree)
    old = documents(previous) if previous is not None else []
    synced_before = {key(o): o for o in old}
    gone = stale(old, new)
    replaced = [
        subject(o)
        for o in new
        if _argo_option(o, "Replace=true")
        and synced_before.get(key(o)) != o
        and (live is None or subject(o) in live)
    ]
    return ArgoPlan(
        pruned=sorted(subject(o) for o in gone if not _argo_option(o, "Prune=false")),
        prune_skipped=sorted(subject(o) for o in gone if _argo_option(o, "Prune=false")),
        replaced=sorted(replaced),
    )


def sync_argocd_real(
    sim: SimCluster,
    tree: Path,
    previous: Path | None = None,
    *,
    policy: Path | None = None,
    attempts: int = 3,
) -> argocd.ArgoSync:
    """The real Argo CD syncs `tree` (or renders `policy` with the CMP), after `previous`."""
    try:
        return argocd.sync(sim, tree, previous, policy=policy, attempts=attempts)
    except argocd.ArgoFailed as error:
        raise SyncFailed(str(error)) from None


def sync_argocd(
    sim: SimCluster, tree: Path, previous: Path | None = None, *, attempts: int = 3
) -> argocd.ArgoSync | None:
    """Argo CD syncs `tree` after `previous`: the model, or with HETGITOPS_ARGOCD=real the
    real Argo CD (its result then says what it pruned, skipped and replaced)."""
    if os.environ.get(ARGOCD_SWITCH) == "real":
        return sync_argocd_real(sim, tree, previous, attempts=attempts)
    _sync_argocd_model(sim, tree, previous, attempts=attempts)
    return None


def _sync_argocd_model(
    sim: SimCluster, tree: Path, previous: Path | None = None, *, attempts: int = 3
) -> None:
    new = sorted(documents(tree), key=argo_sort_key)
    # The shipped Application (integrations/argocd/application.yaml) sets ApplyOutOfSyncOnly:
    # gitops-engine v3.6.1 pkg/sync/sync_context.go:547-549 and 664-666 drop every task whose
    # resource is in sync before the dry-run and the sync. Here an object is in sync when the
    # previous tree held it unchanged and it exists; only Replace objects need the test (an
    # apply of an unchanged object changes nothing, a replace --force deletes and recreates).
    synced_before = {key(o): o for o in documents(previous)} if previous is not None else {}
    waves: dict[int, list[Obj]] = {}
    for obj in new:
        waves.setdefault(wave(obj), []).append(obj)
    for index, number in enumerate(sorted(waves)):
        if index:
            time.sleep(ARGOCD_WAVE_DELAY)
        replaced = [o for o in waves[number] if _argo_option(o, "Replace=true")]
        applied = [o for o in waves[number] if o not in replaced]
        if applied:
            _apply(sim, applied, manager=ARGOCD_MANAGER, attempts=attempts, what=f"wave {number}")
        for obj in replaced:
            if synced_before.get(key(obj)) == obj and _existing(sim, _scope(obj)):
                continue
            _replace(sim, obj, force=_argo_option(obj, "Force=true"), attempts=attempts)
    if previous is not None:
        # Argo CD never prunes an object whose live copy says Prune=false (docs
        # user-guide/sync-options.md "No Prune Resources": the app stays OutOfSync and the sync
        # status says the prune was skipped).
        gone = [o for o in stale(documents(previous), new) if not _argo_option(o, "Prune=false")]
        by_wave: dict[int, list[Obj]] = {}
        for obj in gone:
            by_wave.setdefault(wave(obj), []).append(obj)
        for number in sorted(by_wave, reverse=True):
            time.sleep(ARGOCD_WAVE_DELAY)
            _delete(
                sim, sorted(by_wave[number], key=argo_sort_key, reverse=True), attempts=attempts
            )


def _argo_option(obj: Obj, option: str) -> bool:
    """gitops-engine pkg/sync/resource/annotations.go:15-41: comma-separated, trimmed."""
    value = obj["metadata"].get("annotations", {}).get(SYNC_OPTIONS, "")
    return option in [item.strip() for item in value.split(",")]


def _replace(sim: SimCluster, obj: Obj, *, force: bool, attempts: int) -> None:
    """Argo CD's Replace=true: `kubectl replace [--force]` an existing object, else create."""
    verb = ["replace", "--force"] if force else ["replace"]
    error = ""
    for attempt in range(attempts):
        exists = _existing(sim, _scope(obj))
        args = verb if exists else ["create"]
        result = sim.kubectl(*args, "-f", "-", input=json.dumps(obj), check=False)
        if result.returncode == 0:
            return
        error = result.stderr.strip()
        time.sleep(2 * (attempt + 1))
    raise SyncFailed(f"{ARGOCD_MANAGER}: replace {_ref(obj)} failed: {error}")


def sync_flux(
    sim: SimCluster, tree: Path, previous: Path | None = None, *, attempts: int = 3
) -> flux.FluxSync:
    """The real Flux reconciles `tree`, after `previous` (tests/harness/simcluster/flux.py); what it
    created, configured, pruned and skipped is in the result."""
    try:
        return flux.sync(sim, tree, previous, attempts=attempts)
    except flux.FluxFailed as error:
        raise SyncFailed(str(error)) from None


def _apply(
    sim: SimCluster,
    objs: Sequence[Obj],
    *,
    manager: str,
    attempts: int,
    what: str,
) -> None:
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objs)})
    error = ""
    for attempt in range(attempts):
        result = sim.kubectl(
            "apply",
            "--server-side",
            "--force-conflicts",
            f"--field-manager={manager}",
            "-f",
            "-",
            input=body,
            check=False,
        )
        if result.returncode == 0:
            return
        error = result.stderr.strip()
        time.sleep(2 * (attempt + 1))
    raise SyncFailed(f"{manager}: {what} failed after {attempts} attempts: {error}")


def prune(sim: SimCluster, objs: Sequence[Obj], *, attempts: int = 3) -> None:
    """Delete `objs` the way Argo CD prunes: custom resources first, namespaces last."""
    _delete(sim, sorted(objs, key=argo_sort_key, reverse=True), attempts=attempts)


def apply_objects(sim: SimCluster, objs: Sequence[Obj], *, manager: str) -> None:
    _apply(sim, objs, manager=manager, attempts=1, what="objects")


def _delete(sim: SimCluster, objs: Sequence[Obj], *, attempts: int, timeout: float = 120) -> None:
    """Delete `objs` together, as both tools do (one delete call each, no waiting in between:
    Kueue's in-use finalizers make a flavor wait for the queues deleted with it), then wait
    until every one is gone."""
    if not objs:
        return
    batches: dict[str, list[str]] = {}
    for obj in objs:
        batches.setdefault(obj["metadata"].get("namespace", ""), []).append(_ref(obj))
    for namespace, names in batches.items():
        scope = ["-n", namespace] if namespace else []
        error = ""
        for attempt in range(attempts):
            result = sim.kubectl(
                "delete", *scope, "--ignore-not-found", "--wait=false", *names, check=False
            )
            if result.returncode == 0:
                break
            error = result.stderr.strip()
            time.sleep(2 * (attempt + 1))
        else:
            raise SyncFailed(f"prune failed after {attempts} attempts: {error}")
    # Neither tool waits on a finalizer: Flux's garbage collection issues the deletes and
    # moves on, Argo CD marks the resource pruned. Kueue's resource-in-use finalizer keeps a
    # ClusterQueue with admitted workloads (and the flavors it names) Terminating until they
    # finish, which on a busy fleet is not within a sync. So once everything left is
    # Terminating, give it TERMINATING_GRACE seconds and return.
    deadline = time.monotonic() + timeout
    left = _existing(sim, batches)
    terminating_since: float | None = None
    while left and time.monotonic() < deadline:
        if _all_terminating(sim, batches):
            terminating_since = terminating_since or time.monotonic()
            if time.monotonic() - terminating_since > TERMINATING_GRACE:
                return
        else:
            terminating_since = None
        time.sleep(1)
        left = _existing(sim, batches)
    if left:
        raise SyncFailed(f"pruned objects still exist after {timeout:.0f}s: {', '.join(left[:10])}")


TERMINATING_GRACE = 15.0


def _all_terminating(sim: SimCluster, batches: dict[str, list[str]]) -> bool:
    """Every object of `batches` still there is being deleted (deletionTimestamp set)."""
    for namespace, names in batches.items():
        scope = ["-n", namespace] if namespace else []
        result = sim.kubectl("get", *scope, "--ignore-not-found", "-o", "json", *names, check=False)
        if result.returncode != 0 or not result.stdout.strip():
            continue
        listed = json.loads(result.stdout)
        items = listed["items"] if listed.get("kind", "").endswith("List") else [listed]
        if any(not item["metadata"].get("deletionTimestamp") for item in items):
            return False
    return True


def _scope(obj: Obj) -> dict[str, list[str]]:
    return {obj["metadata"].get("namespace", ""): [_ref(obj)]}


def _ref(obj: Obj) -> str:
    group = key(obj)[0]
    kind = f"{obj['kind']}.{group}" if group else obj["kind"]
    return f"{kind}/{obj['metadata']['name']}"


def _existing(sim: SimCluster, batches: dict[str, list[str]]) -> list[str]:
    found = []
    for namespace, names in batches.items():
        scope = ["-n", namespace] if namespace else []
        result = sim.kubectl("get", *scope, "--ignore-not-found", "-o", "name", *names, check=False)
        found += [f"{namespace}/{line}" if namespace else line for line in result.stdout.split()]
    return found


def kubectl_json(sim: SimCluster, *args: str) -> Any:
    try:
        return json.loads(sim.kubectl("get", *args, "-o", "json").stdout)
    except subprocess.CalledProcessError as error:
        raise SyncFailed(f"kubectl get {' '.join(args)}: {error.stderr}") from None
