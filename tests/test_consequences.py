"""Findings that follow from an earlier one are consequences of it, not independent errors
(issue 7, item 7): a file that does not load, a document the schema rejects, a MIG profile the
card does not have. The root cause alone still fails validation (exit 1)."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from hetgitops import api
from hetgitops.cli import main as cli
from hetgitops.diagnostics import Cause, Diagnostic, Span, independent
from hetgitops.load import losses
from hetgitops.load.documents import KINDS, load_sources

REPO = Path(__file__).resolve().parents[1]
NOW = dt.date(2026, 12, 1)
TEAMS = Path("teams") / "training.yaml"
OTHERS = Path("teams") / "others.yaml"
BUNDLED_WARNINGS = ("job-integration", "kueue-volcano-share-pool")


@pytest.fixture
def bundled(tmp_path: Path) -> Path:
    """A copy of the bundled policies to break."""
    copy = tmp_path / "policies"
    shutil.copytree(REPO / "policies", copy)
    return copy


def validate(policies: Path) -> list[Diagnostic]:
    """The findings, less the bundled fleet's two warnings (job-integration: PyTorchJob on Kueue
    0.19; kueue-volcano-share-pool: ascend-910b), which no edit here touches."""
    found = api.validate([policies], api.Options(now=NOW)).diagnostics
    return [d for d in found if d.rule not in BUNDLED_WARNINGS]


def edit(path: Path, old: str, new: str, *, first: bool = False) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1 or (first and old in text), old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_the_bundled_policies_are_clean(bundled: Path) -> None:
    assert validate(bundled) == []


def test_utf16_tiers_file_is_one_error_and_its_references_are_consequences(bundled: Path):
    tiers = bundled / "tiers.yaml"
    tiers.write_bytes(tiers.read_text(encoding="utf-8").encode("utf-16"))
    found = validate(bundled)
    (root,) = independent(found)
    assert (root.rule, root.span.file, root.span.line) == ("encoding", str(tiers), 1)
    following = [d for d in found if d.consequence_of is not None]
    # Before: 1 encoding error and 21 unresolved-reference errors.
    assert len(following) == 21
    assert {d.rule for d in following} == {"unresolved-reference"}
    assert {d.consequence_of for d in following} == {root.cause}
    assert all("which did not load" in d.hint for d in following)


def test_utf16_tiers_file_counts_one_error_and_still_exits_1(bundled: Path) -> None:
    tiers = bundled / "tiers.yaml"
    tiers.write_bytes(tiers.read_text(encoding="utf-8").encode("utf-16"))
    runner = CliRunner()
    text = runner.invoke(cli.main, ["validate", str(bundled), "--now", "2026-12-01"])
    assert text.exit_code == 1
    # The warnings: BUNDLED_WARNINGS, untouched by the edit.
    assert text.stdout.splitlines()[-1].startswith("1 error(s), 2 warning(s), 21 consequence(s)")
    as_json = runner.invoke(
        cli.main, ["validate", str(bundled), "--now", "2026-12-01", "--format", "json"]
    )
    assert as_json.exit_code == 1
    summary = json.loads(as_json.stdout)["summary"]
    assert (summary["errors"], summary["consequences"]) == (1, 21)


def test_a_typo_is_still_its_own_error_while_a_file_is_lost(bundled: Path) -> None:
    # tiers.yaml did not load, but its text shows it defines no tier 'trainig': the typo is an
    # independent mistake, and the hint finds the near miss in the lost file.
    tiers = bundled / "tiers.yaml"
    tiers.write_bytes(tiers.read_text(encoding="utf-8").encode("utf-16"))
    edit(bundled / TEAMS, "tiers: [training, dev]", "tiers: [trainig, dev]", first=True)
    typo = [d for d in independent(validate(bundled)) if d.rule == "unresolved-reference"]
    assert [(d.span.line, d.span.column) for d in typo] == [(13, 11)]
    assert "did you mean 'training'?" in typo[0].hint


def test_yaml_syntax_error_in_a_teams_file_does_not_cascade(bundled: Path) -> None:
    edit(
        bundled / TEAMS,
        "{pool: a100-transition, cards: 8}",
        "{pool: a100-transition, cards: 8",
        first=True,
    )
    found = validate(bundled)
    # Before: the syntax error, then every profile naming a team of that file failed.
    assert [d.rule for d in independent(found)] == ["syntax"]
    syntax = independent(found)[0]
    assert all(d.consequence_of == syntax.cause for d in found if d is not syntax)
    assert any(d.rule == "unresolved-reference" for d in found)


def test_an_unreadable_file_makes_every_unresolved_name_a_consequence(bundled: Path) -> None:
    # Binary junk cannot say what it defined: it may have defined anything.
    (bundled / "zz-junk.yaml").write_bytes(b"\x00\x01\x02")
    edit(bundled / TEAMS, "tiers: [training, dev]", "tiers: [trainig, dev]", first=True)
    found = validate(bundled)
    # The typo'd tier might be defined in the junk: a consequence. (That the team then does not
    # allow the profile's real tier is a finding of its own.)
    assert [d.rule for d in found if d.rule == "unresolved-reference"] == ["unresolved-reference"]
    assert [d.rule for d in found if d.consequence_of] == ["unresolved-reference"]
    assert "not-text" in {d.rule for d in independent(found)}


def test_unknown_mig_profile_is_not_priced_as_a_whole_gpu(bundled: Path) -> None:
    # research's 28 x 1g.10gb on H100 plus 28 instances of a profile the H100 does not have.
    # Before: priced as 28 whole GPUs, a made-up budget-exceeded of 77,380 USD a month.
    edit(bundled / OTHERS, "mig: {1g.10gb: 28}", "mig: {1g.10gb: 28, 1g.5gb: 28}")
    found = validate(bundled)
    assert [(d.rule, d.span.line) for d in found] == [("mig-profile-unknown", 33)]


def test_unknown_mig_profile_leaves_a_real_overrun_reported(bundled: Path) -> None:
    # What is known is over budget by itself: that is an independent error ("at least").
    edit(bundled / OTHERS, "mig: {1g.10gb: 28}", "mig: {1g.10gb: 28, 1g.5gb: 28}")
    edit(bundled / OTHERS, "budget: {monthly: 25000", "budget: {monthly: 2000")
    (budget,) = [d for d in validate(bundled) if d.rule == "budget-exceeded"]
    assert budget.consequence_of is None
    assert "at least 14,016.00" in budget.message


def test_unknown_mig_profile_makes_no_capacity_total(bundled: Path) -> None:
    # Under migStrategy single an instance is an nvidia.com/gpu: an unknown profile's 99
    # instances would otherwise be summed into the pool's GPUs.
    edit(bundled / OTHERS, "mig: {1g.10gb: 28}", "mig: {1g.10gb: 28, 1g.5gb: 99}")
    found = validate(bundled)
    assert "quota-exceeds-capacity" not in {d.rule for d in found}


def test_schema_invalid_document_references_are_consequences(bundled: Path) -> None:
    edit(bundled / "tiers.yaml", "  value: 100000\n", "  value: high\n")
    found = validate(bundled)
    roots = independent(found)
    assert [d.rule for d in roots] == ["schema"]
    assert {d.consequence_of for d in found if d is not roots[0]} == {roots[0].cause}


def test_loss_scan_reads_kinds_and_names() -> None:
    text = (
        "apiVersion: hetgitops.io/v1alpha1\nkind: PriorityTier\nmetadata:\n  name: gold\n"
        "spec: {value: 1}\n---\nkind: Team\nmetadata: {name: ml, labels: {}}\n---\n"
        "# only a comment\n---\nkind: Poool\nmetadata:\n  name: x\n"
        "---\nkind: Widget\nmetadata:\n  name: y\n"
    )
    cause = Cause(Span("t.yaml", 1, 1), "encoding")
    loss = losses.of_file(cause, text.encode("utf-16"), KINDS)
    # A mistyped kind is read as the kind it plainly means; an unknown one as any kind.
    expected = {("PriorityTier", "gold"), ("Team", "ml"), ("Pool", "x"), ("*", "y")}
    assert loss.definitions == expected
    assert loss.complete


def test_a_document_without_a_readable_name_leaves_the_loss_open() -> None:
    loaded = load_sources([("t.yaml", b"kind: Team\nmetadata: [\n")])
    (loss,) = loaded.losses
    assert not loss.complete


# Issue 22 item 3: the policy's own unresolved names (and an unknown kind) fold what follows.
TYPOS = [
    pytest.param(OTHERS, "tiers: [online-inference]", "tiers: [online-inferenc]",
                 "unresolved-reference", {"tier-not-allowed": 3}, id="team-tier"),
    pytest.param(Path("pools") / "training.yaml", "cardType: a800-80gb", "cardType: a800-80g",
                 "unresolved-reference", {"profile-no-eligible-card": 1}, id="pool-card-type"),
    pytest.param(OTHERS, "kind: Team\n", "kind: Teams\n",
                 "unknown-kind", {"tier-not-allowed": 3}, id="kind-Teams"),
    pytest.param(Path("pools") / "inference.yaml", "profiles: {1g.10gb: 7}",
                 "profiles: {1g.11gb: 7}", "mig-profile-unknown",
                 {"profile-no-eligible-card": 1, "quota-resource-unavailable": 2},
                 id="layout-mig-profile"),
]  # fmt: skip


@pytest.mark.parametrize(("file", "old", "new", "cause", "following"), TYPOS)
def test_one_typo_is_one_error_and_what_follows_is_its_consequence(
    bundled: Path, file: Path, old: str, new: str, cause: str, following: dict[str, int]
) -> None:
    edit(bundled / file, old, new, first=True)
    found = validate(bundled)
    (root,) = independent(found)
    assert (root.rule, root.span.file) == (cause, str(bundled / file))
    after = [d for d in found if d.consequence_of is not None]
    assert {d.consequence_of for d in after} == {root.cause}
    assert {r: sum(d.rule == r for d in after) for r in following} == following
    assert "1g.11gb" not in " ".join(d.hint for d in after)  # never offered as valid


def test_a_quota_in_a_mistyped_pool_folds_what_the_team_cannot_run(bundled: Path) -> None:
    edit(bundled / OTHERS, "{pool: l40s-infer, cards: 24", "{pool: l40s-infr, cards: 24")
    (root,) = independent(validate(bundled))
    assert root.rule == "unresolved-reference" and "did you mean 'l40s-infer'" in root.hint


def test_a_mistyped_kind_suggests_the_kind_it_means(bundled: Path) -> None:
    edit(bundled / OTHERS, "kind: Team\n", "kind: Teams\n", first=True)
    (root,) = independent(validate(bundled))
    assert root.hint.startswith("did you mean 'Team'?")
