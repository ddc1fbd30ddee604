"""diff shares work between its two sides: a file both hold byte for byte is parsed once
(load.ParseMemo), data the schema passed is not checked again (schema.CleanMemo), and head's
rendered objects take the findings of base's equal objects (output_checks.Memo). The result
must be what two separate analyses give, so a reused finding can never hide one the change
introduced, nor keep one it resolved, and every location names the side's own file."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest

from hetgitops import api
from hetgitops.conformance import output_checks
from hetgitops.diagnostics import Diagnostic
from hetgitops.diff.run import DiffResult, compare
from hetgitops.load.changed import changed_values
from hetgitops.load.documents import ParseMemo, load_sources
from hetgitops.load.git_source import Side, read_folder, select_sides
from hetgitops.model import schema
from hetgitops.model.policy import Policy
from hetgitops.output.manifests import Manifest
from tests.diff.scenarios import SCENARIOS, build
from tests.diff.test_golden import NOW

POLICIES = Path(__file__).resolve().parents[2] / "policies"


@pytest.fixture(scope="module")
def rendered() -> tuple[Policy, list[Manifest]]:
    result = api.validate([POLICIES], api.Options(now=NOW, check_output=False))
    assert result.policy is not None and result.manifests
    return result.policy, result.manifests


def _key(d: Diagnostic) -> tuple[object, ...]:
    return (d.rule, int(d.severity), d.message, d.span, d.path)


def _bad_label(manifests: list[Manifest], index: int) -> list[Manifest]:
    """The render with one object's labels broken (same kind and name: the memo's key)."""
    obj = copy.deepcopy(dict(manifests[index].obj))
    obj["metadata"]["labels"] = {**obj["metadata"].get("labels", {}), "bad key!": "x"}
    edited = dataclasses.replace(manifests[index], obj=obj)
    return [*manifests[:index], edited, *manifests[index + 1 :]]


def test_a_changed_object_is_checked_again(rendered: tuple[Policy, list[Manifest]]) -> None:
    policy, manifests = rendered
    index = next(i for i, m in enumerate(manifests) if m.kind == "ClusterQueue")
    broken = _bad_label(manifests, index)
    memo = output_checks.Memo()
    assert output_checks.check(manifests, policy, memo=memo) == output_checks.check(
        manifests, policy
    )
    shared = output_checks.check(broken, policy, memo=memo)
    assert sorted(map(_key, shared)) == sorted(map(_key, output_checks.check(broken, policy)))
    assert any("'bad key!' is not a valid label key" in d.message for d in shared)
    # ...and the finding goes away again when the object is mended.
    mended = output_checks.check(manifests, policy, memo=memo)
    assert not any("bad key!" in d.message for d in mended)


def test_findings_are_reused_only_under_the_same_versions(
    rendered: tuple[Policy, list[Manifest]],
) -> None:
    """A ClusterQueue with 20 flavors in a group is fine for Kueue 0.14+ (64) and too many
    for older ones (16): the equal object under the other Kueue generation is checked anew."""
    policy, manifests = rendered
    assert policy.fleet is not None
    index = next(i for i, m in enumerate(manifests) if m.kind == "ClusterQueue")
    obj = copy.deepcopy(dict(manifests[index].obj))
    group = obj["spec"]["resourceGroups"][0]
    group["flavors"] = [{**group["flavors"][0], "name": f"flavor-{i}"} for i in range(20)]
    wide = [*manifests[:index], dataclasses.replace(manifests[index], obj=obj)]
    legacy = dataclasses.replace(policy, fleet=dataclasses.replace(policy.fleet, kueue=(0, 13)))
    memo = output_checks.Memo()
    assert not any("20 flavors" in d.message for d in output_checks.check(wide, policy, memo=memo))
    shared = output_checks.check(wide, legacy, memo=memo)
    assert sorted(map(_key, shared)) == sorted(map(_key, output_checks.check(wide, legacy)))
    assert any("at most 16" in d.message for d in shared)


def test_a_reused_object_is_reported_at_its_own_policy_line(
    rendered: tuple[Policy, list[Manifest]],
) -> None:
    policy, manifests = rendered
    index = next(i for i, m in enumerate(manifests) if m.kind == "ClusterQueue")
    broken = _bad_label(manifests, index)
    memo = output_checks.Memo()
    output_checks.check(broken, policy, memo=memo)
    moved = dataclasses.replace(
        broken[index], origin=dataclasses.replace(broken[index].origin, line=999)
    )
    again = output_checks.check([*broken[:index], moved, *broken[index + 1 :]], policy, memo=memo)
    assert {d.span.line for d in again if "bad key!" in d.message} == {999}


def shared_diff(root: Path, options: api.Options) -> tuple[tuple[Side, Side], DiffResult]:
    """`diff --base-dir base --head-dir head` in `root`, sharing all it shares."""
    sides = select_sides(
        [], base=None, head=None, base_dir=Path("base"), head_dir=Path("head"), cwd=root
    )
    return sides, compare(*sides, options)


def separate_analyses(options: api.Options) -> tuple[Side, list[api.Result]]:
    """./base and ./head each read and analysed alone, as diff would without sharing (head
    with the changed lines diff gives it); and head's side as read."""
    base, head = read_folder([Path("base")], "base"), read_folder([Path("head")], "head")
    changed = changed_values(base.loaded.documents, head.loaded.documents)
    return head, [
        api.analyse(base.loaded, options, downgrade=options.render_warnings),
        api.analyse(
            head.loaded,
            dataclasses.replace(options, changed=changed),
            downgrade=options.render_warnings,
        ),
    ]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_diff_findings_equal_two_separate_analyses(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build(tmp_path, SCENARIOS[name])
    monkeypatch.chdir(tmp_path)
    options = api.Options(now=NOW)
    shared, result = shared_diff(tmp_path, options)
    head, alone = separate_analyses(options)
    # The sides read alone, without the parse shared: what every reused document must equal.
    assert shared[1].loaded.documents == head.loaded.documents
    assert shared[1].loaded.diagnostics == head.loaded.diagnostics
    for side, separate in zip((result.base, result.head), alone, strict=True):
        assert list(map(_key, side.result.diagnostics)) == list(map(_key, separate.diagnostics))


def _files(root: Path) -> list[tuple[str, bytes]]:
    return [
        (f"{root.name}/{p.relative_to(root)}", p.read_bytes()) for p in sorted(root.rglob("*.yaml"))
    ]


def test_a_file_both_sides_hold_is_parsed_once_under_each_name() -> None:
    memo = ParseMemo()
    base = load_sources(
        [(name.replace("policies/", "base/"), raw) for name, raw in _files(POLICIES)], memo
    )
    head = load_sources(
        [(name.replace("policies/", "head/"), raw) for name, raw in _files(POLICIES)], memo
    )
    alone = load_sources(
        [(name.replace("policies/", "head/"), raw) for name, raw in _files(POLICIES)]
    )
    assert head.documents == alone.documents
    for old, new in zip(base.documents, head.documents, strict=True):
        assert new.data is old.data  # one parse (the memo was used)
        assert new.file.startswith("head/")
        assert all(span.file == new.file for span in new.source.values.values())
        assert all(span.file == new.file for span in new.source.keys.values())


def test_a_file_with_a_finding_is_parsed_again() -> None:
    text = b"apiVersion: hetgitops.io/v1alpha1\nkind: Team\nkind: Team\nmetadata: {name: a}\n"
    memo = ParseMemo()
    first = load_sources([("base/team.yaml", text)], memo)
    second = load_sources([("head/team.yaml", text)], memo)
    assert [d.rule for d in first.diagnostics] == ["duplicate-key"]
    assert [(d.rule, d.span.file) for d in second.diagnostics] == [
        ("duplicate-key", "head/team.yaml")
    ]
    assert second.losses and second.losses[0].cause.span.file == "head/team.yaml"


def test_shared_data_skips_the_schema_only_while_it_passed() -> None:
    memo = ParseMemo()
    files = _files(POLICIES)
    base = load_sources(files, memo)
    clean = schema.CleanMemo()
    assert not any(schema.check_documents(base.documents, clean))
    assert all(clean.known(d) for d in base.documents)
    # Head: the same files but one Team made invalid; that document alone is checked again.
    team = next(name for name, raw in files if b"kind: Team" in raw)
    head_files = [
        (name, raw.replace(b"quotas:", b"quotaz:", 1) if name == team else raw)
        for name, raw in files
    ]
    head = load_sources(head_files, memo)
    found = schema.check_documents(head.documents, clean)
    alone = schema.check_documents(head.documents)
    assert found == alone
    flagged = {d.file for d, problems in zip(head.documents, found, strict=True) if problems}
    assert flagged == {team}
