"""The real KubeRay operator v1.6.2 in the simulated cluster (module
tests/harness/simcluster/go/kuberay, built by tests/harness/simcluster/build.py), started on demand
by the tests that need it and stopped with the cluster (`cluster.down`).

`start` installs the RayCluster, RayJob and RayService CRDs of the pinned module
(`config/crd/bases`; RayCronJob's matters only behind the operator's RayCronJob gate, off by
default), makes sure Kueue runs its Ray controllers, then starts `ray-operator` with leader
election off, probes and metrics on loopback, no webhooks (upstream's default install sets no
`ENABLE_WEBHOOKS`) and no batch scheduler.

Kueue and CRDs that arrive late. Kueue v0.19.2 enables `ray.io/rayjob`, `ray.io/raycluster` and
`ray.io/rayservice` (cluster.KUEUE_FRAMEWORKS) but sets a framework's controller up at start only
if its CRD is served then; otherwise it registers the webhook, logs "No matching API in the server
for job framework, deferring setting up controller" and polls the REST mapping with a backoff
from 1 s to 2 min (pkg/controller/jobframework/setup.go:35-36, 86-99, 155-175). It never gives
the framework up, but after a long-running Kueue the controllers come up to two minutes after
the CRDs. So when Kueue's log since its last start shows a Ray framework deferred and not yet
started, `start` restarts Kueue (`cluster.restart_kueue`), which then finds the CRDs at once.

What the operator sees on kwok nodes, and what it cannot:
- Kueue admits the Ray object and un-suspends it with each pod set's flavor merged into its pod
  template; the operator creates the head and worker Pods (and a RayJob's submitter Job in
  K8sJobMode, once its RayCluster is ready) and the head Service; kube-scheduler binds the Pods
  to kwok nodes and kwok's pod-ready stage sets them Running and Ready, so the RayCluster's
  state becomes `ready` (every Pod Running and Ready, raycluster_controller.go:1615-1619).
- No Ray process runs: there is no GCS and no dashboard, so a RayJob stays `Running` (its job
  status comes from the dashboard, rayjob_controller.go:305, which no one answers) while its
  submitter Pod "runs" forever (kwok's stages here never complete a Pod); a RayService never
  deploys its Serve applications nor becomes ready; the autoscaler sidecar and Ray's own
  resource accounting (`--num-gpus`, custom resources) are never exercised; probes are not run
  (kwok reports Ready). What is checked here is what the API objects say: Workloads, pod sets,
  flavors, the Pods the operator creates and the nodes they are bound to.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from harness.controlplane import procs

from . import build
from .cluster import (
    KUBERAY_DAEMONS,
    SimCluster,
    _daemon,
    _get_ok,
    _pid_file,
    restart_kueue,
)

COMPONENT = "kuberay"
(DAEMON,) = KUBERAY_DAEMONS
MANAGER = "hetgitops-simcluster"
# Kueue's integration names and the kinds whose CRDs they wait for (jobs/ray*/..._controller.go).
RAY_FRAMEWORKS = {
    "ray.io/raycluster": "RayCluster",
    "ray.io/rayjob": "RayJob",
    "ray.io/rayservice": "RayService",
}
_DEFERRED = "No matching API in the server for job framework, deferring setting up controller"
_AVAILABLE = "API now available, starting controller"
_KUEUE_STARTED = "Configuration loaded"  # Kueue's first log line (cmd/kueue/main.go:747)
CRD_NAMES = ("rayclusters.ray.io", "rayjobs.ray.io", "rayservices.ray.io")
SOURCE_LABEL = "hetgitops.io/simcluster-source"  # the cache folder the CRDs were applied from
_CONTROLLERS = ("RayCluster", "RayJob", "RayService")
_APPLY = ("apply", "--server-side", "--force-conflicts", f"--field-manager={MANAGER}")


class KubeRayError(RuntimeError):
    """The operator or Kueue's Ray integration did not come up: the message says what was seen."""


@dataclass(frozen=True)
class Started:
    """How long the start took (seconds), per step."""

    seconds: dict[str, float]


def missing_prerequisites() -> list[str]:
    if build.cached(COMPONENT) is None and shutil.which("go") is None:
        return [f"Go toolchain not found and no cached {COMPONENT} binaries"]
    return []


def running(sim: SimCluster) -> bool:
    return procs.is_tracked_running(_pid_file(sim.run_dir, DAEMON))


def start(sim: SimCluster) -> Started:
    """Start the operator on `sim` (idempotent): CRDs, Kueue's Ray controllers, the operator."""
    with procs.locked(sim.run_dir / ".kuberay.lock"):
        laps: dict[str, float] = {}
        if running(sim) and not deferred_frameworks(sim):
            return Started(laps)
        clock = time.monotonic()
        folder = build.ensure(COMPONENT)
        _install_crds(sim, folder)
        laps["crds"] = time.monotonic() - clock
        clock = time.monotonic()
        if deferred_frameworks(sim):
            restart_kueue(sim)
            left = deferred_frameworks(sim)
            if left:
                raise KubeRayError(f"Kueue restarted but still defers {', '.join(left)}")
            laps["kueue restart"] = time.monotonic() - clock
        clock = time.monotonic()
        if not running(sim):
            _start_operator(sim, folder)
        laps["ray-operator"] = time.monotonic() - clock
        (sim.run_dir / "ray-operator-start.json").write_text(json.dumps(laps) + "\n")
        return Started(laps)


def _install_crds(sim: SimCluster, folder: Path) -> None:
    """Apply the CRDs of `folder` unless the cluster has them from it already (SOURCE_LABEL):
    3 MB of schema cost kube-apiserver 10-25 s of a loaded machine even when unchanged."""
    names = [f"crd/{name}" for name in CRD_NAMES]
    found = sim.kubectl("get", *names, "-o", "json", check=False)
    if found.returncode == 0:
        items = json.loads(found.stdout).get("items", [])
        labels = [i["metadata"].get("labels", {}).get(SOURCE_LABEL) for i in items]
        if len(items) == len(names) and set(labels) == {folder.name}:
            sim.plane.wait_established(names, timeout=60)
            return
    files = [arg for path in sorted(folder.glob("crd-*.yaml")) for arg in ("-f", str(path))]
    # kubectl reads the files itself: PyYAML's pure-Python loader takes 20 s over them.
    applied = sim.kubectl(*_APPLY, "-o", "name", *files).stdout.split()
    sim.plane.wait_established(applied, timeout=60)
    sim.kubectl("label", "--overwrite", *names, f"{SOURCE_LABEL}={folder.name}")


def stop(sim: SimCluster) -> None:
    procs.stop(_pid_file(sim.run_dir, DAEMON))


def _start_operator(sim: SimCluster, folder: Path) -> None:
    probe_port, metrics_port = procs.free_ports(2)
    command = [
        str(folder / "ray-operator"),
        f"--health-probe-bind-address=127.0.0.1:{probe_port}",
        f"--metrics-addr=127.0.0.1:{metrics_port}",
        "--enable-leader-election=false",
        "--log-stdout-encoder=console",
        # Many small clusters in a row: the defaults (100 / 200) are enough; said for the record.
        "--qps=100",
        "--burst=200",
    ]
    env = {"KUBECONFIG": str(sim.plane.admin_kubeconfig)}
    log = sim.run_dir / "logs" / f"{DAEMON}.log"
    offset = log.stat().st_size if log.is_file() else 0
    healthy = partial(_get_ok, f"http://127.0.0.1:{probe_port}/readyz")
    # readyz is a ping (main.go:305): ready means its three controllers have started workers.
    _daemon(
        sim.run_dir,
        DAEMON,
        command,
        ready=lambda: healthy() and _controllers_started(log, offset),
        env=env,
    )


def _controllers_started(log: Path, offset: int) -> bool:
    with log.open("rb") as handle:
        handle.seek(offset)
        text = handle.read().decode(errors="replace")
    started = [line for line in text.splitlines() if "Starting workers" in line]
    return all(any(f"controllers.{kind}" in line for line in started) for kind in _CONTROLLERS)


def deferred_frameworks(sim: SimCluster) -> list[str]:
    """Ray frameworks Kueue's log says, since its last start, it deferred and has not started."""
    log = sim.run_dir / "logs" / "kueue.log"
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return []
    starts = [i for i, line in enumerate(lines) if _KUEUE_STARTED in line]
    since = lines[starts[-1] :] if starts else lines
    deferred = []
    for framework, kind in RAY_FRAMEWORKS.items():
        put_off = any(_DEFERRED in line and f'"{framework}"' in line for line in since)
        begun = any(_AVAILABLE in line and kind in line for line in since)
        if put_off and not begun:
            deferred.append(framework)
    return deferred


# ---- what the operator costs -------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    """The operator process as /proc shows it: resident memory and CPU time so far."""

    rss_mib: float
    peak_rss_mib: float
    cpu_seconds: float


def usage(sim: SimCluster) -> Usage:
    entry = procs.read_pid_file(_pid_file(sim.run_dir, DAEMON))
    if entry is None:
        raise KubeRayError("ray-operator is not running")
    pid = entry[0]
    status = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    # utime and stime are fields 14 and 15 of /proc/PID/stat (11 and 12 after the name).
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    return Usage(
        rss_mib=_kib(status["VmRSS"]) / 1024,
        peak_rss_mib=_kib(status["VmHWM"]) / 1024,
        cpu_seconds=cpu,
    )


def _kib(value: str) -> int:
    return int(value.split()[0])


# ---- waiting on the cluster --------------------------------------------------------------


def wait_seen(
    look: Callable[[], tuple[bool, Any]], *, timeout: float, what: str, interval: float = 0.5
) -> Any:
    """Poll `look` (done, what it saw) until done; on timeout raise with the last thing seen."""
    deadline = time.monotonic() + timeout
    seen: Any = None
    while time.monotonic() < deadline:
        done, seen = look()
        if done:
            return seen
        time.sleep(interval)
    shown = json.dumps(seen, indent=1, sort_keys=True, default=str)
    raise KubeRayError(f"timed out after {timeout:.0f}s waiting for {what}; last seen:\n{shown}")


# ---- reading what Kueue and the operator did ---------------------------------------------

CLUSTER_LABEL = "ray.io/cluster"  # on every Pod the operator creates (utils/constant.go:19-21)
GROUP_LABEL = "ray.io/group"
NODE_TYPE_LABEL = "ray.io/node-type"
ORIGIN_LABEL = "ray.io/originated-from-cr-name"  # the RayCluster's, RayJob's or RayService's
ACCOUNTING = ("cpu", "memory", "pods")


def get(sim: SimCluster, *args: str) -> Any:
    return json.loads(sim.kubectl("get", *args, "-o", "json").stdout)


def workload_of(sim: SimCluster, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    """The Workload Kueue made for the Ray object `kind/name` (its owner), if any."""
    for workload in get(sim, "workloads.kueue.x-k8s.io", "-n", namespace)["items"]:
        owners = workload["metadata"].get("ownerReferences", [])
        if any(o["kind"] == kind and o["name"] == name for o in owners):
            return dict(workload)
    return None


def pod_sets(workload: dict[str, Any]) -> list[tuple[str, int]]:
    """(name, count) of each pod set, in the Workload's order."""
    return [(p["name"], int(p["count"])) for p in workload["spec"]["podSets"]]


def admitted_flavors(workload: dict[str, Any]) -> dict[str, str] | None:
    """Pod set -> the flavor of its accelerator (of cpu when it asks for none), once admitted."""
    admission = workload.get("status", {}).get("admission")
    if not admission:
        return None
    found = {}
    for assignment in admission["podSetAssignments"]:
        flavors = assignment.get("flavors", {})
        accelerators = sorted(v for k, v in flavors.items() if k not in ACCOUNTING)
        found[assignment["name"]] = (accelerators or [flavors.get("cpu", "")])[0]
    return found


def pending_message(workload: dict[str, Any]) -> str:
    for cond in workload.get("status", {}).get("conditions", []):
        if cond["type"] == "QuotaReserved" and cond["status"] == "False":
            return str(cond.get("message", ""))
    return ""


def clusters_of(sim: SimCluster, obj: dict[str, Any]) -> set[str]:
    """The RayClusters of a Ray object: itself, or those its RayJob or RayService made (they
    carry its name in ORIGIN_LABEL)."""
    namespace, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
    if obj["kind"] == "RayCluster":
        return {name}
    made = get(sim, "rayclusters.ray.io", "-n", namespace, "-l", f"{ORIGIN_LABEL}={name}")
    return {c["metadata"]["name"] for c in made["items"]}


def ray_pods(sim: SimCluster, namespace: str, cluster: str) -> list[dict[str, Any]]:
    items = get(sim, "pods", "-n", namespace, "-l", f"{CLUSTER_LABEL}={cluster}")["items"]
    return list(items)


def placement(pods: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Group (`headgroup` for the head) -> the nodes its Running pods are bound to, sorted;
    a pod not bound or not Running yet shows as ''."""
    found: dict[str, list[str]] = {}
    for pod in pods:
        group = pod["metadata"]["labels"].get(GROUP_LABEL, "?")
        running = pod.get("status", {}).get("phase") == "Running"
        node = pod["spec"].get("nodeName", "") if running else ""
        found.setdefault(group, []).append(node)
    return {group: sorted(nodes) for group, nodes in sorted(found.items())}
