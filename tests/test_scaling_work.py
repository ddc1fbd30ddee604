"""Work that must grow linearly with the fleet (counted, not timed): host-quota pairs and
profile-never-admissible try only routes into a team's own pools, and cohort roots are
computed once per policy."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from bench.fleetgen import SMALL, write_policy
from hetgitops.checks import host_quota
from hetgitops.load.documents import load_paths
from hetgitops.model.building import build_policy
from hetgitops.plan import quota_plan


def _policy(tmp_path: Path, **changes: int) -> object:
    spec = dataclasses.replace(SMALL, nodes=960, pools=24, teams=48, **changes)
    loaded = load_paths([write_policy(spec, tmp_path / "policy")])
    policy, problems = build_policy(loaded.documents, [])
    assert problems == []
    return policy


def test_host_quota_pairs_try_only_the_teams_own_pools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = _policy(tmp_path)
    calls = 0
    most = quota_plan.Reach.most

    def counted(self: quota_plan.Reach, *args: object) -> int | None:
        nonlocal calls
        calls += 1
        return most(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(quota_plan.Reach, "most", counted)
    pairs = list(host_quota._admitted(policy))  # type: ignore[arg-type]
    assert pairs
    teams, profiles = len(policy.teams), len(policy.profiles)  # type: ignore[attr-defined]
    quotas = sum(len(t.quotas) for t in policy.teams.values())  # type: ignore[attr-defined]
    # Every team x every route would be teams x pools x profiles (48 x 24 x 4 = 4,608).
    assert calls <= profiles * quotas * 2 < teams * 24 * profiles / 2


def test_never_admissible_tries_only_the_teams_own_pools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """profile-never-admissible asks each candidate team only about the routes into its own
    pools: every route for every team grew with teams x pools (x55 from 5,000 to 50,000 nodes)."""
    import datetime as dt

    from hetgitops.checks import profiles
    from hetgitops.checks.registry import CheckContext

    policy = _policy(tmp_path)
    calls = 0
    most = quota_plan.Reach.most

    def counted(self: quota_plan.Reach, *args: object) -> int | None:
        nonlocal calls
        calls += 1
        return most(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(quota_plan.Reach, "most", counted)
    found = list(profiles.profile_never_admissible(policy, CheckContext(dt.date(2026, 9, 1))))  # type: ignore[arg-type]
    assert found == [] and calls > 0
    teams, profiles_ = len(policy.teams), len(policy.profiles)  # type: ignore[attr-defined]
    quotas = sum(len(t.quotas) for t in policy.teams.values())  # type: ignore[attr-defined]
    assert calls <= profiles_ * quotas < teams * 24 * profiles_ / 2


def test_cohort_roots_are_computed_once_per_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = _policy(tmp_path, cohort_depth=4, cohort_fanout=2)
    computed = 0
    roots = quota_plan._roots

    def counted(policy: object) -> dict[str, str]:
        nonlocal computed
        computed += 1
        return roots(policy)  # type: ignore[arg-type]

    monkeypatch.setattr(quota_plan, "_roots", counted)
    cohorts = [c.name for c in policy.fleet.cohorts]  # type: ignore[attr-defined]
    assert {quota_plan.cohort_root(policy, c) for c in cohorts * 50} == {"root"}  # type: ignore[arg-type]
    assert quota_plan.cohort_root(policy, "not-declared") == "not-declared"  # type: ignore[arg-type]
    assert computed == 1


def test_jobs_output_checks_only_the_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    """`jobs` never writes the render tree, so it does not pay for checking it."""
    import datetime as dt

    from hetgitops import api
    from hetgitops.conformance import output_checks

    checked: list[str] = []
    check = output_checks.check

    def recording(manifests: list[Any], *args: Any, **kwargs: Any) -> Any:
        checked.extend(m.target for m in manifests)
        return check(manifests, *args, **kwargs)

    monkeypatch.setattr(output_checks, "check", recording)
    repo = Path(__file__).resolve().parents[1]
    result = api.jobs([repo / "policies"], api.Options(now=dt.date(2026, 9, 1)))
    assert result.manifests and not result.failed()
    assert set(checked) == {"jobs"}


def test_host_entries_are_computed_once_per_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Reach` and the Kueue compiler both read every plan's cpu/memory entries (Fraction and
    Decimal arithmetic): computed once per team and pool, not once per reader."""
    import datetime as dt

    from hetgitops import api

    computed: list[tuple[str, str]] = []
    entries = quota_plan._host_entries

    def counted(policy: Any, team: Any, plan: Any) -> Any:
        computed.append((team.name, plan.pool.name))
        return entries(policy, team, plan)

    monkeypatch.setattr(quota_plan, "_host_entries", counted)
    spec = dataclasses.replace(SMALL, nodes=960, pools=24, teams=48)
    result = api.validate(
        [write_policy(spec, tmp_path / "policy")], api.Options(dt.date(2026, 9, 1))
    )
    assert result.manifests and not result.failed()
    plans = sum(len(quota_plan.team_plan(result.policy, t)) for t in result.policy.teams.values())  # type: ignore[union-attr]
    assert len(computed) == len(set(computed)) == plans


def test_diff_hazards_walk_the_render_a_fixed_number_of_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flavor hazards find the retiring flavors once per side, not once per flavor (each
    walk reads every manifest: flavors x manifests)."""
    import datetime as dt

    from hetgitops import api
    from hetgitops.diff import hazards
    from hetgitops.diff.hazards import flavor_transitions, flavors, topology

    spec = dataclasses.replace(SMALL, nodes=960, pools=24, teams=48)
    result = api.render([write_policy(spec, tmp_path / "policy")], api.Options(dt.date(2026, 9, 1)))
    assert len([m for m in result.manifests if m.kind == "ResourceFlavor"]) == 24
    walks = 0
    retiring = flavors.retiring

    def counted(manifests: Any) -> set[str]:
        nonlocal walks
        walks += 1
        return retiring(manifests)

    for module in (flavors, flavor_transitions, topology):  # each imports it by name
        monkeypatch.setattr(module, "retiring", counted)
    assert hazards.hazards(result.manifests, result.manifests, []) == []
    assert 0 < walks <= 8  # counted: the patch reached every module that calls it


def test_diff_hazards_read_each_objects_kind_a_fixed_number_of_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hazards index each side's manifests by kind once (they ask for ~30 kinds: a walk
    of every manifest per kind was a third of diff's day-2 stage at 5,000 nodes)."""
    import datetime as dt

    from hetgitops import api
    from hetgitops.diff import hazards
    from hetgitops.output.manifests import Manifest

    spec = dataclasses.replace(SMALL, nodes=960, pools=24, teams=48)
    result = api.render([write_policy(spec, tmp_path / "policy")], api.Options(dt.date(2026, 9, 1)))
    reads = 0
    kind = Manifest.kind

    def counted(self: Manifest) -> str:
        nonlocal reads
        reads += 1
        return kind.fget(self)  # type: ignore[attr-defined,no-any-return]

    monkeypatch.setattr(Manifest, "kind", property(counted))
    assert hazards.hazards(result.manifests, result.manifests, []) == []
    assert reads <= 3 * len(result.manifests)  # once per side (2x), with slack; was ~60x
