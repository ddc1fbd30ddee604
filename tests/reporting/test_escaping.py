"""Hostile text in file names and policy values: the text report shows control and bidi
characters as escapes; the Markdown report pings nobody."""

from __future__ import annotations

from hetgitops.api import Result
from hetgitops.diagnostics import Diagnostic, Severity, Span
from hetgitops.reporting import markdown, text

BIDI = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: makes `lmay.exe` read as `exe.yaml`


def _result(message: str, file: str = "p.yaml") -> Result:
    found = Diagnostic(
        rule="schema",
        severity=Severity.ERROR,
        message=message,
        span=Span(file, 3, 4),
        path="spec",
        hint="ask @infra",
    )
    return Result([found], [file], documents=1)


def test_text_escapes_bidi_c1_and_line_separators_in_values_and_file_names() -> None:
    shown = text.render(_result(f"a{BIDI}b\x9bc\u2028d\u2066", file=f"te{BIDI}am.yaml"))
    assert BIDI not in shown and "\x9b" not in shown and "\u2028" not in shown
    assert "\u2066" not in shown
    assert "te\\u202eam.yaml:3:4" in shown
    assert "a\\u202eb\\x9bc\\u2028d\\u2066" in shown


def test_text_still_escapes_c0_controls() -> None:
    assert "\\x1b[31m" in text.render(_result("x\x1b[31m"))


def test_markdown_neutralises_mentions() -> None:
    shown = markdown.render(_result("owned by @platform-team and @org/gpu"))
    assert "@platform-team" not in shown and "@org/gpu" not in shown and "@infra" not in shown
    assert "@\u200bplatform-team" in shown and "@\u200binfra" in shown
    assert "user@example.com" in markdown.render(_result("mail user@example.com"))


def test_markdown_drops_bidi_controls() -> None:
    assert BIDI not in markdown.render(_result(f"a{BIDI}b"))
