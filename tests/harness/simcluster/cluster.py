"""Simulated cluster: the test control plane plus the real schedulers and controllers.

kube-apiserver + etcd (tests/harness/controlplane, in `<run dir>/plane`), then
kube-controller-manager, kube-scheduler, kwok (fake kubelets), nfd-master, the Kueue manager and
Volcano's webhook-manager, controller-manager and scheduler, each a daemon on
loopback tracked by pid file like the control plane's. Webhooks are registered with `url:`
client configs and certificates from the harness' CA. With a policy, `up` also creates the
fleet (tests/harness/simcluster/fleet.py). Environment: HETGITOPS_SIMCLUSTER_DIR (run state; default
`$HETGITOPS_CONTROLPLANE_DIR-sim`, else `<cache>/simcluster-run`), plus the control plane's.

Several clusters run side by side as named instances (`up(name="manager")`): each has its own
state folder `<run dir>-<name>`, PKI, ports and daemons, as separate clusters would (the
MultiKueue tests run a manager and a worker). `remote_kubeconfig` gives one cluster's
credentials to another the way a fleet operator does: a ServiceAccount token and the CA data
embedded, never a file path.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from shlex import quote
from typing import Any

import yaml

from harness.controlplane import build as cp_build
from harness.controlplane import harness, procs
from harness.controlplane.plane import ControlPlane

from . import build, volcano

KUEUE_NAMESPACE = "kueue-system"
KUBELET_MANAGER = "hetgitops-simcluster-kubelet"
# kwok's node leases (renewed every quarter of this) and, from it, kube-controller-manager's
# node-monitor grace period: kwok nodes never fail, so heartbeats only need to keep them Ready.
KWOK_LEASE_SECONDS = 1200
NFD_NAMESPACE = "node-feature-discovery"
# What the components' own installs (Helm charts) create; the render puts ConfigMaps into the
# last two and expects them to exist.
SYSTEM_NAMESPACES = (KUEUE_NAMESPACE, NFD_NAMESPACE, "volcano-system", "gpu-operator")
WEBHOOK_CERTS = ("kueue-webhook", "volcano-webhook")
# Start order; `down` stops in reverse. Each entry: component, binary.
DAEMONS = (
    ("kube", "kube-controller-manager"),
    ("kube", "kube-scheduler"),
    ("kwok", "kwok"),
    ("nfd", "nfd-master"),
    ("kueue", "kueue"),
    ("volcano", "vc-webhook-manager"),
    ("volcano", "vc-controller-manager"),
    ("volcano", "vc-scheduler"),
)
# Started only when a test asks for them (tests/harness/simcluster/flux.py: the real Flux and the
# Git server it reads), in this order; `down` stops them first.
FLUX_DAEMONS = ("flux-githttp", "source-controller", "kustomize-controller")
ARGOCD_DAEMONS = (
    "argocd-redis",
    "argocd-githttp",
    "argocd-cmp-server",
    "argocd-repo-server",
    "argocd-application-controller",
)
# The KubeRay operator (tests/harness/simcluster/kuberay.py), started by the tests that need it.
KUBERAY_DAEMONS = ("ray-operator",)
KOORDINATOR_DAEMONS = (
    "koord-manager",
    "koord-scheduler",
)  # tests/harness/simcluster/koordinator.py
ON_DEMAND_DAEMONS = FLUX_DAEMONS + ARGOCD_DAEMONS + KUBERAY_DAEMONS + KOORDINATOR_DAEMONS
# Integrations for the kinds `hetgitops jobs` renders. kubeflow.org/pytorchjob is off by default
# since Kueue v0.19.0 and must be listed, or a PyTorchJob would never be queued.
KUEUE_FRAMEWORKS = (
    "batch/job",
    "jobset.x-k8s.io/jobset",
    "kubeflow.org/pytorchjob",
    "pod",
    "deployment",
    "statefulset",
    "leaderworkerset.x-k8s.io/leaderworkerset",
    # KubeRay's kinds: their CRDs come with the operator (tests/harness/simcluster/kuberay.py).
    "ray.io/rayjob",
    "ray.io/raycluster",
    "ray.io/rayservice",
)
KCM_CONTROLLERS = (
    "namespace-controller",
    "garbage-collector-controller",
    "job-controller",
    "replicaset-controller",
    "deployment-controller",
    "statefulset-controller",
    "serviceaccount-controller",
    "pod-garbage-collector-controller",
    # The render's ResourceQuotas: without their controller a quota has no status and the API
    # server's quota admission refuses every pod in the namespace.
    "resourcequota-controller",
    # Removes the node.kubernetes.io/not-ready taint the API server puts on every new Node once
    # kwok reports it Ready (and keeps it while kwok renews the node leases).
    "node-lifecycle-controller",
    # Evicts the pods a NoExecute taint does not tolerate (split out of the node-lifecycle
    # controller in v1.29): without it a NoExecute pool taint would evict nothing here.
    "taint-eviction-controller",
    # Creates a pod's ResourceClaims from its ResourceClaimTemplates (DRA pools, harness/
    # simcluster/dra.py): without it a pod that claims never gets its claim, so never binds.
    "resourceclaim-controller",
)


# The node the control-plane daemons "run on": nfd-master annotates its own node (NODE_NAME)
# and exits without one. Tainted like a kubeadm control-plane node, so no workload lands there.
CONTROL_PLANE_NODE_NAME = "hetgitops-sim-control-plane"
CONTROL_PLANE_NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": CONTROL_PLANE_NODE_NAME,
        "annotations": {"kwok.x-k8s.io/node": "fake"},
        "labels": {
            "kubernetes.io/hostname": CONTROL_PLANE_NODE_NAME,
            "kubernetes.io/os": "linux",
            "node-role.kubernetes.io/control-plane": "",
        },
    },
    "spec": {"taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]},
    "status": {
        "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
        "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
    },
}


class SimError(RuntimeError):
    """A component did not start or the cluster did not converge."""


@dataclass(frozen=True)
class SimCluster:
    """A running simulated cluster: the control plane handle plus where its state lives."""

    plane: ControlPlane
    run_dir: Path
    name: str = ""

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> Any:
        return self.plane.kubectl(*args, input=input, check=check)


# A named instance's name goes into a folder name and a kubeconfig: a DNS label keeps both safe.
_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?")


def run_dir(name: str = "") -> Path:
    """The state folder of the default instance, or of the named one beside it."""
    if name and not _NAME.fullmatch(name):
        raise ValueError(f"instance name {name!r} is not a lowercase DNS label of <= 32 characters")
    suffix = f"-{name}" if name else ""
    explicit = os.environ.get("HETGITOPS_SIMCLUSTER_DIR")
    if explicit:
        return Path(explicit.rstrip("/") + suffix).expanduser().absolute()
    plane = os.environ.get("HETGITOPS_CONTROLPLANE_DIR")
    if plane:
        # Beside the e2e plane of the same user: never a folder another instance owns.
        return Path(plane.rstrip("/") + "-sim" + suffix).expanduser().absolute()
    return cp_build.cache_root() / f"simcluster-run{suffix}"


def missing_prerequisites() -> list[str]:
    problems = harness.missing_prerequisites()
    wrapper = kueue_wrapper_problem()
    if wrapper:
        problems.append(wrapper)
    for name in sorted({component for component, _ in DAEMONS}):
        if (build.COMPONENTS[name].directory / "go.mod").is_file() is False:
            problems.append(f"tests/harness/simcluster/go/{name}/go.mod is missing")
        elif build.cached(name) is None and not cp_build.go_available():
            problems.append(f"Go toolchain not found and no cached {name} binaries")
    return problems


def status(name: str = "") -> SimCluster | None:
    directory = run_dir(name)
    plane = harness.status(directory / "plane")
    if plane is None or not (directory / "state.json").is_file():
        return None
    if not all(procs.is_tracked_running(_pid_file(directory, b)) for _, b in DAEMONS):
        return None
    return SimCluster(plane=plane, run_dir=directory, name=name)


def up(name: str = "") -> SimCluster:
    """Start everything, or return the healthy cluster already running (idempotent).
    `name` selects a named instance (its own folder, PKI and ports) beside the default one."""
    problems = missing_prerequisites()
    if problems:
        raise harness.Unavailable("; ".join(problems))
    directory = run_dir(name)
    with procs.locked(directory / ".lock"):
        running = status(name)
        if running is not None:
            return running
        _stop(directory)
        binaries = {c: build.ensure(c) for c in sorted({c for c, _ in DAEMONS})}
        try:
            return _start(directory, binaries, name)
        except BaseException:
            _stop(directory)
            raise


def down(name: str = "") -> None:
    directory = run_dir(name)
    with procs.locked(directory / ".lock"):
        _stop(directory)


def env_lines(cluster: SimCluster) -> list[str]:
    return [
        *harness.env_lines(cluster.plane),
        f"export HETGITOPS_SIMCLUSTER_DIR={quote(str(cluster.run_dir))}",
    ]


def _pid_file(directory: Path, binary: str) -> Path:
    return directory / f"{binary}.pid"


def _stop(directory: Path) -> None:
    errors = []
    for binary in (*reversed(ON_DEMAND_DAEMONS), *(b for _, b in reversed(DAEMONS))):
        try:
            procs.stop(_pid_file(directory, binary))
        except procs.ProcessError as error:
            errors.append(str(error))
    (directory / "state.json").unlink(missing_ok=True)
    harness.down(directory / "plane")
    if errors:
        raise procs.ProcessError("; ".join(errors))


def _start(directory: Path, binaries: dict[str, Path], name: str) -> SimCluster:
    shutil.rmtree(directory / "logs", ignore_errors=True)
    # A fresh scheduler starts from upstream's config, not a previous run's rendered one.
    (directory / "volcano-scheduler.conf").unlink(missing_ok=True)
    timings: dict[str, float] = {}
    started = time.monotonic()
    plane = harness.up(directory / "plane", extra_serving=WEBHOOK_CERTS)
    timings["control-plane"] = time.monotonic() - started
    cluster = SimCluster(plane=plane, run_dir=directory, name=name)
    pki = plane.run_dir / "pki"
    kubeconfig = plane.admin_kubeconfig
    _namespaces(cluster, *SYSTEM_NAMESPACES)
    apply_objects(cluster, [CONTROL_PLANE_NODE], manager=KUBELET_MANAGER)
    starters: dict[str, Callable[[], None]] = {
        "kube-controller-manager": partial(
            _start_kcm, directory, binaries["kube"], pki, kubeconfig
        ),
        "kube-scheduler": partial(_start_scheduler, directory, binaries["kube"], kubeconfig),
        "kwok": partial(_start_kwok, directory, binaries["kwok"], kubeconfig),
        "nfd-master": partial(_start_nfd, directory, binaries["nfd"], kubeconfig),
        "kueue": partial(_start_kueue, cluster, binaries["kueue"], pki, kubeconfig),
        "vc-webhook-manager": partial(
            _start_volcano_webhooks, cluster, binaries["volcano"], pki, kubeconfig
        ),
        "vc-controller-manager": partial(
            _start_volcano_controllers, directory, binaries["volcano"], kubeconfig
        ),
        "vc-scheduler": partial(
            _start_volcano_scheduler, directory, binaries["volcano"], kubeconfig
        ),
    }
    for _, binary in DAEMONS:
        began = time.monotonic()
        starters[binary]()
        timings[binary] = time.monotonic() - began
    (directory / "state.json").write_text(
        json.dumps({"server": plane.server, "start_seconds": timings}) + "\n"
    )
    return cluster


def _namespaces(cluster: SimCluster, *names: str) -> None:
    items = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in names]
    cluster.kubectl(
        "apply",
        "--server-side",
        "--field-manager=hetgitops-simcluster",
        "-f",
        "-",
        input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}),
    )


def _daemon(
    directory: Path,
    binary: str,
    command: Sequence[str],
    *,
    ready: Callable[[], bool],
    timeout: float = 120,
    env: dict[str, str] | None = None,
    image: Path | None = None,
) -> None:
    pid_file = _pid_file(directory, binary)
    log_file = directory / "logs" / f"{binary}.log"
    procs.spawn(command, pid_file=pid_file, log_file=log_file, env=env, image=image)
    if image is not None:
        time.sleep(0.5)  # the wrapper execs `image` within milliseconds; /proc shows it then
    alive = partial(procs.is_tracked_running, pid_file)
    try:
        procs.wait_until(ready, timeout=timeout, alive=alive, what=binary)
    except procs.ProcessError as error:
        raise procs.ProcessError(
            f"{error}; last lines of {log_file}:\n{procs.tail(log_file)}"
        ) from None


def _get_ok(url: str, *, insecure: bool = False) -> bool:
    """GET `url` on loopback; `insecure` for a daemon's self-signed serving cert (health only)."""
    context = None
    if insecure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
    )
    try:
        with opener.open(url, timeout=5) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def _component_flags(kubeconfig: Path, port: int) -> list[str]:
    return [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        "--leader-elect=false",
    ]


def _start_kcm(directory: Path, folder: Path, pki: Path, kubeconfig: Path) -> None:
    (port,) = procs.free_ports(1)
    command = [
        str(folder / "kube-controller-manager"),
        *_component_flags(kubeconfig, port),
        f"--controllers={','.join(KCM_CONTROLLERS)}",
        f"--service-account-private-key-file={pki / 'sa.key'}",
        f"--root-ca-file={pki / 'ca.crt'}",
        "--use-service-account-credentials=false",
        # Many small jobs in a row: the defaults (20 / 30 qps) make the tests wait on the client.
        "--kube-api-qps=200",
        "--kube-api-burst=400",
        "--concurrent-job-syncs=10",
        # kwok renews each node's lease every quarter of its duration (_start_kwok); a node
        # counts as unresponsive only after a grace period well beyond that, or beyond the
        # creation of a whole 5,000-node fleet for a node kwok has not reported Ready yet.
        f"--node-monitor-grace-period={3 * KWOK_LEASE_SECONDS}s",
        "--node-startup-grace-period=15m",
    ]
    ready = partial(_get_ok, f"https://127.0.0.1:{port}/healthz", insecure=True)
    _daemon(directory, "kube-controller-manager", command, ready=ready)


def _start_scheduler(directory: Path, folder: Path, kubeconfig: Path) -> None:
    (port,) = procs.free_ports(1)
    command = [
        str(folder / "kube-scheduler"),
        *_component_flags(kubeconfig, port),
        "--kube-api-qps=200",
        "--kube-api-burst=400",
    ]
    ready = partial(_get_ok, f"https://127.0.0.1:{port}/healthz", insecure=True)
    _daemon(directory, "kube-scheduler", command, ready=ready)


def _start_kwok(directory: Path, folder: Path, kubeconfig: Path) -> None:
    (port,) = procs.free_ports(1)
    stages = directory / "kwok-stages.yaml"
    texts = [path.read_text() for path in sorted(folder.glob("stage-*.yaml"))]
    stages.write_text("\n---\n".join(texts))
    command = [
        str(folder / "kwok"),
        f"--config={stages}",
        f"--kubeconfig={kubeconfig}",
        "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
        f"--server-address=127.0.0.1:{port}",
        "--node-ip=127.0.0.1",
        # The default /24 holds 254 pod IPs; the 5,000-node benchmark needs more.
        "--cidr=10.128.0.0/9",
        # kwok renews every lease each quarter of this: with the kubelet's 40 s a 5,000-node
        # fleet costs 500 lease writes a second, most of a core of kube-apiserver and etcd.
        f"--node-lease-duration-seconds={KWOK_LEASE_SECONDS}",
    ]
    ready = partial(_get_ok, f"http://127.0.0.1:{port}/healthz")
    _daemon(directory, "kwok", command, ready=ready)


def _start_nfd(directory: Path, folder: Path, kubeconfig: Path) -> None:
    (port,) = procs.free_ports(1)
    config = directory / "nfd-master.conf"
    # Written by `apply_nfd_config` from the rendered nfd-helm-values.yaml; none until then.
    if not config.is_file():
        config.write_text("{}\n")
    command = [
        str(folder / "nfd-master"),
        f"-kubeconfig={kubeconfig}",
        f"-config={config}",
        f"-port={port}",
    ]
    ready = partial(_get_ok, f"http://127.0.0.1:{port}/healthz")
    env = {"KUBERNETES_NAMESPACE": NFD_NAMESPACE, "NODE_NAME": CONTROL_PLANE_NODE_NAME}
    _daemon(directory, "nfd-master", command, ready=ready, env=env)


def _start_kueue(cluster: SimCluster, folder: Path, pki: Path, kubeconfig: Path) -> None:
    directory = cluster.run_dir
    webhook_port, health_port, metrics_port = procs.free_ports(3)
    certs = directory / "kueue-certs"
    certs.mkdir(parents=True, exist_ok=True)
    # controller-runtime's webhook server reads tls.crt / tls.key from certDir.
    shutil.copyfile(pki / "kueue-webhook.crt", certs / "tls.crt")
    shutil.copyfile(pki / "kueue-webhook.key", certs / "tls.key")
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": KUEUE_NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": f"127.0.0.1:{metrics_port}"},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(certs)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "clientConnection": {"qps": 300, "burst": 500},
        "integrations": {"frameworks": list(KUEUE_FRAMEWORKS)},
    }
    resources = directory / KUEUE_RESOURCES  # deviceClassMappings (harness/simcluster/dra.py)
    if resources.is_file():
        config["resources"] = yaml.safe_load(resources.read_text())
    config_file = directory / "kueue-config.yaml"
    config_file.write_text(yaml.safe_dump(config, sort_keys=True))
    _register_webhooks(cluster, folder / "kueue-webhooks.yaml", pki / "ca.crt", webhook_port)
    command = [
        *_with_metrics_certs(certs),
        str(folder / "kueue"),
        f"--config={config_file}",
        # The on-demand visibility API server reads its certificate from the fixed path
        # /visibility and binds port 8082 on every interface; nothing here uses it.
        "--feature-gates=VisibilityOnDemand=false",
    ]
    ready = partial(_get_ok, f"http://127.0.0.1:{health_port}/readyz")
    _daemon(
        directory,
        "kueue",
        command,
        ready=ready,
        timeout=180,
        env={"KUBECONFIG": str(kubeconfig)},
        image=folder / "kueue",
    )
    # The API server calls the webhooks; readyz only says the manager runs. Wait until a
    # webhook answers (a ClusterQueue create is mutated by Kueue) before declaring it up.
    procs.wait_until(
        partial(_webhook_answers, cluster),
        timeout=60,
        alive=partial(procs.is_tracked_running, _pid_file(directory, "kueue")),
        what="kueue webhooks",
    )


# The Configuration's `resources` section, when a test sets one (dra.configure_kueue).
KUEUE_RESOURCES = "kueue-resources.yaml"


def restart_kueue(cluster: SimCluster) -> None:
    """Stop the Kueue manager and start it again with the same configuration, as a rollout of
    its Deployment would."""
    procs.stop(_pid_file(cluster.run_dir, "kueue"))
    pki = cluster.plane.run_dir / "pki"
    _start_kueue(cluster, build.ensure("kueue"), pki, cluster.plane.admin_kubeconfig)


# Kueue v0.19.2 reads its metrics serving certificate from this fixed path whenever internal
# cert management is off (cmd/kueue/main.go:216-227); there is no flag or config field for it.
KUEUE_METRICS_CERTS = Path("/etc/kueue/metrics/certs")


def kueue_wrapper_problem() -> str | None:
    """Why the Kueue manager cannot be started here, or None."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return (
            "Kueue reads its metrics certificate from the fixed path "
            f"{KUEUE_METRICS_CERTS}; the harness bind-mounts its own there in a private mount "
            "namespace, which needs root and `unshare` (util-linux)"
        )
    return None


def _with_metrics_certs(certs: Path) -> list[str]:
    """A wrapper that gives Kueue the harness certificate at KUEUE_METRICS_CERTS in a private
    mount namespace: the host's /etc keeps only an empty mount point, and two instances (tests
    and the benchmark) never see each other's files."""
    problem = kueue_wrapper_problem()
    if problem:
        raise harness.Unavailable(problem)
    KUEUE_METRICS_CERTS.mkdir(parents=True, exist_ok=True)
    script = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
    unshare = shutil.which("unshare")
    assert unshare is not None
    return [
        unshare,
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        "sh",
        str(certs),
        str(KUEUE_METRICS_CERTS),
    ]


def _register_webhooks(cluster: SimCluster, manifests: Path, ca_cert: Path, port: int) -> None:
    """Upstream's webhook configurations with `url:` client configs on loopback instead of the
    in-cluster Service, and the harness CA as caBundle."""
    ca_bundle = base64.b64encode(ca_cert.read_bytes()).decode("ascii")
    documents = [d for d in yaml.safe_load_all(manifests.read_text()) if isinstance(d, dict)]
    for document in documents:
        document["metadata"]["name"] = f"kueue-{document['metadata']['name']}"
        for hook in document.get("webhooks", []):
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_bundle}
    cluster.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=hetgitops-simcluster",
        "-f",
        "-",
        input=json.dumps({"apiVersion": "v1", "kind": "List", "items": documents}),
    )


def _webhook_answers(cluster: SimCluster) -> bool:
    probe = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "hetgitops-simcluster-probe"},
    }
    result = cluster.kubectl(
        "create", "--dry-run=server", "-f", "-", input=json.dumps(probe), check=False
    )
    return bool(result.returncode == 0)


# ---- Volcano -----------------------------------------------------------------------------


def _start_volcano_webhooks(cluster: SimCluster, folder: Path, pki: Path, kubeconfig: Path) -> None:
    """CRDs the controllers watch, the chart's webhook configurations (on loopback), then the
    webhook-manager; up once a Queue create passes its mutating and validating webhooks."""
    crds = [yaml.safe_load(path.read_text()) for path in sorted(folder.glob("crd-*.yaml"))]
    apply_objects(cluster, crds, manager="hetgitops-simcluster")
    names = [f"crd/{crd['metadata']['name']}" for crd in crds]
    cluster.plane.wait_established(names, timeout=60)
    port, health_port = procs.free_ports(2)
    documents = volcano.webhook_configurations(
        (folder / "volcano-webhooks.yaml").read_text(),
        port=port,
        ca_bundle=(pki / "ca.crt").read_bytes(),
    )
    apply_objects(cluster, documents, manager="hetgitops-simcluster")
    command = [
        str(folder / "vc-webhook-manager"),
        f"--kubeconfig={kubeconfig}",
        "--listen-address=127.0.0.1",
        f"--port={port}",
        f"--tls-cert-file={pki / 'volcano-webhook.crt'}",
        f"--tls-private-key-file={pki / 'volcano-webhook.key'}",
        f"--ca-cert-file={pki / 'ca.crt'}",
        # Only checked to be non-empty: the configurations above carry the URLs.
        f"--webhook-url=https://127.0.0.1:{port}",
        f"--enabled-admission={','.join(volcano.ADMISSIONS)}",
        f"--scheduler-name={volcano.SCHEDULER_NAME}",
        "--enable-healthz",
        f"--healthz-address=127.0.0.1:{health_port}",
        "--kube-api-qps=200",
        "--kube-api-burst=400",
    ]
    _daemon(
        cluster.run_dir,
        "vc-webhook-manager",
        command,
        ready=partial(_volcano_webhook_answers, cluster),
    )


def _volcano_webhook_answers(cluster: SimCluster) -> bool:
    probe = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "hetgitops-simcluster-probe"},
        "spec": {"weight": 1},
    }
    result = cluster.kubectl(
        "create", "--dry-run=server", "-f", "-", input=json.dumps(probe), check=False
    )
    return bool(result.returncode == 0)


def _start_volcano_controllers(directory: Path, folder: Path, kubeconfig: Path) -> None:
    health_port, metrics_port = procs.free_ports(2)
    command = [
        str(folder / "vc-controller-manager"),
        f"--kubeconfig={kubeconfig}",
        f"--controllers={','.join(volcano.CONTROLLERS)}",
        f"--scheduler-name={volcano.SCHEDULER_NAME}",
        "--leader-elect=false",
        "--enable-healthz",
        f"--healthz-address=127.0.0.1:{health_port}",
        f"--listen-address=127.0.0.1:{metrics_port}",
        "--kube-api-qps=200",
        "--kube-api-burst=400",
    ]
    ready = partial(_get_ok, f"http://127.0.0.1:{health_port}/healthz")
    _daemon(directory, "vc-controller-manager", command, ready=ready)


def _start_volcano_scheduler(directory: Path, folder: Path, kubeconfig: Path) -> None:
    config = directory / "volcano-scheduler.conf"
    # Upstream's default until `configure_volcano` writes the rendered one.
    if not config.is_file():
        shutil.copyfile(folder / "volcano-scheduler.conf", config)
    health_port, metrics_port = procs.free_ports(2)
    command = [
        str(folder / "vc-scheduler"),
        f"--kubeconfig={kubeconfig}",
        f"--scheduler-conf={config}",
        f"--scheduler-name={volcano.SCHEDULER_NAME}",
        "--leader-elect=false",
        "--enable-healthz",
        f"--healthz-address=127.0.0.1:{health_port}",
        f"--listen-address=127.0.0.1:{metrics_port}",
        "--cache-dumper=false",
        "--kube-api-qps=200",
        "--kube-api-burst=400",
    ]
    ready = partial(_get_ok, f"http://127.0.0.1:{health_port}/healthz")
    _daemon(directory, "vc-scheduler", command, ready=ready)


def configure_volcano(cluster: SimCluster, scheduler_conf: str) -> None:
    """Run the Volcano scheduler with `scheduler_conf` (the rendered ConfigMap's
    volcano-scheduler.conf), restarting it when the text changes, as a rollout of the chart's
    scheduler Deployment would."""
    path = cluster.run_dir / "volcano-scheduler.conf"
    if (
        path.is_file()
        and path.read_text() == scheduler_conf
        and procs.is_tracked_running(_pid_file(cluster.run_dir, "vc-scheduler"))
    ):
        return
    # Whole-file replace: the scheduler also watches the file and would read a half-written one.
    staged = path.with_suffix(".new")
    staged.write_text(scheduler_conf)
    staged.replace(path)
    procs.stop(_pid_file(cluster.run_dir, "vc-scheduler"))
    _start_volcano_scheduler(
        cluster.run_dir, build.ensure("volcano"), cluster.plane.admin_kubeconfig
    )


# ---- fleet -------------------------------------------------------------------------------


def apply_objects(
    cluster: SimCluster,
    objects: Sequence[dict[str, Any]],
    *,
    manager: str,
    subresource: str | None = None,
) -> None:
    """Server-side apply `objects` in chunks (one kubectl per 500: argument and memory limits)."""
    extra = [f"--subresource={subresource}"] if subresource else []
    for start in range(0, len(objects), 500):
        chunk = list(objects[start : start + 500])
        cluster.kubectl(
            "apply",
            "--server-side",
            "--force-conflicts",
            f"--field-manager={manager}",
            *extra,
            "-f",
            "-",
            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": chunk}),
        )


def create_fleet(
    cluster: SimCluster, nodes: Sequence[dict[str, Any]], features: Sequence[dict[str, Any]]
) -> None:
    """Create or update the Nodes and publish their NodeFeatures. A new Node keeps the status
    it is created with (as a kubelet registers); an update of an existing one ignores status, so
    a changed capacity goes through the status subresource, for those nodes only."""
    before = _node_resources(cluster)
    apply_objects(cluster, nodes, manager=KUBELET_MANAGER)
    statuses = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": node["metadata"]["name"]},
            "status": node["status"],
        }
        for node in nodes
        if node["metadata"]["name"] in before
        and before[node["metadata"]["name"]] != _resources(node)
    ]
    apply_objects(cluster, statuses, manager=KUBELET_MANAGER, subresource="status")
    _drop_resources(cluster, nodes, before)
    apply_objects(cluster, features, manager="hetgitops-simcluster-nfd-worker")


def _drop_resources(
    cluster: SimCluster, nodes: Sequence[dict[str, Any]], before: dict[str, tuple[Any, Any]]
) -> None:
    """Remove the capacity and allocatable keys a Node had and no longer has (a pool moved to
    DRA loses `nvidia.com/gpu`): kwok's node-initialize stage wrote them back once, so they are
    co-owned and a server-side apply without them keeps them. A merge patch with nulls removes
    them; the keys the apply already removed (owned by its manager alone) are gone, and a null
    for a missing key changes nothing (a JSON patch `remove` of a missing path fails)."""
    for node in nodes:
        name = node["metadata"]["name"]
        if name not in before:
            continue
        gone = {
            field: {
                key: None for key in sorted(old or {}) if key not in node["status"].get(field, {})
            }
            for field, old in zip(("capacity", "allocatable"), before[name], strict=True)
        }
        if any(gone.values()):
            cluster.kubectl(
                "patch",
                "node",
                name,
                "--subresource=status",
                "--type=merge",
                "-p",
                json.dumps({"status": gone}),
            )


def _resources(node: dict[str, Any]) -> tuple[Any, Any]:
    status = node.get("status", {})
    return status.get("capacity"), status.get("allocatable")


def _node_resources(cluster: SimCluster) -> dict[str, tuple[Any, Any]]:
    """Capacity and allocatable of every Node, by name (one list)."""
    listed = json.loads(cluster.kubectl("get", "nodes", "-o", "json").stdout)
    return {item["metadata"]["name"]: _resources(item) for item in listed["items"]}


def configure_nfd(cluster: SimCluster, values: dict[str, Any]) -> None:
    """Give nfd-master the config the rendered nfd-helm-values.yaml sets (master.config) and
    restart it: that is how the chart rolls a config change out."""
    config = values.get("master", {}).get("config", {})
    path = cluster.run_dir / "nfd-master.conf"
    text = yaml.safe_dump(config, sort_keys=True)
    if (
        path.is_file()
        and path.read_text() == text
        and procs.is_tracked_running(_pid_file(cluster.run_dir, "nfd-master"))
    ):
        return
    path.write_text(text)
    procs.stop(_pid_file(cluster.run_dir, "nfd-master"))
    _start_nfd(cluster.run_dir, build.ensure("nfd"), cluster.plane.admin_kubeconfig)


def wait_for(
    condition: Callable[[], bool], *, timeout: float, what: str, interval: float = 0.5
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(interval)
    raise SimError(f"timed out after {timeout:.0f}s waiting for {what}")


# ---- several clusters --------------------------------------------------------------------


def remote_kubeconfig(
    cluster: SimCluster,
    *,
    service_account: str,
    namespace: str = KUEUE_NAMESPACE,
    user: str = "",
    duration: str = "24h",
) -> str:
    """A kubeconfig another cluster can use to reach `cluster`: a bound token of
    `service_account` (created if missing; its rights come from whoever grants them, e.g. the
    rendered RBAC) and the server's CA embedded as data. Kueue's MultiKueue refuses kubeconfigs
    with a CA file path, a token file, insecure TLS or no server
    (pkg/controller/admissionchecks/multikueue/multikueuecluster.go, validateKubeconfig)."""
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": service_account, "namespace": namespace},
    }
    apply_objects(cluster, [account], manager="hetgitops-simcluster")
    token = cluster.kubectl(
        "create", "token", service_account, "-n", namespace, f"--duration={duration}"
    ).stdout.strip()
    ca_data = base64.b64encode((cluster.plane.run_dir / "pki" / "ca.crt").read_bytes())
    name = cluster.name or "simcluster"
    user = user or f"{name}-{service_account}"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": name,
                "cluster": {
                    "server": cluster.plane.server,
                    "certificate-authority-data": ca_data.decode("ascii"),
                },
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": user}}],
        "current-context": name,
    }
    return yaml.safe_dump(config, sort_keys=True)


def store_kubeconfig(
    cluster: SimCluster, secret: str, kubeconfig: str, *, namespace: str = KUEUE_NAMESPACE
) -> None:
    """Put `kubeconfig` into Secret `secret` under the key `kubeconfig`, where a
    MultiKueueCluster's `clusterSource.kubeConfig` (locationType Secret) looks for it."""
    obj = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": secret, "namespace": namespace},
        "type": "Opaque",
        "data": {"kubeconfig": base64.b64encode(kubeconfig.encode()).decode("ascii")},
    }
    apply_objects(cluster, [obj], manager="hetgitops-simcluster")
