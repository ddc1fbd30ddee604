"""Load stage, YAML files: every document of one file's text, or the diagnostics for it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from hetgitops.diagnostics import Diagnostic, Span, error
from hetgitops.load.sourcemap import span_of
from hetgitops.load.yamlbuild import DocumentBuilder, Parsed
from hetgitops.load.yamllimits import Abort, Budget

# libyaml when PyYAML was built with it (10x faster); only its event stream is used.
_Parser: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_documents(file: str, text: str) -> Iterator[Parsed | Diagnostic]:
    """Every non-empty document of `text` in order, with the problems found in each.

    A document with a problem that makes its data misleading is replaced by its diagnostics;
    a syntax error, an alias bomb or too deep a nesting ends the file."""
    budget = Budget(file)
    builder: DocumentBuilder | None = None
    index = -1
    try:
        for event in _events(text):
            if isinstance(event, yaml.DocumentStartEvent):
                index += 1
                builder = DocumentBuilder(budget, index)
            elif isinstance(event, yaml.DocumentEndEvent) and builder is not None:
                yield from builder.finish()
                builder = None
            elif builder is not None:
                builder.feed(event)
    except (Abort, yaml.YAMLError) as exc:
        yield from builder.problems if builder else ()
        yield _fatal(file, text, exc)


def _events(text: str) -> Iterator[yaml.Event]:
    """The parser's events; `yaml.parse()` adds a check_event() call per event (a hot spot)."""
    parser = _Parser(text)
    try:
        while not isinstance(event := parser.get_event(), yaml.StreamEndEvent):
            yield event
    finally:
        parser.dispose()


def _fatal(file: str, text: str, exc: Abort | yaml.YAMLError) -> Diagnostic:
    if isinstance(exc, Abort):
        return exc.diagnostic
    if isinstance(exc, yaml.MarkedYAMLError):
        return _syntax_error(file, text, exc)
    return _reader_error(file, text, exc)


LIBYAML_DEPTH_PROBLEM = "exceeded maximum nesting depth"


def _syntax_error(file: str, text: str, exc: yaml.MarkedYAMLError) -> Diagnostic:
    mark = exc.problem_mark or exc.context_mark
    message = f"YAML syntax error: {exc.problem or exc.context or 'not valid YAML'}"
    if exc.context and exc.context_mark is not None and exc.problem_mark is not None:
        message += f" ({exc.context} at line {exc.context_mark.line + 1})"
    if exc.problem == LIBYAML_DEPTH_PROBLEM:
        # Newer libyaml stops deep flow collections itself, before our own depth guard sees
        # them; it is the same finding, so it gets the same rule id.
        return error("too-deep", "nesting deeper than the YAML parser allows", span_of(file, mark))
    tab = mark is not None and _char_at(text, mark.line, mark.column) == "\t"
    hint = "indent with spaces: YAML does not allow tabs for indentation" if tab else ""
    return error("syntax", message, span_of(file, mark), hint=hint)


def _char_at(text: str, line: int, column: int) -> str:
    lines = text.split("\n", line + 1)
    return lines[line][column : column + 1] if line < len(lines) else ""


def _reader_error(file: str, text: str, exc: yaml.YAMLError) -> Diagnostic:
    """libyaml's reader reports a byte offset into the UTF-8 text instead of a mark."""
    offset = int(getattr(exc, "position", 0) or 0)
    before = text.encode("utf-8")[:offset].decode("utf-8", "ignore")
    line = before.count("\n") + 1
    column = len(before) - (before.rfind("\n") + 1) + 1
    reason = getattr(exc, "reason", "") or str(exc)
    return error(
        "syntax",
        f"YAML syntax error: {reason}",
        Span(file, line, column),
        hint="remove the control character; policies are plain text",
    )
