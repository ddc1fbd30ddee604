"""Each day-2 case on a fleet its GitOps tool alone owns (issue 38, item 11).

The busy matrix runs its cases one after another on one settled fleet, some under the Argo CD
model and some under the real Flux. Each sync leaves its field manager's ownership behind: after
a Flux case, the next Argo CD case meets objects whose fields `kustomize-controller` still
co-owns, and server-side apply then keeps a field the change removes (the API server removes a
field only when no other manager owns it). A result would then depend on the order of the cases,
not on the change. A real cluster run by one tool has no such second owner.

`reset(sim, tree, tool)` makes the tree's live objects look as if `tool` alone had applied the
tree:
1. one `kubectl get --show-managed-fields` reads them;
2. one `kubectl replace` folds every GitOps-side entry of the main resource that is not the
   tool's own (the other tool's, kubectl's, `before-first-apply`'s) into one Apply entry of
   `tool`'s manager, so no field has a second applier. Entries of controllers (Kueue, Volcano,
   kube-controller-manager), of the status subresource and of the sim's installer are kept. The
   folded entry is never empty: clearing managedFields instead (`[{}]`) makes the next apply give
   every existing field to `before-first-apply` (k8s.io/apimachinery v0.35.2,
   `managedfields/internal/skipnonapplied.go:76-90`, `fieldmanager.go:77-108`);
3. for Flux, `flux.forget`: the case's sync then reconciles the tree first, as Flux does in a
   cluster it manages, so Flux's inventory and owner labels hold every object (an object another
   tool recreated has no owner labels, and Flux's garbage collection skips it);
4. it reads the managers back until they are right (`foreign` empty), and says what it saw if
   they never are.
The case's own sync then applies the changed tree as that tool: the folded set becomes exactly
what the new tree says, and a field it drops goes, as it would in a cluster run by that tool.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import flux, gitops
from .cluster import SimCluster, SimError

Obj = dict[str, Any]

FLUX_MANAGER = "kustomize-controller"  # kustomize-controller's own name as its field manager
MANAGERS = {"argocd": gitops.ARGOCD_MANAGER, "flux": FLUX_MANAGER}
# What each tool's sync writes with: the Argo CD model's Replace=true objects go through
# `kubectl replace`/`create` (gitops._replace), the rest through server-side apply.
OWN = {
    "argocd": frozenset(
        {f"{gitops.ARGOCD_MANAGER}/Apply", "kubectl-replace/Update", "kubectl-create/Update"}
    ),
    "flux": frozenset({f"{FLUX_MANAGER}/Apply"}),
}
# Who writes the policy's objects from outside the cluster: the two tools, kubectl (the Argo CD
# model's Replace=true objects go through `kubectl replace`/`create`) and the name the API
# server gives fields that existed before the first server-side apply.
GITOPS_SIDE = frozenset(
    {
        gitops.ARGOCD_MANAGER,
        FLUX_MANAGER,
        "before-first-apply",
        "kubectl",
        "kubectl-client-side-apply",
        "kubectl-create",
        "kubectl-replace",
        "kubectl-edit",
        "kubectl-patch",
        "kubectl-label",
        "kubectl-annotate",
    }
)


def _name(entry: Mapping[str, Any]) -> str:
    return f"{entry.get('manager')}/{entry.get('operation')}"


def _other_side(entry: Mapping[str, Any], tool: str) -> bool:
    """A GitOps-side entry of the main resource (a status entry is a controller's) that the
    tool's own sync does not write."""
    return (
        entry.get("manager") in GITOPS_SIDE
        and not entry.get("subresource")
        and _name(entry) not in OWN[tool]
    )


def union(into: dict[str, Any], other: Mapping[str, Any]) -> dict[str, Any]:
    """The FieldsV1 sets merged: a field in either is in the result (`{}` leaves, `.` self)."""
    for key, value in other.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            union(into[key], value)
        else:
            into[key] = copy.deepcopy(dict(value)) if isinstance(value, Mapping) else value
    return into


def folded(obj: Mapping[str, Any], tool: str) -> Obj | None:
    """`obj` with the GitOps-side entries `tool` does not write folded into its Apply entry, or
    None when there are none (nothing to write)."""
    manager = MANAGERS[tool]
    entries = list((obj.get("metadata") or {}).get("managedFields") or [])
    others = [e for e in entries if _other_side(e, tool)]
    if not others:
        return None
    mine = [e for e in entries if _name(e) == f"{manager}/Apply" and not e.get("subresource")]
    fold = others + mine
    fields: dict[str, Any] = {}
    for entry in fold:
        union(fields, entry.get("fieldsV1") or {})
    entry = {
        "manager": manager,
        "operation": "Apply",
        "apiVersion": obj["apiVersion"],
        "time": max(str(e.get("time") or "") for e in fold) or None,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }
    if entry["time"] is None:
        del entry["time"]
    out = copy.deepcopy(dict(obj))
    out["metadata"]["managedFields"] = [e for e in entries if e not in fold] + [entry]
    return out


def foreign(objs: Iterable[Mapping[str, Any]], tool: str) -> list[str]:
    """`Kind/namespace/name: managers` for each object whose main resource a GitOps-side
    manager other than the tool's own sync still writes."""
    found = []
    for obj in objs:
        others = [e for e in obj["metadata"].get("managedFields") or [] if _other_side(e, tool)]
        if others:
            found.append(f"{gitops.subject(obj)}: {sorted({_name(e) for e in others})}")
    return found


def live(sim: SimCluster, tree: Path) -> list[Obj]:
    """The tree's objects as the API server has them, managedFields included (absent ones left
    out: a case's revert may not have recreated an object the tree has yet)."""
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": gitops.documents(tree)})
    result = sim.kubectl(
        "get", "--show-managed-fields", "--ignore-not-found", "-o", "json", "-f", "-", input=body
    )
    if not result.stdout.strip():
        return []
    listed = json.loads(result.stdout)
    return list(listed["items"]) if listed.get("kind") == "List" else [listed]


def _write(sim: SimCluster, objs: Sequence[Obj]) -> str:
    """One `kubectl replace` of the objects with their folded managedFields; the error text of
    those it could not write (a controller wrote them since the read: a conflict)."""
    if not objs:
        return ""
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objs)})
    result = sim.kubectl("replace", "-f", "-", input=body, check=False)
    return "" if result.returncode == 0 else str(result.stderr).strip()


def reset(sim: SimCluster, tree: Path, tool: str, *, timeout: float = 120) -> None:
    """The tree's live objects owned on the GitOps side by `tool` alone (module doc)."""
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    errors = ""
    while time.monotonic() < deadline:
        objs = live(sim, tree)
        seen = foreign(objs, tool)
        if not seen:
            break
        # A conflict (a controller wrote the object since the read) is read and folded again.
        errors = _write(sim, [o for o in (folded(obj, tool) for obj in objs) if o])
        if errors:
            time.sleep(1)
    else:
        raise SimError(
            f"after {timeout:.0f}s, not written by {tool}'s sync alone: {seen[:10]}; "
            f"last replace: {errors[:600]}"
        )
    if tool == "flux":
        flux.forget(sim)
