"""E2E fixtures: one real control plane per session (tests/controlplane) and apply helpers."""

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

# The harness lives in tests/controlplane (not in the hetgitops package); pytest's rootdir and
# import mode are not ours to choose, so make it importable explicitly.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controlplane import harness

REQUIRE_E2E = "HETGITOPS_REQUIRE_E2E"
FIELD_MANAGER = "hetgitops-e2e"

ControlPlane = harness.ControlPlane


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "e2e: needs a real kube-apiserver + etcd (tests/controlplane)"
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
