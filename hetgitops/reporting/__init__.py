"""Report stage: one formatter per output format; the registry keys are the CLI's choices."""

from __future__ import annotations

from collections.abc import Callable

from hetgitops.api import Result
from hetgitops.reporting import json_format, text

Formatter = Callable[[Result], str]

FORMATTERS: dict[str, Formatter] = {
    "text": text.render,
    "json": json_format.render,
}
