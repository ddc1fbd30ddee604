"""`hetgitops init [DIR]`: scaffold a new policy repository that validates and renders clean."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hetgitops import api
from hetgitops.cli.common import (
    EXIT_ENVIRONMENT,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    guarded,
)

if TYPE_CHECKING:
    from hetgitops import scaffold


def _target_choices() -> list[str]:
    from hetgitops.compilers import COMPILERS

    return sorted(COMPILERS)


@click.command(
    epilog="""\b
Exit codes:
  0  the repository was written, validated and rendered
  2  usage error (DIR not empty without --force, unknown card type, bad --pool)
  3  internal error (the scaffold did not validate: a bug, please report it)
  4  environment error (DIR cannot be written)

\b
Examples:
  hetgitops init gpu-policy --cluster prod --card h100-80gb --card l40s-48gb
  hetgitops init gpu-policy --cluster prod --pool train=h100-80gb:4 --team nlp --team vision
  hetgitops init gpu-policy --pool infer=h100-80gb:2 --mig infer=all-1g.10gb"""
)
@click.argument("directory", default=".", type=click.Path(path_type=Path, file_okay=False))
@click.option("--cluster", metavar="NAME", help="Cluster name (labels every rendered object).")
@click.option(
    "--card",
    "cards",
    multiple=True,
    metavar="TYPE",
    help="A card type from the catalogue; one pool of 2 nodes x 8 cards each (repeatable). "
    "See --list-cards.",
)
@click.option(
    "--pool",
    "pools",
    multiple=True,
    metavar="NAME=TYPE[:NODES[:CARDS]]",
    help="A pool of NODES nodes with CARDS cards of TYPE each (default 2 x 8; repeatable).",
)
@click.option(
    "--mig",
    "mig_layouts",
    multiple=True,
    metavar="POOL=LAYOUT",
    help="Carve every GPU of a MIG-capable pool: LAYOUT all-<profile> (all-1g.10gb, "
    "all-3g.40gb, ...) or mixed (half smallest slices, half mid-size); its teams get `mig:` "
    "quotas (repeatable).",
)
@click.option(
    "--card-file",
    "card_files",
    multiple=True,
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    metavar="FILE",
    help="CardType documents (YAML) for cards not in the catalogue; use their names with "
    "--card or --pool (repeatable).",
)
@click.option("--team", "teams", multiple=True, metavar="NAME", help="A team (repeatable).")
@click.option(
    "--target",
    "targets",
    multiple=True,
    type=click.Choice(_target_choices()),
    help="A system to render besides the defaults core, kueue and nodes (repeatable), e.g. "
    "volcano, gpu-operator.",
)
@click.option("--force", is_flag=True, help="Write into DIR even if it is not empty.")
@click.option(
    "--interactive/--no-interactive",
    default=None,
    help="Ask for what the options leave out (default: when stdin is a terminal).",
)
@click.option("--list-cards", is_flag=True, help="List the card-type catalogue and exit.")
def init(
    directory: Path,
    cluster: str | None,
    cards: tuple[str, ...],
    pools: tuple[str, ...],
    mig_layouts: tuple[str, ...],
    teams: tuple[str, ...],
    card_files: tuple[Path, ...],
    targets: tuple[str, ...],
    force: bool,
    interactive: bool | None,
    list_cards: bool,
) -> None:
    """Create a policy repository in DIR (default: the current directory)."""
    from hetgitops import scaffold
    from hetgitops.model.catalogue import card_types, describe
    from hetgitops.scaffold.mig_layout import with_mig

    if list_cards:
        for name in card_types():
            click.echo(describe(name))
        sys.exit(EXIT_OK)
    if directory.exists() and any(directory.iterdir()) and not force:
        raise click.UsageError(f"{directory} is not empty; use --force to write into it anyway")
    if interactive is None:
        interactive = sys.stdin.isatty()
    asked = interactive and not cards and not pools
    if interactive:
        cluster, cards, teams = _ask(directory, cluster, cards if cards or pools else (), teams)
    try:
        card_pools = tuple(scaffold.PoolAnswer(c, c) for c in cards)
        if asked:  # sizes and names only for card types chosen here, not for --card/--pool
            card_pools = tuple(_ask_pool(pool) for pool in card_pools)
        answers = scaffold.Answers(
            cluster=cluster or _default_cluster(directory),
            pools=with_mig(card_pools + tuple(scaffold.parse_pool(p) for p in pools), mig_layouts),
            teams=teams or ("ml",),
            targets=scaffold.fleet.with_targets(targets),
            card_files=_read_card_files(card_files),
        )
        files = scaffold.scaffold_files(answers)
    except scaffold.BadAnswer as exc:
        raise click.UsageError(str(exc)) from None
    sys.exit(guarded(lambda: _write_or_explain(directory, files, answers)))


def _read_card_files(paths: tuple[Path, ...]) -> dict[str, Any]:
    """CardType documents of each --card-file; a file without one is a usage error."""
    from hetgitops.model.catalogue import CatalogueError, read_card_file

    found: dict[str, Any] = {}
    for path in paths:
        try:
            cards = read_card_file(path)
        except CatalogueError as exc:
            raise click.UsageError(f"--card-file {path}: cannot read it: {exc}") from None
        if not cards:
            raise click.UsageError(f"--card-file {path}: no `kind: CardType` document in it")
        found.update(cards)
    return found


def _ask_pool(pool: scaffold.PoolAnswer) -> scaffold.PoolAnswer:
    """Cards per node, then the nodes' names (or, left empty, how many placeholders)."""
    from hetgitops import scaffold
    from hetgitops.scaffold.answers import named_pool

    per_node = click.prompt(
        f"Cards per node in pool {pool.name}", default=8, type=click.IntRange(1)
    )
    names = click.prompt(
        f"Node names in pool {pool.name} (comma-separated, ranges like gpu-[01:16]; "
        "empty: placeholders to replace later)",
        default="",
        show_default=False,
    )
    sized = scaffold.PoolAnswer(pool.name, pool.card_type, pool.nodes, per_node)
    if names.strip():
        sized = named_pool(sized, names)
    else:
        nodes = click.prompt(f"Nodes in pool {pool.name}", default=2, type=click.IntRange(1))
        sized = scaffold.PoolAnswer(pool.name, pool.card_type, nodes, per_node)
    return _ask_mig(sized)


def _ask_mig(pool: scaffold.PoolAnswer) -> scaffold.PoolAnswer:
    """For a MIG-capable card: carve its GPUs (a layout, as `--mig` takes it) or keep them whole."""
    from hetgitops.model.catalogue import card_types
    from hetgitops.scaffold.mig_layout import mig_choices, with_mig

    card = card_types().get(pool.card_type)  # an unknown one: check() says so after the questions
    choices = mig_choices(card) if card is not None else []
    if not choices:
        return pool
    layout = click.prompt(
        f"MIG layout for pool {pool.name} (none: whole GPUs; mixed: half small, half mid-size "
        "slices)",
        default="none",
        type=click.Choice(choices),
    )
    return pool if layout == "none" else with_mig((pool,), [f"{pool.name}={layout}"])[0]


def _write_or_explain(directory: Path, files: dict[str, str], answers: scaffold.Answers) -> int:
    try:
        return _write(directory, files, answers)
    except OSError as exc:  # a full disk or a read-only folder is not a bug in hetgitops
        click.echo(f"hetgitops: cannot write {directory}: {exc}", err=True)
        return EXIT_ENVIRONMENT


def _default_cluster(directory: Path) -> str:
    name = re.sub(r"[^a-z0-9-]+", "-", directory.resolve().name.lower()).strip("-")
    return name[:63].strip("-") or "my-cluster"


def _ask(
    directory: Path, cluster: str | None, cards: tuple[str, ...], teams: tuple[str, ...]
) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    from hetgitops.model.catalogue import card_types, describe

    if cluster is None:
        cluster = click.prompt("Cluster name", default=_default_cluster(directory))
    if not cards:
        click.echo("Card types in the catalogue:\n" + "".join(
            f"  {describe(name)}\n" for name in card_types()), err=True)  # fmt: skip
        answer = click.prompt("Card types (comma-separated; one pool each)")
        cards = tuple(c.strip() for c in answer.split(",") if c.strip())
    if not teams:
        answer = click.prompt("Teams (comma-separated)", default="ml")
        teams = tuple(t.strip() for t in answer.split(",") if t.strip())
    return cluster, cards, teams


def _write(directory: Path, files: dict[str, str], answers: scaffold.Answers) -> int:
    from hetgitops import scaffold
    from hetgitops.output.manifests import tree
    from hetgitops.output.writer import write_tree
    from hetgitops.reporting import FORMATTERS

    for relative, text in files.items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    policy = directory / scaffold.POLICY_DIR
    result = api.render([policy])
    if result.failed() or not result.manifests:
        click.echo(FORMATTERS["text"](result), nl=False, err=True)
        if answers.card_files:  # the user's CardType, not a bug: the findings say what to fix
            click.echo(
                "hetgitops: with the --card-file card types the policy does not validate; "
                "fix them as the findings say and run init again with --force",
                err=True,
            )
            return EXIT_USAGE
        click.echo("hetgitops: internal error: the scaffold does not render; please report it",
                   err=True)  # fmt: skip
        return EXIT_INTERNAL
    write_tree(tree(result.manifests), directory / scaffold.RENDER_DIR, inputs=[policy])
    notes = [scaffold.fleet.cohort_note(answers)]
    placeholders = scaffold.fleet.placeholder_note(answers)
    if placeholders:
        notes.insert(0, f"policies/pools.yaml: {placeholders}")
    click.echo(
        f"Wrote a policy repository to {directory}: {len(files)} files, and "
        f"{scaffold.RENDER_DIR}/ with {sum(m.applied for m in result.manifests)} objects.\n"
        + "".join(f"Note: {note}\n" for note in notes)
        + f"Next: cd {directory} && git init -b main && python3 -m pip install pre-commit && "
        "pre-commit install && git add -A && git commit -m 'GPU fleet policy'\n"
    )
    return EXIT_OK
