"""Reach and job routing count cpu and memory as Kueue does: the disagreement the simulated
fleet found in the bundled policy (llm-finetune on pretraining's A100s), kept as a case."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hetgitops import api
from hetgitops.compilers.jobs.render import compile_jobs
from hetgitops.model.policy import Policy
from hetgitops.plan import quota_plan, routing

REPO = Path(__file__).resolve().parents[2]
GI = 1024**3
# What the bundled llm-finetune said before it asked its own memoryPerCard.
FIXED = "  memoryPerCard: 96Gi\n  topology: {preferred: rack}\n---"
UNFIXED = "  topology: {preferred: rack}\n---"


def _policy(directory: Path) -> Policy:
    result = api.validate([directory], api.Options(check_output=False))
    assert result.policy is not None and not result.failed(), result.diagnostics
    return result.policy


@pytest.fixture(scope="module")
def unfixed(tmp_path_factory: pytest.TempPathFactory) -> Policy:
    tree = tmp_path_factory.mktemp("bundled") / "policies"
    shutil.copytree(REPO / "policies", tree)
    profiles = tree / "profiles" / "training.yaml"
    text = profiles.read_text()
    assert text.count(FIXED) == 1
    profiles.write_text(text.replace(FIXED, UNFIXED))
    return _policy(tree)


def _a100_route(policy: Policy) -> routing.Route:
    profile = policy.profiles["llm-finetune"]
    return next(
        r for r in routing.router(policy).routes(profile) if r.pool.name == "a100-transition"
    )


def test_reach_counts_memory_at_each_lenders_rate(unfixed: Policy) -> None:
    reach = quota_plan.reach(unfixed)
    team, pool = unfixed.teams["pretraining"], unfixed.pools["a100-transition"]
    # 8 cards of its own at 128Gi, 8 lent by finetune-nlp at the fleet's 96Gi
    assert reach.most(team, pool, "memory") == (8 * 128 + 8 * 96) * GI
    assert reach.most(team, pool, "cpu") == 16 * 12 * 1000  # milli-cpu, both at 12 a card
    assert reach.most(team, pool, "nvidia.com/gpu") == 16


def test_unfixed_bundled_policy_gets_no_template_kueue_would_pend(unfixed: Policy) -> None:
    team, profile = unfixed.teams["pretraining"], unfixed.profiles["llm-finetune"]
    short = routing.shortfall(
        unfixed, quota_plan.reach(unfixed), team, _a100_route(unfixed), profile
    )
    assert short == routing.Shortfall("memory", 2 * 8 * 128 * GI, 1792 * GI)
    manifests, _ = compile_jobs(unfixed)
    names = {m.filename for m in manifests}
    assert "llm-finetune/pretraining/a100-40gb.yaml" not in names
    assert "llm-finetune/pretraining/a800-80gb.yaml" in names  # the team can still run it


def test_bundled_policy_asks_what_every_team_reaches() -> None:
    policy = _policy(REPO / "policies")
    team, profile = policy.teams["pretraining"], policy.profiles["llm-finetune"]
    reach = quota_plan.reach(policy)
    assert routing.shortfall(policy, reach, team, _a100_route(policy), profile) is None
    manifests, _ = compile_jobs(policy)
    assert "llm-finetune/pretraining/a100-40gb.yaml" in {m.filename for m in manifests}
