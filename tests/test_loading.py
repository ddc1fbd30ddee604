"""Load stage: every hostile or broken input becomes a located diagnostic, never a traceback.

Tests assert `(rule, line, column)`, not wording (rule ids are public API, messages are not).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from hetgitops import api
from hetgitops.checks import RULES
from hetgitops.cli import main as cli
from hetgitops.load import documents as loading
from hetgitops.load.documents import LOAD_RULES, load_paths, load_sources
from hetgitops.load.policyfiles import MAX_FILE_BYTES
from hetgitops.load.yamllimits import MAX_DEPTH

REPO = Path(__file__).resolve().parents[1]

HEAD = "apiVersion: hetgitops.io/v1alpha1\nkind: PriorityTier\n"
TIER = HEAD + "metadata:\n  name: gold\nspec:\n  value: 10\n"
BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
    for prev, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)


def found(text: str | bytes, name: str = "p.yaml") -> list[tuple[str, int, int]]:
    raw = text.encode() if isinstance(text, str) else text
    result = load_sources([(name, raw)])
    return sorted((d.rule, d.span.line, d.span.column) for d in result.diagnostics)


def loaded(text: str) -> loading.LoadResult:
    return load_sources([("p.yaml", text.encode())])


# -- one case per adversarial input: (text, expected findings) ---------------------------------

CASES: dict[str, tuple[str | bytes, list[tuple[str, int, int]]]] = {
    "duplicate-key": (
        HEAD + "metadata:\n  name: a\n  name: b\nspec: {value: 1}\n",
        [("duplicate-key", 5, 3)],
    ),
    "duplicate-key-nested": (
        HEAD + "metadata: {name: a}\nspec:\n  value: 1\n  x:\n    - {y: 1, y: 2}\n",
        [("duplicate-key", 7, 14)],
    ),
    "duplicate-key-twice": (
        TIER + "spec:\n  value: 3\nmetadata: {}\n",
        [("duplicate-key", 7, 1), ("duplicate-key", 9, 1)],
    ),
    "syntax-unclosed-flow": (HEAD + "metadata: {name: a\nspec: 1\n", [("syntax", 4, 5)]),
    "syntax-bad-indent": ("a:\n  b: 1\n c: 2\n", [("syntax", 3, 2)]),
    "tab-indentation": (HEAD + "metadata:\n\tname: a\n", [("syntax", 4, 1)]),
    "control-character": ("a: b\x07c\n", [("syntax", 1, 5)]),
    "list-document": ("- 1\n- 2\n", [("not-a-mapping", 1, 1)]),
    "scalar-document": ("\n\njust text\n", [("not-a-mapping", 3, 1)]),
    "unknown-api-version": ("kind: Pool\napiVersion: v1\n", [("unknown-api-version", 2, 13)]),
    "missing-api-version": ("kind: Pool\n", [("unknown-api-version", 1, 1)]),
    "unknown-kind": ("apiVersion: hetgitops.io/v1alpha1\nkind: Pod\n", [("unknown-kind", 2, 7)]),
    "duplicate-name": (
        TIER + "---\n" + TIER.replace("value: 10", "value: 20"),
        [("duplicate-name", 11, 9)],
    ),
    "file-too-large": (b"#" * (MAX_FILE_BYTES + 1), [("file-too-large", 1, 1)]),
    "billion-laughs": (BOMB, [("alias-bomb", 6, 12)]),
    "wide-alias-bomb": (
        "a: &a " + "x" * 100_000 + "\nb: &b [" + ", ".join(["*a"] * 100) + "]\n"
        "c: [" + ", ".join(["*b"] * 100) + "]\n",
        [("alias-bomb", 2, 340)],
    ),
    "recursive-alias-sequence": ("a: &a [1, *a]\n", [("recursive-alias", 1, 11)]),
    "recursive-alias-mapping": ("a: &a\n  b: *a\n", [("recursive-alias", 2, 6)]),
    "undefined-alias": ("a: *nowhere\n", [("syntax", 1, 4)]),
    "not-utf8": (HEAD.encode() + b"metadata: {name: caf\xe9}\n", [("encoding", 3, 21)]),
    "utf16": ("a: 1\n".encode("utf-16"), [("encoding", 1, 1)]),
    "binary": (b"\x7fELF\x02\x01\x01\x00\x00", [("not-text", 1, 1)]),
    "empty-file": ("", [("empty-file", 1, 1)]),
    "only-comments": ("# nothing here\n\n# yet\n", [("empty-file", 1, 1)]),
    "only-separators": ("---\n---\n...\n", [("empty-file", 1, 1)]),
    "python-object-tag": (
        HEAD + "metadata: !!python/object:os.system {name: a}\n",
        [("syntax", 3, 11)],
    ),
    "python-apply-tag": ("a: !!python/object/apply:os.system ['true']\n", [("syntax", 1, 4)]),
    "python-name-tag": ("a: !!python/name:os.system ''\n", [("syntax", 1, 4)]),
    "local-tag": ("a: !Ref foo\n", [("syntax", 1, 4)]),
    "binary-tag": ("a: !!binary aGVsbG8=\n", [("syntax", 1, 4)]),
    "set-tag": ("!!set {a, b}\n", [("syntax", 1, 1)]),
    "complex-key": ("? [a, b]\n: 1\n", [("syntax", 1, 3)]),
    "long-key": ("k" * 2000 + ": 1\n", [("syntax", 1, 2001)]),
    "bad-int": ("a: !!int twelve\n", [("syntax", 1, 4)]),
    "huge-int": ("a: 1" + "0" * 5000 + "\n", [("syntax", 1, 4)]),
    # PyYAML and go-yaml v2 keep the last `<<`, go-yaml v3 refuses: never pick one silently.
    "two-merge-keys": (
        TIER + "x: &a {x: 1}\ny: &b {x: 2}\nc:\n  <<: *a\n  <<: *b\n",
        [("duplicate-key", 11, 3)],
    ),
    "two-merge-keys-flow": (
        TIER + "x: &a {x: 1}\nc: {<<: *a, <<: {y: 2}}\n",
        [("duplicate-key", 8, 13)],
    ),
    "bad-merge": ("m:\n  <<: [1, 2]\n", [("syntax", 2, 7)]),
    "deep-lists": ("a: " + "[" * 100_000 + "]" * 100_000 + "\n", [("too-deep", 1, 67)]),
    "deep-mappings": (
        "".join("  " * i + f"k{i}:\n" for i in range(100)) + "  " * 100 + "x: 1\n",
        [("too-deep", 65, 129)],
    ),
    "deep-dashes": ("- " * 500_000 + "x\n", [("too-deep", 1, 129)]),
}


# libyaml >= 0.2.6 (PyYAML >= 6.0.4 wheels) rejects flow nesting deeper than 1000 while
# scanning ahead, before hetgitops' own guard at depth 65 sees the events.
LIBYAML_DEPTH_LIMIT = {"deep-lists": [("too-deep", 1, 1003)]}


@pytest.mark.parametrize("name", sorted(CASES))
def test_adversarial_input_is_a_located_diagnostic(name: str) -> None:
    text, expected = CASES[name]
    started = time.perf_counter()
    assert found(text) in (expected, LIBYAML_DEPTH_LIMIT.get(name))
    assert time.perf_counter() - started < 5, "a hostile file must not take long to reject"


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_load_rule_is_documented(name: str) -> None:
    for rule, _, _ in CASES[name][1]:
        assert rule in LOAD_RULES


@pytest.mark.parametrize("name", sorted(CASES))
def test_cli_rejects_adversarial_file_with_exit_1(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, _ = CASES[name]
    (tmp_path / "p.yaml").write_bytes(text.encode() if isinstance(text, str) else text)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli.main, ["validate", "p.yaml", "--format", "json"])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert '"rule":' in result.stdout


# -- what is read, and what is not -----------------------------------------------------------


def test_duplicate_names_across_files_point_at_the_second() -> None:
    result = load_sources([("a.yaml", TIER.encode()), ("b.yaml", ("\n" + TIER).encode())])
    found = [(d.rule, d.span.file, d.span.line, d.span.column) for d in result.diagnostics]
    assert found == [("duplicate-name", "b.yaml", 5, 9)]
    assert "a.yaml:4:9" in result.diagnostics[0].message


def test_a_duplicate_is_reported_where_the_change_added_it(tmp_path: Path) -> None:
    """Issue 22 item 4: a second `Team research` in a new teams/extra.yaml (which sorts before
    others.yaml) is blamed on extra.yaml when the change is known, not on the original."""
    policies = tmp_path / "policies"
    shutil.copytree(REPO / "policies", policies)
    original = (policies / "teams" / "others.yaml").read_text()
    research = next(d for d in original.split("---\n") if "name: research" in d)
    extra = policies / "teams" / "extra.yaml"
    extra.write_text(research)
    plain = api.validate([policies]).diagnostics
    (duplicate,) = [d for d in plain if d.rule == "duplicate-name"]
    assert {r.span.file for r in duplicate.related} == {
        str(extra),
        str(policies / "teams" / "others.yaml"),
    }
    lines = frozenset(range(1, research.count("\n") + 2))
    changed = api.Options(changed={str(extra): lines})
    (focused,) = [
        d for d in api.validate([policies], changed).diagnostics if d.rule == "duplicate-name"
    ]
    assert (focused.span.file, focused.span.line) == (str(extra), 4)
    assert str(policies / "teams" / "others.yaml") in focused.message  # the other definition


def test_same_name_in_two_kinds_is_fine() -> None:
    pool_named_gold = "apiVersion: hetgitops.io/v1alpha1\nkind: Pool\nmetadata: {name: gold}\n"
    assert found(TIER + "---\n" + pool_named_gold) == []


def test_load_rule_ids_are_not_semantic_rule_ids() -> None:
    assert not set(LOAD_RULES) & set(RULES)


def test_duplicate_key_keeps_the_document_with_the_first_value() -> None:
    result = loaded(HEAD + "metadata:\n  name: a\n  name: b\nspec: {value: 1}\n")
    assert [d.name for d in result.documents] == ["a"]


def test_document_with_a_forbidden_tag_is_dropped() -> None:
    assert loaded(HEAD + "metadata: !!python/object:os.system {name: a}\n").documents == []


def test_python_tags_never_run_code(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    loaded(f"a: !!python/object/apply:os.system ['touch {marker}']\n")
    assert not marker.exists()


def test_documents_before_a_syntax_error_are_kept() -> None:
    result = loaded(TIER + "---\n" + "a: [\n")
    assert [d.name for d in result.documents] == ["gold"]
    assert [(d.rule, d.span.line) for d in result.diagnostics] == [("syntax", 9)]


def test_problems_in_one_document_do_not_hide_the_next() -> None:
    result = loaded("a: *nowhere\n---\n" + TIER)
    assert [d.name for d in result.documents] == ["gold"]
    assert [d.rule for d in result.diagnostics] == ["syntax"]


def test_empty_documents_between_real_ones_are_fine() -> None:
    result = loaded("---\n# comment\n---\n" + TIER + "---\n")
    assert [d.name for d in result.documents] == ["gold"]
    assert result.diagnostics == []


def test_very_long_value_loads() -> None:
    result = loaded(TIER.replace("name: gold", "name: " + "g" * 1_000_000))
    assert result.diagnostics == []
    assert len(result.documents[0].name) == 1_000_000


def test_large_plain_file_without_aliases_loads() -> None:
    """Size has its own limit (file-too-large): >200,000 plain values in 1.8 MB are no bomb."""
    values = ", ".join(["4.25"] * 300_000)
    text = TIER.replace("value: 10", "value: 10\n  x: [" + values + "]")
    assert 1_500_000 < len(text) < MAX_FILE_BYTES
    result = loaded(text)
    assert "alias-bomb" not in {d.rule for d in result.diagnostics}
    assert len(result.documents[0].data["spec"]["x"]) == 300_000


def test_alias_budget_counts_only_what_aliases_add() -> None:
    """A modest anchor repeated by a few aliases in a large file is fine; the bomb is not."""
    plain = ", ".join(["1"] * 190_000)
    text = f"a: [{plain}]\nb: &b [1, 2, 3]\nc: [*b, *b, *b]\n"
    assert "alias-bomb" not in {r for r, _, _ in found(text)}
    assert [r for r, _, _ in found(BOMB)] == ["alias-bomb"]


@pytest.mark.parametrize("extra, rules", [(0, ["unknown-api-version"]), (1, ["too-deep"])])
def test_nesting_limit_is_exact(extra: int, rules: list[str]) -> None:
    depth = MAX_DEPTH - 1 + extra  # the document's root mapping is one level already
    result = loaded("a: " + "[" * depth + "]" * depth + "\n")
    assert [d.rule for d in result.diagnostics] == rules


def test_plain_values_keep_their_yaml_types_and_dates_stay_text() -> None:
    doc = loaded(TIER + "  x: [2027-03-31, 12, '12', on, ~, 1.5, !!str 7, ! 8]\n").documents[0]
    assert doc.data["spec"]["x"] == ["2027-03-31", 12, "12", True, None, 1.5, "7", "8"]


def test_a_quoted_merge_key_is_an_ordinary_key_beside_a_merge() -> None:
    result = loaded(TIER + "x: &a {x: 1}\nd: {'<<': 1, <<: *a}\n")
    assert result.diagnostics == []


def test_merge_keys_and_aliases_are_located() -> None:
    text = HEAD + "metadata: {name: a}\nbase: &b {x: 1, y: 2}\nspec:\n  <<: *b\n  y: 3\n"
    doc = loaded(text).documents[0]
    assert doc.data["spec"] == {"y": 3, "x": 1}
    assert (doc.source.at(("spec", "y")).line, doc.source.at(("spec", "x")).line) == (7, 4)


def test_aliased_values_have_spans_at_every_path() -> None:
    doc = loaded(HEAD + "metadata: &m {name: a}\nspec:\n  copy: *m\n").documents[0]
    assert doc.source.at(("spec", "copy")).column == 9
    assert doc.source.at(("spec", "copy", "name")).line == 3
    assert ("spec", "copy", "name") in doc.source.values


def test_non_string_keys_are_kept_as_written() -> None:
    doc = loaded(TIER + "  labels: {1: a, true: b, 1.50: c, ~: d}\n").documents[0]
    assert list(doc.data["spec"]["labels"]) == ["1", "true", "1.50", "~"]


def test_utf8_bom_is_accepted() -> None:
    assert found("\ufeff" + TIER) == []


def test_non_utf8_position_counts_characters() -> None:
    assert found("é: 1\nbé: caf".encode() + b"\xe9\n") == [("encoding", 2, 8)]


# -- paths: directories, missing paths, unreadable files ---------------------------------------


def paths_found(*paths: Path) -> list[tuple[str, str, int, int]]:
    result = load_paths(paths)
    return sorted((d.rule, d.span.file, d.span.line, d.span.column) for d in result.diagnostics)


def test_missing_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert paths_found(Path("nope")) == [("not-found", "nope", 0, 0)]


def test_empty_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "policy").mkdir()
    monkeypatch.chdir(tmp_path)
    assert paths_found(Path("policy")) == [("empty-policy", "policy", 0, 0)]


def test_directory_with_only_other_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "policy").mkdir()
    (tmp_path / "policy" / "README.md").write_text("# hi\n")
    (tmp_path / "policy" / "fleet.txt").write_text("{}\n")
    monkeypatch.chdir(tmp_path)
    result = load_paths([Path("policy")])
    assert [(d.rule, d.span.file) for d in result.diagnostics] == [("empty-policy", "policy")]
    assert "2 other file(s) ignored" in result.diagnostics[0].message


def test_every_name_a_user_means_as_policy_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Skipped silently, the team in `TEAM.YAML` lost all its queues (and Argo CD pruned them).
    names = ["a.YAML", "b.Yml", "c.json", "d.yaml ", "e.yml"]
    for i, name in enumerate(names):
        text = TIER.replace("gold", f"tier{i}")
        if name.endswith(".json"):
            text = json.dumps(yaml.safe_load(text), indent="\t")
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    result = load_paths([Path(".")])
    assert result.diagnostics == []
    assert sorted(d.name for d in result.documents) == [f"tier{i}" for i in range(5)]


def test_a_name_that_mentions_yaml_but_is_not_read_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tier.yaml").write_text(TIER)
    for name in ("team.yaml.bak", "team.YAML~", "notes.md"):
        (tmp_path / name).write_text("x: 1\n")
    monkeypatch.chdir(tmp_path)
    assert paths_found(Path(".")) == [
        ("skipped-file", "team.YAML~", 0, 0),
        ("skipped-file", "team.yaml.bak", 0, 0),
    ]


def test_hidden_entries_are_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for hidden in (tmp_path / ".git" / "x.yaml", tmp_path / ".draft.yaml"):
        hidden.parent.mkdir(exist_ok=True)
        hidden.write_text("not: [valid\n")
    (tmp_path / "tier.yaml").write_text(TIER)
    monkeypatch.chdir(tmp_path)
    result = load_paths([Path(".")])
    assert result.files == ["tier.yaml"] and result.diagnostics == []


def test_dangling_symlink_is_an_io_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "policy").mkdir()
    (tmp_path / "policy" / "gone.yaml").symlink_to(tmp_path / "missing.yaml")
    monkeypatch.chdir(tmp_path)
    assert paths_found(Path("policy")) == [("io-error", "policy/gone.yaml", 1, 1)]


def test_permission_denied_is_an_io_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "secret.yaml").write_text(TIER)
    monkeypatch.chdir(tmp_path)
    real_open = Path.open

    def deny(self: Path, *args: object, **kwargs: object) -> object:
        if self.name == "secret.yaml":
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(Path, "open", deny)
    assert paths_found(Path("secret.yaml")) == [("io-error", "secret.yaml", 1, 1)]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_for_real(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = tmp_path / "secret.yaml"
    secret.write_text(TIER)
    secret.chmod(0)
    monkeypatch.chdir(tmp_path)
    assert paths_found(Path("secret.yaml")) == [("io-error", "secret.yaml", 1, 1)]


def test_unlistable_directory_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "policy" / "locked").mkdir(parents=True)
    (tmp_path / "policy" / "tier.yaml").write_text(TIER)
    monkeypatch.chdir(tmp_path)
    real_scandir = os.scandir

    def deny(path: str = ".") -> object:
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", deny)
    assert paths_found(Path("policy")) == [("io-error", "policy/locked", 0, 0)]


def test_fifo_argument_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    os.mkfifo(tmp_path / "pipe.yaml")
    monkeypatch.chdir(tmp_path)
    assert paths_found(Path("pipe.yaml")) == [("io-error", "pipe.yaml", 0, 0)]


def test_fifo_in_a_directory_is_not_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    os.mkfifo(tmp_path / "pipe.yaml")  # opening it would wait for a writer forever
    (tmp_path / "tier.yaml").write_text(TIER)
    monkeypatch.chdir(tmp_path)
    assert paths_found(Path(".")) == [("io-error", "pipe.yaml", 1, 1)]


def test_unreadable_file_does_not_stop_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.yaml").symlink_to(tmp_path / "missing")
    (tmp_path / "b.yaml").write_text(TIER)
    monkeypatch.chdir(tmp_path)
    result = load_paths([Path(".")])
    assert [d.name for d in result.documents] == ["gold"]
    assert [d.rule for d in result.diagnostics] == ["io-error"]


def test_directory_symlinks_are_followed_and_loops_reported(tmp_path: Path) -> None:
    """A `teams -> ../shared-teams` link used to be skipped without a word (os.walk does not
    follow directory links), losing every queue of those teams."""
    import shutil

    from hetgitops.load.policyfiles import policy_files

    repo = Path(__file__).resolve().parents[1]
    policy = tmp_path / "policy"
    shutil.copytree(repo / "policies", policy)
    shutil.move(str(policy / "teams"), str(tmp_path / "shared-teams"))
    (policy / "teams").symlink_to(tmp_path / "shared-teams", target_is_directory=True)
    files, problems = policy_files([policy])
    assert problems == []
    assert {f.name for f in files if f.parent.name == "teams"} == {"others.yaml", "training.yaml"}
    (policy / "pools" / "again").symlink_to(policy, target_is_directory=True)
    files, problems = policy_files([policy])
    assert [(p.rule, Path(p.span.file).name) for p in problems] == [("io-error", "again")]
    assert "loop" in problems[0].message
