"""The PR-comment Markdown: summary first, a hard size budget that trims details first, never
an open code fence, a note saying what was cut, and byte-stable output."""

from __future__ import annotations

from pathlib import Path

import pytest

from hetgitops.diff.formats import markdown, text
from hetgitops.diff.formats.sections import impact_sections, joined
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


def test_text_and_markdown_show_the_same_impact_rows(result: markdown.DiffResult) -> None:
    # one builder per section: the cost table's budget (text only, before) is in both now
    plain, comment = text.render(result), markdown.render(result)
    assert "110,000 -> 110,000" in plain and "110,000 → 110,000" in comment
    for section in impact_sections(result):
        assert section.title in plain and section.title in comment
        for row in section.rows:
            assert joined(row[-1], "->") in plain and joined(row[-1], "→") in comment
