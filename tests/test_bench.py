"""bench/fleetgen.py: every generated fleet is clean (no error, no warning) at several shapes,
and the same spec gives the same bytes."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pytest

from bench.fleetgen import SMALL, FleetSpec, generate, write_policy
from hetgitops import api
from hetgitops.diagnostics import Severity

SHAPES = {
    "small": SMALL,
    "flat-cohorts": dataclasses.replace(SMALL, cohort_depth=0),
    "deep-cohorts": dataclasses.replace(SMALL, cohort_depth=4, cohort_fanout=2),
    "no-sharing": dataclasses.replace(SMALL, mig_every=0, timeslice_every=0, isolated_every=0),
    "many-teams": FleetSpec(nodes=600, pools=6, teams=90, cards=3, quotas_per_team=3),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_generated_fleet_is_clean(shape: str, tmp_path: Path) -> None:
    folder = write_policy(SHAPES[shape], tmp_path / "policy")
    options = api.Options(now=dt.date(2026, 9, 1))
    result = api.render([folder], options)
    problems = [d for d in result.diagnostics if d.severity >= Severity.WARNING]
    assert problems == []
    assert result.manifests
    jobs = api.jobs([folder], options)
    assert [d for d in jobs.diagnostics if d.severity >= Severity.WARNING] == []
    assert jobs.manifests


def test_generation_is_deterministic_and_scales_teams() -> None:
    assert generate(SMALL) == generate(SMALL)
    big = generate(SMALL.scaled(2))
    teams = sum(len(docs) for name, docs in big.items() if name.startswith("teams/"))
    assert teams == SMALL.teams * 2
