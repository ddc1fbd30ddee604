"""Live stage: the cluster client (with live.kubeconfig, the only importer of `kubernetes`):
paginated LISTs, one server-side apply dry-run, each request bounded by the run's deadline and
by size; answers are read by live.answers, failures are the types of live.errors."""

from __future__ import annotations

import contextlib
import json
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hetgitops.live.answers import (
    MAX_RETRIES,
    RETRIED,
    RETRY_AFTER_CAP,
    decode,
    list_items,
    mapping,
    retry_after_seconds,
)
from hetgitops.live.errors import (
    ClusterError,
    Deadline,
    Forbidden,
    NotServed,
    RequestFailed,
    connection_reason,
    redacted,
)
from hetgitops.live.kubeconfig import (
    credentials_of,
    insecure_warning,
    kubeconfig_name,
    load_kubeconfig,
    quiet_insecure_warning,
)
from hetgitops.live.said import shown

# The names callers import from here: the client's failures, and the kubeconfig's wording.
__all__ = [
    "DEADLINE",
    "Cluster",
    "ClusterError",
    "Deadline",
    "Forbidden",
    "NotServed",
    "RequestFailed",
    "Resource",
    "insecure_warning",
    "kubeconfig_name",
]

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
_CHUNK = 1 << 16
_GRACE = 1.0  # seconds past the deadline before the alarm interrupts a read


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
        load_kubeconfig(kubeconfig, context, configuration, self._deadline)
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
        self._secrets = credentials_of(configuration)

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
            for item in list_items(page, resource, url, start=len(items), secrets=self._secrets):
                # Built-in kinds' LIST items carry no apiVersion/kind; custom resources do.
                item.setdefault("apiVersion", resource.api_version)
                item.setdefault("kind", resource.kind)
                items.append(item)
            if len(items) > MAX_ITEMS:
                raise ClusterError(
                    f"{url}: more than {MAX_ITEMS:,} {resource.plural} in one LIST (the limit of "
                    "one kind, above Kubernetes' scalability envelope): stopped reading"
                )
            token = str(mapping(page.get("metadata")).get("continue") or "")
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
                return decode(status, data, what, url, secrets=self._secrets, tries=tries)
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
            with quiet_insecure_warning(), self._alarm():
                response = self._api.call_api(
                    method, url, header_params=header_params, body=body, _request_timeout=timeout
                )
                data = self._read(response.response, f"{self.server}{path}")
        except (urllib3.exceptions.HTTPError, ApiException, OSError) as exc:
            self._timeout()  # out of time is said as such, not as a read timeout
            why = shown(connection_reason(exc), self._secrets)
            raise ClusterError(f"cannot reach the API server {self.server}: {why}") from None
        return response.status, str(response.response.headers.get("Retry-After") or ""), data

    def _wait(self, status: int, retry_after: str, tries: int) -> float | None:
        """Seconds to wait before trying again, or None to take this answer as it is."""
        if status not in RETRIED or tries > MAX_RETRIES:
            return None
        wait = min(retry_after_seconds(retry_after), RETRY_AFTER_CAP)
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


def _what(resource: Resource) -> str:
    group = resource.group or "core"
    return f"list {resource.plural} ({group}/{resource.version})"
