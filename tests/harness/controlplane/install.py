"""Install stage: kubeconfigs for the two users, the read-only RBAC, every upstream CRD."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from harness import upstream

from .plane import ControlPlane

ADMIN_USER = "hetgitops-admin"
ADMIN_GROUP = "system:masters"  # bypasses RBAC: the admin must work before any binding exists
READONLY_USER = "hetgitops-readonly"
FIELD_MANAGER = "hetgitops-controlplane"

# The upstream CRDs assembled from the pinned Go modules (tests/harness/upstream).
CRD_DIRS = (
    "kueue/crds",
    "volcano/crds",
    "nfd/crds",
    "nvidia/crds",
    "jobset/crds",
    "kubeflow/crds",
    "lws/crds",
    "kuberay/crds",
)


def crd_files() -> list[Path]:
    root = upstream.folder()
    return [path for folder in CRD_DIRS for path in sorted((root / folder).glob("*.yaml"))]


def write_kubeconfig(path: Path, *, server: str, ca_cert: Path, cert: Path, key: Path) -> None:
    """Write a self-contained kubeconfig (JSON is valid YAML; no PyYAML needed here)."""
    user = path.stem
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "hetgitops-test",
                "cluster": {"server": server, "certificate-authority-data": _b64(ca_cert)},
            }
        ],
        "users": [
            {
                "name": user,
                "user": {"client-certificate-data": _b64(cert), "client-key-data": _b64(key)},
            }
        ],
        "contexts": [{"name": user, "context": {"cluster": "hetgitops-test", "user": user}}],
        "current-context": user,
    }
    path.touch(mode=0o600)  # it embeds a private key
    path.write_text(json.dumps(config, indent=2) + "\n")


def install(plane: ControlPlane) -> None:
    """Bind the read-only user, apply every upstream CRD and wait until all are Established."""
    apply = ("apply", "--server-side", "--force-conflicts", f"--field-manager={FIELD_MANAGER}")
    plane.kubectl(*apply, "-f", "-", input=json.dumps(readonly_rbac()))
    files = [arg for path in crd_files() for arg in ("-f", str(path))]
    names = plane.kubectl(*apply, "-o", "name", *files).stdout.split()
    plane.wait_established(names, timeout=120)


def readonly_rbac() -> dict[str, object]:
    """get/list/watch on everything, nothing else: what `hetgitops drift` needs."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": READONLY_USER},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": READONLY_USER},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": READONLY_USER,
        },
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": READONLY_USER}
        ],
    }
    return {"apiVersion": "v1", "kind": "List", "items": [role, binding]}


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode("ascii")
