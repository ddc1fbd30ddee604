"""`diff --base`: an empty ref (a CI step whose `$BASE_SHA` is unset) is a usage error, not the
default base that said "no change" on a branch cutting a quota (issue 33 item 15)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.diff.test_git_cli import commit, diff, edit, repo  # noqa: F401 (fixture)


@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_base_is_a_usage_error(repo: Path, empty: str) -> None:  # noqa: F811
    edit(repo, "quota-cut")
    commit(repo, "cut pretraining")
    result = diff("--base", empty)
    assert result.exit_code == 2, result.output
    assert "base ref is empty" in result.output
    assert "unset variable" in result.output
