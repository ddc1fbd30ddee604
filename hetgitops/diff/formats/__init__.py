"""Diff reports: one module per `--format`; the registry keys are the CLI's choices."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from hetgitops.diff.formats import github, json_format, markdown, text
from hetgitops.diff.run import DiffResult

_MODULES: dict[str, ModuleType] = {
    "text": text,
    "markdown": markdown,
    "json": json_format,
    "github": github,
}

DiffFormatter = Callable[[DiffResult], str]
FORMATTERS: dict[str, DiffFormatter] = {name: m.render for name, m in _MODULES.items()}
DESCRIPTIONS: dict[str, str] = {
    name: (m.__doc__ or name).strip().splitlines()[0] for name, m in _MODULES.items()
}
