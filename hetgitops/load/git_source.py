"""Load stage, Git sources: policy files at a Git ref (read from Git objects, no checkout) or in
a folder, as the (display name, bytes) pairs `load.load_sources` takes. Read by `hetgitops
diff` (both sides) and by `validate --changed-since` (through `changed`), so it sits in load,
below both."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hetgitops.diagnostics import Diagnostic, Span, error
from hetgitops.load import git_tree
from hetgitops.load.documents import LoadResult, ParseMemo, load_sources, policy_files
from hetgitops.load.policyfiles import read_files

WORKTREE = "WORKTREE"  # the --head default: the files as they are on disk


class SourceError(ValueError):
    """A ref or folder that cannot be read: a usage error (exit 2), with a clear message."""


class GitEnvironmentError(SourceError):
    """The environment's fault (exit 4), not a usage error: no `git`, a damaged object store."""


class GitMissing(GitEnvironmentError):
    """No `git` executable."""


@dataclass(frozen=True)
class Side:
    """One side of a diff: what it is called in reports and what it loaded."""

    label: str
    loaded: LoadResult


def _git(repo: Path, *args: str, data: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args], input=data, capture_output=True, check=False
        )
    except FileNotFoundError:
        raise GitMissing("git is not installed (needed to read --base/--head refs)") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise SourceError(f"git {' '.join(args[:2])}: {message[-1] if message else 'failed'}")
    return done.stdout


def repo_root(start: Path, hint: str = "") -> Path:
    """The work tree holding `start`; `hint` (what the caller can do instead) ends the error."""
    try:
        return Path(_git(start, "rev-parse", "--show-toplevel").decode().strip())
    except GitMissing:
        raise
    except SourceError:
        raise SourceError(f"{start} is not inside a Git repository{hint}") from None


def repo_of(paths: Iterable[Path], cwd: Path, hint: str = "") -> Path:
    """The repository the policy lives in: found from the first policy path (its folder for a
    file), not from the working directory, which may be another repository or none."""
    first = next(iter(paths), None)
    if first is None:
        return repo_root(cwd, hint)
    start = first if first.is_absolute() else cwd / first
    while not start.is_dir() and start != start.parent:  # a file, or a path gone at HEAD
        start = start.parent
    return repo_root(start, hint)


def resolve(repo: Path, ref: str) -> str:
    """The commit a ref names; an unknown ref is a usage error that names it."""
    try:
        return _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").decode().strip()
    except GitMissing:
        raise
    except SourceError:
        raise SourceError(f"unknown Git ref '{ref}' (not a branch, tag or commit here)") from None


def default_base(repo: Path) -> str:
    """The merge-base with the upstream default branch (origin/HEAD, else origin/main or
    origin/master), so a branch is compared with where it forked; else HEAD. An upstream with
    no merge-base (a depth-1 CI checkout) is a usage error: HEAD would be diffed with itself."""
    for upstream in ("refs/remotes/origin/HEAD", "refs/remotes/origin/main", "origin/master"):
        try:
            resolve(repo, upstream)
        except SourceError:
            continue
        try:
            return _git(repo, "merge-base", "HEAD", upstream).decode().strip()
        except GitMissing:
            raise
        except SourceError:
            raise SourceError(_no_merge_base(repo, upstream)) from None
    return "HEAD"


def _no_merge_base(repo: Path, upstream: str) -> str:
    shown = upstream.removeprefix("refs/remotes/")
    shallow = _git(repo, "rev-parse", "--is-shallow-repository").decode().strip() == "true"
    why = "this clone is shallow" if shallow else "they share no history"
    return (
        f"no merge-base between HEAD and {shown} ({why}), so there is no base to compare with: "
        "fetch more history (git fetch --unshallow, or actions/checkout with fetch-depth: 0) "
        "or pass --base REF"
    )


def _repo_relative(repo: Path, path: Path) -> str:
    # Symlinks in the PATH are left for each ref's tree to resolve (`policies -> p1` may point
    # at p2 at another ref); only a path that is not under the repository as written resolves.
    for candidate in (Path(os.path.abspath(path)), path.resolve()):
        relative = os.path.relpath(candidate, repo.resolve())
        if not relative.startswith(".."):
            return "" if relative == "." else relative.replace(os.sep, "/")
    raise SourceError(f"{path} is outside the Git repository {repo}")


def read_ref(repo: Path, ref: str, paths: Iterable[Path], memo: ParseMemo | None = None) -> Side:
    """The policy files under `paths` as they are at `ref`, named as on disk (relative to the
    working directory), so a finding's location matches the head-side file a reviewer opens."""
    commit = resolve(repo, ref)
    prefixes = [_repo_relative(repo, p) for p in paths]
    walk = git_tree.Walk(_git, repo, ref, _display)
    try:
        tree = git_tree.Tree.read(_git, repo, commit)
        for prefix in prefixes or [""]:
            walk.path(tree, prefix)
        files = sorted({(f.name, f.repo, f.oid) for f in walk.found})
        blobs = _blobs(files)
    except git_tree.MissingObject as exc:
        raise GitEnvironmentError(
            f"the Git object {exc.oid} (a file at {ref}) is missing from {exc.repo}/.git: the "
            "clone is partial or damaged; fetch it again (git fetch --refetch) or re-clone"
        ) from None
    except SourceError as exc:  # the commit resolved, so its trees are the object store's fault
        raise GitEnvironmentError(
            f"{exc} (reading {ref}: the object store may be damaged)"
        ) from None
    names = [_display(repo / name) for name, _, _ in files]
    loaded = load_sources(zip(names, blobs, strict=True), memo)
    loaded.diagnostics[:0] = walk.problems
    if not files:
        loaded.diagnostics.append(_nothing_at(ref, prefixes))
    return Side(f"{ref} ({commit[:12]})", loaded)


def _blobs(files: list[tuple[str, Path, str]]) -> list[bytes]:
    """The blobs in `files`' order: one `cat-file` call per repository (a submodule has its own)."""
    by_repo: dict[Path, list[str]] = {}
    for _, where, oid in files:
        by_repo.setdefault(where, []).append(oid)
    read = {where: iter(git_tree.read_blobs(_git, where, oids)) for where, oids in by_repo.items()}
    return [next(read[where]) for _, where, _ in files]


def _nothing_at(ref: str, prefixes: list[str]) -> Diagnostic:
    where = ", ".join(p or "." for p in prefixes)
    return error(
        "empty-policy",
        f"no .yaml/.yml/.json policy files under {where} at {ref}",
        Span(where),
        hint="the paths may not exist at that ref",
    )


def _display(path: Path) -> str:
    try:
        return os.path.relpath(path, Path.cwd()) if path.is_absolute() else str(path)
    except ValueError:
        return str(path)


def read_folder(paths: Iterable[Path], label: str, memo: ParseMemo | None = None) -> Side:
    """Policy files on disk (the working tree, or a --base-dir/--head-dir folder)."""
    files, problems = policy_files(paths)
    loaded = load_sources(read_files(files, problems), memo)
    loaded.diagnostics[:0] = problems
    return Side(label, loaded)


def select_sides(
    paths: list[Path],
    *,
    base: str | None,
    head: str | None,
    base_dir: Path | None,
    head_dir: Path | None,
    cwd: Path,
) -> tuple[Side, Side]:
    """The two sides the CLI asked for: two folders, or two Git refs (base: the merge-base
    with the upstream default branch, else HEAD; head: the working tree). A file whose bytes
    are the same on both sides is parsed once."""
    memo = ParseMemo()
    if base_dir is not None or head_dir is not None:
        if base_dir is None or head_dir is None:
            raise SourceError("--base-dir and --head-dir go together")
        if base is not None or head is not None:
            raise SourceError("use either --base/--head (Git refs) or --base-dir/--head-dir")
        return (
            read_folder([base_dir], str(base_dir), memo),
            read_folder([head_dir], str(head_dir), memo),
        )
    folders = "; to compare two folders use --base-dir DIR --head-dir DIR"
    repo = repo_of(paths, cwd, folders)
    base_side = read_ref(repo, base or default_base(repo), paths, memo)
    if head is None:
        return base_side, read_folder(paths, "working tree", memo)
    return base_side, read_ref(repo, head, paths, memo)
