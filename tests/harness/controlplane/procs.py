"""Process stage: start daemons in their own process group, track them by pid file, stop them.

Linux only: /proc tells whether a pid still runs our binary.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path


class ProcessError(RuntimeError):
    """A daemon exited early or did not become ready in time."""


# Two test processes that start clusters side by side (.ci/run's sim shards) would otherwise
# race: a port the kernel gave one and that is closed again until its daemon binds it is free
# for the other's bind(0). Each shard names its own block; ports are handed out in turn from it.
PORT_RANGE = "HETGITOPS_PORT_RANGE"
_next_in_range: dict[str, int] = {}


def _port_range() -> tuple[int, int] | None:
    spec = os.environ.get(PORT_RANGE, "")
    if not spec:
        return None
    low, _, high = spec.partition("-")
    if not (low.isdigit() and high.isdigit() and 1024 <= int(low) < int(high) <= 65535):
        raise ValueError(f"${PORT_RANGE}={spec!r}: want LOW-HIGH, 1024 <= LOW < HIGH <= 65535")
    return int(low), int(high)


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(count: int) -> list[int]:
    """Distinct free loopback ports: from $HETGITOPS_PORT_RANGE in turn when it is set (never
    one handed out before in this process), else the kernel's choice with all sockets open until
    every port is chosen."""
    bounds = _port_range()
    if bounds is not None:
        low, high = bounds
        key = f"{low}-{high}"
        chosen: list[int] = []
        port = _next_in_range.get(key, low)
        while len(chosen) < count:
            if port > high:
                raise ProcessError(f"${PORT_RANGE}={key}: no free port left for {count}")
            if _bindable(port):
                chosen.append(port)
            port += 1
        _next_in_range[key] = port
        return chosen
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def spawn(
    command: Sequence[str],
    *,
    pid_file: Path,
    log_file: Path,
    env: Mapping[str, str] | None = None,
    image: Path | None = None,
) -> int:
    """Start `command` detached (new session = own process group) and record its pid.

    `image`: the binary the process ends up running when `command` is a wrapper that execs it
    (tests/harness/simcluster runs Kueue under `unshare`); the pid file must name what /proc shows.

    posix_spawn rather than Popen: the daemon outlives any Popen object, which would otherwise
    warn "subprocess is still running" when collected.
    """
    log_file.parent.mkdir(parents=True, exist_ok=True)
    log = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        pid = os.posix_spawn(
            command[0],
            list(command),
            {**os.environ, **(env or {})},
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, log, 1),
                (os.POSIX_SPAWN_DUP2, log, 2),
            ],
            setsid=True,  # survives the caller; killpg reaches anything it forks
        )
    finally:
        os.close(log)
    # The executable goes in too: `stop` must recognise its own daemon, not a recycled pid.
    pid_file.write_text(f"{pid}\n{image or command[0]}\n")
    return pid


def read_pid_file(pid_file: Path) -> tuple[int, Path] | None:
    try:
        pid, executable = pid_file.read_text().splitlines()[:2]
        return int(pid), Path(executable)
    except (OSError, ValueError):
        return None


def is_tracked_running(pid_file: Path) -> bool:
    entry = read_pid_file(pid_file)
    return entry is not None and is_running(*entry)


def is_running(pid: int, executable: Path) -> bool:
    """True if `pid` is alive and runs `executable` (a recycled pid must never be killed)."""
    _reap(pid)
    try:
        # /proc/PID/exe, not cmdline: cmdline can read empty for a moment right after exec.
        image = os.readlink(f"/proc/{pid}/exe").removesuffix(" (deleted)")
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z" and image == str(executable.resolve())


def stop(pid_file: Path, *, grace: float = 10.0) -> None:
    """SIGTERM the process group, SIGKILL after `grace` seconds, then drop the pid file."""
    entry = read_pid_file(pid_file)
    if entry is not None and is_running(*entry):
        pid, executable = entry
        _signal_group(pid, signal.SIGTERM)
        if not _wait_for(lambda: not is_running(pid, executable), grace):
            _signal_group(pid, signal.SIGKILL)
            if not _wait_for(lambda: not is_running(pid, executable), 5.0):
                raise ProcessError(f"{executable.name} (pid {pid}) survived SIGKILL")
    pid_file.unlink(missing_ok=True)


def wait_until(
    ready: Callable[[], bool], *, timeout: float, alive: Callable[[], bool], what: str
) -> None:
    """Poll `ready` until it holds; fail fast when `alive` says the daemon died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        if not alive():
            raise ProcessError(f"{what} exited during start-up")
        time.sleep(0.25)
    raise ProcessError(f"{what} not ready after {timeout:.0f}s")


@contextlib.contextmanager
def locked(lock_file: Path) -> Iterator[None]:
    """Serialise `up`/`down` across processes (e.g. two pytest runs starting at once)."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _signal_group(pid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


def _reap(pid: int) -> None:
    # A daemon we started ourselves stays a zombie until we wait for it, and a zombie still
    # answers kill(pid, 0): reap it so it counts as stopped.
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _wait_for(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()
