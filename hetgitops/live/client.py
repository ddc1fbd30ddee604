"""Live stage: the cluster client (the only importer of `kubernetes`): paginated LISTs, one
server-side apply dry-run, and errors turned into three plain exception types."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# One page per kind for any realistic fleet: the request budget of `drift` is "kinds in use
# plus a few", and the API server streams a 5,000-item page without trouble. Bigger kinds are
# still read completely, page by page (`continue` tokens).
PAGE_SIZE = 5000
TIMEOUT = (10, 120)  # connect, read (seconds)
FIELD_MANAGER = "hetgitops"


class ClusterError(Exception):
    """The cluster cannot answer at all: unreachable, bad credentials (exit 4)."""


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

    def __init__(self, kubeconfig: Path | None = None, context: str | None = None) -> None:
        from kubernetes import config
        from kubernetes.client import Configuration

        configuration = Configuration()
        try:
            config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=str(kubeconfig) if kubeconfig else None,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
        except config.ConfigException as exc:
            raise ClusterError(f"cannot use the kubeconfig: {_first_line(exc)}") from None
        except OSError as exc:
            raise ClusterError(f"cannot read the kubeconfig: {exc.strerror}") from None
        configuration.retries = 1
        from kubernetes.client import ApiClient

        self._api = ApiClient(configuration)
        self.server = str(configuration.host)
        self.requests = 0

    def close(self) -> None:
        self._api.close()  # type: ignore[no-untyped-call]

    def list(self, resource: Resource, *, selector: str = "") -> list[dict[str, Any]]:
        """Every object of `resource` in every namespace, following `continue` tokens."""
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            query = {"limit": str(PAGE_SIZE)}
            if selector:
                query["labelSelector"] = selector
            if token:
                query["continue"] = token
            page = self._request("GET", resource.collection(), query=query, what=_what(resource))
            for item in page.get("items") or []:
                # Built-in kinds' LIST items carry no apiVersion/kind; custom resources do.
                item.setdefault("apiVersion", resource.api_version)
                item.setdefault("kind", resource.kind)
                items.append(item)
            token = str((page.get("metadata") or {}).get("continue") or "")
            if not token:
                return items

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

        url = f"{self.server}{path}?{urllib.parse.urlencode(query)}"
        header_params = {"Accept": "application/json", **(headers or {})}
        self._api.update_params_for_auth(header_params, [], ["BearerToken"], path, method, body)
        self.requests += 1
        try:
            response = self._api.call_api(
                method, url, header_params=header_params, body=body, _request_timeout=TIMEOUT
            )
            data = response.read()  # type: ignore[no-untyped-call]
        except (urllib3.exceptions.HTTPError, ApiException, OSError) as exc:
            raise ClusterError(
                f"cannot reach the API server {self.server}: {_reason(exc)}"
            ) from None
        return _decode(response.status, data, what)


def _decode(status: int, data: bytes, what: str) -> dict[str, Any]:
    import orjson  # 3-4x faster than json on a 10,000-object LIST, which dominates the read

    try:
        body = orjson.loads(data) if data else {}
    except orjson.JSONDecodeError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    if 200 <= status < 300:
        return body
    message = str(body.get("message") or f"HTTP {status}")
    if status == 401:
        raise ClusterError(f"the API server rejected the credentials (401 Unauthorized): {message}")
    if status == 403:
        raise Forbidden(what, message)
    if status == 404:
        raise NotServed(message)
    raise RequestFailed(status, message)


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
