"""Scaffold stage: the card-type catalogue (the CardType documents in policies/cards)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import yaml

from hetgitops.load.resources import data_dir


@functools.cache
def card_types() -> Mapping[str, Mapping[str, Any]]:
    """Card-type name -> its CardType document, from the bundled example fleet."""
    found: dict[str, Mapping[str, Any]] = {}
    for path in sorted(data_dir("policies").glob("cards/*.yaml")):
        for doc in yaml.safe_load_all(path.read_text("utf-8")):
            if isinstance(doc, dict) and doc.get("kind") == "CardType":
                found[str(doc["metadata"]["name"])] = doc
    return dict(sorted(found.items()))


def describe(name: str) -> str:
    """One line for a prompt or `--help`: the name, vendor, model and memory."""
    spec = card_types()[name]["spec"]
    return f"{name} ({spec['vendor']} {spec['model']}, {spec['memoryGiB']} GiB)"
