"""The real Koordinator in the simulated cluster: koord-manager (ElasticQuota and Pod webhooks,
the quota-profile controller) and koord-scheduler (ElasticQuota and Coscheduling plugins),
v1.8.0 built by tests/harness/simcluster/build.py (the `koordinator` component), started on demand
by the tests that need them (`start`), on the sim's kwok nodes.

What the harness sets up, and why:
- Every CRD of the module (config/crd/bases): koord-scheduler waits for informers of most.
- Upstream's webhook configurations (config/webhook/manifests.yaml plus the kustomize patch
  that gives the pod hooks their `control-plane DoesNotExist` namespaceSelector), named as the
  chart names them and pointed at loopback by `url:` for the paths koord-manager serves. The
  caBundle is koord-manager's own: its webhook controller (pkg/webhook/util/controller/
  webhook_controller.go:190-226) generates a CA and serving certificate for WEBHOOK_HOST into
  WEBHOOK_CERT_DIR and patches both configurations. The harness's certificates cannot be used:
  the controller reads a CA *key* beside them (pkg/webhook/util/writer/fs.go:157-163; the
  harness never writes one) and regenerates any certificate valid for less than six more
  months (writer/certwriter.go:116-124; the harness issues 30 days).
- koord-manager's webhook server listens on 0.0.0.0 (pkg/webhook/server.go:80-85, no flag),
  on a free port; the configurations call 127.0.0.1.
- Feature gate MultiQuotaTree for both daemons (one tree per ElasticQuotaProfile). Only the
  `quotaprofile` controller runs: the slo/colocation controllers need koordlet's NodeMetrics.
- koord-scheduler runs upstream's ElasticQuota and Coscheduling plugins (config/manager/
  scheduler-config.yaml) without DeviceShare, NodeNUMAResource, LoadAwareScheduling and
  Reservation: those read what koordlet reports (Device, NodeMetric, NodeResourceTopology
  CRs) and koordlet cannot run on kwok nodes. GPUs are then the nodes' extended resources,
  fitted by the default NodeResourcesFit, so no Device CR is needed.
- On `stop` the webhook configurations are deleted before the daemons stop: their pod hooks
  fail closed and would refuse every pod of the cluster once koord-manager is gone.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from harness.controlplane import procs

from . import build
from .cluster import (
    KOORDINATOR_DAEMONS,
    SimCluster,
    _daemon,
    _get_ok,
    _namespaces,
    apply_objects,
)

NAMESPACE = "koordinator-system"
SCHEDULER_NAME = "koord-scheduler"
MANAGER = "hetgitops-simcluster"
DAEMONS = KOORDINATOR_DAEMONS
FEATURE_GATES = "MultiQuotaTree=true"
# The names koord-manager looks for (pkg/webhook/util/util.go:26-38, the chart's names).
MUTATING = "koordinator-mutating-webhook-configuration"
VALIDATING = "koordinator-validating-webhook-configuration"
# The paths of the webhooks whose feature gates are on by default (pkg/features/features.go:
# PodMutatingWebhook, PodValidatingWebhook, ElasticMutatingWebhook, ElasticValidatingWebhook);
# koord-manager drops the configuration entries it does not serve, the harness does too.
SERVED_PATHS = (
    "/mutate-scheduling-sigs-k8s-io-v1alpha1-elasticquota",
    "/validate-scheduling-sigs-k8s-io-v1alpha1-elasticquota",
    "/mutate-pod",
    "/validate-pod",
)


@dataclass(frozen=True)
class Started:
    """What `start` measured: seconds from spawn to ready, per daemon."""

    seconds: dict[str, float]


def missing_prerequisites() -> list[str]:
    if build.cached("koordinator") is None and not build.go_available():
        return ["Go toolchain not found and no cached koordinator binaries"]
    return []


def _pid(sim: SimCluster, daemon: str) -> Path:
    return sim.run_dir / f"{daemon}.pid"


def running(sim: SimCluster) -> bool:
    return all(procs.is_tracked_running(_pid(sim, d)) for d in DAEMONS)


def pids(sim: SimCluster) -> dict[str, int]:
    found = {}
    for daemon in DAEMONS:
        entry = procs.read_pid_file(_pid(sim, daemon))
        if entry is not None:
            found[daemon] = entry[0]
    return found


def start(sim: SimCluster, *, scheduler_args: dict[str, Any] | None = None) -> Started:
    """Start koord-manager and koord-scheduler on `sim` (idempotent while both run with the
    same scheduler configuration; restarted, as a Helm upgrade rolls them, when it changes).
    `scheduler_args`: the ElasticQuotaArgs koord-scheduler runs with (the rendered ones);
    none = upstream's defaults plus the quota group namespace."""
    config = yaml.safe_dump(scheduler_config(sim, scheduler_args or {}), sort_keys=True)
    with procs.locked(sim.run_dir / ".koordinator.lock"):
        path = sim.run_dir / "koord-scheduler-config.yaml"
        if running(sim) and path.is_file() and path.read_text() == config:
            return Started({})
        _stop(sim)
        folder = build.ensure("koordinator")
        crds = [yaml.safe_load(p.read_text()) for p in sorted(folder.glob("crd-*.yaml"))]
        apply_objects(sim, crds, manager=MANAGER)
        sim.plane.wait_established([f"crd/{c['metadata']['name']}" for c in crds], timeout=60)
        _namespaces(sim, NAMESPACE)
        port, health, metrics, sched_port = procs.free_ports(4)
        apply_objects(sim, webhook_configurations(folder, port), manager=MANAGER)
        seconds = {
            "koord-manager": _start_manager(sim, folder, port, health, metrics),
            "koord-scheduler": _start_scheduler(sim, folder, sched_port, config),
        }
        return Started(seconds)


def stop(sim: SimCluster) -> None:
    with procs.locked(sim.run_dir / ".koordinator.lock"):
        _stop(sim)


def _stop(sim: SimCluster) -> None:
    for kind, name in (
        ("mutatingwebhookconfiguration", MUTATING),
        ("validatingwebhookconfiguration", VALIDATING),
    ):
        sim.kubectl("delete", kind, name, "--ignore-not-found", "--wait=false")
    for daemon in reversed(DAEMONS):
        procs.stop(_pid(sim, daemon))


def webhook_configurations(folder: Path, port: int) -> list[dict[str, Any]]:
    """Upstream's two configurations with the kustomize patch merged by webhook name, only the
    served paths, each calling https://127.0.0.1:`port`<path> (caBundle: koord-manager's)."""
    documents = [
        d for d in yaml.safe_load_all((folder / "koordinator-webhooks.yaml").read_text()) if d
    ]
    patches = {
        (p["kind"], hook["name"]): hook
        for p in yaml.safe_load_all((folder / "koordinator-webhook-patches.yaml").read_text())
        if p
        for hook in p.get("webhooks", [])
    }
    names = {"MutatingWebhookConfiguration": MUTATING, "ValidatingWebhookConfiguration": VALIDATING}
    result = []
    for document in documents:
        kind = document["kind"]
        hooks = []
        for hook in document["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            if path not in SERVED_PATHS:
                continue
            for key, value in patches.get((kind, hook["name"]), {}).items():
                if key != "name":
                    hook[key] = value
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}"}
            hooks.append(hook)
        document["metadata"] = {"name": names[kind]}
        document["webhooks"] = hooks
        result.append(document)
    return result


def _start_manager(sim: SimCluster, folder: Path, port: int, health: int, metrics: int) -> float:
    certs = sim.run_dir / "koord-manager-certs"
    env = {
        "KUBECONFIG": str(sim.plane.admin_kubeconfig),
        "POD_NAMESPACE": NAMESPACE,
        "WEBHOOK_HOST": "127.0.0.1",
        "WEBHOOK_PORT": str(port),
        "WEBHOOK_CERT_DIR": str(certs),
        "WEBHOOK_CERT_WRITER": "fs",
    }
    command = [
        str(folder / "koord-manager"),
        f"--kubeconfig={sim.plane.admin_kubeconfig}",
        "--enable-leader-election=false",
        f"--metrics-addr=127.0.0.1:{metrics}",
        f"--health-probe-addr=127.0.0.1:{health}",
        "--enable-pprof=false",
        "--controllers=quotaprofile",
        f"--feature-gates={FEATURE_GATES}",
        "--rest-config-qps=200",
        "--rest-config-burst=400",
    ]
    began = time.monotonic()
    # readyz includes koord-manager's "webhook-ready" check (cmd/koord-manager/main.go:171);
    # the API server calls the webhooks only once the caBundle is patched, so the harness
    # waits until an ElasticQuota create passes the real webhooks.
    _daemon(
        sim.run_dir,
        "koord-manager",
        command,
        ready=partial(_manager_ready, sim, health),
        timeout=180,
        env=env,
    )
    return time.monotonic() - began


def _manager_ready(sim: SimCluster, health: int) -> bool:
    if not _get_ok(f"http://127.0.0.1:{health}/readyz"):
        return False
    probe = {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": "hetgitops-simcluster-probe", "namespace": NAMESPACE},
        "spec": {"max": {"cpu": "1"}, "min": {"cpu": "0"}},
    }
    result = sim.kubectl(
        "create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(probe), check=False
    )
    if result.returncode != 0:
        return False
    # Mutated by the real webhook (pkg/webhook/elasticquota/quota_topology.go:230-270 fills
    # the parent label), so the call reached koord-manager rather than nothing at all.
    labels = json.loads(result.stdout)["metadata"].get("labels", {})
    return "quota.scheduling.koordinator.sh/parent" in labels


def scheduler_config(sim: SimCluster, args: dict[str, Any]) -> dict[str, Any]:
    """KubeSchedulerConfiguration for profile `koord-scheduler`: upstream's plugin set
    (config/manager/scheduler-config.yaml) restricted to what needs no koordlet."""
    elastic = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "ElasticQuotaArgs",
        "quotaGroupNamespace": NAMESPACE,
        **args,
    }
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {
            "kubeconfig": str(sim.plane.admin_kubeconfig),
            "qps": 200,
            "burst": 400,
        },
        "leaderElection": {"leaderElect": False},
        "profiles": [
            {
                "schedulerName": SCHEDULER_NAME,
                "pluginConfig": [{"name": "ElasticQuota", "args": elastic}],
                "plugins": {
                    "preEnqueue": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {
                        "disabled": [{"name": "*"}],
                        "enabled": [{"name": "PrioritySort"}],
                    },
                    "preFilter": {"enabled": [{"name": "Coscheduling"}, {"name": "ElasticQuota"}]},
                    "postFilter": {
                        "disabled": [{"name": "*"}],
                        "enabled": [
                            {"name": "Coscheduling"},
                            {"name": "ElasticQuota"},
                            {"name": "DefaultPreemption"},
                        ],
                    },
                    "preScore": {"enabled": [{"name": "Coscheduling"}]},
                    "score": {"enabled": [{"name": "Coscheduling", "weight": 1}]},
                    "reserve": {"enabled": [{"name": "Coscheduling"}, {"name": "ElasticQuota"}]},
                    "permit": {"enabled": [{"name": "Coscheduling"}]},
                    "preBind": {"enabled": [{"name": "Coscheduling"}]},
                    "postBind": {"enabled": [{"name": "Coscheduling"}]},
                },
            }
        ],
    }


def _start_scheduler(sim: SimCluster, folder: Path, port: int, text: str) -> float:
    (debug_port,) = procs.free_ports(1)
    config = sim.run_dir / "koord-scheduler-config.yaml"
    config.write_text(text)
    kubeconfig = sim.plane.admin_kubeconfig
    command = [
        str(folder / "koord-scheduler"),
        f"--config={config}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        # The deprecated insecure endpoint (cmd/koord-scheduler/app/options/
        # insecure_serving.go:75-76) listens on 0.0.0.0:10251 even with --config; it also
        # serves the plugins' debug API (/apis/v1/plugins/ElasticQuota/quotas).
        "--address=127.0.0.1",
        f"--port={debug_port}",
        f"--feature-gates={FEATURE_GATES}",
    ]
    began = time.monotonic()
    _daemon(
        sim.run_dir,
        "koord-scheduler",
        command,
        ready=partial(_get_ok, f"https://127.0.0.1:{port}/healthz", insecure=True),
        timeout=180,
    )
    return time.monotonic() - began
