"""Rules never raise for a user mistake: damage the base policy line by line and validate."""

from __future__ import annotations

import re

import pytest

from .conftest import BASE, PolicyText

DAMAGED = [
    (name, index) for name, text in sorted(BASE.items()) for index in range(len(text.splitlines()))
]


@pytest.mark.parametrize("name, index", DAMAGED)
def test_a_missing_line_never_crashes_the_checks(name, index):
    lines = BASE[name].splitlines(keepends=True)
    damaged = PolicyText({**BASE, name: "".join(lines[:index] + lines[index + 1 :])})
    damaged.diagnostics()  # raises on an internal error or a severity mismatch


NUMBERS = [
    (name, match.start(), match.end())
    for name, text in sorted(BASE.items())
    for match in re.finditer(r"(?<=: )[0-9]+\b|(?<=\[)[0-9]+\b", text)
]


@pytest.mark.parametrize("value", ["0", "64"])
@pytest.mark.parametrize("name, start, end", NUMBERS)
def test_extreme_numbers_never_crash_the_checks(name, start, end, value):
    text = BASE[name]
    PolicyText({**BASE, name: text[:start] + value + text[end:]}).diagnostics()
