"""Load stage, Git trees: the policy files under some paths at one commit, found the way
`load.policy_files` finds them on disk — symlinks followed inside the repository, submodules
read from their own clone — and every entry that cannot be read said aloud, never dropped.

A tree is listed once (`git ls-tree -r -t`) and every link target read in one `cat-file`
call; walking it is then in memory, so a policy of thousands of files costs two processes."""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hetgitops.diagnostics import Diagnostic, Span, error, register_rules
from hetgitops.load.policyfiles import is_policy_name, skipped_as_policy, skipped_file

LINK, GITLINK = "120000", "160000"
MAX_LINK_HOPS = 40  # what Linux allows (ELOOP) before calling a chain of links a loop

# Still diff's rule (`hetgitops rules` shows stage diff): only diff reads a ref's tree.
register_rules(
    "diff",
    {
        "unreadable-at-ref": "A policy path at a Git ref cannot be read from Git objects: a "
        "symlink that leaves the repository or points nowhere, a loop of links, or a submodule "
        "whose commit is not in this clone. On disk the same path may read fine, so the ref's "
        "side would silently lose the files behind it.\n"
        "Fix: point the link inside the repository (or check the files in); for a submodule run "
        "`git submodule update --init` (actions/checkout: `submodules: true`).",
    },
)


@dataclass(frozen=True)
class Entry:
    mode: str
    kind: str  # blob, tree or commit (a gitlink)
    oid: str


@dataclass(frozen=True)
class Found:
    """One policy file: the repository whose objects hold it, its blob and its name as a user
    reaches it (through links, like the path `os.walk` gives on disk)."""

    repo: Path
    oid: str
    name: str


Git = Callable[..., bytes]  # git_source._git: (repo, *args, data=...) -> stdout


@dataclass
class Tree:
    """Every entry of one commit's tree, with its link targets."""

    repo: Path
    entries: dict[str, Entry]
    children: dict[str, list[str]]
    links: dict[str, str]

    @classmethod
    def read(cls, git: Git, repo: Path, commit: str) -> Tree:
        listing = git(repo, "ls-tree", "-r", "-t", "-z", "--full-tree", commit)
        entries: dict[str, Entry] = {}
        children: dict[str, list[str]] = {"": []}
        for line in listing.split(b"\0"):
            if not line:
                continue
            meta, _, name = line.decode("utf-8", "surrogateescape").partition("\t")
            mode, kind, oid = meta.split()
            entries[name] = Entry(mode, kind, oid)
            parent, _, base = name.rpartition("/")
            children.setdefault(parent, []).append(base)
            if kind == "tree":
                children.setdefault(name, [])
        linked = sorted(n for n, e in entries.items() if e.mode == LINK)
        targets = read_blobs(git, repo, [entries[n].oid for n in linked])
        links = {
            n: t.decode("utf-8", "surrogateescape") for n, t in zip(linked, targets, strict=True)
        }
        return cls(repo, entries, children, links)

    def real(self, path: str) -> str:
        """The path `path` leads to inside this tree, links followed (the entry itself may not
        exist); LinkError when a link leaves the tree or the chain loops."""
        return self._real(path, [0])

    def _real(self, path: str, hops: list[int]) -> str:
        current = ""
        for part in path.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not current:
                    raise LinkError("it leads out of the repository")
                current = posixpath.dirname(current)
                continue
            step = posixpath.join(current, part) if current else part
            entry = self.entries.get(step)
            if entry is None or entry.mode != LINK:
                current = step
                continue
            hops[0] += 1
            target = self.links[step]
            if hops[0] > MAX_LINK_HOPS:
                raise LinkError("too many levels of symbolic links (a loop)")
            if target.startswith("/"):
                raise LinkError(f"it points at the absolute path {target}, outside the repository")
            current = self._real(posixpath.join(current, target), hops)
        return current


class LinkError(ValueError):
    """A link that cannot be followed inside the tree; the message says why."""


@dataclass
class Walk:
    """The policy files under some paths of one tree, and what could not be read."""

    git: Git
    root: Path  # the repository the user's paths are in (names are shown from it)
    label: str  # the ref, for messages
    display: Callable[[Path], str]
    found: list[Found] = field(default_factory=list)
    problems: list[Diagnostic] = field(default_factory=list)

    def path(self, tree: Tree, logical: str) -> None:
        """A PATH argument: a folder (walked) or a file (read whatever its name, as on disk)."""
        try:
            real = tree.real(logical)
        except LinkError as exc:
            self._unreadable(tree, logical, f"the symlink cannot be followed: {exc}")
            return
        entry = tree.entries.get(real)
        if not real or (entry is not None and entry.kind == "tree"):
            self._folder(tree, logical, real, (real,))
        elif entry is not None and entry.kind == "blob":
            self.found.append(Found(tree.repo, entry.oid, logical))
        elif entry is not None:
            self._submodule(tree, logical, real, entry)

    def _folder(self, tree: Tree, logical: str, real: str, chain: tuple[str, ...]) -> None:
        for name in sorted(tree.children.get(real, [])):
            if name.startswith("."):
                continue
            shown = posixpath.join(logical, name) if logical else name
            inside = posixpath.join(real, name) if real else name
            entry = tree.entries[inside]
            if entry.mode == LINK:
                self._link(tree, shown, inside, chain)
            elif entry.kind == "tree":
                self._folder(tree, shown, inside, (*chain, inside))
            elif entry.kind == "commit":
                self._submodule(tree, shown, inside, entry)
            else:
                self._file(tree, shown, entry)

    def _file(self, tree: Tree, shown: str, entry: Entry) -> None:
        base = shown.rpartition("/")[2]
        if is_policy_name(base):
            self.found.append(Found(tree.repo, entry.oid, shown))
        elif skipped_as_policy(base):
            self.problems.append(skipped_file(self.display(self.root / shown)))

    def _link(self, tree: Tree, shown: str, inside: str, chain: tuple[str, ...]) -> None:
        try:
            real = tree.real(inside)
        except LinkError as exc:
            self._unreadable(tree, shown, f"the symlink cannot be followed: {exc}")
            return
        entry = tree.entries.get(real)
        if entry is None:
            if is_policy_name(shown.rpartition("/")[2]):  # on disk: "no such file or directory"
                self._unreadable(
                    tree, shown, f"the symlink points at {real}, which is not at {self.label}"
                )
        elif entry.kind == "tree":
            if real in chain:
                self._unreadable(
                    tree, shown, "directory symlink loop: it points back to a directory it is in"
                )
            else:
                self._folder(tree, shown, real, (*chain, real))
        elif entry.kind == "commit":
            self._submodule(tree, shown, real, entry)
        else:
            self._file(tree, shown, entry)

    def _submodule(self, tree: Tree, shown: str, inside: str, entry: Entry) -> None:
        """A gitlink: its files come from the submodule's own clone, at the recorded commit."""
        clone = tree.repo / inside
        try:
            if not (clone / ".git").exists():
                raise LookupError("it is not checked out")
            self.git(clone, "cat-file", "-e", f"{entry.oid}^{{commit}}")
            inner = Tree.read(self.git, clone, entry.oid)
        except LookupError as exc:
            why = str(exc)
        except ValueError:  # SourceError from git: the commit is not in the submodule's clone
            why = f"its commit {entry.oid[:12]} is not in the submodule's clone"
        else:
            self._folder(inner, shown, "", ("",))
            return
        self._unreadable(
            tree, shown, f"a Git submodule at {self.label} whose files cannot be read: {why}"
        )

    def _unreadable(self, tree: Tree, shown: str, message: str) -> None:
        self.problems.append(
            error(
                "unreadable-at-ref",
                message,
                Span(self.display(self.root / shown)),
                hint="its files would be missing from this side of the diff",
            )
        )


def read_blobs(git: Git, repo: Path, oids: list[str]) -> list[bytes]:
    """Every blob in one `git cat-file --batch` call (never one process per file); a blob the
    object store lacks (a partial or damaged clone) is MissingObject, not a crash."""
    if not oids:
        return []
    out = git(repo, "cat-file", "--batch", data="".join(f"{o}\n" for o in oids).encode())
    blobs: list[bytes] = []
    at = 0
    for oid in oids:
        header_end = out.index(b"\n", at)
        header = out[at:header_end].split()
        if len(header) != 3:
            raise MissingObject(oid, repo)
        size = int(header[2])
        start = header_end + 1
        blobs.append(out[start : start + size])
        at = start + size + 1  # the newline git writes after each blob
    return blobs


class MissingObject(Exception):
    """A blob listed in a tree but absent from the object store."""

    def __init__(self, oid: str, repo: Path) -> None:
        super().__init__(oid, repo)
        self.oid, self.repo = oid, repo
