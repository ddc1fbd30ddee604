"""`hetgitops render`: the policy compiled to the applied tree of manifests (a YAML stream or
an output DIR, or `--check` of a committed DIR)."""

from __future__ import annotations

import datetime as dt
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from hetgitops import api
from hetgitops.cli.common import (
    EXISTING_PATHS_ARGUMENT,
    EXIT_FINDINGS,
    EXIT_OK,
    NOW_OPTION,
    crd_dir_option,
    emit,
    guarded,
    note,
    output_dir_option,
    policy_paths,
    refuse_unsafe_output,
)

if TYPE_CHECKING:
    from hetgitops.output.writer import TreeDiff


def _target_choices() -> list[str]:
    from hetgitops.compilers import COMPILERS

    return sorted(COMPILERS)


@click.command(
    epilog="""\b
Exit codes:
  0  rendered (warnings go to stderr); with --check: DIR is up to date
  1  the policy has errors (nothing is emitted), the render would be empty,
     or with --check: DIR is stale (files listed on stderr)
  2  usage error (bad option or argument, or an unsafe --output DIR)
  3  internal error (a bug in hetgitops: please report it)
  4  environment error (disk full, read-only or unwritable DIR, closed stdout,
     a file name too long for the file system); nothing partial counts as done

\b
stdout carries only the YAML stream (for Argo CD's generate); diagnostics go to stderr.
An empty render is refused: with pruning on, Argo CD would delete everything."""
)
@EXISTING_PATHS_ARGUMENT
@output_dir_option(
    "Write <target>/<kind>-<name>.yaml plus kustomization.yaml to DIR instead of "
    "stdout. DIR is replaced as a whole, atomically; it must be new, empty or an earlier "
    "output tree (marked by a .hetgitops-output file), apart from the input paths and not "
    "the current directory or a parent of it.",
)
@click.option(
    "--target",
    "targets",
    multiple=True,
    type=click.Choice(_target_choices()),
    help="Render only this target (repeatable); default: the Fleet's targets.",
)
@NOW_OPTION
@crd_dir_option("Also check output against CRDs in DIR.")
@click.option(
    "--check",
    is_flag=True,
    help="With --output: write nothing, exit 1 if DIR differs from the render (for CI/Flux).",
)
@click.option(
    "--cluster",
    metavar="NAME",
    help="Multi-cluster policies (Cluster documents): only this cluster's objects, as a "
    "single-cluster render (stdout, or its tree at DIR). Without it a multi-cluster render "
    "needs --output and writes DIR/<cluster>/<target>/.",
)
@click.option(
    "--promtool-tests",
    "promtool_dir",
    type=click.Path(path_type=Path, file_okay=False),
    metavar="DIR",
    help="With the monitoring target: also write its rule files and generated promtool unit "
    "tests to DIR (outside the applied tree); run them with "
    "`cd DIR && promtool test rules *.test.yaml`.",
)
def render(
    paths: tuple[Path, ...],
    output: Path | None,
    targets: tuple[str, ...],
    now: dt.date,
    crd_dirs: tuple[Path, ...],
    check: bool,
    cluster: str | None,
    promtool_dir: Path | None,
) -> None:
    """Compile policy files (default: policies/) to Kubernetes manifests."""
    if check and output is None:
        raise click.UsageError("--check compares with an output tree: give --output DIR")
    if promtool_dir is not None and output is not None:
        _refuse_nested(promtool_dir, output)

    def run() -> int:
        options = api.Options(now=now, targets=targets or None, crd_dirs=crd_dirs)
        inputs = policy_paths(paths)
        if output is not None and not check:
            refuse_unsafe_output(output, inputs)
        fix = _fix_command(inputs, output, targets, cluster)
        if promtool_dir is not None and not check:
            refuse_unsafe_output(promtool_dir, inputs)
        result = _one_cluster(api.render(inputs, options), cluster, to_stdout=output is None)
        code = _emit_render(result, output, check=check, inputs=inputs, fix=fix)
        if code == EXIT_OK and promtool_dir is not None:
            _write_promtool_tests(result, promtool_dir, inputs=inputs, check=check)
        return code

    sys.exit(guarded(run))


def _refuse_nested(tests: Path, output: Path) -> None:
    """The promtool tests are no manifests: inside the applied tree kustomize would choke."""
    a, b = tests.resolve(), output.resolve()
    if a == b or b in a.parents or a in b.parents:
        raise click.UsageError("--promtool-tests DIR must lie outside --output DIR")


def _write_promtool_tests(
    result: api.Result, folder: Path, *, inputs: list[Path], check: bool
) -> None:
    from hetgitops.output.writer import compare_tree, write_tree

    try:
        files = api.promtool_tests(result)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if not check:
        write_tree(files, folder, inputs=inputs)
    elif compare_tree(files, folder):
        note(f"hetgitops: {folder} is stale (rerun without --check)")
        raise SystemExit(EXIT_FINDINGS)


def _one_cluster(result: api.Result, cluster: str | None, *, to_stdout: bool) -> api.Result:
    """`--cluster NAME`: that cluster's objects as a single-cluster render. A usage error
    (exit 2) for a name the policy lacks, and for a multi-cluster stream without it: one
    stream of every cluster's objects could only be applied to one cluster, wrongly."""
    from dataclasses import replace

    known = sorted(result.policy.clusters) if result.policy else []
    if cluster is not None and not result.failed():
        if cluster not in known:
            names = ", ".join(known) or "none: the policy has no Cluster documents"
            raise click.UsageError(f"unknown --cluster {cluster!r} (clusters: {names})")
        result.manifests = [
            replace(m, cluster=None) for m in result.manifests if m.cluster == cluster
        ]
    elif known and to_stdout and not result.failed():
        raise click.UsageError(
            "a multi-cluster policy renders one tree per cluster: give --output DIR "
            f"(writes DIR/<cluster>/<target>/) or --cluster NAME (one of: {', '.join(known)})"
        )
    return result


def _fix_command(
    inputs: list[Path], output: Path | None, targets: tuple[str, ...], cluster: str | None
) -> str:
    """The command that rewrites the committed tree, to paste after a failed --check."""
    words = ["hetgitops", "render", *map(str, inputs), "--output", str(output)]
    for target in targets:
        words += ["--target", target]
    if cluster is not None:
        words += ["--cluster", cluster]
    return shlex.join(words)


def _emit_render(
    result: api.Result, output: Path | None, *, check: bool, inputs: list[Path], fix: str
) -> int:
    from hetgitops.output.manifests import stream, tree
    from hetgitops.output.writer import compare_tree, write_tree
    from hetgitops.reporting import FORMATTERS

    if result.diagnostics:
        emit(FORMATTERS["text"](result), err=True)
    if result.failed():
        note("hetgitops: the policy has errors; nothing was rendered")
        return EXIT_FINDINGS
    if not any(m.applied for m in result.manifests):
        note(
            "hetgitops: refusing to emit an empty render (a GitOps controller that prunes "
            "would delete every object); check the Fleet's targets"
        )
        return EXIT_FINDINGS
    if output is None:
        emit(stream(result.manifests))
        return EXIT_OK
    files = tree(result.manifests)
    if not check:
        write_tree(files, output, inputs=inputs)
        # Say what happened: a silent success looks like nothing was done.
        objects = sum(1 for m in result.manifests if m.applied)
        note(f"hetgitops: wrote {objects} object(s) in {len(files)} file(s) to {output}")
        return EXIT_OK
    return _report_tree_diff(compare_tree(files, output), output, fix)


_DIFF_LABELS = {
    "stale": "stale (differs from the render)",
    "missing": "missing (the render has it)",
    "extra": "extra (not in the render)",
}


def _report_tree_diff(diff: TreeDiff, output: Path, fix: str) -> int:
    """List what differs (read-only: nothing was written), then the command that fixes it."""
    for label, paths in (("stale", diff.stale), ("missing", diff.missing), ("extra", diff.extra)):
        for path in paths:
            note(f"{output / path}: {_DIFF_LABELS[label]}")
    if diff:
        count = len(diff.stale) + len(diff.missing) + len(diff.extra)
        note(
            f"hetgitops: {output} is out of date with the policy ({count} file(s)); "
            f"re-render and commit it:\n    {fix}"
        )
        return EXIT_FINDINGS
    return EXIT_OK
