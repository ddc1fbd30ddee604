"""Load stage, limits: what one file's YAML may cost before reading stops (depth, aliases).

The size of what is written is bounded by the file size limit (`policyfiles.MAX_FILE_BYTES`,
rule `file-too-large`); this budget bounds only what aliases add on top of it, so a large plain
file loads and a small file of nested aliases (a 'billion laughs') stops early."""

from __future__ import annotations

from hetgitops.diagnostics import Diagnostic, Span, error
from hetgitops.load.sourcemap import PathKey, format_path

MAX_DEPTH = 64
# Values and characters that aliases may add to one file. Real policies reuse a few small
# anchors; a billion-laughs file passes this in microseconds. Aliases share one string in
# memory, but schema messages and reports print values: bound the characters too.
MAX_ALIAS_NODES_PER_FILE = 200_000
MAX_ALIAS_CHARS_PER_FILE = 8 * 1024 * 1024


class Abort(Exception):
    """A problem after which the rest of the file cannot (or must not) be read."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


class Budget:
    """Values and characters read from one file, an alias counted at its expanded size
    (`nodes`, `chars`: anchors measure themselves with them), and what aliases added."""

    def __init__(self, file: str) -> None:
        self.file, self.nodes, self.chars = file, 0, 0
        self.alias_nodes, self.alias_chars = 0, 0

    def charge(self, nodes: int, chars: int) -> None:
        """A value as written: bounded by the file size, not by this budget."""
        self.nodes += nodes
        self.chars += chars

    def expand(self, nodes: int, chars: int, span: Span, path: PathKey) -> None:
        """An alias, at the size of what it repeats."""
        self.charge(nodes, chars)
        self.alias_nodes += nodes
        self.alias_chars += chars
        if (
            self.alias_nodes > MAX_ALIAS_NODES_PER_FILE
            or self.alias_chars > MAX_ALIAS_CHARS_PER_FILE
        ):
            message = (
                f"aliases expand the file by more than {MAX_ALIAS_NODES_PER_FILE} values or "
                f"{MAX_ALIAS_CHARS_PER_FILE} characters (alias expansion bomb?)"
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
