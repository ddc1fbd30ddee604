"""Diff stage, sources: policy files at a Git ref (read from Git objects, no checkout) or in a
folder, as the (display name, bytes) pairs `load.load_sources` takes."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hetgitops.diagnostics import Diagnostic, Span, error
from hetgitops.load.documents import LoadResult, load_sources, policy_files
from hetgitops.load.policyfiles import is_policy_name, read_files

WORKTREE = "WORKTREE"  # the --head default: the files as they are on disk


class SourceError(ValueError):
    """A ref or folder that cannot be read: a usage error (exit 2), with a clear message."""


class GitMissing(SourceError):
    """No `git` executable: the environment's fault (exit 4), not a usage error."""


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


def repo_root(start: Path) -> Path:
    try:
        return Path(_git(start, "rev-parse", "--show-toplevel").decode().strip())
    except GitMissing:
        raise
    except SourceError:
        raise SourceError(f"{start} is not inside a Git repository (use --base-dir)") from None


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
    origin/master), so a branch is compared with where it forked; else HEAD."""
    for upstream in ("refs/remotes/origin/HEAD", "refs/remotes/origin/main", "origin/master"):
        try:
            resolve(repo, upstream)
            return _git(repo, "merge-base", "HEAD", upstream).decode().strip()
        except SourceError:
            continue
    return "HEAD"


def _repo_relative(repo: Path, path: Path) -> str:
    relative = os.path.relpath(path.resolve(), repo.resolve())
    if relative.startswith(".."):
        raise SourceError(f"{path} is outside the Git repository {repo}")
    return "" if relative == "." else relative.replace(os.sep, "/")


def _tree_files(repo: Path, commit: str, prefixes: list[str]) -> list[tuple[str, str]]:
    """(object id, repo path) of the policy files under `prefixes`, hidden entries skipped
    like `policy_files` skips them on disk."""
    listing = _git(repo, "ls-tree", "-r", "-z", "--full-tree", commit, "--", *prefixes)
    found: list[tuple[str, str]] = []
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _, name = entry.decode("utf-8", "surrogateescape").partition("\t")
        mode, kind, oid = meta.split()
        if kind != "blob" or mode == "120000" or not is_policy_name(name.rpartition("/")[2]):
            continue
        if any(part.startswith(".") for part in name.split("/")):
            continue
        found.append((oid, name))
    return sorted(found, key=lambda item: item[1])


def _cat(repo: Path, oids: list[str]) -> list[bytes]:
    """Every blob in one `git cat-file --batch` call (never one process per file)."""
    out = _git(repo, "cat-file", "--batch", data="".join(f"{o}\n" for o in oids).encode())
    blobs: list[bytes] = []
    at = 0
    for _ in oids:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        start = header_end + 1
        blobs.append(out[start : start + size])
        at = start + size + 1  # the newline git writes after each blob
    return blobs


def read_ref(repo: Path, ref: str, paths: Iterable[Path]) -> Side:
    """The policy files under `paths` as they are at `ref`, named as on disk (relative to the
    working directory), so a finding's location matches the head-side file a reviewer opens."""
    commit = resolve(repo, ref)
    prefixes = [_repo_relative(repo, p) for p in paths]
    files = _tree_files(repo, commit, [p for p in prefixes if p] or ["."])
    blobs = _cat(repo, [oid for oid, _ in files]) if files else []
    names = [_display(repo / name) for _, name in files]
    loaded = load_sources(zip(names, blobs, strict=True))
    if not files:
        loaded.diagnostics.append(_nothing_at(ref, prefixes))
    return Side(f"{ref} ({commit[:12]})", loaded)


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


def read_folder(paths: Iterable[Path], label: str) -> Side:
    """Policy files on disk (the working tree, or a --base-dir/--head-dir folder)."""
    files, problems = policy_files(paths)
    loaded = load_sources(read_files(files, problems))
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
    with the upstream default branch, else HEAD; head: the working tree)."""
    if base_dir is not None or head_dir is not None:
        if base_dir is None or head_dir is None:
            raise SourceError("--base-dir and --head-dir go together")
        if base is not None or head is not None:
            raise SourceError("use either --base/--head (Git refs) or --base-dir/--head-dir")
        return read_folder([base_dir], str(base_dir)), read_folder([head_dir], str(head_dir))
    repo = repo_root(cwd)
    base_side = read_ref(repo, base or default_base(repo), paths)
    if head is None:
        return base_side, read_folder(paths, "working tree")
    return base_side, read_ref(repo, head, paths)
