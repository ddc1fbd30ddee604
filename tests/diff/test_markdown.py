"""The PR-comment Markdown: summary first, a hard size budget that trims details first, never
an open code fence, a note saying what was cut, and byte-stable output."""

from __future__ import annotations

from pathlib import Path

import pytest

from hetgitops.diff.formats import markdown
from tests.diff.test_golden import run_scenario


@pytest.fixture
def result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> markdown.DiffResult:
    return run_scenario(tmp_path, monkeypatch, "mig-repartition")


def _fences_closed(text: str) -> bool:
    return sum(line.startswith("```") for line in text.splitlines()) % 2 == 0


def test_full_report_fits_and_says_nothing_was_cut(result: markdown.DiffResult) -> None:
    text = markdown.render(result)
    assert len(text) <= markdown.BUDGET and "✂️" not in text
    assert text.startswith(markdown.MARKER + "\n### hetgitops diff")
    assert text == markdown.render(result)  # stable: a bot can edit one comment in place


@pytest.mark.parametrize("share", [0.3, 0.5, 0.7, 0.9])
def test_small_budget_cuts_details_before_the_summary(
    result: markdown.DiffResult, share: float
) -> None:
    full = markdown.render(result)
    budget = int(len(full) * share)
    text = markdown.render(result, budget)
    assert len(text) <= budget
    assert _fences_closed(text)
    assert "✂️ Cut to fit" in text
    summary = full[: full.index("<details>")]
    assert text.startswith(summary)  # the summary table and risk flags are never trimmed
    assert text.count("<details>") == text.count("</details>")


def test_cut_note_names_what_was_cut(result: markdown.DiffResult) -> None:
    text = markdown.render(result, len(markdown.render(result)) // 2)
    note = text[text.index("✂️") :]
    assert "object(s)" in note and "--format json" in note


def test_tiny_budget_still_closes_fences(result: markdown.DiffResult) -> None:
    text = markdown.render(result, 700)
    assert len(text) <= 700 and _fences_closed(text) and "✂️" in text
