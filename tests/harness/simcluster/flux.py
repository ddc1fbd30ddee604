"""The real Flux in the simulated cluster: source-controller and kustomize-controller (built from
the Go module proxy by tests/harness/simcluster/build.py) reconcile the Kustomizations of
`integrations/flux/kustomizations.yaml` from a Git repository served on loopback.

A sync is what a user's pipeline does: the rendered tree is committed to the repository at
`deploy/ai-centre` (the path the shipped Kustomizations name) and pushed; the harness then asks
Flux to reconcile now (the `reconcile.fluxcd.io/requestedAt` annotation, as `flux reconcile
kustomization --with-source` does) and waits until every Kustomization is Ready at that commit,
or has failed at it. What kustomize-controller did is read from its own log ("server-side apply
completed" and "garbage collection completed"), per object: created, configured, unchanged,
deleted (pruned) or skipped (`kustomize.toolkit.fluxcd.io/prune: disabled`).

Harness choices, none of which changes what Flux does with the objects:
- The controllers start on the first Flux sync of a cluster, not with the cluster, and stop
  with it (`cluster.down`). Leader election is off, probes and metrics bind to loopback, no
  notification receiver (`--events-addr` empty).
- Between syncs every Kustomization is suspended, so Flux's 10-minute interval never re-applies
  an old commit over the Argo CD syncs the same tests run in between; a sync resumes them.
- Flux prunes only what its inventory holds, so the `previous` tree of a sync is first committed
  and reconciled (unless it is what Flux last reconciled): the change is then the step from a
  tree Flux itself applied, as in a cluster Flux manages.
- `--requeue-dependency=2s` (default 30 s): how often a Kustomization waiting on `dependsOn`
  looks again; only the wait gets shorter.
- `--override-manager=argocd-controller`: the same tests sync with the Argo CD model too; Flux
  takes that manager's fields over (its documented way to take over from another tool), so a
  field a new tree drops is not kept alive by the other manager's ownership.
- A tree without the per-target folders (a test's own single-folder tree) is reconciled by one
  Kustomization, `hetgitops-tree`, with the shipped stages' settings.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from harness.controlplane import procs

from . import build
from .cluster import FLUX_DAEMONS, SimCluster, _daemon, _get_ok, _namespaces, apply_objects

REPO = Path(__file__).resolve().parents[3]
ARGOCD_MANAGER = "argocd-controller"  # gitops.ARGOCD_MANAGER (gitops imports this module)
STAGES_FILE = REPO / "integrations" / "flux" / "kustomizations.yaml"
NAMESPACE = "flux-system"
SOURCE = "flux-system"  # the GitRepository the shipped Kustomizations name
TREE_PATH = "deploy/ai-centre"  # where the shipped Kustomizations expect the tree
BRANCH = "main"
MANAGER = "hetgitops-simcluster"
SINGLE_STAGE = "hetgitops-tree"
# Started on demand, in this order; cluster.down stops them too.
DAEMONS = FLUX_DAEMONS
_REQUESTED_AT = "reconcile.fluxcd.io/requestedAt"
_KUSTOMIZATION = "kustomizations.kustomize.toolkit.fluxcd.io"
_GITREPOSITORY = "gitrepositories.source.toolkit.fluxcd.io"
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "hetgitops-simcluster",
    "GIT_AUTHOR_EMAIL": "simcluster@hetgitops.invalid",
    "GIT_COMMITTER_NAME": "hetgitops-simcluster",
    "GIT_COMMITTER_EMAIL": "simcluster@hetgitops.invalid",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


class FluxFailed(RuntimeError):
    """Flux did not reconcile the commit: the message holds the Kustomizations' Ready messages."""


@dataclass
class FluxSync:
    """One reconciled commit and what kustomize-controller did, per `Kind/namespace/name`."""

    revision: str
    actions: dict[str, str] = field(default_factory=dict)
    # Kustomizations in the order their server-side apply completed (the dependsOn order).
    applied: list[str] = field(default_factory=list)

    def subjects(self, action: str) -> list[str]:
        return sorted(s for s, a in self.actions.items() if a == action)

    @property
    def created(self) -> list[str]:
        return self.subjects("created")

    @property
    def pruned(self) -> list[str]:
        return self.subjects("deleted")

    @property
    def skipped(self) -> list[str]:
        """Stale objects garbage collection left in place (`prune: disabled`)."""
        return self.subjects("skipped")


def missing_prerequisites() -> list[str]:
    problems = []
    if shutil.which("git") is None:
        problems.append("git is not on PATH (it serves and commits the Flux repository)")
    for name in ("flux-source", "flux-kustomize"):
        if build.cached(name) is None and shutil.which("go") is None:
            problems.append(f"Go toolchain not found and no cached {name} binaries")
    return problems


def _dir(sim: SimCluster) -> Path:
    return sim.run_dir / "flux"


def _pid(sim: SimCluster, daemon: str) -> Path:
    return sim.run_dir / f"{daemon}.pid"


def running(sim: SimCluster) -> bool:
    return all(procs.is_tracked_running(_pid(sim, d)) for d in DAEMONS)


def start(sim: SimCluster) -> None:
    """Start Flux on `sim` (idempotent): CRDs, the flux-system namespace, the Git server with a
    repository holding one empty commit, both controllers, and the GitRepository."""
    with procs.locked(sim.run_dir / ".flux.lock"):
        if running(sim):
            return
        stop(sim)
        folders = {name: build.ensure(name) for name in ("flux-source", "flux-kustomize")}
        crds = [
            yaml.safe_load(path.read_text())
            for folder in folders.values()
            for path in sorted(folder.glob("crd-*.yaml"))
        ]
        apply_objects(sim, crds, manager=MANAGER)
        names = [f"crd/{crd['metadata']['name']}" for crd in crds]
        sim.plane.wait_established(names, timeout=60)
        _namespaces(sim, NAMESPACE)
        state = _dir(sim)
        shutil.rmtree(state, ignore_errors=True)
        (state / "git").mkdir(parents=True)
        (state / "storage").mkdir()  # source-controller refuses a storage path that is missing
        _git(state, "init", "--quiet", "--bare", f"--initial-branch={BRANCH}", "git/hetgitops.git")
        _git(state, "clone", "--quiet", "git/hetgitops.git", "work")
        _git(state / "work", "commit", "--quiet", "--allow-empty", "-m", "empty")
        _git(state / "work", "push", "--quiet", "origin", f"HEAD:{BRANCH}")
        git_port, storage_port, *ports = procs.free_ports(6)
        env = {"KUBECONFIG": str(sim.plane.admin_kubeconfig), "RUNTIME_NAMESPACE": NAMESPACE}
        _daemon(
            sim.run_dir,
            "flux-githttp",
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
        common = ["--log-encoding=json", "--enable-leader-election=false"]
        _daemon(
            sim.run_dir,
            "source-controller",
            [
                str(folders["flux-source"] / "source-controller"),
                *common,
                f"--metrics-addr=127.0.0.1:{ports[0]}",
                f"--health-addr=127.0.0.1:{ports[1]}",
                f"--storage-path={state / 'storage'}",
                f"--storage-addr=127.0.0.1:{storage_port}",
                f"--storage-adv-addr=127.0.0.1:{storage_port}",
            ],
            ready=partial(_get_ok, f"http://127.0.0.1:{ports[1]}/readyz"),
            env=env,
        )
        _daemon(
            sim.run_dir,
            "kustomize-controller",
            [
                str(folders["flux-kustomize"] / "kustomize-controller"),
                *common,
                f"--metrics-addr=127.0.0.1:{ports[2]}",
                f"--health-addr=127.0.0.1:{ports[3]}",
                "--requeue-dependency=2s",
                # The Argo CD model's applies in the same tests: Flux takes their fields over,
                # as when a cluster moves from one tool to the other (else a field the new
                # tree drops would stay, still owned by the other manager).
                f"--override-manager={ARGOCD_MANAGER}",
            ],
            ready=partial(_get_ok, f"http://127.0.0.1:{ports[3]}/readyz"),
            env=env,
        )
        repository = {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "GitRepository",
            "metadata": {"name": SOURCE, "namespace": NAMESPACE},
            "spec": {
                "interval": "1m",
                "url": f"http://127.0.0.1:{git_port}/hetgitops.git",
                "ref": {"branch": BRANCH},
            },
        }
        apply_objects(sim, [repository], manager=MANAGER)
        (state / "last-tree").write_text("")


def stop(sim: SimCluster) -> None:
    for daemon in reversed(DAEMONS):
        procs.stop(_pid(sim, daemon))


def sync(
    sim: SimCluster, tree: Path, previous: Path | None = None, *, attempts: int = 3
) -> FluxSync:
    """Commit `tree` and let Flux reconcile it (after `previous`, see the module doc)."""
    problems = missing_prerequisites()
    if problems:
        raise FluxFailed("; ".join(problems))
    start(sim)
    last = (_dir(sim) / "last-tree").read_text()
    if previous is not None and last != tree_digest(previous):
        _reconcile(sim, previous, attempts=3)
    return _reconcile(sim, tree, attempts=attempts)


def forget(sim: SimCluster) -> None:
    """The next sync reconciles its `previous` tree first even if Flux last reconciled it:
    another tool recreated objects since, which then lack Flux's owner labels, and Flux's
    garbage collection skips an object whose labels do not match them (seen: the Volcano
    Queues an Argo CD sync had recreated were "skipped", not pruned)."""
    marker = _dir(sim) / "last-tree"
    if marker.is_file():
        marker.write_text("")


def tree_digest(tree: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in tree.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(tree)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def stages(tree: Path) -> list[dict[str, Any]]:
    """The Kustomizations that reconcile `tree`: the shipped ones whose folder the tree has,
    or one for the whole tree when it has none of them."""
    shipped = [d for d in yaml.safe_load_all(STAGES_FILE.read_text()) if isinstance(d, dict)]
    present = [d for d in shipped if (tree / _folder(d) / "kustomization.yaml").is_file()]
    if present:
        return present
    single = json.loads(json.dumps(shipped[0]))
    single["metadata"]["name"] = SINGLE_STAGE
    single["spec"]["path"] = f"./{TREE_PATH}"
    single["spec"].pop("dependsOn", None)
    return [single]


def _folder(stage: dict[str, Any]) -> str:
    path = str(stage["spec"]["path"]).removeprefix("./")
    return path.removeprefix(TREE_PATH).strip("/")


def _reconcile(sim: SimCluster, tree: Path, *, attempts: int) -> FluxSync:
    wanted = stages(tree)
    revision = _commit(sim, tree)
    # The artifact first: a resumed Kustomization reconciles at once, and must not re-apply
    # the commit it last saw over what other syncs did since.
    _fetch(sim, revision)
    _retire(sim, {s["metadata"]["name"] for s in wanted})
    log = sim.run_dir / "logs" / "kustomize-controller.log"
    offset = log.stat().st_size if log.is_file() else 0
    names = [s["metadata"]["name"] for s in wanted]
    failures: dict[str, str] = {}
    try:
        for attempt in range(attempts):
            token = f"{revision[:12]}-{time.time_ns()}"
            if attempt == 0:
                # Resumed and asked to reconcile in one update: one reconciliation, not two.
                for stage in wanted:
                    stage["spec"]["suspend"] = False
                    stage["metadata"].setdefault("annotations", {})[_REQUESTED_AT] = token
                apply_objects(sim, wanted, manager=MANAGER)
            else:
                _annotate(sim, _KUSTOMIZATION, names, token)
            failures = _wait(sim, names, revision, token)
            if not failures:
                (_dir(sim) / "last-tree").write_text(tree_digest(tree))
                return _report(f"{BRANCH}@sha1:{revision}", log, offset)
            if attempt + 1 < attempts:
                time.sleep(2 * (attempt + 1))
    finally:
        _suspend(sim, names)
    detail = "; ".join(f"{name}: {message}" for name, message in sorted(failures.items()))
    raise FluxFailed(
        f"kustomize-controller: {revision[:12]} failed after {attempts} attempts: {detail}"
    )


def _commit(sim: SimCluster, tree: Path) -> str:
    work = _dir(sim) / "work"
    target = work / TREE_PATH
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(tree, target)
    _git(work, "add", "--all")
    _git(work, "commit", "--quiet", "--allow-empty", "-m", f"render {tree_digest(tree)[:12]}")
    _git(work, "push", "--quiet", "origin", f"HEAD:{BRANCH}")
    return str(_git(work, "rev-parse", "HEAD").stdout.strip())


def _retire(sim: SimCluster, keep: set[str]) -> None:
    """Delete Kustomizations of another layout, orphaning (never deleting) their objects."""
    listed = _get(sim, _KUSTOMIZATION)["items"]
    stale = [k["metadata"]["name"] for k in listed if k["metadata"]["name"] not in keep]
    if not stale:
        return
    patch = json.dumps({"spec": {"deletionPolicy": "Orphan", "suspend": True}})
    for name in stale:
        sim.kubectl("patch", "-n", NAMESPACE, _KUSTOMIZATION, name, "--type=merge", "-p", patch)
    sim.kubectl("delete", "-n", NAMESPACE, _KUSTOMIZATION, *stale, "--timeout=60s")


def _fetch(sim: SimCluster, revision: str, timeout: float = 60) -> None:
    """Ask source-controller to fetch now and wait for the artifact of `revision`."""
    token = f"{revision[:12]}-{time.time_ns()}"
    _annotate(sim, _GITREPOSITORY, [SOURCE], token)
    want = f"{BRANCH}@sha1:{revision}"
    deadline = time.monotonic() + timeout
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status = _get(sim, _GITREPOSITORY, SOURCE).get("status", {})
        if status.get("artifact", {}).get("revision") == want:
            return
        time.sleep(0.5)
    raise FluxFailed(f"source-controller did not fetch {want} in {timeout:.0f}s: {_ready(status)}")


def _wait(
    sim: SimCluster, names: list[str], revision: str, token: str, timeout: float = 180
) -> dict[str, str]:
    """Wait until every Kustomization handled `token` and is Ready at `revision`, or one failed
    there (and the rest are done or wait on a failed dependency). Failures by name."""
    want = f"{BRANCH}@sha1:{revision}"
    deadline = time.monotonic() + timeout
    pending: dict[str, str] = {}
    while time.monotonic() < deadline:
        items = {k["metadata"]["name"]: k for k in _get(sim, _KUSTOMIZATION)["items"]}
        done, failed, waiting = set(), {}, {}
        for name in names:
            status = items.get(name, {}).get("status", {})
            ready = _condition(status, "Ready")
            handled = status.get("lastHandledReconcileAt") == token
            if (
                handled
                and ready.get("status") == "True"
                and (status.get("lastAppliedRevision") == want)
            ):
                done.add(name)
            elif handled and ready.get("status") == "False":
                message = str(ready.get("message", ""))
                if ready.get("reason") == "DependencyNotReady":
                    waiting[name] = message
                elif status.get("lastAttemptedRevision") == want:
                    failed[name] = f"{ready.get('reason')}: {message}"
        if len(done) == len(names):
            return {}
        if failed and len(done) + len(failed) + len(waiting) == len(names):
            return {**failed, **waiting}
        pending = {n: _ready(items.get(n, {}).get("status", {})) for n in names if n not in done}
        time.sleep(0.5)
    return {
        name: f"timed out after {timeout:.0f}s ({message})" for name, message in pending.items()
    }


def _report(revision: str, log: Path, offset: int) -> FluxSync:
    """What kustomize-controller logged doing since `offset` of its log, per object."""
    report = FluxSync(revision=revision)
    actions = report.actions
    with log.open("rb") as handle:
        handle.seek(offset)
        lines = handle.read().decode(errors="replace").splitlines()
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        message = str(entry.get("msg", ""))
        if message == "server-side apply completed":
            report.applied.append(str(entry.get("name", "")))
            output = entry.get("output") or {}
            for subject, action in output.items():
                if isinstance(action, list):  # --feature-gates=GroupChangeLog: action -> subjects
                    for each in action:
                        _record(actions, each, subject)
                else:
                    _record(actions, subject, str(action))
        elif message.startswith("garbage collection completed: "):
            for change in message.removeprefix("garbage collection completed: ").splitlines():
                subject, _, action = change.rpartition(" ")
                _record(actions, subject, action)
    return report


def _record(actions: dict[str, str], subject: str, action: str) -> None:
    """A retry that finds an object `unchanged` does not hide what an earlier pass did."""
    if action != "unchanged" or subject not in actions:
        actions[subject] = action


def _suspend(sim: SimCluster, names: list[str]) -> None:
    patch = json.dumps({"spec": {"suspend": True}})
    for name in names:
        sim.kubectl(
            "patch",
            "-n",
            NAMESPACE,
            _KUSTOMIZATION,
            name,
            "--type=merge",
            "-p",
            patch,
            f"--field-manager={MANAGER}",
            check=False,
        )


def _annotate(sim: SimCluster, resource: str, names: list[str], token: str) -> None:
    sim.kubectl(
        "annotate", "-n", NAMESPACE, "--overwrite", resource, *names, f"{_REQUESTED_AT}={token}"
    )


def _get(sim: SimCluster, resource: str, name: str = "") -> Any:
    args = ["get", "-n", NAMESPACE, resource, *([name] if name else []), "-o", "json"]
    return json.loads(sim.kubectl(*args).stdout)


def _condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions", []) if c.get("type") == kind), {})


def _ready(status: dict[str, Any]) -> str:
    ready = _condition(status, "Ready")
    return f"Ready={ready.get('status', '?')} {ready.get('reason', '')}: {ready.get('message', '')}"


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={"PATH": os.environ["PATH"], "HOME": str(cwd), **_GIT_ENV},
        capture_output=True,
        text=True,
        check=True,
    )
