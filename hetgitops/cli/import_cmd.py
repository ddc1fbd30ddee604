"""`hetgitops import`: manifests or a live cluster -> hetgitops.adopt -> policy files.

Named `import_cmd` (and its function `import_`) because `import` is a Python keyword: a module
called `import` could not be imported by name."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import click

from hetgitops.cli.common import (
    EXIT_ENVIRONMENT,
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    echo_report,
    guarded,
    note,
)


@click.command(
    "import",
    epilog="""\b
Exit codes:
  0  imported; the first sync changes no imported object
  1  imported, with findings: fields the first sync would change, objects
     left unmanaged (warnings, failing only with --strict), or the written
     policy does not validate
  2  usage error (neither -f nor a cluster, a -f path that does not exist,
     or DIR is not empty)
  3  internal error (a bug in hetgitops: please report it)
  4  environment error: the cluster is unreachable, rejects the credentials
     or serves none of the kinds import reads (0 objects read)

\b
Without -f, the cluster of --kubeconfig/--context is read: one LIST per kind
(nodes, namespaces, PriorityClasses, every Kueue kind, Volcano Queues), never
a write. Secret data and credentials are never read or printed.""",
)
@click.option(
    "-f",
    "--filename",
    "files",
    multiple=True,
    type=click.Path(path_type=Path, allow_dash=True, exists=True),
    help="Manifest file, directory (read recursively) or - for standard input (repeatable): "
    "a `kubectl get -o yaml` dump or a GitOps repository.",
)
@click.option(
    "--output",
    "-o",
    "output",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="The policy directory to write (created; must be empty).",
)
@click.option("--kubeconfig", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--context", default=None, help="Kubeconfig context (default: the current one).")
@click.option("--cluster", default="imported", show_default=True, help="The Fleet's cluster name.")
@click.option("--strict", is_flag=True, help="Fail (exit 1) on warnings too.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
)
def import_(
    files: tuple[Path, ...],
    output: Path,
    kubeconfig: Path | None,
    context: str | None,
    cluster: str,
    strict: bool,
    output_format: str,
) -> None:
    """Write a policy (DIR, laid out like init's) from what a cluster already runs, then
    render it again and report every imported object the first sync would change."""

    def run() -> int:
        if output.exists() and any(output.iterdir()):
            click.echo(f"hetgitops import: {output} is not empty", err=True)
            return EXIT_USAGE
        # Import builds one large graph (every object read, the written policy, its render)
        # and frees little of it before exit: at the collector's default young threshold
        # (700 allocations) it is rescanned over and over, 1 s of 4.5 s CPU on the 5,000-node
        # bench. Rarer collections; the caller's thresholds come back afterwards (tests run
        # the command in process).
        before = gc.get_threshold()
        gc.set_threshold(50_000, 20, 100)
        try:
            return imported()
        finally:
            gc.set_threshold(*before)

    def imported() -> int:
        from hetgitops.adopt import sources
        from hetgitops.adopt.run import import_objects
        from hetgitops.diagnostics import has_errors
        from hetgitops.live.client import ClusterError, insecure_warning
        from hetgitops.output.writer import replace_tree
        from hetgitops.reporting import FORMATTERS

        if files:
            read = sources.from_paths(files, sys.stdin.buffer)  # read (bounded) if `-` is
        else:
            try:
                read = sources.from_cluster(kubeconfig, context)
            except ClusterError as exc:
                click.echo(f"hetgitops: {exc}", err=True)
                return EXIT_ENVIRONMENT
            if read.insecure_server:
                note(insecure_warning(read.insecure_server))
            count = len(read.objects)
            click.echo(
                f"hetgitops import: read {count} objects in {read.requests} requests", err=True
            )
        result = import_objects(read, output, cluster=cluster)
        if result.files:  # staged whole and swapped in: a kill leaves no partial policy
            replace_tree(result.files, output)
        report = result.rendered
        assert report is not None
        report.diagnostics = sorted(result.diagnostics)
        echo_report(FORMATTERS[output_format](report))
        if not result.files:  # 0 objects read: files hold none (1), or the server serves none
            return EXIT_FINDINGS if files else EXIT_ENVIRONMENT
        return EXIT_FINDINGS if has_errors(result.diagnostics, strict=strict) else EXIT_OK

    sys.exit(guarded(run))
