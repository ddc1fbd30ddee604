"""Live stage: an exec credential plugin (kubelogin, aws eks get-token...) run bounded in time,
its stdout read until it exits (not until EOF: a helper it left running may hold the pipe for
ever) and its words decoded whatever their encoding."""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from typing import Any

from hetgitops.live.said import shown

# A plugin that has not answered by then never will without a person (a browser login cannot
# happen in a pipeline).
EXEC_TIMEOUT = 60.0
# What a plugin prints past this is not a credential; stop reading rather than fill memory.
MAX_OUTPUT = 1 << 20
# After the plugin exits, what it wrote is already in the pipe; this only bounds the wait for
# a pipe a process it started still holds.
_DRAIN = 0.2


def bounded_exec(base: Any, deadline: Any) -> Any:
    """kubernetes' ExecProvider with the plugin bounded in time (the base class waits forever
    on a plugin that waits). In a pipeline (no terminal) it gets EXEC_TIMEOUT, stdin closed and
    its stderr kept for the message; at a terminal it talks to the person (a browser or device
    login prints where to go on stderr) for what is left of the deadline."""
    from kubernetes.config.config_exception import ConfigException

    class BoundedExec(base):  # type: ignore[misc]
        def run(self, previous_response: Any = None) -> Any:
            interactive = all(s is not None and s.isatty() for s in (sys.stdin, sys.stderr))
            left = max(deadline.left(), 0.1)
            timeout = left if interactive else min(EXEC_TIMEOUT, left)
            info: dict[str, Any] = {
                "apiVersion": self.api_version,
                "kind": "ExecCredential",
                "spec": {"interactive": interactive},
            }
            if self.cluster:
                info["spec"]["cluster"] = self.cluster.value
            self.env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
            command = shown(" ".join(self.args))
            try:
                done = run_plugin(self.args, self.cwd, self.env, interactive, timeout)
            except subprocess.TimeoutExpired:
                raise ConfigException(
                    f"the exec credential plugin `{command}` did not exit within "
                    f"{timeout:.0f}s (stopped; it may be waiting for a login no one can give)"
                ) from None
            except OSError as exc:
                raise ConfigException(
                    f"cannot run the exec credential plugin `{command}`: {exc.strerror}"
                ) from None
            if done.returncode != 0:
                text = (done.stderr or "").strip()  # at a terminal the person saw it already
                said = shown(text.splitlines()[0][:200]) if text else ""
                raise ConfigException(
                    f"the exec credential plugin `{command}` failed (exit {done.returncode})"
                    + (f": {said}" if said else "")
                )
            try:
                data = json.loads(done.stdout)
            except ValueError:
                raise ConfigException(
                    f"the exec credential plugin `{command}` printed no ExecCredential JSON"
                ) from None
            status = data.get("status") if isinstance(data, dict) else None
            if not isinstance(status, dict) or data.get("apiVersion") != self.api_version:
                raise ConfigException(
                    f"the exec credential plugin `{command}` printed no {self.api_version} "
                    "ExecCredential with a status"
                )
            return status

    return BoundedExec


def run_plugin(
    args: list[str], cwd: str | None, env: dict[str, str], interactive: bool, timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run a credential plugin; on timeout stop it and, in a pipeline, everything it started
    (its own process group: a shell script's `sleep` would outlive a killed shell). At a
    terminal it stays in the foreground group, where it may read the terminal."""
    process = subprocess.Popen(
        args,
        stdin=None if interactive else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=None if interactive else subprocess.PIPE,
        cwd=cwd,
        env=env,
        process_group=None if interactive else 0,
    )
    try:
        out, err = _collect(process, timeout)
    except BaseException:  # the timeout, or the run's deadline alarm: leave nothing running
        with contextlib.suppress(OSError):
            if interactive:
                process.kill()
            else:
                os.killpg(process.pid, signal.SIGKILL)
        process.wait()  # not communicate(): a grandchild may hold the pipes open
        raise
    finally:
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
    # A plugin's words in any encoding are words, not a codec error.
    return subprocess.CompletedProcess(
        args, process.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    )


def _collect(process: subprocess.Popen[bytes], timeout: float) -> tuple[bytes, bytes]:
    """stdout and stderr of `process` until it has exited and its pipes are drained (or no
    longer being written: a process it left running may hold them open without end)."""
    end = time.monotonic() + timeout
    out: list[bytes] = []
    err: list[bytes] = []
    with selectors.DefaultSelector() as selector:
        for pipe, into in ((process.stdout, out), (process.stderr, err)):
            if pipe is not None:
                selector.register(pipe, selectors.EVENT_READ, into)
        exited = None
        while selector.get_map():
            now = time.monotonic()
            if exited is None and process.poll() is not None:
                exited = now
            if exited is not None and now - exited > _DRAIN:
                break  # the plugin is done; whoever holds the pipe now is not the plugin
            if now >= end:
                raise subprocess.TimeoutExpired(process.args, timeout)
            for key, _ in selector.select(min(0.05, end - now)):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk or sum(map(len, key.data)) > MAX_OUTPUT:
                    selector.unregister(key.fileobj)
                else:
                    key.data.append(chunk)
    process.wait(max(end - time.monotonic(), 0.001))
    return b"".join(out), b"".join(err)
