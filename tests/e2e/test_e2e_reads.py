"""The harness's direct reads (tests/harness/controlplane/reads.py) give what the real kubectl
gives, on the real API server: same items, same kinds and apiVersions, same NotFound line, and
kubectl itself wherever the reads do not answer."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from harness.controlplane import reads
from harness.controlplane.harness import ControlPlane

pytestmark = pytest.mark.e2e

NAMESPACE = "default"  # always there: the e2e plane has no namespace controller to delete one


def _kubectl(plane: ControlPlane, *args: str) -> subprocess.CompletedProcess[str]:
    """The real kubectl process, never the direct read."""
    return plane.kubectl(*args, kubeconfig=plane.admin_kubeconfig, check=False)


def _direct(plane: ControlPlane, *args: str) -> subprocess.CompletedProcess[str]:
    answered = reads.answer(plane.server, plane.run_dir, args)
    assert answered is not None, f"reads.py did not answer {args}"
    return answered


def _items(listed: dict[str, Any]) -> Any:
    """A list's items or the object: two reads of the same state are equal, managedFields,
    resourceVersion and all."""
    return listed["items"] if listed.get("kind") == "List" else listed


@pytest.fixture(scope="module")
def objects(control_plane: ControlPlane) -> Iterator[ControlPlane]:
    """Labelled ConfigMaps and a ResourceFlavor, deleted afterwards: other modules of the
    session read the same plane (import would adopt the flavor)."""
    docs: list[dict[str, Any]] = []
    for name, team in (("a", "red"), ("b", "blue"), ("c", "red")):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": f"reads-{name}",
                    "namespace": NAMESPACE,
                    "labels": {"team": team},
                },
                "data": {"k": name},
            }
        )
    docs.append(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "hetgitops-reads", "labels": {"team": "red"}},
            "spec": {"nodeLabels": {"pool": "reads"}},
        }
    )
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
    control_plane.kubectl("apply", "--server-side", "-f", "-", input=body)
    yield control_plane
    control_plane.kubectl("delete", "-f", "-", input=body)


@pytest.mark.parametrize(
    "args",
    [
        ("get", "configmaps", "-n", NAMESPACE, "-o", "json"),
        ("get", "configmap", "--namespace", NAMESPACE, "-l", "team=red", "-o", "json"),
        ("get", "cm", f"--namespace={NAMESPACE}", "--selector=team=blue", "-ojson"),
        ("get", "namespaces", "--field-selector", f"metadata.name={NAMESPACE}", "-o", "json"),
        ("get", "configmaps", "-l", "team", "-o", "json"),
        ("get", "resourceflavors.kueue.x-k8s.io", "-A", "-l", "team", "-o", "json"),
        ("get", "resourceflavor,configmaps", "-A", "-l", "team=red", "-o", "json"),
        ("get", "configmap", "reads-b", "-n", NAMESPACE, "-o", "json"),
        ("get", "resourceflavors.kueue.x-k8s.io", "hetgitops-reads", "-o", "json"),
        ("get", "configmaps", "-n", NAMESPACE, "-l", "team", "--show-managed-fields", "-o", "json"),
    ],
    ids=lambda args: " ".join(args[1:3]),
)
def test_a_direct_read_is_what_kubectl_prints(objects: ControlPlane, args: tuple[str, ...]) -> None:
    real, direct = _kubectl(objects, *args), _direct(objects, *args)
    assert real.returncode == direct.returncode == 0, (real.stderr, direct.stderr)
    want, got = json.loads(real.stdout), json.loads(direct.stdout)
    assert (want.get("kind"), want.get("apiVersion")) == (got.get("kind"), got.get("apiVersion"))
    assert _items(got) == _items(want)
    assert _items(want), f"nothing read by {args}: the comparison proves nothing"


def test_a_missing_object_fails_as_kubectl_fails(objects: ControlPlane) -> None:
    args = ("get", "configmap", "missing", "-n", NAMESPACE, "-o", "json")
    real, direct = _kubectl(objects, *args), _direct(objects, *args)
    assert real.returncode == direct.returncode == 1
    assert direct.stderr == real.stderr, (direct.stderr, real.stderr)
    with pytest.raises(subprocess.CalledProcessError):
        objects.kubectl(*args)


@pytest.mark.parametrize(
    "args",
    [
        ("get", "configmaps", "-n", NAMESPACE, "-o", "yaml"),
        ("get", "configmaps", "-n", NAMESPACE, "-o", "json", "--ignore-not-found"),
        ("get", "no-such-resource", "-A", "-o", "json"),
        ("get", "--raw", "/api/v1/namespaces"),
        ("apply", "-f", "-"),
    ],
    ids=lambda args: " ".join(args[1:3]),
)
def test_what_the_reads_do_not_answer_goes_to_kubectl(
    objects: ControlPlane, args: tuple[str, ...]
) -> None:
    assert reads.answer(objects.server, objects.run_dir, args) is None
