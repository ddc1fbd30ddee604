"""Locate the data folders shipped with the package (schemas/, templates/, policies/)."""

from __future__ import annotations

from pathlib import Path

# The package's own folder: what importlib.resources.files("hetgitops") names for a package
# installed as files (a wheel, an editable checkout), without importing importlib.resources
# (~6 ms in every process).
_PACKAGE = Path(__file__).resolve().parents[1]


def data_dir(name: str) -> Path:
    """The installed copy (wheel force-include) or, in a source checkout, the top-level folder."""
    installed = _PACKAGE / name
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parents[2] / name
