"""Report stage: one formatter per output format; the registry keys are the CLI's choices.

A formatter turns an `api.Result` into text. It never prints and never decides the exit code.
"""

from __future__ import annotations

from types import ModuleType
from typing import Protocol

from hetgitops.api import Result
from hetgitops.reporting import codequality, github, json_format, junit, markdown, sarif, text


class Formatter(Protocol):
    def __call__(self, result: Result, /) -> str: ...


_MODULES: dict[str, ModuleType] = {
    "text": text,
    "json": json_format,
    "github": github,
    "sarif": sarif,
    "junit": junit,
    "markdown": markdown,
    "codequality": codequality,
}

FORMATTERS: dict[str, Formatter] = {name: module.render for name, module in _MODULES.items()}

# One line per format for `--help`: the first line of each module's docstring.
DESCRIPTIONS: dict[str, str] = {
    name: (module.__doc__ or name).strip().splitlines()[0] for name, module in _MODULES.items()
}
