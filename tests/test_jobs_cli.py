"""`hetgitops jobs`: stdout stream, --output tree, filters, --templates, exit codes 0/1/2/3."""

from __future__ import annotations

import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import jinja2
import pytest
import yaml
from click.testing import CliRunner, Result

from hetgitops.cli.main import main
from hetgitops.compilers.jobs import render as job_compiler

REPO = Path(__file__).resolve().parents[1]
POLICIES = str(REPO / "policies")
GOLDEN = REPO / "tests" / "cases" / "jobs" / "bundled" / "expected"
NOW = ["--now", "2026-09-01"]


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["jobs", *args], catch_exceptions=False)


def _names(stream: str) -> list[str]:
    return [d["metadata"]["name"] for d in yaml.safe_load_all(stream) if d]


def test_stdout_is_the_stream_of_every_job() -> None:
    result = run(POLICIES, *NOW)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("---\n")
    documents = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert len(documents) == 30
    golden = sorted(p.relative_to(GOLDEN).as_posix() for p in GOLDEN.rglob("*.yaml"))
    assert documents == [yaml.safe_load((GOLDEN / path).read_text()) for path in golden]
    assert "warning[job-integration]" in result.stderr  # PyTorchJob on Kueue 0.19
    assert "info[crd-schema]" not in result.stderr  # no "no schema" line without --crd-dir
    assert "error(s)" not in result.stdout


def test_output_writes_one_file_per_job_and_no_kustomization(tmp_path: Path) -> None:
    out = tmp_path / "jobs"
    out.mkdir()
    (out / "stale.yaml").write_text("old\n")
    result = run(POLICIES, *NOW, "--output", str(out))
    assert result.exit_code == 2 and "refusing --output" in result.stderr  # not our tree
    (out / ".hetgitops-output").write_text("")  # as an earlier `jobs --output` leaves it
    result = run(POLICIES, *NOW, "--output", str(out))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert (out / ".hetgitops-output").read_text()
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.yaml") if p.is_file())
    golden = sorted(p.relative_to(GOLDEN).as_posix() for p in GOLDEN.rglob("*") if p.is_file())
    assert written == golden  # the old tree is replaced as a whole
    assert "kustomization.yaml" not in written
    for path in written:
        assert (out / path).read_bytes() == (GOLDEN / path).read_bytes()


def test_profile_and_team_filters() -> None:
    result = run(POLICIES, *NOW, "--profile", "data-filter", "--team", "research")
    assert result.exit_code == 0, result.stderr
    assert _names(result.stdout) == ["data-filter-mlu370-x8", "data-filter-rtx4090-24gb"]


def test_nothing_eligible_exits_1() -> None:
    result = run(POLICIES, *NOW, "--profile", "llm-pretrain", "--team", "research")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "no job templates" in result.stderr


def test_invalid_policy_renders_nothing(tmp_path: Path) -> None:
    shutil.copytree(REPO / "policies", tmp_path / "policies")
    profiles = tmp_path / "policies" / "profiles" / "serving.yaml"
    profiles.write_text(profiles.read_text().replace("tier: online-inference", "tier: gold", 1))
    result = run(str(tmp_path / "policies"), *NOW)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "no job template was rendered" in result.stderr


def test_broken_template_exits_1_with_a_located_finding(tmp_path: Path) -> None:
    (tmp_path / "deployment.yaml.j2").write_text("kind: {{ job.no_such_key }}\n")
    result = run(POLICIES, *NOW, "--templates", str(tmp_path))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "policies/profiles/serving.yaml:7:14: error[job-template]" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--profile", "no-such-profile"],
        ["--team", "no-such-team"],
        ["--templates", "/no/such/folder"],
        ["--now", "yesterday"],
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    result = run(POLICIES, *NOW, *args)
    assert result.exit_code == 2, result.output


def test_internal_error_exits_3(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(job_compiler, "compile_jobs", explode)
    result = run(POLICIES, *NOW)
    assert result.exit_code == 3
    assert "internal error (RuntimeError: boom)" in result.stderr


def test_templates_cannot_include_files_outside_their_folder(tmp_path: Path) -> None:
    """A symlink out of --templates copied /etc/os-release into a job."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET\n")
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "leak.j2").symlink_to(secret)
    (folder / "deployment.yaml.j2").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
        "data: {leak: '{% include \"leak.j2\" %}'}\n"
    )
    result = run(POLICIES, *NOW, "--templates", str(folder))
    assert result.exit_code == 1
    assert "TOP-SECRET" not in result.stdout + result.stderr
    assert "outside the template folder" in result.stderr
    assert "policies/profiles/serving.yaml:7:14: error[job-template]" in result.stderr


def test_a_template_that_prints_without_end_is_a_finding(tmp_path: Path) -> None:
    (tmp_path / "deployment.yaml.j2").write_text(
        "kind: x\n{% for a in range(100000) %}{% for b in range(100000) %}xxxxxxxx"
        "{% endfor %}{% endfor %}\n"
    )
    result = run(POLICIES, *NOW, "--templates", str(tmp_path))
    assert result.exit_code == 1
    assert "renders more than" in result.stderr
    assert "policies/profiles/serving.yaml:7:14: error[job-template]" in result.stderr


def test_a_template_that_computes_without_printing_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nested loops that emit nothing never reach the per-chunk check: the timer stops them."""
    from hetgitops.compilers.jobs import render as job_render

    monkeypatch.setattr(job_render, "MAX_TEMPLATE_SECONDS", 0.5)
    (tmp_path / "deployment.yaml.j2").write_text(
        "kind: x\n{% for a in range(100000) %}{% for b in range(100000) %}"
        "{% endfor %}{% endfor %}\n"
    )
    result = run(POLICIES, *NOW, "--templates", str(tmp_path))
    assert result.exit_code == 1
    assert "takes more than 0.5 s to render" in result.stderr
    assert "policies/profiles/serving.yaml:7:14: error[job-template]" in result.stderr


def test_a_template_that_ran_out_of_time_is_not_tried_again_in_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The time budget is the run's: a looping template costs it once, not once per job."""
    from hetgitops import api
    from hetgitops.compilers.jobs import render as job_render

    monkeypatch.setattr(job_render, "MAX_TEMPLATE_SECONDS", 0.3)
    renders: list[str] = []
    collect = job_render._collect

    def counted(*args: object) -> str:
        renders.append("deployment")
        return collect(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(job_render, "_collect", counted)
    (tmp_path / "deployment.yaml.j2").write_text(
        "kind: x\n{% for a in range(100000) %}{% for b in range(100000) %}"
        "{% endfor %}{% endfor %}\n"
    )
    result = api.jobs(
        [Path(POLICIES)],
        api.Options(),
        profiles=["llm-serving", "small-model-serving"],
        templates=tmp_path,
    )
    found = [d for d in result.diagnostics if d.rule == "job-template"]
    assert len(found) > 2  # the serving profile renders for several team x card pairs
    assert len(renders) == 1
    [slow] = [d for d in found if d.consequence_of is None]
    assert "takes more than 0.3 s to render" in slow.message
    assert all(d.consequence_of == slow.cause for d in found if d is not slow)
    cli = run(
        POLICIES,
        *NOW,
        "--templates",
        str(tmp_path),
        "--profile",
        "llm-serving",
        "--profile",
        "small-model-serving",
    )
    assert cli.stderr.count("takes more than") == 1 and "1 error(s)" in cli.stderr


@pytest.fixture
def caller_timer() -> Iterator[list[float]]:
    """A library caller's own SIGALRM handler (recording when it fires); restored after."""
    fired: list[float] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(time.monotonic()))
    yield fired
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)


def _render_waiting(seconds: float) -> str:
    template = jinja2.Environment().from_string("{{ wait() }}ok")
    return job_compiler._bounded(template, {"wait": lambda: time.sleep(seconds) or ""})


def test_the_template_timer_gives_a_callers_interval_timer_back(
    caller_timer: list[float],
) -> None:
    signal.setitimer(signal.ITIMER_REAL, 30, 7)
    assert _render_waiting(0.01) == "ok"
    left, interval = signal.getitimer(signal.ITIMER_REAL)
    assert 29 < left <= 30 and interval == 7
    assert signal.getsignal(signal.SIGALRM) is not None and caller_timer == []


def test_a_callers_timer_that_falls_due_during_a_render_still_fires(
    caller_timer: list[float],
) -> None:
    started = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, 0.05)
    assert _render_waiting(0.3) == "ok"  # the caller's alarm is not the template's timeout
    assert len(caller_timer) == 1 and caller_timer[0] - started >= 0.05
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def _long_profile_names(tmp_path: Path, *names: str) -> Path:
    policy = tmp_path / "policies"
    shutil.copytree(POLICIES, policy)
    for path in (policy / "profiles/training.yaml", *(policy / "teams").glob("*.yaml")):
        text = path.read_text()
        for old, new in zip(("llm-pretrain", "llm-finetune"), names, strict=False):
            text = text.replace(old, new)
        path.write_text(text)
    return policy


def test_a_long_profile_name_validates_and_builds_valid_names(tmp_path: Path) -> None:
    # 55 characters: a valid policy name, but `<profile>-<card>` is not a valid label value, and
    # JobSet's webhook wants `<name>-workers-0-<index>-abcde` to be a DNS label too.
    long = "llm-pretrain-" + "x" * 42
    twin = "llm-pretrain-" + "x" * 41 + "y"  # shares the first 54 characters
    policy = _long_profile_names(tmp_path, long, twin)
    assert CliRunner().invoke(main, ["validate", str(policy), *NOW]).exit_code == 0
    result = run(str(policy), *NOW)
    assert result.exit_code == 0, result.stderr
    documents = [d for d in yaml.safe_load_all(result.stdout) if d]
    mine = [d for d in documents if d["metadata"]["name"].startswith("llm-pretrain-xxx")]
    names = {d["metadata"]["name"] for d in mine}
    placed = {(d["metadata"]["namespace"], d["metadata"]["name"]) for d in mine}
    assert len(placed) == len(mine) >= 2  # the twins stay apart
    for name in names:
        assert len(name) <= 41 and len(f"{name}-workers-0-99998-abcde") <= 63
    for document in mine:
        pods = [s["template"] for s in document["spec"].get("pytorchReplicaSpecs", {}).values()]
        for pod in pods:
            assert (
                pod["metadata"]["labels"]["app.kubernetes.io/name"] == document["metadata"]["name"]
            )
    assert run(str(policy), *NOW).stdout == result.stdout  # the hash is stable
