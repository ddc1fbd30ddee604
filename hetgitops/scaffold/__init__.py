"""Scaffold stage: answers (cluster, card types, pools, teams) -> the files of a new policy repo.

Takes `Answers` and the card-type catalogue (`hetgitops.model.catalogue`). Gives
relative path -> text for a minimal fleet that validates and renders clean, plus the repository
glue a first day needs: pre-commit config, CI workflow, `.editorconfig`, the JSON Schemas for
editors. Pure: nothing is written here; `hetgitops init` writes the files.
"""

from __future__ import annotations

from hetgitops.scaffold.answers import BadAnswer, PoolAnswer
from hetgitops.scaffold.fleet import Answers, parse_pool, policy_files
from hetgitops.scaffold.repo import POLICY_DIR, RENDER_DIR, repo_files

__all__ = [
    "POLICY_DIR",
    "RENDER_DIR",
    "Answers",
    "BadAnswer",
    "PoolAnswer",
    "parse_pool",
    "policy_files",
    "scaffold_files",
]


def scaffold_files(answers: Answers) -> dict[str, str]:
    """Every file of the new repository except the render, relative path -> text."""
    return dict(sorted({**policy_files(answers), **repo_files()}.items()))
