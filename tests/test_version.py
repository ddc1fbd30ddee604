"""The version is written once (hetgitops/__init__.py); everything that quotes it follows.

pyproject.toml reads it through hatch's `[tool.hatch.version]`; the install snippets in the docs,
the pre-commit hook's example and the Argo CD plugin image quote it for users to copy, so a
release that bumps `__version__` and forgets one of them is caught here."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from hetgitops import __version__

ROOT = Path(__file__).resolve().parents[1]
# Every file that quotes the release for a user to copy, with the pattern that finds it.
QUOTED = {
    ".pre-commit-hooks.yaml": r"rev: v(\d+\.\d+\.\d+)",
    "docs/integrations/pre-commit.md": r"rev: v(\d+\.\d+\.\d+)",
    "docs/integrations/github-actions.md": r"hetgitops@v(\d+\.\d+\.\d+)",
    "docs/getting-started.md": r"hetgitops@v(\d+\.\d+\.\d+)",
    "integrations/argocd/repo-server-patch.yaml": r"hetgitops-cmp:(\d+\.\d+\.\d+)",
}


def test_pyproject_reads_the_version_from_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"], "pyproject.toml writes the version a second time"
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["hatch"]["version"]["path"] == "hetgitops/__init__.py"


def test_every_quoted_version_is_the_package_version() -> None:
    stale: dict[str, list[str]] = {}
    for name, pattern in QUOTED.items():
        found = re.findall(pattern, (ROOT / name).read_text())
        assert found, f"{name} no longer quotes the version ({pattern}): update QUOTED"
        other = [v for v in found if v != __version__]
        if other:
            stale[name] = other
    assert not stale, f"files quoting another version than {__version__}: {stale}"


def test_installed_metadata_agrees() -> None:
    """The installed distribution's version is the package's (the editable install reads it)."""
    from importlib.metadata import version

    assert version("hetgitops") == __version__
