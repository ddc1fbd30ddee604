"""The CLI raises the cyclic collector's first threshold (cli.common.tune_collector): at
CPython's 700 the collector walked the whole policy model three times per `jobs` run at the
5,000-node fleet, 8-10 % of validate and jobs for no memory returned (issue 24)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from hetgitops.cli.common import CLI_GC_THRESHOLD, tune_collector
from hetgitops.cli.main import main


@pytest.fixture
def threshold() -> Iterator[None]:
    saved = gc.get_threshold()
    try:
        yield
    finally:
        gc.set_threshold(*saved)


def test_a_command_runs_with_the_raised_threshold(threshold: None) -> None:
    gc.set_threshold(700, 10, 10)
    done = CliRunner().invoke(main, ["rules"])
    assert done.exit_code == 0, done.output
    assert gc.get_threshold() == (CLI_GC_THRESHOLD, 10, 10)


def test_a_larger_or_disabled_threshold_is_kept(threshold: None) -> None:
    gc.set_threshold(50_000, 5, 5)
    tune_collector()
    assert gc.get_threshold() == (50_000, 5, 5)
    gc.set_threshold(0, 10, 10)
    tune_collector()
    assert gc.get_threshold() == (0, 10, 10)
