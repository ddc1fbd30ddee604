"""`kubectl get ... -o json` answered by the API server directly, without starting kubectl.

The sim and e2e harnesses read the cluster through `ControlPlane.kubectl("get", ..., "-o",
"json")`, often in polling loops (a sampler every 3 s, a settle check every 5 s, a verdict poll
every 0.5 s). Each kubectl process costs about 0.2 s of CPU on a busy fleet (400 pods: start-up,
the discovery cache, decoding and re-encoding the list) where the same GET over HTTPS costs
0.02 s; on a 2-core CI machine running three simulated clusters beside the unit tests, that
CPU is what the sim slice's wall time waits on (issue 31).

Only the plain list and single-object reads are answered here, with kubectl's own output shape
(`-o json`): a list is `{"apiVersion": "v1", "kind": "List", "items": [...]}` whose items carry
their `apiVersion` and `kind` (kubectl adds them; a raw list's items lack them), a name gives
the object itself, and a missing object exits 1 with kubectl's `Error from server (NotFound):`
line. Resource names resolve the way kubectl's RESTMapper does for unambiguous names (plural,
singular, short name or kind, bare or `.group`-qualified, at the group's preferred version);
anything else (another verb, any other flag, an ambiguous or unknown name, a non-admin
kubeconfig, a server error other than 404) returns None and the caller runs the real kubectl.
tests/e2e/test_e2e_reads.py holds both answers side by side on the real API server.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TIMEOUT = 60.0
# A name discovery does not know is looked up again at most this often; in between, kubectl
# answers it (a CRD a test is still installing, or a name this module cannot resolve).
REDISCOVER_AFTER = 10.0


@dataclass(frozen=True)
class Read:
    """One `kubectl get` this module answers."""

    names: tuple[str, ...]  # resource names as given (`pods`, `workloads.kueue.x-k8s.io`, ...)
    objects: tuple[str, ...]  # object names (at most one)
    namespace: str | None  # None: every namespace (-A)
    selector: str
    field_selector: str
    managed_fields: bool = False  # --show-managed-fields: kubectl drops them otherwise


_VALUED = {
    "-n": "namespace",
    "--namespace": "namespace",
    "-l": "selector",
    "--selector": "selector",
    "--field-selector": "field_selector",
    "-o": "output",
    "--output": "output",
}


def parse(args: tuple[str, ...]) -> Read | None:
    """The read `args` ask for, or None when they ask anything else."""
    if not args or args[0] != "get":
        return None
    values: dict[str, str] = {}
    every = False
    positional: list[str] = []
    rest = list(args[1:])
    while rest:
        arg = rest.pop(0)
        flag, equals, inline = arg.partition("=")
        if arg in ("-A", "--all-namespaces"):
            every = True
        elif arg == "--show-managed-fields":
            values["managed_fields"] = "true"
        elif flag in _VALUED and flag.startswith("--") and equals:
            values[_VALUED[flag]] = inline
        elif arg in _VALUED and rest:
            values[_VALUED[arg]] = rest.pop(0)
        elif arg == "-ojson":
            values["output"] = "json"
        elif arg.startswith("-"):
            return None
        else:
            positional.append(arg)
    if values.pop("output", "") != "json" or not positional or len(positional) > 2:
        return None
    names = tuple(positional[0].split(","))
    objects = tuple(positional[1:])
    if not all(names) or (objects and (len(names) > 1 or every or "selector" in values)):
        return None
    namespace = None if every else values.get("namespace", "default")
    return Read(
        names,
        objects,
        namespace,
        values.get("selector", ""),
        values.get("field_selector", ""),
        managed_fields="managed_fields" in values,
    )


@dataclass(frozen=True)
class Resource:
    group_version: str  # `v1` or `group/version`
    plural: str
    kind: str
    namespaced: bool

    def path(self, namespace: str | None, name: str = "") -> str:
        base = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        where = (
            f"/namespaces/{urllib.parse.quote(namespace)}" if namespace and self.namespaced else ""
        )
        tail = f"/{urllib.parse.quote(name)}" if name else ""
        return f"{base}{where}/{self.plural}{tail}"


class Client:
    """HTTPS to one API server with the admin client certificate, and its resource names."""

    def __init__(self, server: str, pki: Path) -> None:
        context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        context.load_cert_chain(pki / "admin.crt", pki / "admin.key")
        # An empty ProxyHandler: a proxy from the environment must never see loopback traffic.
        self._opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
        )
        self._server = server
        self._names: dict[str, Resource | None] = {}  # None: ambiguous
        self._discovered = -REDISCOVER_AFTER  # time.monotonic() of the last discovery
        self._lock = threading.Lock()

    def get(self, path: str, query: dict[str, str] | None = None) -> tuple[int, Any]:
        url = self._server + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        try:
            with self._opener.open(url, timeout=TIMEOUT) as response:
                return int(response.status), json.loads(response.read())
        except urllib.error.HTTPError as error:
            body = error.read()
            try:
                return int(error.code), json.loads(body)
            except ValueError:
                return int(error.code), {}

    def resource(self, name: str) -> Resource | None:
        """The resource kubectl would read for `name`; None if unknown or ambiguous here. An
        unknown name re-reads discovery (a CRD installed since the last reading), at most
        once per REDISCOVER_AFTER seconds."""
        with self._lock:
            stale = time.monotonic() - self._discovered >= REDISCOVER_AFTER
            if name not in self._names and stale:
                self._discover()
                self._discovered = time.monotonic()
            return self._names.get(name)

    def _discover(self) -> None:
        found: dict[str, list[Resource]] = {}
        versions = [("", "v1")]
        _, groups = self.get("/apis")
        for group in groups.get("groups") or []:
            preferred = (group.get("preferredVersion") or {}).get("groupVersion")
            if preferred:
                versions.append((str(group["name"]), str(preferred)))
        for group, version in versions:
            status, listed = self.get("/api/v1" if version == "v1" else f"/apis/{version}")
            if status != 200:
                continue
            for item in listed.get("resources") or []:
                plural = str(item["name"])
                if "/" in plural or "get" not in (item.get("verbs") or []):
                    continue
                resource = Resource(version, plural, str(item["kind"]), bool(item["namespaced"]))
                short = [str(s) for s in item.get("shortNames") or []]
                bare = {plural, str(item.get("singularName") or ""), item["kind"].lower(), *short}
                for key in bare - {""}:
                    found.setdefault(key, []).append(resource)
                    if group:
                        found.setdefault(f"{key}.{group}", []).append(resource)
        self._names = {key: (hits[0] if len(hits) == 1 else None) for key, hits in found.items()}


_CLIENTS: dict[tuple[str, Path], Client] = {}
_CLIENTS_LOCK = threading.Lock()


def client(server: str, run_dir: Path) -> Client:
    with _CLIENTS_LOCK:
        key = (server, run_dir)
        if key not in _CLIENTS:
            _CLIENTS[key] = Client(server, run_dir / "pki")
        return _CLIENTS[key]


def answer(
    server: str, run_dir: Path, args: tuple[str, ...]
) -> subprocess.CompletedProcess[str] | None:
    """kubectl's answer to `args`, read directly; None when kubectl itself must answer."""
    read = parse(args)
    if read is None or not (run_dir / "pki" / "admin.key").is_file():
        return None
    api = client(server, run_dir)
    resources = [api.resource(name) for name in read.names]
    if any(r is None for r in resources):
        return None
    if read.objects:
        return _one(api, resources[0], read, args)  # type: ignore[arg-type]
    query = {
        k: v
        for k, v in (("labelSelector", read.selector), ("fieldSelector", read.field_selector))
        if v
    }
    items: list[Any] = []
    for resource in resources:
        assert resource is not None
        status, listed = api.get(resource.path(read.namespace), query)
        if status != 200:
            return None
        for item in listed.get("items") or []:
            item = {"apiVersion": resource.group_version, "kind": resource.kind, **item}
            items.append(item if read.managed_fields else _without_managed_fields(item))
    body = {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
    return subprocess.CompletedProcess(["kubectl", *args], 0, json.dumps(body, indent=4) + "\n", "")


def _one(
    api: Client, resource: Resource, read: Read, args: tuple[str, ...]
) -> subprocess.CompletedProcess[str] | None:
    status, obj = api.get(resource.path(read.namespace, read.objects[0]))
    # The object is missing (not the resource: a CRD deleted since discovery names no object).
    missing = (obj.get("details") or {}).get("name") == read.objects[0]
    if status == 404 and obj.get("reason") == "NotFound" and missing:
        line = f"Error from server (NotFound): {obj.get('message', '')}\n"
        return subprocess.CompletedProcess(["kubectl", *args], 1, "", line)
    if status != 200:
        return None
    shown = obj if read.managed_fields else _without_managed_fields(obj)
    return subprocess.CompletedProcess(
        ["kubectl", *args], 0, json.dumps(shown, indent=4) + "\n", ""
    )


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """What kubectl prints: `metadata.managedFields` left out unless --show-managed-fields
    (kubectl's printers strip them by default since v1.21)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
