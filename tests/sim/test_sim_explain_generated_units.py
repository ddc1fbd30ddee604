"""tests/sim/test_sim_explain_generated.py without a cluster: the knob, the policies it builds
(valid, without the targets it turns off) and the requests it draws for them."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml
from generated.policygen import generate as generate_policy
from harness.simcluster import policyfleet

from hetgitops.explain.explanation import explain
from hetgitops.explain.workload import from_manifest

from .conftest import NOW
from .test_sim_explain import predicted
from .test_sim_explain_generated import DEFAULT, KNOB, OFF_TARGETS, chosen, knob, write

FULL = [4, 5, 6, 13, 18, 19]


def test_the_knob_reads_seeds_and_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KNOB, "4,5:100")
    assert knob() == ([4, 5], 100)
    monkeypatch.delenv(KNOB)
    assert knob() == ([13, 18], 30) and DEFAULT == "13,18:30"
    monkeypatch.setenv(KNOB, "4;5")
    with pytest.raises(ValueError, match="SEEDS:COUNT"):
        knob()


@pytest.mark.parametrize("seed", FULL)
def test_each_seed_builds_a_valid_policy_and_enough_varied_requests(
    seed: int, tmp_path: Path
) -> None:
    folder = write(seed, tmp_path / "policy")
    fleet = yaml.safe_load((folder / "fleet.yaml").read_text())
    assert not set(OFF_TARGETS) & set(fleet["spec"]["targets"])
    policy = policyfleet.load(folder, now=NOW)
    picked = chosen(policy, seed, 100)
    assert len(picked) == 100
    assert len({g.name for g in picked}) == 100
    assert [g.job for g in picked] == [g.job for g in chosen(policy, seed, 100)]
    assert {g.request.team for g in picked} == set(policy.teams)
    kinds = Counter("mig" if g.request.mig else "whole" for g in picked)
    has_mig = any(p.mig for p in policy.pools.values())
    assert kinds["whole"] > 20 and (kinds["mig"] > 5 or not has_mig), kinds


def test_a_turned_off_target_is_gone_and_the_rest_kept(tmp_path: Path) -> None:
    drawn = generate_policy(4)["fleet.yaml"][0]["spec"]["targets"]
    assert "koordinator" in drawn  # seed 4 draws it
    written = yaml.safe_load((write(4, tmp_path) / "fleet.yaml").read_text())["spec"]["targets"]
    assert written == [t for t in drawn if t != "koordinator"]


def test_a_pod_no_node_holds_is_compared_as_kueue_admitting_it(tmp_path: Path) -> None:
    """Seed 6's Cambricon nodes have 4 cards: a pod of 5 is admitted by Kueue (no Topology, so
    no node check) while explain's verdict is unschedulable; the differential
    expects Kueue's admission in the flavor explain's Kueue part chose."""
    policy = policyfleet.load(write(6, tmp_path), now=NOW)
    found = []
    for g in chosen(policy, 6, 100):
        e = explain(policy, from_manifest(g.job))
        if e.reason == "Unschedulable":
            found.append((e.verdict, predicted(e)))
    assert found
    for verdict, (said, flavor, message) in found:
        assert verdict == "unschedulable" and said == "admitted" and flavor and not message
