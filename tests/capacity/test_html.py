"""`hetgitops capacity --format html` in headless Chromium (Debian `chromium`): the page renders
without console messages, a screenshot is taken, and the DOM shows every team and card type.
A page that logs to the console is caught the same way (the check can fail)."""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from hetgitops.cli import main as cli
from hetgitops.explain import run

REPO = Path(__file__).resolve().parents[2]
NOW = dt.date(2026, 12, 1)
REQUIRE = "HETGITOPS_REQUIRE_CHROMIUM"


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(f"{REQUIRE}=1 but no chromium on PATH (apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


def browse(page: Path, tmp_path: Path) -> tuple[str, list[str], Path]:
    """(DOM after load, console lines, screenshot) of `page`, each from a headless run."""
    binary = chromium()
    flags = [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [*flags, "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    shot = tmp_path / "capacity.png"
    subprocess.run(
        [*flags, f"--screenshot={shot}", "--window-size=1280,3200", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    return dom.stdout, console, shot


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("html") / "capacity.html"
    result = CliRunner().invoke(
        cli.main, ["capacity", str(REPO / "policies"), "--now", NOW.isoformat(), "--format", "html"]
    )
    assert result.exit_code == 0, result.output
    out.write_text(result.output, encoding="utf-8")
    return out


def test_the_page_is_self_contained_and_deterministic(page: Path) -> None:
    text = page.read_text()
    assert "<script" not in text and "<link" not in text
    assert not re.search(r'(src|href)="https?:', text)
    again = CliRunner().invoke(
        cli.main, ["capacity", str(REPO / "policies"), "--now", NOW.isoformat(), "--format", "html"]
    )
    assert again.output == text
    assert text.count("<svg") == 2


def test_chromium_renders_every_team_and_card_type_without_console_messages(
    page: Path, tmp_path: Path
) -> None:
    dom, console, shot = browse(page, tmp_path)
    assert console == []
    policy = run.load_policy([REPO / "policies"], NOW)
    for name in [*policy.teams, *policy.card_types]:
        assert name in dom, name
    assert "<svg" in dom and "Cohort tree" in dom
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_a_console_error_is_seen(tmp_path: Path) -> None:
    bad = tmp_path / "bad.html"
    bad.write_text('<html><body><script>console.error("broken chart")</script></body></html>')
    _, console, _ = browse(bad, tmp_path)
    assert any("broken chart" in line for line in console)
