"""Load stage, limits: what one file's YAML may cost before reading stops (depth, size)."""

from __future__ import annotations

from hetgitops.diagnostics import Diagnostic, Span, error
from hetgitops.load.sourcemap import PathKey, format_path

MAX_DEPTH = 64
# Real policy files hold a few thousand values; a billion-laughs file passes this in microseconds.
MAX_NODES_PER_FILE = 200_000
# Aliases share one string in memory, but schema messages and reports print values: bound that.
MAX_CHARS_PER_FILE = 8 * 1024 * 1024


class Abort(Exception):
    """A problem after which the rest of the file cannot (or must not) be read."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


class Budget:
    """Values and characters read from one file, an alias counted at its expanded size."""

    def __init__(self, file: str) -> None:
        self.file, self.nodes, self.chars = file, 0, 0

    def charge(self, nodes: int, chars: int, span: Span, path: PathKey) -> None:
        self.nodes += nodes
        self.chars += chars
        if self.nodes > MAX_NODES_PER_FILE or self.chars > MAX_CHARS_PER_FILE:
            message = (
                f"file expands to more than {MAX_NODES_PER_FILE} values or "
                f"{MAX_CHARS_PER_FILE} characters (alias expansion bomb?)"
            )
            raise Abort(
                error(
                    "alias-bomb",
                    message,
                    span,
                    format_path(path),
                    "remove the nested aliases; the rest of this file was not read",
                )
            )
