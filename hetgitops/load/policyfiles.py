"""Load stage, files: expand PATH arguments into policy files and read each one once, safely."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from hetgitops.diagnostics import Diagnostic, Severity, Span, error

# Compared case-insensitively, trailing blanks ignored: `TEAM.YAML`, `a.Yml`, `b.json` (JSON is
# YAML) and `x.yaml ` are all names a user means as policy; skipping one drops its queues.
POLICY_SUFFIXES = (".yaml", ".yml", ".json")
MAX_FILE_BYTES = 4 * 1024 * 1024


def is_policy_name(name: str) -> bool:
    """Whether a file found in a policy directory is read as a policy file."""
    return name.rstrip().lower().endswith(POLICY_SUFFIXES)


def skipped_as_policy(name: str) -> bool:
    """A name that mentions a policy suffix but is not read (`team.yaml.bak`, `t.yaml~`): said
    aloud, since a user may have meant it."""
    lowered = name.lower()
    return not is_policy_name(name) and any(suffix in lowered for suffix in POLICY_SUFFIXES)


def skipped_file(name: str) -> Diagnostic:
    return Diagnostic(
        rule="skipped-file",
        severity=Severity.INFO,
        message="not read: a policy file's name ends in .yaml, .yml or .json",
        span=Span(name),
        hint="rename it if it holds policy; delete it or move it out of the policy tree if not",
    )


def policy_files(paths: Iterable[Path]) -> tuple[list[Path], list[Diagnostic]]:
    """Expand PATH arguments into policy files: directories recursively, hidden entries skipped;
    a symlink that resolves outside the Git repository holding the PATH is refused, unread."""
    files: list[Path] = []
    problems: list[Diagnostic] = []
    for path in paths:
        root = repository_root(path)
        if (left := _leaves(path, root)) is not None:
            problems.append(left)
            continue
        try:
            is_dir, is_file = path.is_dir(), path.is_file()
            path.stat()
        except OSError as exc:
            problems.append(_os_problem(path, exc))
            continue
        if is_dir:
            files.extend(_directory_files(path, problems, root))
        elif is_file:
            files.append(path)
        else:
            problems.append(
                error("io-error", "not a regular file or directory", Span(display_name(path)))
            )
    return files, problems


def repository_root(path: Path) -> str | None:
    """The real path of the Git work tree holding `path` (the nearest folder above it with a
    `.git`), found without following `path` itself; None outside any repository."""
    start = os.path.abspath(path)
    if os.path.islink(start) or not os.path.isdir(start):
        start = os.path.dirname(start)
    while True:
        if os.path.lexists(os.path.join(start, ".git")):
            return os.path.realpath(start)
        parent = os.path.dirname(start)
        if parent == start:
            return None
        start = parent


def _leaves(path: Path, root: str | None, real: str | None = None) -> Diagnostic | None:
    """Refused, as the Git side of `diff` refuses it (diff/gittree.py), when `path` resolves
    outside the repository: a policy link to /etc/... or ~/.kube/... in a pull request must not
    be read, nor its content echoed into a report (a PR comment)."""
    if root is None:
        return None
    real = real or os.path.realpath(path)
    if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
        return None
    target = _link_target(path)
    why = (
        f"it points at the absolute path {target}, outside the repository"
        if target is not None and os.path.isabs(target)
        else "it leads out of the repository"
    )
    return error(
        "io-error",
        f"the symlink cannot be followed: {why}",
        Span(display_name(path)),
        hint="point the link inside the repository, or check the files in",
    )


def _link_target(path: Path) -> str | None:
    """The target of the first link on `path`'s way (the entry itself, else a folder above)."""
    for candidate in (path, *path.parents):
        if candidate.is_symlink():
            return os.readlink(candidate)
    return None


def _os_problem(path: Path, exc: OSError) -> Diagnostic:
    if isinstance(exc, FileNotFoundError):
        return error("not-found", "no such file or directory", Span(display_name(path)))
    return error("io-error", f"cannot read: {exc.strerror or exc}", Span(display_name(path)))


def _directory_files(root: Path, problems: list[Diagnostic], repo: str | None) -> list[Path]:
    found: list[Path] = []
    others = 0

    def unreadable(exc: OSError) -> None:  # os.walk would skip the directory silently
        where = Path(exc.filename) if exc.filename else root
        problems.append(
            error(
                "io-error",
                f"cannot list directory: {exc.strerror or exc}",
                Span(display_name(where)),
            )
        )

    # Directory symlinks are followed (os.walk skips them by default, which silently lost a
    # `teams -> ../shared-teams` link and with it every queue of those teams); a link back to a
    # directory on its own path is a loop, reported where the link is.
    chains: dict[str, tuple[str, ...]] = {str(root): (os.path.realpath(root),)}
    for folder, dirs, names in os.walk(root, onerror=unreadable, followlinks=True):
        chain = chains.get(folder, (os.path.realpath(folder),))
        kept = []
        for d in sorted(d for d in dirs if not d.startswith(".")):
            real = os.path.realpath(os.path.join(folder, d))
            if (left := _leaves(Path(folder) / d, repo, real)) is not None:
                problems.append(left)
                continue
            if real in chain:
                problems.append(
                    error(
                        "io-error",
                        "directory symlink loop: it points back to a directory it is in",
                        Span(display_name(Path(folder) / d)),
                        hint="remove the link, or point it outside its own tree",
                    )
                )
                continue
            chains[os.path.join(folder, d)] = (*chain, real)
            kept.append(d)
        dirs[:] = kept
        for name in names:
            if name.startswith("."):
                continue
            if is_policy_name(name):
                # Its folder is inside (checked above): only a link can lead out.
                path = Path(folder) / name
                if path.is_symlink() and (left := _leaves(path, repo)) is not None:
                    problems.append(left)
                else:
                    found.append(path)
                continue
            others += 1
            if skipped_as_policy(name):
                problems.append(skipped_file(display_name(Path(folder) / name)))
    if not found:
        ignored = f" ({others} other file(s) ignored)" if others else ""
        problems.append(
            error(
                "empty-policy",
                f"no .yaml/.yml/.json policy files found{ignored}",
                Span(display_name(root)),
                hint="point hetgitops at a directory of policy files",
            )
        )
    return sorted(found)


def display_name(path: Path) -> str:
    """Relative to the working directory when inside it (what editors and CI annotations want)."""
    if not path.is_absolute():
        return os.path.normpath(path)
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def read_files(files: list[Path], problems: list[Diagnostic]) -> Iterator[tuple[str, bytes]]:
    """(display name, bytes) per file; a file that cannot be read becomes an io-error."""
    for path in files:
        name = display_name(path)
        try:
            yield name, _read(path)
        except OSError as exc:
            message = f"cannot read: {exc.strerror or exc}"
            hint = "check the file's permissions" if isinstance(exc, PermissionError) else ""
            problems.append(error("io-error", message, Span(name, 1, 1), hint=hint))


def _read(path: Path) -> bytes:
    # Opening a FIFO or a terminal would wait for a writer forever: only regular files are read.
    if not stat.S_ISREG(path.stat().st_mode):
        raise OSError(0, "not a regular file")
    with path.open("rb") as handle:
        # Read one byte past the limit so an oversize file is reported, not slurped.
        return handle.read(MAX_FILE_BYTES + 1)
