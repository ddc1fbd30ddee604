"""Faults of the environment, told as what they are: exit 4 naming what failed and where, never
a traceback, never exit 0 with partial output, never exit 3 ("a bug").

Real processes (PYTHONUNBUFFERED=1, as in many CI images), a real full device (/dev/full), real
small tmpfs mounts (when the test runs as root) and real closed pipes.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
POLICIES = str(REPO / "policies")
NOW = ["--now", "2026-09-01"]
COMMANDS = {
    "render": ["render", POLICIES, *NOW],
    "jobs": ["jobs", POLICIES, *NOW],
    "validate-sarif": ["validate", "--format", "sarif", POLICIES, *NOW],
    "validate-json": ["validate", "--format", "json", POLICIES, *NOW],
}
CLI = [sys.executable, "-c", "from hetgitops.cli.main import main; main()"]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
ENV.pop("HETGITOPS_DEBUG", None)


def hetgitops(
    *args: str, stdout: int | Path = subprocess.PIPE, close_stdout: bool = False
) -> tuple[int, str]:
    """Run the CLI as a real process; returns (exit code, stderr)."""
    command = [*CLI, *args]
    if isinstance(stdout, Path):
        with stdout.open("wb") as sink:
            done = subprocess.run(
                command, stdout=sink, stderr=subprocess.PIPE, env=ENV, check=False
            )
        return done.returncode, done.stderr.decode()
    # `with` closes both pipes (unclosed, they are a ResourceWarning: an error in this suite).
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        if close_stdout:
            proc.stdout.close()  # the reader goes away before a byte is read, like `| head -0`
        else:
            proc.stdout.read()
        err = proc.stderr.read().decode()
        return proc.wait(), err


def _environment_fault(code: int, err: str, *needles: str) -> None:
    assert code == 4, err
    assert "Traceback" not in err and "internal error" not in err, err
    last = err.strip().splitlines()[-1]
    for needle in needles:
        assert needle in last, last


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 32 KiB tmpfs: too small for the bundled render (about 49 KB)."""
    yield from _mount(tmp_path / "small", "size=32k")


@pytest.fixture
def tree_fs(tmp_path: Path) -> Iterator[Path]:
    """Room for a small tree (a page per file), not for the bundled render's ~90 files."""
    yield from _mount(tmp_path / "tree", "size=160k")


@pytest.fixture
def read_only_fs(tmp_path: Path) -> Iterator[Path]:
    yield from _mount(tmp_path / "ro", "size=64k,ro")


def _mount(where: Path, options: str) -> Iterator[Path]:
    where.mkdir()
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_stdout_on_a_full_device_is_exit_4(name: str) -> None:
    code, err = hetgitops(*COMMANDS[name], stdout=Path("/dev/full"))
    _environment_fault(code, err, "<stdout>", "No space left on device")


@pytest.mark.parametrize("name", ["render", "jobs", "validate-sarif"])
def test_a_short_write_to_a_nearly_full_disk_is_exit_4(small_fs: Path, name: str) -> None:
    """The issue's repro: 49,270 bytes into 32 KiB used to stop at the limit with exit 0."""
    sink = small_fs / "out"
    code, err = hetgitops(*COMMANDS[name], stdout=sink)
    _environment_fault(code, err, "<stdout>", "No space left on device", "bytes")
    written = sink.stat().st_size
    assert f"after {written} of " in err


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_closed_stdout_is_exit_4(name: str) -> None:
    code, err = hetgitops(*COMMANDS[name], close_stdout=True)
    _environment_fault(code, err, "<stdout>", "Broken pipe")


def test_output_dir_on_a_full_disk_keeps_the_old_tree(tree_fs: Path) -> None:
    out = tree_fs / "tree"
    code, err = hetgitops("render", POLICIES, *NOW, "--target", "volcano", "-o", str(out))
    assert code == 0, err
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    code, err = hetgitops("render", POLICIES, *NOW, "-o", str(out))
    _environment_fault(code, err, "No space left on device", str(tree_fs))
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in tree_fs.iterdir()] == ["tree"]  # the half-written tree is gone


def test_output_dir_on_a_read_only_file_system(read_only_fs: Path) -> None:
    code, err = hetgitops("render", POLICIES, *NOW, "-o", str(read_only_fs / "tree"))
    _environment_fault(code, err, "Read-only file system", str(read_only_fs))


def test_output_dir_through_a_symlink_loop(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    for command in ("render", "jobs"):
        code, err = hetgitops(command, POLICIES, *NOW, "-o", str(loop))
        _environment_fault(code, err, str(loop), "Too many levels of symbolic links")


def test_a_valid_node_name_too_long_for_a_file_name_renders(tmp_path: Path) -> None:
    """A 249-character node name is valid Kubernetes; `node-<name>.yaml` would not be a valid
    file name on ext4 or tmpfs (255 bytes): the node plan is one file per pool, named after
    the pool (at most 63 characters), so the node is written inside it."""
    policy = tmp_path / "policy"
    shutil.copytree(POLICIES, policy)
    pools = policy / "pools" / "dev.yaml"
    long_name = "n" * 249
    pools.write_text(pools.read_text().replace("mlu-370-01", long_name))
    code, err = hetgitops("validate", str(policy), *NOW)
    assert code == 0, err
    out = tmp_path / "out"
    code, err = hetgitops("render", str(policy), *NOW, "-o", str(out))
    assert code == 0, err
    plans = [p.read_text() for p in (out / "nodes" / "plan").iterdir()]
    assert sum(f"name: {long_name}\n" in text for text in plans) == 1


def test_output_dir_that_cannot_be_listed_is_exit_4(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.write_bytes(b"")
    out.unlink()
    out.mkdir()
    (out / "sub").symlink_to(out / "sub")
    code, err = hetgitops("render", POLICIES, *NOW, "-o", str(out / "sub" / "tree"))
    _environment_fault(code, err, "Too many levels of symbolic links")


def test_a_complete_stdout_still_parses_whole() -> None:
    """Control: the checked writer writes everything when nothing fails."""
    command = [*CLI, *COMMANDS["render"]]
    done = subprocess.run(command, capture_output=True, env=ENV, check=True)
    documents = [d for d in yaml.safe_load_all(done.stdout) if d]
    assert len(documents) > 40


# A stream the process is started without: the shell's `>&-` / `2>&-`, run by a real shell.
CLOSED_STREAM_COMMANDS = {
    **COMMANDS,
    "rules": ["rules"],
    "schema": ["schema"],
    "validate": ["validate", POLICIES, *NOW],
}


def _started_without(redirect: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    script = f'exec "$@" {redirect}'
    return subprocess.run(
        ["sh", "-c", script, "sh", *CLI, *args], capture_output=True, env=ENV, check=False
    )


@pytest.mark.parametrize("name", sorted(CLOSED_STREAM_COMMANDS))
def test_started_with_stdout_closed_is_exit_4(name: str) -> None:
    """`>&-` used to be exit 3 (AttributeError: sys.stdout is None)."""
    done = _started_without(">&-", *CLOSED_STREAM_COMMANDS[name])
    _environment_fault(done.returncode, done.stderr.decode(), "<stdout>", "closed")


@pytest.mark.parametrize("name", sorted(CLOSED_STREAM_COMMANDS))
def test_started_with_stderr_closed_writes_stdout_whole(name: str) -> None:
    """`2>&-`: stdout is still written whole; if something was to be said on stderr (jobs'
    warnings) the exit is 4, not the silent exit 1 with nothing on stdout it used to be."""
    args = CLOSED_STREAM_COMMANDS[name]
    normal = subprocess.run([*CLI, *args], capture_output=True, env=ENV, check=False)
    done = _started_without("2>&-", *args)
    assert done.stdout == normal.stdout and done.stdout
    assert done.returncode == (4 if normal.stderr else normal.returncode)


def test_a_closed_stderr_does_not_leak_into_an_output_file(tmp_path: Path) -> None:
    """With fd 2 closed the first file opened would get number 2: the tree must hold only
    what render writes, and the run still says (by exit 4) that its warnings were lost."""
    out = tmp_path / "jobs"
    done = _started_without("2>&-", "jobs", POLICIES, *NOW, "-o", str(out))
    assert done.returncode == 4
    reference = tmp_path / "reference"
    subprocess.run(
        [*CLI, "jobs", POLICIES, *NOW, "-o", str(reference)],
        env=ENV,
        check=True,
        capture_output=True,
    )
    files = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    expected = {
        p.relative_to(reference): p.read_bytes() for p in reference.rglob("*") if p.is_file()
    }
    assert files == expected


# The console script's entry (pyproject's [project.scripts]), which guards the imports too.
SCRIPT = [sys.executable, "-c", "from hetgitops.cli.entry import main; main()"]


def _address_space_limit(megabytes: int) -> Callable[[], None]:
    def limit() -> None:
        size = megabytes << 20
        resource.setrlimit(resource.RLIMIT_AS, (size, size))

    return limit


def test_memory_exhaustion_is_exit_4_out_of_memory() -> None:
    """`ulimit -v` from where the imports fail to where validate completes: each run is exit 4
    "out of memory" or a clean exit 0. Before: a traceback and exit 1 in the imports, exit 3
    MemoryError, and SIGABRT (-6) from jsonschema-rs, whose failed allocations abort."""
    seen = {}
    for megabytes in range(24, 121, 8):
        done = subprocess.run(
            [*SCRIPT, "validate", POLICIES, *NOW],
            capture_output=True,
            env=ENV,
            check=False,
            preexec_fn=_address_space_limit(megabytes),
        )
        err = done.stderr.decode()
        seen[megabytes] = done.returncode
        assert done.returncode in (0, 4), (megabytes, done.returncode, err[-2000:])
        if done.returncode == 4:
            assert err.splitlines()[-1].startswith("hetgitops: out of memory"), err[-2000:]
            assert "Traceback" not in err
    assert seen[24] == 4 and seen[120] == 0, seen


# -- output trees a user made read-only, owned by someone else, or mounted (issue 23 items 6, 16)

DROP = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search,-fowner", "--"]


def as_plain_user(*args: str) -> tuple[int, str]:
    """The CLI as root without the capabilities that let root ignore file modes: what any
    non-root user meets (a mode-555 folder refuses it writes)."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("dropping root's file-mode override needs root and setpriv")
    done = subprocess.run([*DROP, *CLI, *args], capture_output=True, env=ENV, check=False)
    return done.returncode, done.stderr.decode()


def _render_into(out: Path) -> tuple[int, str]:
    return as_plain_user("render", POLICIES, *NOW, "-o", str(out))


def test_a_read_only_old_tree_is_replaced_and_later_renders_work(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _render_into(out)[0] == 0
    subprocess.run(["chmod", "-R", "a-w", str(out)], check=True)  # `chmod 555` and below
    # a killed run's hidden leftover, made read-only too
    left = tmp_path / ".out.hetgitops-0123456789ab"
    (left / "core").mkdir(parents=True)
    (left / ".hetgitops-output").write_text("x\n")
    subprocess.run(["chmod", "-R", "555", str(left)], check=True)
    for _ in range(2):
        code, err = _render_into(out)
        assert code == 0, err
        assert [p.name for p in tmp_path.iterdir()] == ["out"]
    assert (out / "kustomization.yaml").is_file()


def test_an_old_tree_that_cannot_be_removed_says_the_new_one_is_in(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _render_into(out)[0] == 0
    subprocess.run(["chown", "-R", "65534:65534", str(out)], check=True)
    subprocess.run(["chmod", "-R", "a-w", str(out)], check=True)
    code, err = _render_into(out)
    (left,) = [p for p in tmp_path.iterdir() if p.name != "out"]
    _environment_fault(code, err, f"{out} holds the new tree, but {left} could not be removed")
    assert "no output was completed" not in err and f"rm -rf {left}" in err
    assert os.stat(out).st_uid == 0  # the new tree, written by this run
    subprocess.run(["chmod", "-R", "u+w", str(left)], check=True)


def test_render_onto_a_mount_point_says_why_and_leaves_nothing(tmp_path: Path) -> None:
    mounts = _mount(tmp_path / "mnt", "size=1m")
    mounted = next(mounts)
    try:
        code, err = hetgitops("render", POLICIES, *NOW, "-o", str(mounted))
        assert code == 2, err
        assert "is a mount point, and a mount point cannot be swapped" in err
        assert f"e.g. {mounted}/rendered" in err
        assert [p.name for p in tmp_path.iterdir()] == ["mnt"]  # no staging tree beside it
        assert list(mounted.iterdir()) == []
    finally:
        next(mounts, None)
