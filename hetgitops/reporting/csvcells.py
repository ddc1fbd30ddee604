"""Reporting stage, CSV: cells a spreadsheet reads as text, never as a formula.

A cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return is a formula to Excel,
LibreOffice and Google Sheets (CSV injection, OWASP): a team, file or server text of
`=HYPERLINK(...)` would run when the report is opened. Such a cell is written with a leading
`'`, which the spreadsheet shows as text; a plain number (`-5`, `+1.5`) stays a number."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Mapping
from typing import Any

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def cell(value: Any) -> Any:
    """`value`, or its text defused when a spreadsheet would read it as a formula."""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def rows(header: Iterable[str], body: Iterable[Iterable[Any]]) -> str:
    """A CSV document: the header, then each row with every cell through `cell`."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([cell(h) for h in header])
    writer.writerows([cell(v) for v in row] for row in body)
    return out.getvalue()


def records(header: Iterable[str], body: Iterable[Mapping[str, Any]]) -> str:
    """A CSV document of dict rows in `header`'s column order (a missing key: empty)."""
    columns = list(header)
    return rows(columns, ([r.get(c, "") for c in columns] for r in body))
