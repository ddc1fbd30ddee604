"""Live stage: the cluster client (the only importer of `kubernetes`): paginated LISTs, one
server-side apply dry-run, and errors turned into three plain exception types."""

from __future__ import annotations

import contextlib
import email.utils
import json
import logging
import os
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any

from hetgitops.live import shape
from hetgitops.live.plugin import bounded_exec
from hetgitops.live.said import Secrets, shown

# One page per kind for any realistic fleet: the request budget of `drift` is "kinds in use
# plus a few", and the API server streams a 5,000-item page without trouble. Bigger kinds are
# still read completely, page by page (`continue` tokens).
PAGE_SIZE = 5000
TIMEOUT = (10, 120)  # connect, read (seconds)
FIELD_MANAGER = "hetgitops"
# A LIST of more pages than this is a server that never stops (5,000 x 1,000 = five million
# objects of one kind); a `continue` token seen twice would never stop either.
MAX_PAGES = 1000
# And more objects than this in one LIST (pages of any size): Kubernetes' own scalability
# envelope is 150,000 pods in a cluster; past this a server is not ending the LIST, and memory
# would run out before it did.
MAX_ITEMS = 250_000
# One answer's body: a page of 5,000 objects with managedFields is a few tens of MiB.
MAX_BODY = 256 << 20
# The whole read of one cluster, every request and credential plugin together (`drift
# --timeout`): a server that dribbles a byte at a time resets every per-read timeout.
DEADLINE = 300.0
# A 429 (API Priority and Fairness) or 503 is retried this many times, each wait its
# Retry-After capped at RETRY_AFTER_CAP seconds and never past the deadline: a server that asks
# for `Retry-After: 999999` is told no, not waited on until the run's time is gone.
MAX_RETRIES = 3
RETRY_AFTER_CAP = 10.0
_RETRIED = (HTTPStatus.TOO_MANY_REQUESTS, HTTPStatus.SERVICE_UNAVAILABLE)
_CHUNK = 1 << 16
_GRACE = 1.0  # seconds past the deadline before the alarm interrupts a read


class ClusterError(Exception):
    """The cluster cannot answer at all: unreachable, bad credentials, an answer that is not
    Kubernetes', out of time (exit 4)."""


@dataclass(frozen=True)
class Deadline:
    """The moment (time.monotonic) a whole run must be done by, the budget it came from and
    the option that set it (`--timeout` of drift), if any: a message names only what the
    command has."""

    at: float
    seconds: float
    option: str = ""

    @classmethod
    def start(cls, seconds: float, *, option: str = "") -> Deadline:
        return cls(time.monotonic() + seconds, seconds, option)

    def left(self) -> float:
        return self.at - time.monotonic()

    def expired(self, server: str) -> ClusterError:
        limit = f"{self.option} {self.seconds:g}s" if self.option else f"{self.seconds:g}s"
        return ClusterError(
            f"the API server {server} did not answer within {limit} "
            "(every request of the run together)"
        )


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


class RequestFailed(ClusterError):
    """Any other refusal of one request (400, 409, 422, ...), with the server's message: a
    finding where the caller expects it (an apply the server would refuse), else a ClusterError
    like any answer the read cannot go on from (exit 4)."""

    def __init__(self, status: int, message: str, url: str = "") -> None:
        where = f"{url}: " if url else ""
        super().__init__(
            f"{where}the API server refused the request (HTTP {status} {_phrase(status)}): "
            f"{message}"
        )
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
        import urllib3
        from kubernetes.client import Configuration

        self._deadline = deadline or Deadline.start(DEADLINE)
        configuration = Configuration()
        _load_kubeconfig(kubeconfig, context, configuration, self._deadline)
        # One retry of a failed connection; never urllib3's own wait for a Retry-After, which
        # has no cap (a 429 is retried here, see MAX_RETRIES).
        configuration.retries = urllib3.Retry(
            total=1, respect_retry_after_header=False, raise_on_status=False
        )
        from kubernetes.client import ApiClient

        self._api = ApiClient(configuration)
        self._host = str(configuration.host)
        self.server = redacted(self._host)  # for messages: never a password
        self.insecure = not configuration.verify_ssl
        self.requests = 0
        self._secrets = _secrets(configuration)

    def close(self) -> None:
        self._api.close()  # type: ignore[no-untyped-call]

    def list(self, resource: Resource, *, selector: str = "") -> list[dict[str, Any]]:
        """Every object of `resource` in every namespace, following `continue` tokens; each
        checked for the shape readers rely on (live.shape)."""
        items: list[dict[str, Any]] = []
        token = ""
        seen: set[str] = set()
        url = f"{self.server}{resource.collection()}"
        for _ in range(MAX_PAGES):
            query = {"limit": str(PAGE_SIZE)}
            if selector:
                query["labelSelector"] = selector
            if token:
                query["continue"] = token
            page = self._request("GET", resource.collection(), query=query, what=_what(resource))
            for item in _items(page, resource, url, start=len(items), secrets=self._secrets):
                # Built-in kinds' LIST items carry no apiVersion/kind; custom resources do.
                item.setdefault("apiVersion", resource.api_version)
                item.setdefault("kind", resource.kind)
                items.append(item)
            if len(items) > MAX_ITEMS:
                raise ClusterError(
                    f"{url}: more than {MAX_ITEMS:,} {resource.plural} in one LIST (the limit of "
                    "one kind, above Kubernetes' scalability envelope): stopped reading"
                )
            token = str(_mapping(page.get("metadata")).get("continue") or "")
            if not token:
                return items
            if token in seen:
                raise ClusterError(
                    f"{url}: the API server sent the same continue token twice "
                    f"(after {len(seen) + 1} pages): this LIST would never end"
                )
            seen.add(token)
        raise ClusterError(
            f"{url}: more than {MAX_PAGES} pages of "
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
        """One request, a 429/503 retried (MAX_RETRIES, Retry-After capped), its answer
        decoded or turned into ClusterError, Forbidden, NotServed or RequestFailed."""
        url = f"{self.server}{path}"
        for tries in range(1, MAX_RETRIES + 2):
            status, retry_after, data = self._send(method, path, query, headers, body)
            wait = self._wait(status, retry_after, tries)
            if wait is None:
                return _decode(status, data, what, url, secrets=self._secrets, tries=tries)
            time.sleep(wait)
        raise AssertionError("unreachable: the last try never waits")

    def _send(
        self,
        method: str,
        path: str,
        query: Mapping[str, str],
        headers: Mapping[str, str] | None,
        body: str | None,
    ) -> tuple[int, str, bytes]:
        """(status, Retry-After, body) of one HTTP request."""
        import urllib3
        from kubernetes.client.exceptions import ApiException

        url = f"{self._host}{path}?{urllib.parse.urlencode(query)}"
        header_params = {"Accept": "application/json", **(headers or {})}
        self._api.update_params_for_auth(header_params, [], ["BearerToken"], path, method, body)
        self._secrets.add(*(v for k, v in header_params.items() if k.lower() == "authorization"))
        self.requests += 1
        timeout = self._timeout()
        try:
            with _quiet_insecure_warning(), self._alarm():
                response = self._api.call_api(
                    method, url, header_params=header_params, body=body, _request_timeout=timeout
                )
                data = self._read(response.response, f"{self.server}{path}")
        except (urllib3.exceptions.HTTPError, ApiException, OSError) as exc:
            self._timeout()  # out of time is said as such, not as a read timeout
            raise ClusterError(
                f"cannot reach the API server {self.server}: {shown(_reason(exc), self._secrets)}"
            ) from None
        return response.status, str(response.response.headers.get("Retry-After") or ""), data

    def _wait(self, status: int, retry_after: str, tries: int) -> float | None:
        """Seconds to wait before trying again, or None to take this answer as it is."""
        if status not in _RETRIED or tries > MAX_RETRIES:
            return None
        wait = min(_retry_after(retry_after), RETRY_AFTER_CAP)
        return wait if wait < self._deadline.left() else None

    def _timeout(self) -> tuple[float, float]:
        """(connect, read) seconds for the next request, within the deadline."""
        left = self._deadline.left()
        if left <= 0:
            raise self._deadline.expired(self.server)
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
            raise self._deadline.expired(self.server)

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

    def _read(self, raw: Any, url: str) -> bytes:
        """The whole body, read a chunk at a time against the deadline (a server that sends a
        byte now and then never trips a per-read timeout) and against MAX_BODY."""
        chunks: list[bytes] = []
        size = 0
        try:
            length = str(raw.headers.get("Content-Length") or "")
            if length.isdigit() and int(length) > MAX_BODY:
                raise _too_big(url, f"announces {int(length):,} bytes")
            while chunk := raw.read1(_CHUNK):
                size += len(chunk)
                if size > MAX_BODY:
                    raise _too_big(url, "is larger")
                chunks.append(chunk)
                self._timeout()
        finally:
            raw.release_conn()
        return b"".join(chunks)


def _too_big(url: str, what: str) -> ClusterError:
    return ClusterError(
        f"{url}: the answer {what} than {MAX_BODY >> 20} MiB, the limit of one response: "
        "stopped reading (is the server URL an API server's?)"
    )


def _retry_after(value: str) -> float:
    """Retry-After in seconds (a number or an HTTP date); 1 when absent or unreadable."""
    value = value.strip()
    if value.isdigit():
        return float(value)
    with contextlib.suppress(TypeError, ValueError):
        when = email.utils.parsedate_to_datetime(value)
        return max(when.timestamp() - time.time(), 0.0)
    return 1.0


def _decode(
    status: int, data: bytes, what: str, url: str, *, secrets: Secrets, tries: int = 1
) -> dict[str, Any]:
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
    said = _mapping(body).get("message") or f"HTTP {status} {_phrase(status)}"
    raise _refusal(status, shown(said, secrets), what, url, tries)


def _refusal(status: int, message: str, what: str, url: str, tries: int) -> Exception:
    """The exception for a non-2xx answer: one exit code and wording for every command."""
    if status == HTTPStatus.UNAUTHORIZED:
        return ClusterError(
            f"the API server rejected the credentials (401 Unauthorized): {message}"
        )
    if status == HTTPStatus.FORBIDDEN:
        return Forbidden(what, message)
    if status == HTTPStatus.NOT_FOUND:
        return NotServed(message)
    answered = f"{url}: HTTP {status} {_phrase(status)}"
    if status in _RETRIED:
        again = f"asked {tries} times" if tries > 1 else "asked once (no time left to wait)"
        why = "is throttling requests" if status == 429 else "is unavailable"
        return ClusterError(
            f"{answered}: the API server {why} ({message}); {again}, waiting its Retry-After "
            f"(at most {RETRY_AFTER_CAP:g}s each) in between: try again later"
        )
    if status >= 500:
        return ClusterError(f"{answered}: the API server failed ({message}), not hetgitops")
    if 400 <= status < 500:
        return RequestFailed(status, message, url)
    return ClusterError(f"{answered}: not an answer a Kubernetes API server gives ({message})")


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _secrets(configuration: Any) -> Secrets:
    """The kubeconfig's credentials as loaded: token, basic-auth password, client key (a
    plugin's token joins when a request carries it, see Cluster._send)."""
    secrets = Secrets()
    secrets.add(*(configuration.api_key or {}).values(), configuration.password)
    with contextlib.suppress(Exception):  # only present with a username and password
        secrets.add(configuration.get_basic_auth_token())
    secrets.add_key_file(configuration.key_file)
    return secrets


def _items(
    page: Mapping[str, Any], resource: Resource, url: str, *, start: int, secrets: Secrets
) -> list[dict[str, Any]]:
    """The items of a LIST answer, or ClusterError when the answer is not a list of the
    kind asked for (`{}` or another kind's object read as an empty list would report every
    object of the policy as missing) or an item is not in the shape of one."""
    kind = page.get("kind")
    items = page.get("items")
    if kind != resource.list_of or not (items is None or isinstance(items, list)):
        got = f"kind {shown(kind, secrets)!r}" if kind else "an object without a kind"
        raise ClusterError(
            f"{url}: HTTP 200 with {got}, not a {resource.list_of}: is the server URL an "
            "API server's?"
        )
    for index, item in enumerate(items or []):
        found = shape.problem(
            item, namespaced=resource.namespaced, group=resource.group, plural=resource.plural
        )
        if found is not None:
            name = shape.name_of(item)
            named = f" ({shown(name, secrets)!r})" if name else ""
            raise ClusterError(
                f"{url}: item {start + index + 1}{named} of the {resource.list_of}: "
                f"{shown(found, secrets)}: not an object hetgitops can read"
            )
    return list(items or [])


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
    kube_config.ExecProvider = bounded_exec(original, deadline)  # type: ignore[attr-defined]
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
