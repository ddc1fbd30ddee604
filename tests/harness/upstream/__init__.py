"""Upstream test data: the real CRDs and examples of Kueue, Volcano, NFD, the GPU Operator,
JobSet, LeaderWorkerSet and the training operator, taken from their pinned Go modules.

`folder()` is `<cache>/upstream/<hash>/`, laid out as `<project>/crds/*.yaml`,
`<project>/examples/*` and `<project>/configs/*` (configuration files, not Kubernetes
objects: a scheduler ConfigMap's data, Kueue's manager Configuration); the layout of
../shared/upstream, which is no longer read (see tests/test_upstream_sources.py for the
optional cross-check). It is assembled once per pin set: `go mod download -json
MODULE@VERSION` puts each module in the Go module cache (GOMODCACHE, outside the repository)
and names its folder, the download's hash is compared with the pinned go.sum hash, and the
listed files are copied out with a SOURCES.json of their provenance. Nothing of it is ever
copied into this repository. Pins: tests/harness/upstream/sources.py.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.controlplane.build import cache_root, go_available

from .sources import Pin, PinError, Source, sources

__all__ = ["Unavailable", "crd_dirs", "folder", "for_test", "missing"]

REQUIRE_FLAG = "HETGITOPS_REQUIRE_UPSTREAM"
# Part of the cache key: a change in how the tree is assembled must rebuild it.
_RECIPE = "v1 go-mod-download copy SOURCES.json"


class Unavailable(RuntimeError):
    """The data cannot be assembled here (no Go, no proxy, a hash mismatch), in plain words."""


def crd_dirs(*projects: str) -> tuple[Path, ...]:
    """`<folder>/<project>/crds` for each project, in order."""
    root = folder()
    return tuple(root / project / "crds" for project in projects)


def missing() -> str | None:
    """Why the data is unavailable here, or None when `folder()` works."""
    try:
        folder()
    except Unavailable as error:
        return str(error)
    return None


def for_test() -> Path:
    """`folder()` for a test: skip with the reason, or fail under HETGITOPS_REQUIRE_UPSTREAM=1."""
    import pytest

    try:
        return folder()
    except Unavailable as error:
        if os.environ.get(REQUIRE_FLAG) == "1":
            pytest.fail(f"{error} ({REQUIRE_FLAG}=1)", pytrace=False)
        pytest.skip(str(error))


@functools.cache
def folder() -> Path:
    """The assembled tree, built first if this pin set has not been assembled before."""
    try:
        wanted = sources()
    except (OSError, PinError) as error:
        raise Unavailable(f"cannot read the upstream pins: {error}") from error
    target = cache_root() / "upstream" / _key(wanted)
    if (target / "SOURCES.json").is_file():
        return target
    if not go_available():
        raise Unavailable(
            "the Go toolchain (`go`) is not on PATH and the upstream CRDs are not cached at "
            f"{target}: `go mod download` fetches them from the pinned upstream modules"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    # Assemble beside the target and rename: a concurrent or interrupted run never sees half.
    staging = Path(tempfile.mkdtemp(prefix=".assemble-", dir=target.parent))
    try:
        started = time.monotonic()
        _assemble(wanted, staging)
        try:
            staging.rename(target)
        except OSError:
            if not (target / "SOURCES.json").is_file():  # else a concurrent run published it
                raise
        print(
            f"upstream: assembled {target} in {time.monotonic() - started:.0f}s",
            file=sys.stderr,
            flush=True,
        )
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _key(wanted: tuple[Source, ...]) -> str:
    digest = hashlib.sha256(_RECIPE.encode())
    digest.update(repr(wanted).encode())
    return digest.hexdigest()[:16]


def _assemble(wanted: tuple[Source, ...], out: Path) -> None:
    provenance: list[dict[str, str]] = []
    module_dirs: dict[Pin, Path] = {}
    for source in wanted:
        if source.pin not in module_dirs:
            module_dirs[source.pin] = module_dir(source.pin)
        root = module_dirs[source.pin]
        copies = [(path, "crds", Path(path).name) for path in source.crds]
        copies += [(path, "examples", name) for path, name in source.examples.items()]
        copies += [(path, "configs", name) for path, name in source.configs.items()]
        for relative, kind, name in copies:
            origin = root / relative
            if not origin.is_file():
                raise Unavailable(
                    f"{source.pin.spec} has no {relative} (see {source.pin.pinned_in})"
                )
            destination = out / source.project / kind / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(origin, destination)
            provenance.append(
                {
                    "file": destination.relative_to(out).as_posix(),
                    "module": source.pin.module,
                    "version": source.pin.version,
                    "moduleSum": source.pin.sum,
                    "path": relative,
                    "sha256": hashlib.sha256(destination.read_bytes()).hexdigest(),
                    "pinnedIn": source.pin.pinned_in,
                }
            )
    text = json.dumps(sorted(provenance, key=lambda p: p["file"]), indent=2) + "\n"
    (out / "SOURCES.json").write_text(text)


def module_dir(pin: Pin) -> Path:
    """The module's folder in the Go module cache, downloaded first if needed; its hash checked."""
    env = dict(os.environ, GOFLAGS="", GOWORK="off", GO111MODULE="on")
    with tempfile.TemporaryDirectory(prefix="hetgitops-upstream-") as cwd:  # outside any module
        result = subprocess.run(
            ["go", "mod", "download", "-json", pin.spec],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    try:
        info = json.loads(result.stdout)
    except ValueError:
        info = {}
    error = info.get("Error") or (result.stderr.strip() if result.returncode else "")
    if error or "Dir" not in info:
        raise Unavailable(
            f"`go mod download {pin.spec}` failed (pinned in {pin.pinned_in}): "
            f"{error or 'no Dir in its output'}"
        )
    if info.get("Sum") != pin.sum:
        raise Unavailable(
            f"{pin.spec} downloaded with hash {info.get('Sum')}, but {pin.pinned_in} pins {pin.sum}"
        )
    return Path(info["Dir"])
