"""Sim fixtures: one simulated cluster per session (tests/harness/simcluster) with the bundled
fleet."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.controlplane import harness
from harness.simcluster import busy, cluster, gitops, policyfleet

from hetgitops.model.policy import Policy

from . import shards

REQUIRE_SIM = "HETGITOPS_REQUIRE_SIM"
REPO = Path(__file__).resolve().parents[2]
POLICIES = REPO / "policies"
NOW = dt.date(2026, 12, 1)


def unavailable(reason: str) -> None:
    if os.environ.get(REQUIRE_SIM) == "1":
        pytest.fail(f"simulated cluster required ({REQUIRE_SIM}=1) but: {reason}", pytrace=False)
    pytest.skip(f"simulated cluster unavailable: {reason}")


# .ci/run starts this slice while the last Go builds (Koordinator and a Flux controller in one
# lane, KubeRay, Argo CD and the other Flux controller in the other, scripts/gobuilds) may still
# run: the modules that need them go last, in the order the builds finish, and wait there for
# the build if they must (tests/harness/controlplane/build.py build_lock). Whole modules move, so
# module fixtures stay shared.
BUILT_LAST = (
    ("test_sim_kuberay.py", "test_sim_kuberay_explain.py"),
    ("test_sim_koordinator.py", "test_sim_koordinator_fleet.py", "test_sim_koordinator_explain.py"),
    ("test_sim_argocd.py",),
    ("test_sim_flux.py",),
)


def _built_last(item: pytest.Item) -> int:
    for rank, names in enumerate(BUILT_LAST, 1):
        if item.path.name in names:
            return rank
    return 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=_built_last)  # stable: the rest keep their order
    wanted = shards.current()
    if wanted is None:
        return
    index, count = wanted
    sim_items = [i for i in items if i.get_closest_marker("sim") is not None]
    where = shards.assign(sorted({i.path.name for i in sim_items}), count)
    dropped = [i for i in sim_items if where[i.path.name] != index]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        gone = set(map(id, dropped))
        items[:] = [i for i in items if id(i) not in gone]


@pytest.fixture(scope="session")
def sim() -> Iterator[cluster.SimCluster]:
    """A running simulated cluster; started once per session and stopped at the end unless a
    developer's `scripts/simcluster up` instance was already running."""
    problems = cluster.missing_prerequisites()
    if problems:
        unavailable("; ".join(problems))
    was_running = cluster.status() is not None
    try:
        started = cluster.up()
    except harness.Unavailable as error:
        unavailable(str(error))
        raise
    yield started
    if not was_running:
        cluster.down()


def render(policy_dir: Path, out: Path, *, command: str = "render") -> Path:
    """`hetgitops render|jobs POLICY --output OUT`, as a user or a CI pipeline runs it."""
    result = run_output_command(policy_dir, out, command=command)
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def run_output_command(
    policy_dir: Path, out: Path, *, command: str = "render"
) -> subprocess.CompletedProcess[str]:
    """The CLI process behind `render`, whatever its exit code (a refused change exits 1)."""
    return subprocess.run(
        [
            str(Path(sys.executable).parent / "hetgitops"),
            command,
            str(policy_dir),
            "--now",
            NOW.isoformat(),
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="session")
def fleet_policy(sim: cluster.SimCluster) -> Policy:
    """The bundled policy, its fleet created on the simulated cluster."""
    loaded = policyfleet.load(POLICIES, now=NOW)
    policyfleet.create_from(sim, loaded)
    return loaded


@pytest.fixture(scope="session")
def bundled_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render(POLICIES, tmp_path_factory.mktemp("bundled") / "tree")


@pytest.fixture(scope="module")
def synced(sim: cluster.SimCluster, fleet_policy: Policy, bundled_tree: Path) -> Path:
    """The bundled render synced the Argo CD way and converged, again for every module: a
    module starts from the fleet it assumes whatever an earlier module's revert left (a cold
    CI run of 2026-12-05 found ClusterQueue finetune-vision missing after the busy day-2
    matrix, and test_sim_explain then disagreed with Kueue on every request of that team).
    The sync is a server-side apply of unchanged objects: seconds when nothing leaked."""
    from .checks import converged

    gitops.sync_argocd(sim, bundled_tree)
    converged(sim, fleet_policy, bundled_tree)
    return bundled_tree


@pytest.fixture(scope="module")
def busy_fleet(
    sim: cluster.SimCluster,
    synced: Path,
    fleet_policy: Policy,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[busy.BusyFleet]:
    """The bundled fleet, synced, filled with work (tests/harness/simcluster/busy.py BUNDLED_PLAN)
    and settled; `.baseline` is the settled reading. One per test module: filling takes a minute
    or two, so a module shares it across its cases (each case must leave it as it found it:
    `busy.restore`). Cleared afterwards."""
    jobs = render(POLICIES, tmp_path_factory.mktemp("busy") / "jobs", command="jobs")
    pools = busy.Pools()
    pools.learn(fleet_policy, synced)
    busy.clear(sim)
    baseline = busy.fill(sim, fleet_policy, jobs, pools)
    yield busy.BusyFleet(fleet_policy, synced, jobs, pools, baseline)
    busy.clear(sim)
