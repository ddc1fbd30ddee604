"""Live stage: the cluster client (the only importer of `kubernetes`): paginated LISTs, one
server-side apply dry-run, and errors turned into three plain exception types."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# One page per kind for any realistic fleet: the request budget of `drift` is "kinds in use
# plus a few", and the API server streams a 5,000-item page without trouble. Bigger kinds are
# still read completely, page by page (`continue` tokens).
PAGE_SIZE = 5000
TIMEOUT = (10, 120)  # connect, read (seconds)
FIELD_MANAGER = "hetgitops"
# A LIST of more pages than this is a server that never stops (5,000 x 1,000 = five million
# objects of one kind); a `continue` token seen twice would never stop either.
MAX_PAGES = 1000
# The whole read of one cluster, every request and credential plugin together (`drift
# --timeout`): a server that dribbles a byte at a time resets every per-read timeout.
DEADLINE = 300.0
# An exec credential plugin (kubelogin, aws eks get-token...) that has not answered by then
# never will without a person (a browser login cannot happen in a pipeline).
EXEC_TIMEOUT = 60.0
_CHUNK = 1 << 16
_GRACE = 1.0  # seconds past the deadline before the alarm interrupts a read


class ClusterError(Exception):
    """The cluster cannot answer at all: unreachable, bad credentials, an answer that is not
    Kubernetes', out of time (exit 4)."""


@dataclass(frozen=True)
class Deadline:
    """The moment (time.monotonic) a whole run must be done by, and the budget it came from."""

    at: float
    seconds: float

    @classmethod
    def start(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds, seconds)

    def left(self) -> float:
        return self.at - time.monotonic()


def redacted(url: str) -> str:
    """`url` with a password in it hidden as kubectl does (`https://admin:***@host`)."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


class Forbidden(Exception):
    """The credentials may not do this one request (a finding, or exit 4 when it is global)."""

    def __init__(self, what: str, message: str) -> None:
        super().__init__(f"{what}: {message}")
        self.what = what
        self.message = message


class NotServed(Exception):
    """The API server does not serve this resource (a CRD is not installed)."""


class RequestFailed(Exception):
    """Any other refusal of one request (422, 409, ...), with the server's message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Resource:
    """Where a kind lives in the API: /api/v1/... or /apis/<group>/<version>/..."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    list_kind: str = ""  # a CRD's spec.names.listKind; default <kind>List

    @property
    def list_of(self) -> str:
        """The `kind` of the list a LIST of this resource answers with."""
        return self.list_kind or f"{self.kind}List"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def collection(self, namespace: str = "") -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if namespace and self.namespaced:
            return f"{base}/namespaces/{urllib.parse.quote(namespace)}/{self.plural}"
        return f"{base}/{self.plural}"


class Cluster:
    """A thin layer over `kubernetes.client.ApiClient`: raw JSON in and out, no typed models
    (deserialising 10,000 objects into generated classes would cost seconds for nothing).
    `requests` counts every HTTP request made, for the request budget."""

    def __init__(
        self,
        kubeconfig: Path | None = None,
        context: str | None = None,
        *,
        deadline: Deadline | None = None,
    ) -> None:
        """`deadline`: when everything this client does, credentials included, must be done
        (default: DEADLINE seconds from now); past it every request raises ClusterError."""
        from kubernetes.client import Configuration

        self._deadline = deadline or Deadline.start(DEADLINE)
        configuration = Configuration()
        _load_kubeconfig(kubeconfig, context, configuration, self._deadline)
        configuration.retries = 1
        from kubernetes.client import ApiClient

        self._api = ApiClient(configuration)
        self._host = str(configuration.host)
        self.server = redacted(self._host)  # for messages: never a password
        self.insecure = not configuration.verify_ssl
        self.requests = 0

    def close(self) -> None:
        self._api.close()  # type: ignore[no-untyped-call]

    def list(self, resource: Resource, *, selector: str = "") -> list[dict[str, Any]]:
        """Every object of `resource` in every namespace, following `continue` tokens."""
        items: list[dict[str, Any]] = []
        token = ""
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            query = {"limit": str(PAGE_SIZE)}
            if selector:
                query["labelSelector"] = selector
            if token:
                query["continue"] = token
            path = resource.collection()
            page = self._request("GET", path, query=query, what=_what(resource))
            for item in _items(page, resource, f"{self.server}{path}"):
                # Built-in kinds' LIST items carry no apiVersion/kind; custom resources do.
                item.setdefault("apiVersion", resource.api_version)
                item.setdefault("kind", resource.kind)
                items.append(item)
            token = str((page.get("metadata") or {}).get("continue") or "")
            if not token:
                return items
            if token in seen:
                raise ClusterError(
                    f"{self.server}{path}: the API server sent the same continue token twice "
                    f"(after {len(seen) + 1} pages): this LIST would never end"
                )
            seen.add(token)
        raise ClusterError(
            f"{self.server}{resource.collection()}: more than {MAX_PAGES} pages of "
            f"{PAGE_SIZE} {resource.plural}: the API server does not end this LIST"
        )

    def apply_dry_run(self, resource: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Server-side apply of `obj` as field manager `hetgitops`, dryRun=All: what the object
        would become. Needs `patch` on the resource."""
        meta = obj.get("metadata") or {}
        path = f"{resource.collection(str(meta.get('namespace', '')))}/{meta.get('name', '')}"
        query = {"dryRun": "All", "fieldManager": FIELD_MANAGER, "force": "true"}
        headers = {"Content-Type": "application/apply-patch+yaml"}
        body = json.dumps(obj)  # JSON is YAML: the apply-patch content type accepts it
        return self._request("PATCH", path, query=query, headers=headers, body=body, what=path)

    def _request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str],
        what: str,
        headers: Mapping[str, str] | None = None,
        body: str | None = None,
    ) -> dict[str, Any]:
        import urllib3
        from kubernetes.client.exceptions import ApiException

        url = f"{self._host}{path}?{urllib.parse.urlencode(query)}"
        header_params = {"Accept": "application/json", **(headers or {})}
        self._api.update_params_for_auth(header_params, [], ["BearerToken"], path, method, body)
        self.requests += 1
        timeout = self._timeout()
        try:
            with _quiet_insecure_warning(), self._alarm():
                response = self._api.call_api(
                    method, url, header_params=header_params, body=body, _request_timeout=timeout
                )
                data = self._read(response.response)
        except (urllib3.exceptions.HTTPError, ApiException, OSError) as exc:
            self._timeout()  # out of time is said as such, not as a read timeout
            raise ClusterError(
                f"cannot reach the API server {self.server}: {_reason(exc)}"
            ) from None
        return _decode(response.status, data, what, f"{self.server}{path}")

    def _timeout(self) -> tuple[float, float]:
        """(connect, read) seconds for the next request, within the deadline."""
        left = self._deadline.left()
        if left <= 0:
            raise ClusterError(
                f"the API server {self.server} did not answer within --timeout "
                f"{self._deadline.seconds:g}s (every request of the run together)"
            )
        return min(TIMEOUT[0], left), min(TIMEOUT[1], left)

    @contextlib.contextmanager
    def _alarm(self) -> Iterator[None]:
        """A backstop for what no socket timeout bounds, a status line or headers sent a byte
        at a time: SIGALRM a moment after the deadline interrupts the read (main thread
        only; signals go nowhere else)."""
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def expired(signum: int, frame: Any) -> None:
            raise ClusterError(
                f"the API server {self.server} did not answer within --timeout "
                f"{self._deadline.seconds:g}s (every request of the run together)"
            )

        previous = signal.signal(signal.SIGALRM, expired)
        started = time.monotonic()
        delay, interval = signal.setitimer(
            signal.ITIMER_REAL, max(self._deadline.left(), 0) + _GRACE
        )
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            if delay:  # someone else's alarm (a test runner's timeout): give it back
                left = delay - (time.monotonic() - started)
                signal.setitimer(signal.ITIMER_REAL, max(left, 0.001), interval)

    def _read(self, raw: Any) -> bytes:
        """The whole body, read a chunk at a time against the deadline: a server that sends
        a byte now and then never trips a per-read timeout."""
        chunks: list[bytes] = []
        try:
            while chunk := raw.read1(_CHUNK):
                chunks.append(chunk)
                self._timeout()
        finally:
            raw.release_conn()
        return b"".join(chunks)


def _decode(status: int, data: bytes, what: str, url: str) -> dict[str, Any]:
    import orjson  # 3-4x faster than json on a 10,000-object LIST, which dominates the read

    try:
        body = orjson.loads(data) if data else {}
    except orjson.JSONDecodeError:
        body = None
    if 200 <= status < 300:
        if not isinstance(body, dict):
            raise ClusterError(
                f"{url}: HTTP {status} with {_describe(data, body)}, not a Kubernetes object: "
                "is the server URL an API server's (not an auth proxy's login page)?"
            )
        return body
    if not isinstance(body, dict):
        body = {}
    message = str(body.get("message") or f"HTTP {status}")
    if status == 401:
        raise ClusterError(f"the API server rejected the credentials (401 Unauthorized): {message}")
    if status == 403:
        raise Forbidden(what, message)
    if status == 404:
        raise NotServed(message)
    raise RequestFailed(status, message)


def _items(page: Mapping[str, Any], resource: Resource, url: str) -> list[dict[str, Any]]:
    """The items of a LIST answer, or ClusterError when the answer is not a list of the kind
    asked for: `{}` or another kind's object read as an empty list would report every object
    of the policy as missing."""
    kind = page.get("kind")
    items = page.get("items")
    listed = items is None or isinstance(items, list)
    if kind == resource.list_of and listed and all(isinstance(i, dict) for i in items or []):
        return list(items or [])
    got = f"kind {kind!r}" if kind else "an object without a kind"
    raise ClusterError(
        f"{url}: HTTP 200 with {got}, not a {resource.list_of}: is the server URL an API server's?"
    )


def _describe(data: bytes, body: Any) -> str:
    """What a 2xx body that is not a JSON object is, in a few words."""
    if isinstance(body, list):
        return "a JSON array"
    if body is not None:
        return f"a JSON {type(body).__name__}"
    head = data[:512].lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html")) or b"<html" in head:
        return "an HTML page"
    return "an empty body" if not data.strip() else "a body that is not JSON"


def _what(resource: Resource) -> str:
    group = resource.group or "core"
    return f"list {resource.plural} ({group}/{resource.version})"


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]


def _reason(exc: BaseException) -> str:
    """Why a connection failed, without anything a header could leak (only the exception
    type and its first line, which urllib3 builds from the host and the OS error)."""
    reason = getattr(exc, "reason", None)
    return _first_line(reason if isinstance(reason, BaseException) else exc)


def insecure_warning(server: str) -> str:
    """The one line a command prints for a cluster read without TLS verification."""
    return (
        f"hetgitops: warning: the TLS certificate of {server} is not verified "
        "(insecure-skip-tls-verify in the kubeconfig): anyone in between could answer for the "
        "cluster"
    )


@contextlib.contextmanager
def _quiet_insecure_warning() -> Iterator[None]:
    """urllib3 warns on every request to an unverified server (InsecureRequestWarning with a
    source path); the client says it once, plainly (`Cluster.insecure`)."""
    import warnings

    import urllib3

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
        yield


def kubeconfig_name(kubeconfig: Path | None) -> str:
    """The file(s) the kubernetes client reads, as it picks them: --kubeconfig, else
    $KUBECONFIG (a list of files), else ~/.kube/config. A path, never its contents."""
    if kubeconfig is not None:
        return str(kubeconfig)
    from kubernetes.config.kube_config import KUBE_CONFIG_DEFAULT_LOCATION

    return os.path.expanduser(os.environ.get("KUBECONFIG") or KUBE_CONFIG_DEFAULT_LOCATION)


def _load_kubeconfig(
    kubeconfig: Path | None, context: str | None, configuration: Any, deadline: Deadline
) -> None:
    """The kubeconfig into `configuration`. An exec credential plugin runs bounded by
    EXEC_TIMEOUT, and its failure is a ClusterError: the kubernetes client would log a raw
    `ERROR:root:exec: ...` line and go on without credentials (every request then 401/403)."""
    import yaml
    from kubernetes import config
    from kubernetes.config import kube_config

    failures: list[str] = []
    capture = _Capture(failures)
    root = logging.getLogger()
    root.addHandler(capture)
    original = kube_config.ExecProvider  # type: ignore[attr-defined]
    kube_config.ExecProvider = _bounded_exec(original, deadline)  # type: ignore[attr-defined]
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig) if kubeconfig else None,
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
    except config.ConfigException as exc:
        where = kubeconfig_name(kubeconfig)
        raise ClusterError(f"cannot use the kubeconfig {where}: {_first_line(exc)}") from None
    except OSError as exc:
        where = kubeconfig_name(kubeconfig)
        raise ClusterError(f"cannot read the kubeconfig {where}: {exc.strerror}") from None
    except yaml.YAMLError as exc:  # the client parses the file itself, and lets this through
        where = kubeconfig_name(kubeconfig)
        raise ClusterError(
            f"the kubeconfig {where} is not valid YAML: {_first_line(exc)}"
        ) from None
    finally:
        kube_config.ExecProvider = original  # type: ignore[attr-defined]
        root.removeHandler(capture)
    if failures:
        raise ClusterError(f"getting credentials: {failures[0]}")


class _Capture(logging.Handler):
    """The kubernetes client's logged errors while loading the kubeconfig, kept, not printed."""

    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.ERROR)
        self._into = into

    def emit(self, record: logging.LogRecord) -> None:
        self._into.append(_first_line(Exception(record.getMessage())))


def _bounded_exec(base: Any, deadline: Deadline) -> Any:
    """kubernetes' ExecProvider with the plugin bounded in time (the base class waits forever
    on a plugin that waits). In a pipeline (no terminal) it gets EXEC_TIMEOUT, stdin closed and
    its stderr kept for the message; at a terminal it talks to the person (a browser or device
    login prints where to go on stderr) for what is left of the deadline."""
    import sys

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
            command = " ".join(self.args)
            try:
                done = _run_plugin(self.args, self.cwd, self.env, interactive, timeout)
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
                said = _first_line(Exception(text)) if text else ""
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


def _run_plugin(
    args: list[str], cwd: str | None, env: dict[str, str], interactive: bool, timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run a credential plugin; on timeout stop it and, in a pipeline, everything it started
    (its own process group: a shell script's `sleep` would outlive a killed shell). At a
    terminal it stays in the foreground group, where it may read the terminal."""
    import os
    import signal

    process = subprocess.Popen(
        args,
        stdin=None if interactive else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=None if interactive else subprocess.PIPE,
        cwd=cwd,
        env=env,
        text=True,
        process_group=None if interactive else 0,
    )
    try:
        out, err = process.communicate(timeout=timeout)
    except BaseException:  # the timeout, or the run's deadline alarm: leave nothing running
        with contextlib.suppress(OSError):
            if interactive:
                process.kill()
            else:
                os.killpg(process.pid, signal.SIGKILL)
        process.wait()  # not communicate(): a grandchild may hold the pipes open
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
        raise
    return subprocess.CompletedProcess(args, process.returncode, out, err)
