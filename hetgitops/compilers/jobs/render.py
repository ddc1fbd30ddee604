"""Compile stage, `jobs`: per-card job templates (Jinja2) for each eligible (team, profile, card).

Not a render target (not in COMPILERS): the jobs are examples for teams to submit, never part
of the applied tree. Templates live in `templates/` (one per framework, same names in a
`--templates` override folder, which may also replace only some of them) and render in a
sandbox with StrictUndefined; a broken template or invalid YAML is a `job-template` finding at
the profile, never a traceback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import re
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import yaml
from jinja2.nodes import EvalContext
from jinja2.sandbox import SandboxedEnvironment
from markupsafe import Markup

from hetgitops.compilers.jobs import parse
from hetgitops.compilers.jobs import rules as _rules  # noqa: F401  (registers the rule)
from hetgitops.compilers.jobs.context import ContextError, context
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.load.resources import data_dir
from hetgitops.model.policy import Policy, WorkloadProfile
from hetgitops.output.manifests import Manifest, to_yaml
from hetgitops.plan.job_targets import JobTarget, Selector

TARGET = "jobs"
TEMPLATE_RULE = "job-template"  # registered in compilers/jobs/rules.py, which needs no Jinja2
TEMPLATES: Mapping[str, str] = {
    "job": "job.yaml.j2",
    "pytorchjob": "pytorchjob.yaml.j2",
    "jobset": "jobset.yaml.j2",
    "volcano-job": "volcano-job.yaml.j2",
    "deployment": "deployment.yaml.j2",
    "leaderworkerset": "leaderworkerset.yaml.j2",
    "rayjob": "rayjob.yaml.j2",
    "raycluster": "raycluster.yaml.j2",
    "rayservice": "rayservice.yaml.j2",
}


# A repository's template may loop without end or print gigabytes. The time is the run's: a
# template that used it up once is not tried again for the run's other jobs (see RunBudget).
MAX_TEMPLATE_SECONDS = 10.0
MAX_TEMPLATE_BYTES = 1024 * 1024


@dataclass
class RunBudget:
    """What one `jobs` run allows its templates. A template that loops would otherwise cost
    MAX_TEMPLATE_SECONDS for every team x card it renders for (12 jobs: 2 minutes; a 300-team
    fleet: hours); so the first render that runs out of time marks the template spent, and the
    run's later jobs from it are reported under that first finding without rendering."""

    seconds: float = dataclasses.field(default_factory=lambda: MAX_TEMPLATE_SECONDS)
    spent: dict[str, Diagnostic] = dataclasses.field(default_factory=dict)


class ConfinedLoader(jinja2.FileSystemLoader):
    """A FileSystemLoader that never reads outside its folders: a symlink (or `..`) out of a
    `--templates` folder would copy any file the user can read into a job."""

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        source, filename, uptodate = super().get_source(environment, template)
        real = os.path.realpath(filename)
        roots = [os.path.realpath(folder) for folder in self.searchpath]
        if not any(real.startswith(root + os.sep) for root in roots):
            raise jinja2.TemplateNotFound(f"{template} (it leads outside the template folder)")
        return source, filename, uptodate


class _TooSlow(Exception):
    """Raised by the interval timer inside a template that runs too long."""


@contextlib.contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    """Interrupt a template that computes without printing (nested loops that emit nothing never
    reach the per-chunk check). Signals reach only the main thread, which is where the CLI runs;
    a library caller on another thread keeps the per-chunk check alone.

    A library caller may run its own ITIMER_REAL (there is one per process): it is put back on
    the way out with the time it had left, and if it fell due meanwhile its handler gets the
    SIGALRM then, late but not lost."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "setitimer"
    ):
        yield
        return
    started = time.monotonic()

    def expired(signum: int, frame: object) -> None:
        left = seconds - (time.monotonic() - started)
        if left <= 0:
            raise _TooSlow
        signal.setitimer(signal.ITIMER_REAL, left)  # the caller's timer fell due first

    previous = signal.signal(signal.SIGALRM, expired)
    delay, interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    if 0 < delay < seconds:
        signal.setitimer(signal.ITIMER_REAL, delay)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
        if delay > 0:
            _resume(delay - (time.monotonic() - started), interval)


def _resume(left: float, interval: float) -> None:
    """Re-arm a caller's interval timer with `left` seconds; one that fell due is delivered."""
    if left > 0:
        signal.setitimer(signal.ITIMER_REAL, left, interval)
        return
    if interval > 0:
        signal.setitimer(signal.ITIMER_REAL, interval, interval)
    signal.raise_signal(signal.SIGALRM)


class TemplateTooSlow(ValueError):
    """A template ran out of its time budget (the run does not try it again)."""


def _bounded(
    template: jinja2.Template, values: Mapping[str, Any], seconds: float | None = None
) -> str:
    """Render with a time and size budget: size checked at every chunk of output, time both
    there and by an interval timer."""
    seconds = MAX_TEMPLATE_SECONDS if seconds is None else seconds
    try:
        with _alarm(seconds):
            return _collect(template, values, seconds)
    except _TooSlow:
        raise TemplateTooSlow(f"takes more than {seconds:g} s to render") from None


def _collect(template: jinja2.Template, values: Mapping[str, Any], seconds: float) -> str:
    started, size, parts = time.monotonic(), 0, []
    for chunk in template.generate(values):
        size += len(chunk)
        parts.append(chunk)
        if size > MAX_TEMPLATE_BYTES:
            raise ValueError(f"renders more than {MAX_TEMPLATE_BYTES} characters")
        if time.monotonic() - started > seconds:
            raise TemplateTooSlow(f"takes more than {seconds:g} s to render")
    return "".join(parts)


@functools.cache
def environment(templates: Path | None = None) -> SandboxedEnvironment:
    """One environment per template folder: the user's folder first, the bundled one behind
    it, so an override may replace a single template and keep the shared parts."""
    folders = [str(templates)] if templates is not None else []
    folders.append(str(data_dir("templates")))
    env = SandboxedEnvironment(
        loader=ConfinedLoader(folders),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        # One run renders each template hundreds of times: stat its file once, not per render
        # (2,688 stats at the 5,000-node fleet); the environment lives for one process.
        auto_reload=False,
    )
    # Keep the context's key order (requests before limits, tcpSocket first) in the output.
    env.policies["json.dumps_kwargs"] = {"sort_keys": False}
    env.policies["json.dumps_function"] = yaml_json
    env.filters["tojson"] = _tojson
    return env


@jinja2.pass_eval_context
def _tojson(eval_ctx: EvalContext, value: Any, indent: int | None = None) -> Markup:
    """Jinja's own `tojson` (filters.do_tojson over utils.htmlsafe_json_dumps: the same <, >, &
    and ' escapes, a Markup result) with this environment's fixed policies, in one call instead
    of three per value (17,000 values at the 5,000-node fleet)."""
    text = (
        yaml_json(value, **_PLAIN_KWARGS)
        if indent is None
        else yaml_json(value, **_PLAIN_KWARGS, indent=indent)
    )
    return Markup(
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("'", "\\u0027")
    )


@functools.cache
def _yaml_unsafe() -> re.Pattern[str]:
    """What a YAML double-quoted scalar may not carry raw: characters outside YAML's printable
    set, and the line breaks YAML folds (NEL, LS, PS) or strips (BOM). Everything else stays
    UTF-8. Compiled on first use (~8 ms): only non-ASCII `tojson` text is searched."""
    return re.compile(
        r"[^\t\n\r\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
    )


# `tojson` without arguments (environment's json.dumps_kwargs): one encoder for the run, not a
# new JSONEncoder per call as json.dumps makes for non-default options (17,000 calls at the
# 5,000-node fleet).
_PLAIN_KWARGS = {"sort_keys": False}
_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=False)


def yaml_json(obj: Any, **kwargs: Any) -> str:
    """`tojson` for YAML templates: JSON is a YAML flow scalar, but json.dumps' default
    `\\uD83D\\uDE80` surrogate pairs for emoji are rejected by libyaml and kubectl; so keep
    non-ASCII text as UTF-8 and escape only what YAML cannot hold raw (always in the BMP)."""
    if kwargs == _PLAIN_KWARGS:
        text = _ENCODER.encode(obj)
    else:
        text = json.dumps(obj, ensure_ascii=False, **kwargs)
    if text.isascii() and "\x7f" not in text:  # DEL is the one ASCII character YAML refuses
        return text
    return _yaml_unsafe().sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _template_line(exc: BaseException) -> str:
    """`file:line` of the template frame that failed (Jinja rewrites tracebacks to them)."""
    if isinstance(exc, jinja2.TemplateSyntaxError):
        return f"{exc.name or exc.filename}:{exc.lineno}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.endswith(".j2")]
    return f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""


def _problem(profile: WorkloadProfile, message: str) -> Diagnostic:
    span = profile.origin.at("spec", "framework")
    return Diagnostic(
        rule=TEMPLATE_RULE,
        severity=Severity.ERROR,
        message=message,
        span=span,
        path="spec.framework",
    )


def _parse(text: str, name: str) -> dict[str, Any]:
    try:
        obj = parse.load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"{name} rendered invalid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(obj, dict) or not obj.get("apiVersion") or not obj.get("kind"):
        raise ValueError(f"{name} did not render one object with apiVersion and kind")
    return obj


def render_one(
    policy: Policy,
    target: JobTarget,
    env: SandboxedEnvironment,
    budget: RunBudget | None = None,
) -> Manifest | Diagnostic:
    """The manifest of one target, or the finding that explains why there is none."""
    budget = budget or RunBudget()
    profile = target.profile
    name = TEMPLATES[profile.framework]
    where = f"job template for team '{target.team.name}' on '{target.card.name}'"
    spent = budget.spent.get(name)
    if spent is not None:
        return _problem(
            profile, f"{where}: not rendered: {name} ran out of time earlier in this run"
        ).because(spent.cause)
    try:
        values = context(policy, target)
    except ContextError as exc:
        return _problem(profile, f"{where}: {exc}")
    try:
        text = _bounded(env.get_template(name), values, budget.seconds)
    except Exception as exc:  # user-supplied template code: any failure is a finding
        at = _template_line(exc) or name
        found = _problem(profile, f"{where}: {at}: {type(exc).__name__}: {exc}")
        if isinstance(exc, TemplateTooSlow):
            budget.spent[name] = found
        return found
    try:
        obj = _parse(text, name)
    except ValueError as exc:
        return _problem(profile, f"{where}: {exc}")
    return Manifest(TARGET, obj, profile.origin.span, applied=False, filename=target.filename)


def _chosen(names: Iterable[str] | None) -> frozenset[str] | None:
    return None if names is None else frozenset(names)


def compile_jobs(
    policy: Policy,
    *,
    profiles: Iterable[str] | None = None,
    teams: Iterable[str] | None = None,
    templates: Path | None = None,
    scheduler: str | None = None,
) -> tuple[list[Manifest], list[Diagnostic]]:
    """Job templates ordered by profile, team and card type (their file names), and findings.
    `scheduler` picks who queues every job but Volcano Jobs (default: the Fleet's targets)."""
    env, budget = environment(templates), RunBudget()
    wanted, team_names = _chosen(profiles), _chosen(teams)
    selector = Selector(policy, scheduler)
    manifests: list[Manifest] = []
    found: list[Diagnostic] = []
    for profile in policy.profiles.values():
        if wanted is not None and profile.name not in wanted:
            continue
        # Settings the job depends on (job-integration) are the checks' to report: validate
        # says them too, and jobs runs the checks first.
        for target in selector.targets(profile, team_names):
            made = render_one(policy, target, env, budget)
            if isinstance(made, Manifest):
                manifests.append(made)
            else:
                found.append(made)
    manifests.sort(key=lambda m: m.filename or "")
    return manifests, found


def stream(manifests: Iterable[Manifest]) -> str:
    """All job templates as one multi-document stream, in file-name order."""
    return "".join("---\n" + to_yaml(m.obj) for m in manifests)


def tree(manifests: Iterable[Manifest]) -> dict[str, str]:
    """`<profile>/<team>/<card>.yaml` -> text; no kustomization: nothing here is applied.
    Two templates for one file would lose one silently: that is a bug, so it raises."""
    files: dict[str, str] = {}
    for manifest in manifests:
        name = manifest.filename or manifest.relative_path()
        if name in files:
            raise ValueError(f"two job templates for one file name: {name}")
        files[name] = to_yaml(manifest.obj)
    return files
