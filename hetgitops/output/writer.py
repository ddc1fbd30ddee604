"""Output stage, writer: checked writes, crash-safe `--output` trees, and `--check` comparison.

How DIR is replaced. The new tree is written into a hidden sibling `.DIR.hetgitops-<random>`
(MARKER first), then one `renameat2(RENAME_EXCHANGE)` swaps it with DIR: there is no moment
without DIR, and a kill at any step leaves DIR wholly old or wholly new. The old tree, now
under the hidden name, is removed with its MARKER last. Where the exchange is missing (not
Linux, or a file system without it) DIR is first moved aside to `.DIR.hetgitops-aside-<random>`
and the new tree renamed in; a kill between those two renames leaves no DIR, and the next run
puts the old tree back before anything else. Every run, under a lock on the parent folder (so
two renders into one DIR take turns), removes the hidden trees that killed runs left behind:
they carry the MARKER or are empty, so nothing a user made is ever removed. A tree made
read-only (`chmod -R a-w`) is made writable before it is removed; one that still cannot be
removed (someone else's files) is a `LeftBehind` fault saying where each tree is. A mount point
cannot be DIR (it cannot be renamed): refused up front, and an EBUSY at the swap removes the
staging tree.

Every write is checked to be complete: a short write or an error raises OSError naming the
file; callers report it as an environment fault, never as success.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

# Marks a directory as an output tree, so `--output` may replace it; never part of a render.
MARKER = ".hetgitops-output"
MARKER_TEXT = "Written by hetgitops render/jobs --output: the whole directory is replaced.\n"
_HIDDEN, _ASIDE = ".hetgitops-", ".hetgitops-aside-"
# Fault-injection seam for the crash tests: called with the name of every step (never set
# in production). A test makes it kill the process to prove each step leaves DIR whole.
STEP_HOOK: Callable[[str], None] | None = None


class UnsafeOutput(ValueError):
    """An output directory that replacing as a whole would destroy something (a usage error)."""


class LeftBehind(OSError):
    """A hidden tree that could not be removed; the message says what state DIR is in (the
    CLI prints it as is, exit 4, instead of "no output was completed")."""

    says_state = True


def _step(name: str) -> None:
    if STEP_HOOK is not None:
        STEP_HOOK(name)


def resolved(path: Path) -> Path:
    """`path.resolve()`, with a symlink loop as the OSError it is (Python 3.11 raises
    RuntimeError), so it is reported as an environment fault."""
    try:
        return path.resolve()
    except RuntimeError:
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path)) from None


def write_all(fd: int, data: bytes, name: str) -> None:
    """Write every byte of `data` to `fd` or raise OSError saying how far it got. Python's
    unbuffered streams (PYTHONUNBUFFERED=1) drop the rest of a short write without a word."""
    done = 0
    while done < len(data):
        try:
            count = os.write(fd, memoryview(data)[done:])
        except OSError as exc:
            raise _located(exc, name, done, len(data)) from None
        if count <= 0:
            raise _located(OSError(errno.EIO, "nothing written"), name, done, len(data))
        done += count


def _located(exc: OSError, name: str, done: int, total: int) -> OSError:
    reason = exc.strerror or str(exc)
    if done:
        reason = f"{reason} after {done} of {total} bytes"
    return OSError(exc.errno, reason, name)


def write_file(path: Path, data: bytes) -> None:
    """Create `path` (it must not exist) holding exactly `data`, or raise OSError."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        write_all(fd, data, str(path))
    finally:
        os.close(fd)


def check_output_dir(output: Path, inputs: Iterable[Path] = ()) -> None:
    """Raise UnsafeOutput unless `output` may be replaced: not the working directory or one
    of its parents, apart from every input path, and absent, empty or a tree we wrote."""
    out = resolved(output)
    cwd = Path.cwd().resolve()
    if out == cwd or out in cwd.parents:
        raise UnsafeOutput(f"{output} is the current directory or one of its parents")
    for source in inputs:
        src = resolved(source)
        if out == src or out in src.parents or src in out.parents:
            raise UnsafeOutput(f"{output} overlaps the input {source}; write the tree elsewhere")
    if os.path.ismount(out):
        raise UnsafeOutput(
            f"{output} is a mount point, and a mount point cannot be swapped for a new tree "
            f"(rename fails with EBUSY); render into a folder inside it, e.g. {output}/rendered"
        )
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise UnsafeOutput(
            f"{output} is not empty and has no {MARKER} marker (not a hetgitops output tree); "
            "remove it or choose another directory"
        )


def write_tree(files: Mapping[str, str], output: Path, *, inputs: Iterable[Path] = ()) -> None:
    """Replace `output` with `files` plus the MARKER file, after check_output_dir() (run
    again under the lock, after leftovers of a killed run are recovered)."""
    output = resolved(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    with _locked(output.parent):
        _recover(output)
        check_output_dir(output, inputs)
        _replace(files, output, marker=True)


def replace_tree(files: Mapping[str, str], output: Path) -> None:
    """Replace `output` with exactly `files` (no MARKER, no safety checks: golden trees)."""
    output = resolved(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    with _locked(output.parent):
        _replace(files, output, marker=False)


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive flock on the folder itself: no lock file is left behind, and a second
    render into the same place waits for the first instead of tripping over its renames."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _step("locked")
        yield
    finally:
        os.close(fd)


def _hidden(output: Path, kind: str = _HIDDEN) -> Path:
    return output.with_name(f".{output.name}{kind}{secrets.token_hex(6)}")


def _leftovers(output: Path) -> list[Path]:
    prefix = f".{output.name}{_HIDDEN}"
    found = [p for p in output.parent.iterdir() if p.name.startswith(prefix)]
    return sorted(p for p in found if p.is_dir() and not p.is_symlink() and _ours(p))


def _ours(folder: Path) -> bool:
    return (folder / MARKER).is_file() or not any(folder.iterdir())


def _recover(output: Path) -> None:
    """Undo what a killed run left: the old tree put back if DIR went missing between the
    two renames of the fallback, then every hidden leftover removed."""
    leftovers = _leftovers(output)
    aside = [p for p in leftovers if p.name.startswith(f".{output.name}{_ASIDE}")]
    if aside and not os.path.lexists(output):
        newest = max(aside, key=lambda p: p.stat().st_mtime_ns)
        os.rename(newest, output)
        leftovers.remove(newest)
    for leftover in leftovers:
        _remove_left(leftover, f"{output} was not replaced (it holds the tree it held before)")
    _step("recovered")


def _replace(files: Mapping[str, str], output: Path, *, marker: bool) -> None:
    staging = _hidden(output)
    os.mkdir(staging)
    try:
        _step("staging")
        _fill(staging, files, marker=marker, previous=_previous(output, marker=marker))
        old = _switch(staging, output)
    except BaseException as exc:
        _remove(staging)
        if isinstance(exc, OSError) and exc.errno == errno.EBUSY:
            raise _busy(exc, output) from None
        raise
    _step("switched")
    if old is not None:
        _remove_left(old, f"{output} holds the new tree")
    _step("done")


def _busy(exc: OSError, output: Path) -> OSError:
    where = "a mount point" if os.path.ismount(output) else "in use (a mount point or a cwd)"
    return OSError(
        exc.errno,
        f"{where}: it cannot be swapped for a new tree, and nothing was changed; render into a "
        f"folder inside it, e.g. {output}/rendered",
        str(output),
    )


def _remove_left(folder: Path, state: str) -> None:
    """Remove a hidden tree (the old one, or a killed run's), or say exactly what is where."""
    try:
        _remove(folder)
    except OSError as exc:
        raise LeftBehind(
            exc.errno,
            f"{state}, but {folder} could not be removed ({exc.strerror} at {exc.filename}); "
            f"remove it by hand: chmod -R u+w {folder} && rm -rf {folder}",
        ) from None


def _previous(output: Path, *, marker: bool) -> Path | None:
    """The tree being replaced, when its unchanged files may be linked into the new one: a
    real directory we wrote (MARKER; golden trees have none and are replaced whole)."""
    if output.is_symlink() or not output.is_dir():
        return None
    if marker and not (output / MARKER).is_file():
        return None
    return output


def _fill(
    staging: Path, files: Mapping[str, str], *, marker: bool, previous: Path | None = None
) -> None:
    # The MARKER goes in first (and comes out last), so a hidden tree a kill left behind is
    # recognisable as ours at every moment.
    write_file(staging / MARKER, MARKER_TEXT.encode())
    _step("marker")
    fresh = stat.S_IMODE(os.stat(staging / MARKER).st_mode)  # what a written file gets
    made: set[Path] = set()
    for relative, text in files.items():
        path = staging / relative
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        data = text.encode("utf-8")
        if previous is None or not _link_unchanged(previous / relative, path, data, fresh):
            write_file(path, data)
        _step("file")
    if not marker:
        (staging / MARKER).unlink()
    _step("filled")


def _link_unchanged(old: Path, new: Path, data: bytes, mode: int) -> bool:
    """Hard-link `old` as `new` when it is a plain file of ours holding exactly `data`, with
    the owner and permissions a fresh write would give it (`mode`).

    A re-render changes few files: linking the rest writes no data and frees no inode when
    the old tree is removed (creating and unlinking thousands of inodes was most of a re-run's
    time). The staging tree stays private until the exchange, and the old tree is only ever
    unlinked, never written, so sharing its inodes changes neither tree's bytes. Any doubt
    (a symlink, another size, a file linked elsewhere too, no link support) writes afresh."""
    try:
        info = os.stat(old, follow_symlinks=False)
        if not stat.S_ISREG(info.st_mode) or info.st_size != len(data) or info.st_nlink != 1:
            return False
        if stat.S_IMODE(info.st_mode) != mode or info.st_uid != os.geteuid():
            return False  # a chmod or another user's file: the new tree gets a fresh one
        with open(old, "rb") as existing:
            if existing.read(len(data) + 1) != data:
                return False
        os.link(old, new, follow_symlinks=False)
    except OSError:
        return False
    return True


def _switch(staging: Path, output: Path) -> Path | None:
    """Put `staging` in place of `output`; return where the old tree now is (to remove)."""
    if not os.path.lexists(output):
        os.rename(staging, output)
        return None
    if _exchange(staging, output):
        return staging
    aside = _hidden(output, _ASIDE)
    os.rename(output, aside)
    _step("aside")
    os.rename(staging, output)
    return aside


_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2); False where that is not available."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):  # not glibc >= 2.28 (or not Linux)
        return False
    args = (_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if renameat2(*args) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):  # kernel or file system lacks it
        return False
    raise OSError(code, os.strerror(code), str(a), None, str(b))


def _remove(folder: Path) -> None:
    """Delete a tree bottom-up, its top MARKER last: a kill midway leaves it recognisable. A
    tree made read-only (`chmod -R a-w rendered`) is ours all the same: made writable first."""
    try:
        _unlink_tree(folder)
    except PermissionError:
        _writable(folder)
        _unlink_tree(folder)


def _writable(folder: Path) -> None:
    """u+rwx on every directory of a tree, top-down so each can be listed before it is read."""
    os.chmod(folder, stat.S_IMODE(os.lstat(folder).st_mode) | stat.S_IRWXU)
    for root, dirs, _ in os.walk(folder):
        for name in dirs:
            path = os.path.join(root, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISDIR(mode) and mode & stat.S_IRWXU != stat.S_IRWXU:
                os.chmod(path, stat.S_IMODE(mode) | stat.S_IRWXU)


def _unlink_tree(folder: Path) -> None:
    for root, dirs, names in os.walk(folder, topdown=False):
        for name in names:
            if not (root == str(folder) and name == MARKER):
                os.unlink(os.path.join(root, name))
                _step("removing")
        for name in dirs:
            path = os.path.join(root, name)
            os.unlink(path) if os.path.islink(path) else os.rmdir(path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(folder / MARKER)
    os.rmdir(folder)


@dataclass(frozen=True)
class TreeDiff:
    """How an existing output directory differs from the tree a render would write."""

    stale: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.stale or self.missing or self.extra)


def compare_tree(files: Mapping[str, str], output: Path) -> TreeDiff:
    """Byte-for-byte comparison of `files` with the files under `output` (for `--check`);
    the MARKER file is not part of the render."""
    existing: dict[str, Path] = {}
    if output.is_dir():
        existing = {p.relative_to(output).as_posix(): p for p in output.rglob("*") if p.is_file()}
        existing.pop(MARKER, None)
    stale = [r for r in files if r in existing and existing[r].read_bytes() != files[r].encode()]
    return TreeDiff(
        stale=tuple(sorted(stale)),
        missing=tuple(sorted(set(files) - set(existing))),
        extra=tuple(sorted(set(existing) - set(files))),
    )
