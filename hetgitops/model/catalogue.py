"""Model stage, the card-type catalogue: the CardType documents hetgitops ships, those of the
bundled fleet (`policies/cards/`) and of `catalogue.yaml` beside this module (cards no bundled
pool uses). `init` offers these cards and `import` matches nodes against them: one reader, so the
two cannot disagree. Read through the load stage, as policy files are: duplicate keys
rejected, size, depth and aliases bounded."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.load.documents import load_sources
from hetgitops.load.policyfiles import read_files
from hetgitops.load.resources import data_dir

EXTRA = Path(__file__).with_name("catalogue.yaml")


class CatalogueError(ValueError):
    """A text of card types that did not load; the message is its first finding."""


def catalogue_files() -> list[Path]:
    """The files the catalogue is read from, in the order a later one wins."""
    return [*sorted(data_dir("policies").glob("cards/*.yaml")), EXTRA]


@functools.cache
def card_types() -> Mapping[str, Mapping[str, Any]]:
    """Card-type name -> its CardType document, sorted by name; read once per process."""
    found: dict[str, Mapping[str, Any]] = {}
    for path in catalogue_files():
        found.update(read_card_types([(str(path), path.read_bytes())]))
    return MappingProxyType(dict(sorted(found.items())))


def read_card_types(sources: Iterable[tuple[str, bytes]]) -> dict[str, Mapping[str, Any]]:
    """Card-type name -> CardType document, for each such document of the (name, bytes)
    sources; other kinds are skipped. Raises CatalogueError when the text does not load."""
    loaded = load_sources(sources)
    problem = next((d for d in loaded.diagnostics if d.severity is Severity.ERROR), None)
    if problem is not None:
        raise CatalogueError(f"{problem.span}: {problem.message}")
    return {d.name: d.data for d in loaded.documents if d.kind == "CardType"}


def read_card_file(path: Path) -> dict[str, Mapping[str, Any]]:
    """The CardType documents of one file (`init --card-file`), read as a policy file is: a
    regular file of at most `MAX_FILE_BYTES`. Raises CatalogueError when it does not load."""
    problems: list[Diagnostic] = []
    cards = read_card_types(read_files([path], problems))
    if problems:  # the file itself could not be read
        raise CatalogueError(f"{problems[0].span}: {problems[0].message}")
    return cards


def describe(name: str) -> str:
    """One line for a prompt or `--list-cards`: the name, vendor, model and memory."""
    spec = card_types()[name]["spec"]
    return f"{name} ({spec['vendor']} {spec['model']}, {spec['memoryGiB']} GiB)"
