"""Compile stage, shared: the GitOps annotations that order tree-shaped objects and recreate
objects whose fields the API server will not update.

Argo CD applies lower sync waves first and prunes in reverse wave order, so a wave equal to the
depth in the tree creates parents before children and deletes children before parents (Volcano
refuses a child whose parent is missing and deleting a queue that has children).
"""

from __future__ import annotations

from dataclasses import replace

from hetgitops.output.manifests import Manifest

SYNC_WAVE = "argocd.argoproj.io/sync-wave"

# Delete and recreate an object whose immutable fields changed, instead of failing every sync.
# Argo CD (gitops-engine 5baed56): `Replace=true` syncs with `kubectl replace`, `Force=true`
# adds --force, i.e. delete then create (pkg/sync/common/types.go:29-34;
# pkg/sync/sync_context.go:1171-1172, 1185-1200; pkg/utils/kube/resource_ops.go:223-243,
# 555-560). It replaces on every sync that includes the object: the shipped Application sets
# ApplyOutOfSyncOnly=true so that is only when it changed (sync_context.go:450-452, 550-552).
# And compare-options ServerSideDiff=false: server-side diff (implied by ServerSideApply) fails
# the whole comparison on the changed class, and then every class is recreated
# (docs/integrations/argocd.md).
# Flux (kustomize-controller 186fb3b, fluxcd/pkg e2cfd1a2): objects annotated
# `kustomize.toolkit.fluxcd.io/force: enabled` are force-applied
# (internal/controller/kustomization_controller.go:867-869): only when the server-side dry-run
# fails as immutable (422 Invalid or 409 Conflict, ssa/errors/immutable.go:32-47) is the object
# deleted, waited for and applied again (ssa/manager_apply.go:252-283, 518-532). Harmless while
# nothing immutable changes.
RECREATE_ON_IMMUTABLE = {
    "argocd.argoproj.io/sync-options": "Force=true,Replace=true",
    "kustomize.toolkit.fluxcd.io/force": "enabled",
}

# Never delete the object when it leaves the tree or the app is deleted (Namespaces: deleting one
# takes its running pods, PVCs and Secrets along). Each tool reads only its own key.
# Argo CD (docs/user-guide/sync-options.md, "No Prune Resources" and "No Resource Deletion"):
# `Prune=false` skips the object when pruning (the app shows OutOfSync, the sync status says the
# prune was skipped) and `Delete=false` keeps it when the Application is deleted.
# Flux (kustomize-controller docs, spec.prune): garbage collection, on prune and when the
# Kustomization is deleted, skips objects annotated `kustomize.toolkit.fluxcd.io/prune: disabled`.
NEVER_PRUNE = {
    "argocd.argoproj.io/sync-options": "Prune=false,Delete=false",
    "kustomize.toolkit.fluxcd.io/prune": "disabled",
}


def sync_wave(depth: int) -> dict[str, str]:
    """Annotations for an object `depth` levels below the top of its tree."""
    return {SYNC_WAVE: str(depth)}


def with_sync_wave(manifest: Manifest) -> Manifest:
    """`manifest` with its own `depth` as the sync wave (for objects built elsewhere)."""
    meta = dict(manifest.obj.get("metadata", {}))
    annotations = {**meta.get("annotations", {}), **sync_wave(manifest.depth)}
    meta["annotations"] = dict(sorted(annotations.items()))
    return replace(manifest, obj={**manifest.obj, "metadata": meta})
