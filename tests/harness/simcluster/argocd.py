"""The real Argo CD in the simulated cluster: application-controller, repo-server and the
hetgitops CMP sidecar (cmp-server with integrations/argocd/plugin.yaml), built from the Go module
proxy by tests/harness/simcluster/build.py (the `argocd` component, built on first use and by
`.ci/run`), with Redis from Debian.

A sync is what a user's pipeline does with the shipped Application
(integrations/argocd/application.yaml): the change is committed to a Git repository served on
loopback (tests/harness/simcluster/githttp.py) and Argo CD syncs that commit, with the Application's
sync options (ServerSideApply, CreateNamespace=false, ApplyOutOfSyncOnly) and the objects' own
annotations (Prune=false on Namespaces, Force=true,Replace=true on PriorityClasses), then the
harness waits until the operation at that commit succeeded and every resource is synced and
healthy by Argo CD's health checks (the shipped Lua of argocd-cm.yaml for Kueue's queues), or
failed. What the sync did, per object, is Argo CD's own operationState.syncResult: pruned,
prune skipped, replaced, synced.

Two sources, one Application:
- `policy` given: the policy folder is committed and the CMP renders it (`hetgitops render`
  from the checkout, exactly the shipped plugin and Application);
- a rendered tree only (what the day-2 tests hand over): the tree's objects are committed as
  one manifest file, a plain directory source, as when CI commits the render.

Harness choices, none of which changes what Argo CD does with the objects:
- The daemons start on the first Argo CD sync of a cluster and stop with it (`cluster.down`).
  The in-cluster destination (`https://kubernetes.default.svc`) is the controller's kubeconfig
  (ARGOCD_FAKE_IN_CLUSTER, Argo CD's own switch for running outside a cluster).
- No automated sync: between the harness's syncs nothing of Argo CD writes to the cluster
  (the same tests sync with Flux and the model in between). A sync is an `operation` on the
  Application with `prune: true` and the Application's sync options, as `argocd app sync
  --prune` sends it, which is what automated sync with `prune: true` runs.
- Argo CD prunes what carries its tracking annotation, so the `previous` tree of a sync is
  first committed and synced (unless it is what Argo CD last synced), as for Flux.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from harness.controlplane import procs

from . import build
from .cluster import ARGOCD_DAEMONS, SimCluster, _daemon, _get_ok, _namespaces, apply_objects
from .flux import _git, tree_digest

REPO = Path(__file__).resolve().parents[3]
INTEGRATION = REPO / "integrations" / "argocd"
NAMESPACE = "argocd"
APP = "gpu-fleet"  # the shipped Application's name
TREE_PATH = "deploy/ai-centre"
POLICY_PATH = "policies"
BRANCH = "main"
MANAGER = "hetgitops-simcluster"
DAEMONS = ARGOCD_DAEMONS
_APPLICATION = "applications.argoproj.io"


class ArgoFailed(RuntimeError):
    """Argo CD did not sync the commit: the message holds its operation and resource states."""


@dataclass
class ArgoSync:
    """One synced commit and what Argo CD did, per `Kind/namespace/name` (or `Kind/name`)."""

    revision: str
    # syncResult.resources: subject -> (status, message), e.g. ("Pruned", "pruned"),
    # ("PruneSkipped", "ignored (no prune)"), ("Synced", "... replaced").
    results: dict[str, tuple[str, str]] = field(default_factory=dict)
    # The Application's status.resources after the sync: subject -> "Synced" / "OutOfSync".
    resources: dict[str, str] = field(default_factory=dict)

    def with_status(self, status: str) -> list[str]:
        return sorted(s for s, (st, _) in self.results.items() if st == status)

    @property
    def pruned(self) -> list[str]:
        return self.with_status("Pruned")

    @property
    def prune_skipped(self) -> list[str]:
        return self.with_status("PruneSkipped")

    @property
    def replaced(self) -> list[str]:
        return sorted(s for s, (_, message) in self.results.items() if "replaced" in message)


def missing_prerequisites() -> list[str]:
    problems = []
    # Built on first use like the other components (about 9 CPU-minutes cold on 2 cores,
    # Go 1.27.3 fetched by GOTOOLCHAIN; docs/simcluster.md "Argo CD").
    if build.cached("argocd") is None and not build.go_available():
        problems.append("Go toolchain not found and no cached argocd binary")
    for tool in ("git", "redis-server"):
        if shutil.which(tool) is None:
            problems.append(f"{tool} is not on PATH (apt-get install {tool})")
    return problems


def _dir(sim: SimCluster) -> Path:
    return sim.run_dir / "argocd"


def _pid(sim: SimCluster, daemon: str) -> Path:
    return sim.run_dir / f"{daemon}.pid"


def running(sim: SimCluster) -> bool:
    return all(procs.is_tracked_running(_pid(sim, d)) for d in DAEMONS)


def _tcp_ok(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


def start(sim: SimCluster) -> None:
    """Start Argo CD on `sim` (idempotent)."""
    with procs.locked(sim.run_dir / ".argocd.lock"):
        if running(sim):
            return
        stop(sim)
        folder = build.ensure("argocd")
        crds = [yaml.safe_load(p.read_text()) for p in sorted(folder.glob("crd-*.yaml"))]
        apply_objects(sim, crds, manager=MANAGER)
        names = [f"crd/{crd['metadata']['name']}" for crd in crds]
        sim.plane.wait_established(names, timeout=60)
        _namespaces(sim, NAMESPACE)
        apply_objects(sim, _settings(), manager=MANAGER)
        state = _dir(sim)
        shutil.rmtree(state, ignore_errors=True)
        for sub in ("git", "plugins", "cmp-config", "tmp", "home", "bin"):
            (state / sub).mkdir(parents=True)
        # The repo-server execs it from PATH, as from the image's /usr/local/bin.
        shutil.copyfile(folder / "git-verify-wrapper.sh", state / "bin" / "git-verify-wrapper.sh")
        (state / "bin" / "git-verify-wrapper.sh").chmod(0o755)
        shutil.copyfile(INTEGRATION / "plugin.yaml", state / "cmp-config" / "plugin.yaml")
        _git(state, "init", "--quiet", "--bare", f"--initial-branch={BRANCH}", "git/hetgitops.git")
        _git(state, "clone", "--quiet", "git/hetgitops.git", "work")
        _git(state / "work", "commit", "--quiet", "--allow-empty", "-m", "empty")
        _git(state / "work", "push", "--quiet", "origin", f"HEAD:{BRANCH}")
        redis_port, git_port, repo_port, repo_metrics, controller_metrics = procs.free_ports(5)
        binary = str(folder / "argocd")
        kubeconfig = str(sim.plane.admin_kubeconfig)
        # PATH: the CMP runs `hetgitops` (this interpreter's) and `sh`, `grep`; repo-server `git`.
        env = {
            "KUBECONFIG": kubeconfig,
            "ARGOCD_FAKE_IN_CLUSTER": "true",
            "ARGOCD_PLUGINSOCKFILEPATH": str(state / "plugins"),
            "ARGOCD_GPG_ENABLED": "false",
            "TMPDIR": str(state / "tmp"),
            "HOME": str(state / "home"),
            "PATH": os.pathsep.join(
                [str(state / "bin"), str(Path(sys.executable).parent), os.environ.get("PATH", "")]
            ),
        }
        _daemon(
            sim.run_dir,
            "argocd-redis",
            [
                shutil.which("redis-server") or "redis-server",
                "--bind",
                "127.0.0.1",
                "--port",
                str(redis_port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(state / "tmp"),
            ],
            ready=partial(_tcp_ok, redis_port),
        )
        _daemon(
            sim.run_dir,
            "argocd-githttp",
            [
                sys.executable,
                str(Path(__file__).with_name("githttp.py")),
                str(state / "git"),
                str(git_port),
            ],
            ready=partial(
                _get_ok,
                f"http://127.0.0.1:{git_port}/hetgitops.git/info/refs?service=git-upload-pack",
            ),
        )
        sock = state / "plugins" / "hetgitops-v1.sock"
        _daemon(
            sim.run_dir,
            "argocd-cmp-server",
            [binary, f"--config-dir-path={state / 'cmp-config'}", "--logformat=json"],
            ready=sock.exists,
            env={**env, "ARGOCD_BINARY_NAME": "argocd-cmp-server"},
        )
        redis = f"--redis=127.0.0.1:{redis_port}"
        _daemon(
            sim.run_dir,
            "argocd-repo-server",
            [
                binary,
                "--address=127.0.0.1",
                f"--port={repo_port}",
                "--metrics-address=127.0.0.1",
                f"--metrics-port={repo_metrics}",
                "--disable-tls",
                # v3.6.1 refuses --disable-tls beside a client CA path, and its default is one
                # (cmd/argocd-repo-server/commands/argocd_repo_server.go:143-144, 279).
                "--client-ca-path=",
                redis,
                "--logformat=json",
            ],
            ready=partial(_get_ok, f"http://127.0.0.1:{repo_metrics}/healthz"),
            env={**env, "ARGOCD_BINARY_NAME": "argocd-repo-server"},
        )
        _daemon(
            sim.run_dir,
            "argocd-application-controller",
            [
                binary,
                f"--kubeconfig={kubeconfig}",
                f"--namespace={NAMESPACE}",
                f"--repo-server=127.0.0.1:{repo_port}",
                "--repo-server-plaintext",
                f"--metrics-port={controller_metrics}",
                redis,
                "--logformat=json",
            ],
            ready=partial(_get_ok, f"http://127.0.0.1:{controller_metrics}/healthz"),
            env={**env, "ARGOCD_BINARY_NAME": "argocd-application-controller"},
        )
        (state / "git-url").write_text(f"http://127.0.0.1:{git_port}/hetgitops.git")
        (state / "last-tree").write_text("")


def stop(sim: SimCluster) -> None:
    for daemon in reversed(DAEMONS):
        procs.stop(_pid(sim, daemon))


def _settings() -> list[dict[str, Any]]:
    """argocd-cm (the shipped health checks), argocd-secret, the default AppProject."""
    shipped = yaml.safe_load((INTEGRATION / "argocd-cm.yaml").read_text())
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "argocd-cm",
            "namespace": NAMESPACE,
            "labels": {"app.kubernetes.io/part-of": "argocd"},
        },
        "data": dict(shipped.get("data") or {}),
    }
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "argocd-secret",
            "namespace": NAMESPACE,
            "labels": {"app.kubernetes.io/part-of": "argocd"},
        },
        "stringData": {"server.secretkey": "hetgitops-simcluster-not-a-secret"},
    }
    # argocd-server creates the default project; without a server the harness does, as it is.
    project = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": {"name": "default", "namespace": NAMESPACE},
        "spec": {
            "sourceRepos": ["*"],
            "destinations": [{"server": "*", "namespace": "*"}],
            "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
        },
    }
    return [config, secret, project]


def application(git_url: str, *, policy: bool) -> dict[str, Any]:
    """The shipped Application, pointed at the loopback repository; without a policy, a
    directory source holding the committed render instead of the CMP."""
    app: dict[str, Any] = yaml.safe_load((INTEGRATION / "application.yaml").read_text())
    source = app["spec"]["source"]
    source["repoURL"] = git_url
    source["targetRevision"] = BRANCH
    if policy:
        source["path"] = POLICY_PATH
    else:
        source["path"] = TREE_PATH
        source.pop("plugin", None)
    # No automated sync between the harness's syncs (module doc); its prune is in the operation.
    app["spec"]["syncPolicy"].pop("automated", None)
    # The finalizer would make deleting the Application cascade into the fleet.
    app["metadata"].pop("finalizers", None)
    return app


def sync(
    sim: SimCluster,
    tree: Path,
    previous: Path | None = None,
    *,
    policy: Path | None = None,
    attempts: int = 3,
) -> ArgoSync:
    """Commit `tree` (or `policy`) and let Argo CD sync it, after `previous` (module doc)."""
    problems = missing_prerequisites()
    if problems:
        raise ArgoFailed("; ".join(problems))
    start(sim)
    last = (_dir(sim) / "last-tree").read_text()
    if previous is not None and last != tree_digest(previous):
        _sync_commit(sim, previous, None, attempts=3)
    return _sync_commit(sim, tree, policy, attempts=attempts)


def _sync_commit(sim: SimCluster, tree: Path, policy: Path | None, *, attempts: int) -> ArgoSync:
    revision = _commit(sim, tree, policy)
    git_url = (_dir(sim) / "git-url").read_text()
    apply_objects(sim, [application(git_url, policy=policy is not None)], manager=MANAGER)
    error = ""
    for attempt in range(attempts):
        _refresh(sim, revision)
        started = time.time()
        _operate(sim, revision)
        outcome = _wait(sim, revision, started)
        if isinstance(outcome, ArgoSync):
            (_dir(sim) / "last-tree").write_text(tree_digest(tree))
            return outcome
        error = outcome
        time.sleep(2 * (attempt + 1))
    raise ArgoFailed(f"argocd: {revision[:12]} failed after {attempts} attempts: {error}")


def _commit(sim: SimCluster, tree: Path, policy: Path | None) -> str:
    from . import gitops  # gitops imports this module

    work = _dir(sim) / "work"
    for path in (TREE_PATH, POLICY_PATH):
        shutil.rmtree(work / path, ignore_errors=True)
    if policy is not None:
        shutil.copytree(policy, work / POLICY_PATH)
    target = work / TREE_PATH
    target.mkdir(parents=True)
    docs = gitops.documents(tree)
    (target / "manifests.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=True))
    _git(work, "add", "--all")
    _git(work, "commit", "--quiet", "--allow-empty", "-m", f"render {tree_digest(tree)[:12]}")
    _git(work, "push", "--quiet", "origin", f"HEAD:{BRANCH}")
    return str(_git(work, "rev-parse", "HEAD").stdout.strip())


def _refresh(sim: SimCluster, revision: str, timeout: float = 120) -> None:
    """A hard refresh (`argocd app get --hard-refresh`), then wait for a verdict at `revision`."""
    sim.kubectl(
        "annotate",
        "-n",
        NAMESPACE,
        "--overwrite",
        _APPLICATION,
        APP,
        "argocd.argoproj.io/refresh=hard",
    )
    deadline = time.monotonic() + timeout
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        app = _app(sim)
        status = app.get("status") or {}
        refreshed = "argocd.argoproj.io/refresh" not in app["metadata"].get("annotations", {})
        compared = status.get("sync") or {}
        # Unknown = no comparison result yet (or a comparison error): with ApplyOutOfSyncOnly
        # Argo CD would then sync, and replace, every object, so wait for a real verdict.
        if (
            refreshed
            and compared.get("revision") == revision
            and compared.get("status") in ("Synced", "OutOfSync")
        ):
            return
        time.sleep(0.5)
    raise ArgoFailed(
        f"argocd: no comparison at {revision[:12]} in {timeout:.0f}s: {_summary(status)}"
    )


def _operate(sim: SimCluster, revision: str) -> None:
    """What `argocd app sync --prune --revision REV` writes: an operation on the Application."""
    app = _app(sim)
    options = list((app["spec"].get("syncPolicy") or {}).get("syncOptions") or [])
    operation = {
        "initiatedBy": {"username": MANAGER},
        "sync": {"revision": revision, "prune": True, "syncOptions": options},
    }
    patch = json.dumps({"operation": operation})
    sim.kubectl("patch", "-n", NAMESPACE, _APPLICATION, APP, "--type=merge", "-p", patch)


_HEALTHY = {"Healthy", "Suspended", ""}


def _wait(sim: SimCluster, revision: str, started: float, timeout: float = 300) -> ArgoSync | str:
    """The sync's result once it finished at `revision` and everything it keeps is synced and
    healthy (objects it pruned may still be Terminating under a finalizer, and Prune=false ones
    stay OutOfSync, as in Argo CD's UI); else why not, as text."""
    deadline = time.monotonic() + timeout
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        app = _app(sim)
        status = app.get("status") or {}
        state = status.get("operationState") or {}
        result = state.get("syncResult") or {}
        if app.get("operation") is None and result.get("revision") == revision:
            phase = state.get("phase")
            if phase in ("Failed", "Error"):
                return f"{phase}: {state.get('message', '')}; {_failed(result)}"
            if phase == "Succeeded" and _settled(status):
                return _result(revision, result, status)
        time.sleep(1)
    return f"timed out after {timeout:.0f}s: {_summary(status)}"


def _settled(status: dict[str, Any]) -> bool:
    for resource in status.get("resources") or []:
        if resource.get("requiresPruning"):
            continue
        if resource.get("status") != "Synced":
            return False
        if (resource.get("health") or {}).get("status", "") not in _HEALTHY:
            return False
    return True


def _subject(resource: dict[str, Any]) -> str:
    parts = [resource.get("kind"), resource.get("namespace"), resource.get("name")]
    return "/".join(str(p) for p in parts if p)


def _result(revision: str, result: dict[str, Any], status: dict[str, Any]) -> ArgoSync:
    report = ArgoSync(revision=revision)
    for resource in status.get("resources") or []:
        report.resources[_subject(resource)] = str(resource.get("status", ""))
    for resource in result.get("resources") or []:
        report.results[_subject(resource)] = (
            str(resource.get("status", "")),
            str(resource.get("message", "")),
        )
    return report


def _failed(result: dict[str, Any]) -> str:
    bad = [
        f"{_subject(r)}: {r.get('message', '')}"
        for r in result.get("resources") or []
        if r.get("status") not in ("Synced", "Pruned", "PruneSkipped")
    ]
    return "; ".join(bad[:10])


def _summary(status: dict[str, Any]) -> str:
    state = status.get("operationState") or {}
    unsettled = [
        f"{_subject(r)} {r.get('status')}/{(r.get('health') or {}).get('status', '')}"
        for r in status.get("resources") or []
        if not r.get("requiresPruning")
        and (
            r.get("status") != "Synced" or (r.get("health") or {}).get("status", "") not in _HEALTHY
        )
    ]
    conditions = [f"{c.get('type')}: {c.get('message')}" for c in status.get("conditions") or []]
    return (
        f"sync={(status.get('sync') or {}).get('status')} "
        f"health={(status.get('health') or {}).get('status')} "
        f"operation={state.get('phase')} {state.get('message', '')}; "
        f"conditions: {conditions}; unsettled: {unsettled[:10]}"
    )


def _app(sim: SimCluster) -> Any:
    args = ["get", "-n", NAMESPACE, _APPLICATION, APP, "-o", "json"]
    return json.loads(sim.kubectl(*args).stdout)
