"""CLI plumbing shared by every command: exit codes, shared options, error and pipe handling."""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import gc
import os
import sys
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click

from hetgitops.cli.entry import failed_allocation, out_of_memory

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
# The environment failed, not hetgitops: disk full, read-only folder, closed pipe, cluster
# unreachable or forbidden. Kept apart from 3 so that 3 always means a bug worth reporting.
EXIT_ENVIRONMENT = 4

# validate, render, jobs...: they read only files (drift and adopt state their own).
EXIT_CODES_HELP = """\b
Exit codes:
  0  clean (warnings allowed unless --strict)
  1  findings: errors (or warnings with --strict)
  2  usage error (bad option or argument)
  3  internal error (a bug in hetgitops: please report it)
  4  environment error (disk full, permissions, closed stdout, out of memory)"""


def _parse_date(ctx: click.Context, param: click.Parameter, value: str | None) -> dt.date:
    if value is None:
        return dt.date.today()
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date (YYYY-MM-DD)") from None


# Options shared by the commands that read a policy: one definition, the same help everywhere.
PATHS_ARGUMENT = click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
# Commands that read policy files from disk: a path that does not exist is a typo in the command,
# a usage error (exit 2) before anything runs, not a finding about the policy. `diff` keeps the
# plain argument: its paths are looked up inside Git revisions, not the working tree.
EXISTING_PATHS_ARGUMENT = click.argument(
    "paths", nargs=-1, type=click.Path(path_type=Path, exists=True)
)
NOW_OPTION = click.option(
    "--now",
    callback=_parse_date,
    metavar="DATE",
    help="Today's date for expiry checks (YYYY-MM-DD); default: today.",
)


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def format_option(choices: Iterable[str]) -> Decorator:
    """`--format` of a report command; the choices are a formatter registry's keys."""
    return click.option(
        "--format",
        "output_format",
        type=click.Choice(list(choices)),
        default="text",
        show_default=True,
        help="Report format.",
    )


def output_dir_option(help_text: str) -> Decorator:
    """`--output/-o DIR` of a command that writes a tree (replaced as a whole, atomically)."""
    return click.option(
        "--output",
        "-o",
        type=click.Path(path_type=Path, file_okay=False),
        metavar="DIR",
        help=help_text,
    )


def crd_dir_option(help_text: str) -> Decorator:
    return click.option(
        "--crd-dir",
        "crd_dirs",
        multiple=True,
        type=click.Path(path_type=Path, exists=True, file_okay=False),
        help=help_text,
    )


def policy_paths(paths: tuple[Path, ...]) -> list[Path]:
    """The PATH arguments, or ./policies. Without either there is nothing to read: a usage
    error (exit 2) that says to pass PATH, not a policy finding (exit 1)."""
    if paths:
        return list(paths)
    default = Path("policies")
    if not default.exists():
        context = click.get_current_context(silent=True)
        command = context.command_path if context else "hetgitops validate"
        raise click.UsageError(
            "no PATH given and no policies/ folder here: pass the policy folder or files, "
            f"e.g. `{command} path/to/policies`"
        )
    return [default]


# Descriptors the process was started without (`>&-`, `2>&-`), and what could not be said on
# stderr: the command still writes what it can, then exits 4 (see guarded).
_CLOSED: set[int] = set()
_LOST_ON_STDERR: list[OSError] = []


def hold_standard_streams() -> None:
    """Remember which of stdout/stderr the process was started without (Python then leaves
    sys.stdout or sys.stderr None) and park /dev/null on their descriptors: a file opened
    later must not take number 1 or 2 and receive what a child process prints there."""
    for fd, stream in ((0, sys.stdin), (1, sys.stdout), (2, sys.stderr)):
        if stream is not None or _is_open(fd):
            continue
        if fd:
            _CLOSED.add(fd)
        parked = os.open(os.devnull, os.O_RDWR)
        if parked != fd:
            os.dup2(parked, fd)
            os.close(parked)


# The cyclic collector's first-generation threshold for a CLI run (CPython's default is 700
# allocations). A run builds one policy model that lives until exit and frees almost nothing
# in cycles, so at the default every few hundred allocations the collector walks the young
# objects and, three times per `jobs` run, the whole model: 0.10-0.17 s of CPU at the
# 5,000-node fleet (10 % of `validate`, 8 % of `jobs`), for no memory returned. At 10,000 the
# same runs collect ~0.06 s in total; the rare cycle is still collected.
CLI_GC_THRESHOLD = 10_000


def tune_collector() -> None:
    """Raise the first-generation threshold to CLI_GC_THRESHOLD, never lower it (a caller who
    chose a larger one, or switched collection off with a threshold of 0, keeps that)."""
    first, *older = gc.get_threshold()
    if 0 < first < CLI_GC_THRESHOLD:
        gc.set_threshold(CLI_GC_THRESHOLD, *older)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def guarded(run: Callable[[], int]) -> int:
    """Run a command: a fault of the environment (disk full, read-only folder, closed pipe, a
    name too long for the file system, no memory left) is exit 4 saying what happened where;
    any other unexpected exception is exit 3 with a one-line hint, never a traceback (set
    HETGITOPS_DEBUG=1 to see it). A closed or failing stderr does not stop the command: its
    stdout is still written whole, then the exit is 4 (what stderr should have said is lost)."""
    code = _guarded(run)
    if _LOST_ON_STDERR and code in (EXIT_OK, EXIT_FINDINGS):
        return EXIT_ENVIRONMENT
    return code


def _guarded(run: Callable[[], int]) -> int:
    try:
        return run()
    except (click.ClickException, click.exceptions.Exit, click.Abort):
        raise
    except MemoryError:
        out_of_memory()
    except OSError as exc:
        # A fault after the new tree went in says itself what state the output is in.
        done = "" if getattr(exc, "says_state", False) else "; no output was completed"
        _say(
            f"hetgitops: {environment_message(exc)}{done} "
            "(exit 4: the environment failed, not hetgitops)"
        )
        _debug()
        return EXIT_ENVIRONMENT
    except Exception as exc:  # the last line of defence, by design
        if failed_allocation(exc):  # a lazy import that ran out of memory
            out_of_memory()
        if _cluster_fault(exc):
            _say(f"hetgitops: {exc} (exit 4: the cluster failed, not hetgitops)")
            _debug()
            return EXIT_ENVIRONMENT
        what = (str(exc).splitlines() or [""])[0][:200]
        _say(
            f"hetgitops: internal error ({type(exc).__name__}: {what}); this is a bug, please "
            "report it with the input that caused it"
        )
        _debug()
        return EXIT_INTERNAL


def _cluster_fault(exc: Exception) -> bool:
    """Whether `exc` is the live client's word that the cluster could not answer (any HTTP
    status, an unreadable answer): exit 4 in every command, whichever call site missed it. The
    client is looked up, not imported: if it was never loaded, `exc` cannot be one of its own."""
    client = sys.modules.get("hetgitops.live.client")
    faults = (client.ClusterError, client.Forbidden, client.NotServed) if client else ()
    return isinstance(exc, faults)


def environment_message(exc: OSError) -> str:
    """`<where>: <what happened>` from an OSError, without Python's `[Errno n]` noise."""
    what = exc.strerror or str(exc)
    where = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
    if exc.errno == errno.EPIPE:
        what += " (the reader went away, e.g. `| head`)"
    return f"{where}: {what}" if where else what


def _debug() -> None:
    if os.environ.get("HETGITOPS_DEBUG"):
        traceback.print_exc()


def _say(message: str) -> None:
    """A last word on stderr; if stderr itself is gone there is no one left to tell."""
    with contextlib.suppress(OSError):
        emit(message + "\n", err=True)


def emit(text: str, *, err: bool = False) -> None:
    """Write all of `text` to stdout (or stderr), flushed, or raise OSError naming the stream:
    nothing partial is ever presented as success (with PYTHONUNBUFFERED=1 Python's own
    stream would drop the rest of a short write to a full disk without a word)."""
    from hetgitops.output.writer import write_all

    stream = sys.stderr if err else sys.stdout
    name = "<stderr>" if err else "<stdout>"
    if stream is None or (2 if err else 1) in _CLOSED:
        closed = OSError(errno.EBADF, "closed (the command was started without it)", name)
        if err:
            _LOST_ON_STDERR.append(closed)
            return
        raise closed
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # in-process (click's CliRunner): no descriptor
        stream.write(text)
        stream.flush()
        return
    try:
        stream.flush()
        write_all(fd, text.encode("utf-8", "surrogateescape"), name)
    except OSError as exc:
        if err:
            _LOST_ON_STDERR.append(exc)
            return
        if exc.errno == errno.EPIPE and not err:
            # Python would complain again when flushing stdout at exit; point it at nothing.
            os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
        if exc.filename is None:
            raise OSError(exc.errno, exc.strerror, name) from None
        raise


def note(message: str) -> None:
    """One line for the reader on stderr, checked like everything else."""
    emit(message + "\n", err=True)


def echo_report(report: str) -> None:
    """Print a report on stdout, checked (see emit)."""
    emit(report)


def refuse_unsafe_output(output: Path, inputs: list[Path]) -> None:
    """Usage error (exit 2) before any work when --output DIR must not be replaced (render,
    jobs)."""
    from hetgitops.output.writer import UnsafeOutput, check_output_dir

    try:
        check_output_dir(output, inputs)
    except UnsafeOutput as exc:
        raise click.UsageError(f"refusing --output: {exc}") from None


def printed(text: str) -> int:
    """Print `text` on stdout (checked, see emit): exit 0 (schema, rules)."""
    emit(text)
    return EXIT_OK
