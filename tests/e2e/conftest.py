"""E2E fixtures: one real control plane per session (tests/harness/controlplane) and apply
helpers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

# The harness lives in tests/harness/controlplane (not in the hetgitops package); pytest's rootdir
# and import mode are not ours to choose, so make it importable explicitly.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.controlplane import harness

REQUIRE_E2E = "HETGITOPS_REQUIRE_E2E"
FIELD_MANAGER = "hetgitops-e2e"

ControlPlane = harness.ControlPlane


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "e2e: needs a real kube-apiserver + etcd (tests/harness/controlplane)"
    )


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """A ready control plane; started once per session, stopped at the end unless it was
    already running (a developer's `scripts/controlplane up` instance is left alone)."""
    problems = harness.missing_prerequisites()
    if problems:
        _unavailable("; ".join(problems))
    was_running = harness.status() is not None
    plane = harness.up()
    yield plane
    if not was_running:
        harness.down()


@pytest.fixture(scope="session")
def apply_tree(control_plane: ControlPlane) -> harness.ApplyTree:
    """`apply_tree(path, *, dry_run)`: server-side apply a rendered output tree (see below)."""

    def apply(path: Path, *, dry_run: bool, check: bool = True) -> subprocess.CompletedProcess[str]:
        return apply_tree_to(control_plane, path, dry_run=dry_run, check=check)

    return apply


def apply_tree_to(
    plane: ControlPlane, path: Path, *, dry_run: bool, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Server-side apply a file or directory: `-k` if it has a kustomization.yaml, else every
    YAML file below it (recursively, kustomization files excluded, file names kept in errors).

    With `dry_run` nothing is stored, except that namespaces the tree uses are created for real:
    a server-side dry-run cannot see a namespace it only pretends to create, so every namespaced
    object in a fresh namespace would otherwise fail with NotFound.
    """
    sources = _sources(path)
    if dry_run:
        _ensure_namespaces(plane, _documents(plane, path))
    args = ["apply", "--server-side", f"--field-manager={FIELD_MANAGER}", *sources]
    if dry_run:
        args.append("--dry-run=server")
    return plane.kubectl(*args, check=check)


def _sources(path: Path) -> list[str]:
    if path.is_dir() and (path / "kustomization.yaml").is_file():
        return ["-k", str(path)]
    return [arg for file in _yaml_files(path) for arg in ("-f", str(file))]


def _yaml_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    files = [*path.rglob("*.yaml"), *path.rglob("*.yml")]
    return sorted(f for f in files if not f.name.startswith(("kustomization.", ".")))


def _documents(plane: ControlPlane, path: Path) -> list[dict[str, Any]]:
    if path.is_dir() and (path / "kustomization.yaml").is_file():
        texts = [plane.kubectl("kustomize", str(path)).stdout]
    else:
        texts = [file.read_text() for file in _yaml_files(path)]
    return [doc for text in texts for doc in yaml.safe_load_all(text) if isinstance(doc, dict)]


def _ensure_namespaces(plane: ControlPlane, documents: list[dict[str, Any]]) -> None:
    names = {doc.get("metadata", {}).get("namespace") for doc in documents}
    names |= {doc["metadata"]["name"] for doc in documents if doc.get("kind") == "Namespace"}
    items = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        for name in sorted(n for n in names if n)
    ]
    if items:
        manifest = json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
        plane.kubectl(
            "apply",
            "--server-side",
            f"--field-manager={FIELD_MANAGER}-namespaces",
            "-f",
            "-",
            input=manifest,
        )


def _unavailable(reason: str) -> None:
    if os.environ.get(REQUIRE_E2E) == "1":
        pytest.fail(f"e2e control plane required ({REQUIRE_E2E}=1) but: {reason}", pytrace=False)
    pytest.skip(f"e2e control plane unavailable: {reason}")


WORKLOAD_MANAGER = "e2e-live"
ADMITTED_AT = "2026-12-01T00:00:00Z"


class KueueWorkload:
    """`kueue_workload(name, namespace, queue, gpus, admitted=(CQ, FLAVOR), priority=P)`: a
    Kueue v1beta2 Workload of one pod set requesting `gpus` nvidia.com/gpu, applied to the
    real API server (its real CRD); with `admitted`, its status says Kueue admitted it there
    (admission + QuotaReserved/Admitted), as a running workload's would."""

    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane

    def __call__(
        self,
        name: str,
        namespace: str,
        queue: str,
        gpus: int,
        *,
        admitted: tuple[str, str] | None = None,
        priority: int | None = None,
    ) -> None:
        requests = {"nvidia.com/gpu": str(gpus)}
        container = {"name": "c", "image": "x", "resources": {"requests": requests}}
        podset = {"name": "main", "count": 1, "template": {"spec": {"containers": [container]}}}
        spec: dict[str, Any] = {"queueName": queue, "podSets": [podset]}
        if priority is not None:
            spec["priority"] = priority
        workload = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }
        self.plane.kubectl(
            "apply",
            "--server-side",
            f"--field-manager={WORKLOAD_MANAGER}",
            "-f",
            "-",
            input=json.dumps(workload),
        )
        if admitted is None:
            return
        cluster_queue, flavor = admitted
        condition = {"lastTransitionTime": ADMITTED_AT, "reason": "Admitted", "message": "x"}
        assignment = {
            "name": "main",
            "count": 1,
            "flavors": {"nvidia.com/gpu": flavor},
            "resourceUsage": dict(requests),
        }
        status = {
            "admission": {"clusterQueue": cluster_queue, "podSetAssignments": [assignment]},
            "conditions": [
                {"type": "QuotaReserved", "status": "True", **condition},
                {"type": "Admitted", "status": "True", **condition},
            ],
        }
        self.plane.kubectl(
            "patch",
            "workload",
            name,
            "-n",
            namespace,
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": status}),
        )


@pytest.fixture(scope="session")
def kueue_workload(control_plane: ControlPlane) -> KueueWorkload:
    """The one way the live e2e tests (diff, explain) put Workloads on the cluster."""
    return KueueWorkload(control_plane)
