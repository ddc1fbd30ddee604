"""Schema findings in plain words, each with a hint (issue 22 item 12): a missing field, an
empty list, a name of the wrong form, a list where one value goes, the reserved priority
range, a mistyped key (did you mean) and a valid-YAML misindent (the field it belongs under)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hetgitops import api

REPO = Path(__file__).resolve().parents[1]
CASES = [
    ("teams/others.yaml", "  namespaces: [serving, serving-canary]\n", "",
     "the required field namespaces is missing", "add namespaces"),
    ("teams/others.yaml", "namespaces: [serving, serving-canary]", "namespaces: []",
     "spec.namespaces: the list is empty", "at least one"),
    ("teams/others.yaml", "namespaces: [serving, serving-canary]", "namespaces: [Serving]",
     "'Serving' is not of the required form", "lower-case letters, digits and '-'"),
    ("teams/others.yaml", "cohort: inference", "cohort: [inference, research]",
     "spec.cohort: expected text, got a list", "give one value, not a list"),
    ("tiers.yaml", "value: 10000\n", "value: 2000000000\n",
     "spec.value: 2000000000 is above the maximum 1000000000", "reserved for Kubernetes"),
    ("pools/training.yaml", "cardType: a800-80gb", "cardTyp: a800-80gb",
     "unknown field(s) 'cardTyp'", "did you mean cardType?"),
    ("pools/training.yaml", "    reclaim: true", "  reclaim: true",
     "unknown field(s) 'reclaim'", "this field belongs under spec.lending"),
]  # fmt: skip


@pytest.mark.parametrize(("file", "old", "new", "message", "hint"), CASES)
def test_a_schema_finding_reads_plainly_with_a_hint(
    tmp_path: Path, file: str, old: str, new: str, message: str, hint: str
) -> None:
    policies = tmp_path / "policies"
    shutil.copytree(REPO / "policies", policies)
    path = policies / file
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    found = [d for d in api.validate([policies]).diagnostics if d.rule == "schema"]
    assert len(found) == 1, found  # a mistyped key is not also "cardType is missing"
    assert message in found[0].message and hint in found[0].hint
