"""`hetgitops diff --base-dir BEFORE --head-dir AFTER --format json` as a user runs it (the
installed entry point, a separate process): its hazards. For the tests that hold a policy change
against what `diff` announces (tests/diff, the busy day-2 matrix)."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def hazards(before: Path, after: Path, now: dt.date) -> list[dict[str, Any]]:
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "hetgitops"),
            *("diff", "--base-dir", str(before), "--head-dir", str(after)),
            *("--format", "json", "--now", now.isoformat()),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr
    return list(json.loads(result.stdout)["hazards"])
