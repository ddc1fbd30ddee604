"""The library API: validate(), render() and jobs() return Result objects; they never print or
exit."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from hetgitops import checks, compilers
from hetgitops.checks.reuse import NODE_RULES, NODE_TARGETS, NodeReuse, Taken
from hetgitops.diagnostics import (
    NOWHERE,
    Diagnostic,
    Severity,
    Span,
    error,
    has_errors,
    sort_unique,
)
from hetgitops.load import losses
from hetgitops.load.documents import Document, LoadResult, Loss, load_paths, load_sources
from hetgitops.model import schema
from hetgitops.model.building import build_policy
from hetgitops.model.policy import Policy
from hetgitops.output.manifests import Manifest

if TYPE_CHECKING:
    from hetgitops.conformance.output_checks import Memo


@dataclass
class Result:
    """What a command found: diagnostics always; the policy and manifests when they exist."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    documents: int = 0
    policy: Policy | None = None
    manifests: list[Manifest] = field(default_factory=list)
    # Every document passed its schema and the model was built without an error: `policy` is
    # the whole policy even if semantic checks failed (diff still shows its quota and cost).
    model_complete: bool = False

    def failed(self, *, strict: bool = False) -> bool:
        return has_errors(self.diagnostics, strict=strict)


@dataclass(frozen=True)
class Options:
    now: dt.date = field(default_factory=dt.date.today)
    targets: tuple[str, ...] | None = None
    crd_dirs: tuple[Path, ...] = ()
    check_output: bool = True
    # Compile the render targets (and check them, with check_output). `jobs` builds only on
    # the policy: compiling a tree it throws away was a tenth of its time.
    compile_targets: bool = True
    # Rules that render() and jobs() report as warnings while validate() (the CI gate) keeps
    # them errors: an expired pool's nodes stay in the cluster until the policy changes, and
    # refusing to render would break every GitOps sync the night the date passes.
    render_warnings: frozenset[str] = frozenset({"pool-expired"})
    # File -> lines a change touched (`validate --changed-since`): an aggregate finding is then
    # reported at a contributor inside the change (Diagnostic.focus). None: not known.
    changed: Mapping[str, frozenset[int]] | None = None

    def in_change(self, span: Span) -> bool:
        return self.changed is not None and span.line in self.changed.get(span.file, ())


def _downgrade(diagnostics: Iterable[Diagnostic], rules: frozenset[str]) -> list[Diagnostic]:
    return [
        replace(d, severity=Severity.WARNING)
        if d.rule in rules and d.severity is Severity.ERROR
        else d
        for d in diagnostics
    ]


def analyse(
    loaded: LoadResult,
    options: Options,
    *,
    downgrade: frozenset[str] = frozenset(),
    memo: Memo | None = None,
    clean: schema.CleanMemo | None = None,
    nodes: NodeReuse | None = None,
) -> Result:
    """Schema, model, semantic checks and (when those pass) compile + output validation.
    Errors of the `downgrade` rules become warnings (render and jobs). Diff's two sides share
    work: `memo` the output findings of equal objects, `clean` the data both hold that the
    schema passed, `nodes` the node-level rules and targets (`checks.reuse`)."""
    result = Result(list(loaded.diagnostics), loaded.files, len(loaded.documents))
    valid: list[Document] = []
    invalid: list[Document] = []
    lost: list[Loss] = list(loaded.losses)
    for doc, problems in zip(
        loaded.documents, schema.check_documents(loaded.documents, clean), strict=True
    ):
        result.diagnostics.extend(problems)
        (invalid if problems else valid).append(doc)
        if problems:  # references to it would fail next: they follow from its first problem
            lost.append(losses.of_document(min(problems).cause, doc.kind, doc.name))
    if not valid and not invalid and not loaded.diagnostics:
        return result
    policy, problems = build_policy(valid, lost)
    result.policy = policy
    result.diagnostics.extend(problems)
    result.model_complete = not invalid and not has_errors([*loaded.diagnostics, *problems])
    # Only a whole single-cluster model shares: a lost document changes what rules assume.
    shares = nodes is not None and not lost and not invalid and not policy.clusters
    taken = nodes.taken(valid, loaded.files, options.now) if nodes and shares else Taken()
    record = taken.record
    found = checks.run_checks(
        policy,
        checks.CheckContext(options.now, options.targets),
        given=taken.rules,
        kept=None if record is None else record.rules,
        keep=NODE_RULES,
    )
    result.diagnostics.extend(_downgrade(found, downgrade))
    if not result.failed() and not invalid and options.compile_targets:
        try:
            if shares:
                result.manifests = compilers.compile_single(
                    policy,
                    options.targets,
                    given=taken.targets,
                    kept=None if record is None else record.targets,
                    keep=NODE_TARGETS,
                )
            else:
                result.manifests = compilers.compile_policy(policy, options.targets)
        except compilers.CompileError as exc:
            span = policy.fleet.origin.span if policy.fleet else NOWHERE
            result.diagnostics.append(error(exc.rule, str(exc), span))
            result.diagnostics = _focused(result.diagnostics, options)
            return result
        if options.check_output:
            output = _check_output(result.manifests, policy, options, memo=memo)
            result.diagnostics.extend(output)
    result.diagnostics = _focused(result.diagnostics, options)
    return result


def _focused(diagnostics: Iterable[Diagnostic], options: Options) -> list[Diagnostic]:
    """Report order; with known changed lines, aggregate findings at a changed contributor."""
    if options.changed is not None:
        diagnostics = [d.focus(options.in_change) for d in diagnostics]
    return sort_unique(diagnostics)


def _check_output(
    manifests: list[Manifest],
    policy: Policy,
    options: Options,
    *,
    unchecked: bool = True,
    memo: Memo | None = None,
) -> Iterable[Diagnostic]:
    from hetgitops.conformance import (
        output_checks,  # the k8s schema stack is heavy; load it only here
    )

    if not policy.clusters:
        return output_checks.check(
            manifests, policy, crd_dirs=options.crd_dirs, unchecked=unchecked, memo=memo
        )
    # Each cluster's tree against that cluster's Kubernetes minor and Kueue version.
    from hetgitops.plan.clusters import cluster_policy

    found: list[Diagnostic] = []
    for name in policy.clusters:
        own = [m for m in manifests if m.cluster == name]
        narrowed = cluster_policy(policy, name)
        found.extend(
            output_checks.check(
                own, narrowed, crd_dirs=options.crd_dirs, unchecked=unchecked, memo=memo
            )
        )
    return found


def validate(paths: Iterable[Path], options: Options | None = None) -> Result:
    return analyse(load_paths(paths), options or Options())


def validate_sources(
    sources: Iterable[tuple[str, bytes]], options: Options | None = None
) -> Result:
    return analyse(load_sources(sources), options or Options())


def _for_output(paths: Iterable[Path], options: Options) -> Result:
    """validate() with Options.render_warnings downgraded: what render and jobs build on."""
    return analyse(load_paths(paths), options, downgrade=options.render_warnings)


def render(paths: Iterable[Path], options: Options | None = None) -> Result:
    """Like validate (with Options.render_warnings as warnings); an invalid policy yields no
    manifests (render must emit nothing)."""
    result = _for_output(paths, options or Options())
    if result.failed():
        result.manifests = []
    return result


def promtool_tests(result: Result) -> dict[str, str]:
    """The monitoring target's rule files and generated promtool unit tests (file -> text)
    for a rendered Result; ValueError when the render has no monitoring objects."""
    from hetgitops.compilers.monitoring import TARGET
    from hetgitops.compilers.monitoring.promtests import promtool_files

    if result.policy is None or not any(m.target == TARGET for m in result.manifests):
        raise ValueError("--promtool-tests needs the monitoring target in the render")
    if result.policy.clusters:
        raise ValueError("--promtool-tests is single-cluster only for now")
    return promtool_files(result.policy)


class SelectionError(ValueError):
    """`jobs` was asked for a profile or team the policy does not define (a usage error)."""


def _unknown(kind: str, wanted: Iterable[str], known: Iterable[str]) -> list[str]:
    missing = sorted(set(wanted) - set(known))
    return [f"unknown {kind} '{name}' (known: {', '.join(sorted(known))})" for name in missing]


def jobs(
    paths: Iterable[Path],
    options: Options | None = None,
    *,
    profiles: Iterable[str] = (),
    teams: Iterable[str] = (),
    templates: Path | None = None,
    scheduler: str | None = None,
) -> Result:
    """Validate, then compile job templates (all profiles and teams unless narrowed). Like
    render(), a policy or template with errors yields no manifests. `scheduler` (kueue,
    volcano, koordinator) overrides the Fleet's choice for every job but Volcano Jobs."""
    from hetgitops.compilers.jobs.render import compile_jobs  # Jinja2 is needed only here

    options = options or Options()
    # The render tree is never written by `jobs`: check only the jobs' own output.
    result = _for_output(paths, replace(options, check_output=False, compile_targets=False))
    result.manifests = []
    policy = result.policy
    if result.failed() or policy is None:
        return result
    profiles, teams = tuple(profiles), tuple(teams)
    unknown = _unknown("profile", profiles, policy.profiles) + _unknown("team", teams, policy.teams)
    if unknown:
        raise SelectionError("; ".join(unknown))
    manifests, found = compile_jobs(
        policy,
        profiles=profiles or None,
        teams=teams or None,
        templates=templates,
        scheduler=scheduler,
    )
    if options.check_output:
        # The bundled schemas lack the job CRDs (PyTorchJob, JobSet, Volcano Job): say so only
        # to a caller who passed --crd-dir, not as three info lines on every run.
        unchecked = bool(options.crd_dirs)
        found.extend(_check_output(manifests, policy, options, unchecked=unchecked))
    result.diagnostics = sort_unique([*result.diagnostics, *found])
    result.manifests = [] if result.failed() else manifests
    return result
