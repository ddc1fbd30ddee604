"""One card-type catalogue (hetgitops/model/catalogue.py): `init` offers what `import` knows."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hetgitops.adopt import nodes
from hetgitops.adopt import run as engine
from hetgitops.cli.main import main
from hetgitops.model import catalogue
from hetgitops.scaffold import fleet


def _node(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A node saying what a node of this card says: GPU feature discovery's product label, else
    NFD's PCI device label, else only the device plugin's resource."""
    labels = {}
    if spec.get("productNames"):
        labels[nodes.PRODUCT_LABELS[0]] = spec["productNames"][0]
    elif spec.get("pciDeviceIds"):
        device = str(spec["pciDeviceIds"][0]).lower()[2:6]
        labels[f"feature.node.kubernetes.io/pci-10de_{device}.present"] = "true"
    return {
        "kind": "Node",
        "metadata": {"name": "n", "labels": labels},
        "status": {"allocatable": {spec["resourceName"]: "8"}},
    }


def test_init_and_import_read_one_catalogue() -> None:
    """Import read only policies/cards/ (7 cards), init those and its own file (13)."""
    assert engine.card_types is catalogue.card_types is fleet.card_types
    listed = CliRunner().invoke(main, ["init", "--list-cards"])
    offered = {line.split()[0] for line in listed.output.splitlines()}
    assert offered == set(catalogue.card_types()) and len(offered) == 13
    known = engine.card_types()
    recognised = {nodes.match_card(_node(d["spec"]), known) for d in known.values()}
    assert {(m.name, m.known) for m in recognised if m} == {(n, True) for n in offered}


def test_the_catalogue_is_read_as_policy_files_are(tmp_path: Path) -> None:
    """Duplicate keys are refused, not silently the last one (yaml.safe_load's answer)."""
    text = b"kind: CardType\nmetadata: {name: x}\nmetadata: {name: y}\nspec: {}\n"
    with pytest.raises(catalogue.CatalogueError, match=r"x\.yaml:3:1"):
        catalogue.read_card_types([("x.yaml", text)])
    card_file = tmp_path / "cards.yaml"
    card_file.write_bytes(text)
    run = CliRunner().invoke(main, ["init", str(tmp_path / "r"), "--card-file", str(card_file),
                                    "--card", "y", "--no-interactive"])  # fmt: skip
    assert run.exit_code == 2 and "duplicate" in run.output
