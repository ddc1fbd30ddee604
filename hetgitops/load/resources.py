"""Locate the data folders shipped with the package (schemas/, templates/, policies/)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def data_dir(name: str) -> Path:
    """The installed copy (wheel force-include) or, in a source checkout, the top-level folder."""
    installed = Path(str(resources.files("hetgitops"))) / name
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parents[2] / name
