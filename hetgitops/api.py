"""The library API: validate() and render() return Result objects; they never print or exit."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from hetgitops import checks, compilers, schema
from hetgitops.building import build_policy
from hetgitops.diagnostics import Diagnostic, has_errors, sort_unique
from hetgitops.loading import Document, LoadResult, load_paths, load_sources
from hetgitops.manifests import Manifest
from hetgitops.model import Policy


@dataclass
class Result:
    """What a command found: diagnostics always; the policy and manifests when they exist."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    documents: int = 0
    policy: Policy | None = None
    manifests: list[Manifest] = field(default_factory=list)

    def failed(self, *, strict: bool = False) -> bool:
        return has_errors(self.diagnostics, strict=strict)


@dataclass(frozen=True)
class Options:
    now: dt.date = field(default_factory=dt.date.today)
    targets: tuple[str, ...] | None = None
    crd_dirs: tuple[Path, ...] = ()
    check_output: bool = True


def analyse(loaded: LoadResult, options: Options) -> Result:
    """Schema, model, semantic checks and (when those pass) compile + output validation."""
    result = Result(list(loaded.diagnostics), loaded.files, len(loaded.documents))
    valid: list[Document] = []
    invalid: list[Document] = []
    for doc in loaded.documents:
        problems = list(schema.check_document(doc))
        result.diagnostics.extend(problems)
        (invalid if problems else valid).append(doc)
    if not valid and not invalid and not loaded.diagnostics:
        return result
    policy, problems = build_policy(valid, invalid)
    result.policy = policy
    result.diagnostics.extend(problems)
    result.diagnostics.extend(checks.run_checks(policy, checks.CheckContext(options.now)))
    if not result.failed() and not invalid:
        result.manifests = compilers.compile_policy(policy, options.targets)
        if options.check_output:
            result.diagnostics.extend(_check_output(result.manifests, policy, options))
    result.diagnostics = sort_unique(result.diagnostics)
    return result


def _check_output(
    manifests: list[Manifest], policy: Policy, options: Options
) -> Iterable[Diagnostic]:
    from hetgitops import output_checks  # the k8s schema stack is heavy; load it only here

    return output_checks.check(manifests, policy, crd_dirs=options.crd_dirs)


def validate(paths: Iterable[Path], options: Options | None = None) -> Result:
    return analyse(load_paths(paths), options or Options())


def validate_sources(
    sources: Iterable[tuple[str, bytes]], options: Options | None = None
) -> Result:
    return analyse(load_sources(sources), options or Options())


def render(paths: Iterable[Path], options: Options | None = None) -> Result:
    """Like validate; an invalid policy yields no manifests (render must emit nothing)."""
    result = validate(paths, options)
    if result.failed():
        result.manifests = []
    return result
