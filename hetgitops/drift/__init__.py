"""Drift stage: the live cluster against the policy, read-only, exact and attributed.

Takes policy paths (rendered with `api.render`) and a kubeconfig; gives `Diagnostic`s about
missing, changed, removed, added and orphaned objects and fields (each attributed to the field
manager that last wrote it, from `managedFields`), about targets not installed or not readable,
and about the fleet itself (nodes, accelerators, MIG state, quota cut below usage). It reads the
cluster through `hetgitops.live.client` (the only importer of `kubernetes`) and works on plain
JSON objects.
"""
