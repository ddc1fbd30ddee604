"""`hetgitops init`: the scaffold validates and renders clean at once; refusals are usage errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from hetgitops import api
from hetgitops.cli.main import main
from hetgitops.compilers import COMPILERS
from hetgitops.model.catalogue import card_types
from hetgitops.scaffold.fleet import DEFAULT_TARGETS


def init(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(main, ["init", *args], input=stdin, catch_exceptions=False)


def _clean(repo: Path) -> api.Result:
    """Valid, and warned about nothing but the placeholder node names it was given none for."""
    result = api.validate([repo / "policies"])
    found = [d for d in result.diagnostics if d.rule != "node-name-placeholder"]
    assert not result.failed() and not found, [str(d) for d in found]
    return result


@pytest.mark.parametrize("card", sorted(card_types()))
def test_every_catalogue_card_scaffolds_a_clean_fleet_for_every_target(
    tmp_path: Path, card: str
) -> None:
    targets = ["core", "kueue", "volcano", "nodes", "gpu-operator"]
    args = [str(tmp_path / "repo"), "--cluster", "demo", "--card", card, "--no-interactive"]
    result = init(*args, *(a for t in targets for a in ("--target", t)))
    assert result.exit_code == 0, result.output
    assert _clean(tmp_path / "repo").policy is not None


def test_scaffold_is_a_whole_repository_whose_render_is_current(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    args = ["--cluster", "prod", "--pool", "train=h100-80gb:4", "--card", "l40s-48gb"]
    result = init(str(repo), *args, "--team", "nlp", "--team", "vision", "--no-interactive")
    assert result.exit_code == 0, result.output
    for name in (".pre-commit-config.yaml", ".github/workflows/hetgitops.yml", ".editorconfig"):
        assert (repo / name).is_file(), name
    for policy_file in sorted((repo / "policies").glob("*.yaml")):
        first = policy_file.read_text().splitlines()[0]
        assert first == "# yaml-language-server: $schema=../.hetgitops/schemas/policy.schema.json"
    assert (repo / ".hetgitops/schemas/policy.schema.json").is_file()
    policy = _clean(repo).policy
    assert policy is not None and policy.fleet is not None
    assert policy.fleet.cluster == "prod"
    assert sorted(policy.teams) == ["nlp", "vision"]
    assert policy.pools["train"].nodes and len(policy.pools["train"].nodes) == 4
    check = CliRunner().invoke(
        main,
        ["render", str(repo / "policies"), "--output", str(repo / "rendered"), "--check"],
    )
    assert check.exit_code == 0, check.output


def test_questions_fill_in_what_the_options_leave_out(tmp_path: Path) -> None:
    """Cluster, card types, teams, then per pool: cards per node, the node names (empty:
    how many placeholder nodes) and, for a MIG-capable card, a MIG layout (empty: none)."""
    repo = tmp_path / "asked"
    # h100: 4 cards per node, no names, 3 nodes, no MIG; a800: 8 per node, five named nodes.
    answers = "lab\nh100-80gb, a800-80gb\nalpha,beta\n4\n\n3\n\n\ngpu-a800-[01:05]\n\n"
    result = init(str(repo), "--interactive", stdin=answers)
    assert result.exit_code == 0, result.output
    fleet = yaml.safe_load((repo / "policies/fleet.yaml").read_text())
    assert fleet["spec"]["cluster"] == "lab"
    cards = [
        d["metadata"]["name"]
        for d in yaml.safe_load_all((repo / "policies/cards.yaml").read_text())
    ]
    assert cards == ["a800-80gb", "h100-80gb"]
    pools = {
        d["metadata"]["name"]: (d["spec"]["cardsPerNode"], d["spec"]["nodes"][0]["names"])
        for d in yaml.safe_load_all((repo / "policies/pools.yaml").read_text())
    }
    assert pools == {
        "h100-80gb": (4, "replace-me-h100-80gb-[1:3]"),
        "a800-80gb": (8, "gpu-a800-[01:05]"),
    }
    policy = _clean(repo).policy
    assert policy is not None and len(policy.pools["a800-80gb"].nodes) == 5
    # Only the h100 pool's names are made up, and both the file and the output say so.
    assert "REPLACE the placeholder node names (h100-80gb: replace-me-h100-80gb-[1:3])" in (
        result.output
    )
    assert "a800" not in (repo / "policies/pools.yaml").read_text().splitlines()[2]


def test_target_adds_to_the_default_targets(tmp_path: Path) -> None:
    """The guide: `--target` adds (volcano, gpu-operator); the scaffold has no warning."""
    assert {"core", "kueue", "nodes"} <= set(DEFAULT_TARGETS)
    result = init(str(tmp_path / "repo"), "--card", "h100-80gb", "--target", "volcano",
                  "--no-interactive")  # fmt: skip
    assert result.exit_code == 0, result.output
    fleet = yaml.safe_load((tmp_path / "repo/policies/fleet.yaml").read_text())
    assert fleet["spec"]["targets"] == [*DEFAULT_TARGETS, "volcano"]
    _clean(tmp_path / "repo")


@pytest.mark.parametrize("target", sorted(set(COMPILERS) - set(DEFAULT_TARGETS)))
def test_each_added_target_scaffolds_without_a_warning(tmp_path: Path, target: str) -> None:
    args = ["--card", "h100-80gb", "--team", "a", "--team", "b", "--target", target]
    result = init(str(tmp_path / "repo"), *args, "--no-interactive")
    assert result.exit_code == 0, result.output
    _clean(tmp_path / "repo")


def test_next_steps_name_the_branch_and_install_pre_commit(tmp_path: Path) -> None:
    """`git init` alone makes `master` here, and the guide's `diff --base main` then fails."""
    result = init(str(tmp_path / "repo"), "--card", "h100-80gb", "--no-interactive")
    assert result.exit_code == 0, result.output
    nxt = next(line for line in result.output.splitlines() if line.startswith("Next:"))
    assert "git init -b main" in nxt
    assert nxt.index("pip install pre-commit") < nxt.index("pre-commit install")
    header = (tmp_path / "repo/policies/pools.yaml").read_text().splitlines()[2]
    assert header.startswith(
        "# REPLACE the placeholder node names (h100-80gb: replace-me-h100-80gb-[1:2])"
    )


def test_two_teams_share_a_cohort_and_one_team_is_told_why_not(tmp_path: Path) -> None:
    two = init(str(tmp_path / "two"), "--cluster", "lab", "--card", "h100-80gb", "--team", "a",
               "--team", "b", "--no-interactive")  # fmt: skip
    assert two.exit_code == 0, two.output
    queues = [
        yaml.safe_load((tmp_path / f"two/rendered/kueue/clusterqueue-{team}.yaml").read_text())
        for team in ("a", "b")
    ]
    assert [q["spec"]["cohortName"] for q in queues] == ["lab", "lab"]
    assert "Teams share cohort 'lab'" in two.output
    _clean(tmp_path / "two")
    one = init(str(tmp_path / "one"), "--card", "h100-80gb", "--no-interactive")
    assert one.exit_code == 0, one.output
    why = "One team, so no cohort: borrowing needs two teams in one"
    assert why in one.output
    assert why in (tmp_path / "one/policies/teams.yaml").read_text()


def test_refuses_a_non_empty_directory_unless_forced(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")
    refused = init(str(tmp_path), "--card", "h100-80gb", "--no-interactive")
    assert refused.exit_code == 2
    assert "not empty" in refused.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    forced = init(str(tmp_path), "--card", "h100-80gb", "--no-interactive", "--force")
    assert forced.exit_code == 0, forced.output
    assert (tmp_path / "notes.txt").read_text() == "mine\n"
    _clean(tmp_path)


@pytest.mark.parametrize(
    "args",
    [
        ["--card", "h100"],  # not in the catalogue
        ["--pool", "a=h100-80gb:0"],  # no nodes
        ["--pool", "Big=h100-80gb"],  # not a DNS label
        ["--card", "h100-80gb", "--team", "a", "--team", "a"],
        ["--card", "l40s-48gb", "--mig", "l40s-48gb=all-1g.10gb"],  # no MIG on an L40S
        ["--card", "h100-80gb", "--mig", "h100-80gb=all-2g.10gb"],  # not an H100 profile
        ["--card", "h100-80gb", "--mig", "other=mixed"],  # no such pool
    ],
)
def test_bad_answers_are_usage_errors_and_write_nothing(tmp_path: Path, args: list[str]) -> None:
    result = init(str(tmp_path / "repo"), *args, "--no-interactive")
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "repo").exists()


def test_list_cards_shows_the_catalogue() -> None:
    result = init("--list-cards")
    assert result.exit_code == 0
    assert [line.split()[0] for line in result.output.splitlines()] == sorted(card_types())


@pytest.mark.parametrize(
    "card", ["a100-80gb", "h200-141gb", "b200-180gb", "gb200-186gb", "mi300x-192gb", "gaudi3-128gb"]
)
def test_the_catalogue_has_the_common_cards(tmp_path: Path, card: str) -> None:
    """`init --card a100-80gb` was refused: the catalogue lacked these."""
    result = init(str(tmp_path / "repo"), "--card", card, "--no-interactive")
    assert result.exit_code == 0, result.output
    policy = _clean(tmp_path / "repo").policy
    assert policy is not None and card in policy.card_types


CARD_FILE = """\
apiVersion: hetgitops.io/v1alpha1
kind: CardType
metadata:
  name: mi325x-256gb
spec:
  vendor: amd
  model: Instinct-MI325X
  resourceName: amd.com/gpu
  memoryGiB: 256
  performance: {coefficient: 4.2, reference: A100-SXM4-80GB, coefficientSet: mine}
  lifecycle: pilot
"""


def test_card_file_scaffolds_a_card_the_catalogue_lacks(tmp_path: Path) -> None:
    card_file = tmp_path / "mi325x.yaml"
    card_file.write_text(CARD_FILE)
    repo = tmp_path / "repo"
    args = ["--card-file", str(card_file), "--pool", "big=mi325x-256gb:2:8", "--no-interactive"]
    result = init(str(repo), *args)
    assert result.exit_code == 0, result.output
    policy = _clean(repo).policy
    assert policy is not None and policy.pools["big"].card_type == "mi325x-256gb"
    refused = init(str(tmp_path / "other"), "--card", "mi325x-256gb", "--no-interactive")
    assert refused.exit_code == 2 and "--card-file FILE" in refused.output


def test_an_invalid_card_file_is_a_usage_error_with_its_findings(tmp_path: Path) -> None:
    card_file = tmp_path / "bad.yaml"
    card_file.write_text(CARD_FILE.replace("memoryGiB: 256", "memoryGiB: lots"))
    result = init(str(tmp_path / "repo"), "--card-file", str(card_file), "--card",
                  "mi325x-256gb", "--no-interactive")  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "memoryGiB" in result.output and "--card-file card types" in result.output
    empty = tmp_path / "empty.yaml"
    empty.write_text("kind: Pool\n")
    assert init(str(tmp_path / "r2"), "--card-file", str(empty), "--card", "h100-80gb",
                "--no-interactive").exit_code == 2  # fmt: skip


@pytest.mark.parametrize(
    ("layout", "devices", "quota"),
    [
        ("all-1g.10gb", [{"gpus": "all", "profiles": {"1g.10gb": 7}}], {"1g.10gb": 28}),
        ("all-3g.40gb", [{"gpus": "all", "profiles": {"3g.40gb": 2}}], {"3g.40gb": 8}),
        (
            "mixed",
            [
                {"gpus": [0, 1], "profiles": {"1g.10gb": 7}},
                {"gpus": [2, 3], "profiles": {"3g.40gb": 2}},
            ],
            {"1g.10gb": 28, "3g.40gb": 8},  # each team half of 4 nodes x 2 GPUs x 7 / x 2
        ),
    ],
)
def test_mig_offers_a_layout_and_mig_quotas(
    tmp_path: Path, layout: str, devices: list[object], quota: dict[str, int]
) -> None:
    """`--mig POOL=LAYOUT` writes Pool.spec.mig as the policy spells it, and each team's half
    of the pool in `mig:` (every GPU is carved: it offers no whole cards)."""
    repo = tmp_path / "repo"
    pool = "infer=h100-80gb:2:4" if layout != "mixed" else "infer=h100-80gb:4:4"
    args = ["--pool", pool, "--mig", f"infer={layout}", "--team", "a", "--team", "b"]
    result = init(str(repo), *args, "--target", "gpu-operator", "--no-interactive")
    assert result.exit_code == 0, result.output
    (written,) = yaml.safe_load_all((repo / "policies/pools.yaml").read_text())
    assert written["spec"]["mig"] == {"devices": devices}
    teams = list(yaml.safe_load_all((repo / "policies/teams.yaml").read_text()))
    assert [t["spec"]["quotas"] for t in teams] == [[{"pool": "infer", "mig": quota}]] * 2
    _clean(repo)


def test_the_questions_offer_a_mig_layout_for_a_mig_capable_card(tmp_path: Path) -> None:
    repo = tmp_path / "asked"
    result = init(str(repo), "--interactive", stdin="lab\nh100-80gb\nml\n8\n\n2\nall-3g.40gb\n")
    assert result.exit_code == 0, result.output
    assert "MIG layout for pool h100-80gb" in result.output
    (written,) = yaml.safe_load_all((repo / "policies/pools.yaml").read_text())
    assert written["spec"]["mig"] == {"devices": [{"gpus": "all", "profiles": {"3g.40gb": 2}}]}


def test_validate_warns_while_placeholder_node_names_remain(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    args = ["--pool", "train=h100-80gb", "--pool", "infer=l40s-48gb:1"]
    assert init(str(repo), *args, "--no-interactive").exit_code == 0
    pools = repo / "policies/pools.yaml"
    lines = pools.read_text().splitlines()
    where = [
        f"{pools}:{n}:{line.index('replace-me-') + 1}"
        for n, line in enumerate(lines, 1)
        if "names: replace-me-" in line
    ]
    result = CliRunner().invoke(main, ["validate", str(repo / "policies")])
    assert result.exit_code == 0, result.output  # a warning: the repository is usable
    found = [line for line in result.output.splitlines() if "[node-name-placeholder]" in line]
    assert [line.split(": warning[")[0] for line in found] == where and len(where) == 2
    pools.write_text(pools.read_text().replace("replace-me-train-[1:2]", "gpu-[01:02]"))
    rerun = api.validate([repo / "policies"])
    assert [d.rule for d in rerun.diagnostics] == ["node-name-placeholder"]  # infer's remains
