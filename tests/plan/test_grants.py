"""Time-boxed quota (`plan.grants`): in force from `from` through `until`, counted in the rendered
nominal quota on that day only, and a render made before a date is stale after it."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import yaml
from click.testing import CliRunner

from hetgitops import api
from hetgitops.cli.main import main
from hetgitops.model.policy import Grant, Origin
from hetgitops.plan import grants

BUNDLED = Path(__file__).resolve().parents[2] / "policies"
EXAMPLE = BUNDLED.parent / "examples" / "time-boxed-quota" / "training.yaml"


def _grant(start: str, until: str) -> Grant:
    origin = Origin(None, ())  # type: ignore[arg-type]
    return Grant(8, dt.date.fromisoformat(start), dt.date.fromisoformat(until), None, origin)


def test_state_includes_both_days() -> None:
    g = _grant("2026-12-01", "2026-12-31")
    assert grants.state(g, dt.date(2026, 11, 30)) is grants.State.PENDING
    assert grants.state(g, dt.date(2026, 12, 1)) is grants.State.IN_FORCE
    assert grants.state(g, dt.date(2026, 12, 31)) is grants.State.IN_FORCE
    assert grants.state(g, dt.date(2027, 1, 1)) is grants.State.ENDED
    assert grants.drop_day(g) == dt.date(2027, 1, 1)
    assert grants.ends_soon(g, dt.date(2026, 12, 24)) and not grants.ends_soon(
        g, dt.date(2026, 12, 23)
    )


def granted_policy(tmp_path: Path) -> Path:
    """The bundled fleet with teams/training.yaml from examples/time-boxed-quota: finetune-vision
    granted 8 A800 for December (reason INFRA-1), pretraining giving 8 back for good so the cards
    exist, and vision's budget raised to pay for them."""
    root = tmp_path / "policy"
    shutil.copytree(BUNDLED, root)
    shutil.copyfile(EXAMPLE, root / "teams" / "training.yaml")
    return root


def _nominal(root: Path, day: str, team: str = "finetune-vision") -> str:
    options = api.Options(now=dt.date.fromisoformat(day), targets=("kueue",), check_output=False)
    result = api.render([root], options)
    assert not result.failed(), [str(d) for d in result.diagnostics if d.severity.label == "error"]
    (queue,) = [
        m.obj
        for m in result.manifests
        if m.obj["kind"] == "ClusterQueue" and m.obj["metadata"]["name"] == team
    ]
    for group in queue["spec"]["resourceGroups"]:
        for flavor in group["flavors"]:
            if flavor["name"].startswith("a800"):
                for resource in flavor["resources"]:
                    if resource["name"] == "nvidia.com/gpu":
                        return str(resource["nominalQuota"])
    raise AssertionError("no a800 flavor")


def test_render_counts_the_grant_only_while_in_force(tmp_path: Path) -> None:
    root = granted_policy(tmp_path)
    assert [_nominal(root, d) for d in ("2026-11-30", "2026-12-01", "2026-12-31")] == [
        "24",
        "32",
        "32",
    ]
    # After `until` render still works (validate fails): the cluster loses the grant on time.
    assert _nominal(root, "2027-01-01") == "24"
    assert api.validate([root], api.Options(now=dt.date(2027, 1, 1), check_output=False)).failed()


def test_render_check_catches_a_render_stale_because_a_date_passed(tmp_path: Path) -> None:
    root, out = granted_policy(tmp_path), tmp_path / "out"
    args = ["render", str(root), "--target", "kueue", "--output", str(out)]
    assert CliRunner().invoke(main, [*args, "--now", "2026-11-30"]).exit_code == 0
    assert CliRunner().invoke(main, [*args, "--check", "--now", "2026-11-30"]).exit_code == 0
    stale = CliRunner().invoke(main, [*args, "--check", "--now", "2026-12-01"])
    assert stale.exit_code == 1
    assert "clusterqueue-finetune-vision.yaml: stale" in stale.stderr
    queue = yaml.safe_load((out / "kueue" / "clusterqueue-finetune-vision.yaml").read_text())
    assert "32" not in str(queue["spec"]["resourceGroups"])  # --check wrote nothing
