"""Scaffold stage: the card-type catalogue: the CardType documents of the bundled fleet
(policies/cards) and of catalogue.yaml beside this module (cards no bundled pool uses)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from hetgitops.load.resources import data_dir


@functools.cache
def card_types() -> Mapping[str, Mapping[str, Any]]:
    """Card-type name -> its CardType document, from the bundled example fleet."""
    found: dict[str, Mapping[str, Any]] = {}
    extra = Path(__file__).with_name("catalogue.yaml")
    for path in [*sorted(data_dir("policies").glob("cards/*.yaml")), extra]:
        found.update(read_card_types(path.read_text("utf-8")))
    return dict(sorted(found.items()))


def read_card_types(text: str) -> dict[str, Mapping[str, Any]]:
    """Card-type name -> CardType document, for each such document in a YAML text."""
    return {
        str(doc["metadata"]["name"]): doc
        for doc in yaml.safe_load_all(text)
        if isinstance(doc, dict) and doc.get("kind") == "CardType"
    }


def describe(name: str) -> str:
    """One line for a prompt or `--help`: the name, vendor, model and memory."""
    spec = card_types()[name]["spec"]
    return f"{name} ({spec['vendor']} {spec['model']}, {spec['memoryGiB']} GiB)"
