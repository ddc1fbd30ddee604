"""Time-boxed quota judged by the real Kueue: the example grant (examples/time-boxed-quota: 8 more
A800 for finetune-vision through 2026-12-31) rendered on a day it is in force and on the day
after it ends, each render synced the Argo CD way; on each, a job of exactly what hetgitops says
the team can reach then (plan.grants + plan.quota_plan.Reach) is admitted and one GPU more
pends. The bundled render is synced back afterwards."""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from harness.simcluster import cluster, gitops

from hetgitops import api
from hetgitops.plan.quota_plan import reach

from .checks import converged
from .conftest import POLICIES
from .test_sim_quota import _full_then_one_more, _per_node, _queue, job

pytestmark = pytest.mark.sim

EXAMPLE = POLICIES.parent / "examples" / "time-boxed-quota" / "training.yaml"
TEAM, POOL, GPU = "finetune-vision", "a800-train", "nvidia.com/gpu"
IN_FORCE, ENDED = dt.date(2026, 12, 5), dt.date(2027, 1, 1)


@pytest.fixture(scope="module")
def granted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("granted") / "policy"
    shutil.copytree(POLICIES, root)
    shutil.copyfile(EXAMPLE, root / "teams" / "training.yaml")
    return root


def _render(policy_dir: Path, day: dt.date, out: Path) -> Path:
    command = [str(Path(sys.executable).parent / "hetgitops"), "render", str(policy_dir)]
    command += ["--now", day.isoformat(), "--output", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.mark.parametrize(("day", "granted_cards"), [(IN_FORCE, 8), (ENDED, 0)])
def test_kueue_admits_the_reach_of_the_day(
    sim: cluster.SimCluster,
    synced: Path,
    granted: Path,
    tmp_path: Path,
    day: dt.date,
    granted_cards: int,
) -> None:
    policy = api.render([granted], api.Options(now=day, check_output=False)).policy
    assert policy is not None
    team, pool = policy.teams[TEAM], policy.pools[POOL]
    (quota,) = [q for q in team.quotas if q.pool == POOL]
    assert (quota.cards, quota.granted) == (24 + granted_cards, granted_cards)
    most = reach(policy).most(team, pool, GPU)
    assert most is not None
    tree = _render(granted, day, tmp_path / "tree")
    try:
        gitops.sync_argocd(sim, tree, previous=synced)
        converged(sim, policy, tree)
        namespace, queue = _queue(sim, TEAM)
        full = job(
            "sim-grant-full", namespace, queue, pool, GPU, most, _per_node(policy, pool, GPU)
        )
        extra = job("sim-grant-extra", namespace, queue, pool, GPU, 1, 1)
        _full_then_one_more(sim, namespace, [full, extra], f"{TEAM} on {day}: {most} {GPU}")
    finally:
        gitops.sync_argocd(sim, synced, previous=tree)
