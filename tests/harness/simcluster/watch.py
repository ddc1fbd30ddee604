"""Measuring a busy fleet by watch: every Workload and Pod transition from one fixed
resourceVersion, not two snapshots (issue 38, item 6).

Two readings (a baseline and a settled one) miss whatever happens and undoes itself between
them: a workload evicted and re-admitted, a pod deleted whose replacement has the same owner.
A `Recorder` LISTs each kind once, notes the list's resourceVersion, and watches from exactly
there (`?watch=1&resourceVersion=RV`: the API server replays every change after it), so no
event between the LIST and the watch is lost. It keeps, per object, whether it ever left the
state the baseline had it in:

- a Workload admitted at the start that any later event shows not admitted (evicted,
  deactivated, preempted, requeued) or deleted;
- a Pod present at the start that is deleted (or marked for deletion), or Failed.

It also counts state changes of every Workload and Pod (`changes()`: a Workload's admission,
a Pod's node, phase and deletion, an object made or deleted), so a reading can wait until
nothing changed between two of them (busy.settled).

`kubectl get --raw` streams the watch (one JSON event per line); the 410 Gone of a compacted
resourceVersion arrives as an ERROR event and is kept as an error, never retried past.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import cluster

Obj = Mapping[str, Any]

PODS = "/api/v1/pods"


def workloads_path(api_version: str = "kueue.x-k8s.io/v1beta2") -> str:
    return f"/apis/{api_version}/workloads"


def key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _condition(obj: Obj, kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def admitted(workload: Obj) -> bool:
    """Holding quota and active (Kueue v0.19.2 HasActiveQuotaReservation)."""
    active = (workload.get("spec") or {}).get("active", True) is not False
    return active and _condition(workload, "QuotaReserved") and not _condition(workload, "Finished")


def pod_failed(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Failed"


@dataclass
class _Stream:
    """One kind's LIST and the watch that continues it."""

    path: str
    leaves: Callable[[Obj, str], bool]  # (object, event type) -> it left its baseline state
    state: Callable[[Obj, str], tuple[Any, ...]]  # what a change of counts (changes())
    start: dict[str, Obj] = field(default_factory=dict)
    left: dict[str, str] = field(default_factory=dict)  # key -> first event that left
    events: int = 0
    error: str = ""
    resource_version: str = ""
    states: dict[str, tuple[Any, ...]] = field(default_factory=dict)  # key -> last state seen
    changes: int = 0


class Recorder:
    """Watches Workloads and Pods of `sim` from the resourceVersion of one LIST each; `stop()`
    ends the watches. `evicted()` and `deleted()` are what left the baseline state at any
    moment, even if it came back."""

    def __init__(self, sim: cluster.SimCluster, *, workloads: str = workloads_path()) -> None:
        self.sim = sim
        self.workloads = _Stream(workloads, self._workload_left, self._workload_state)
        self.pods = _Stream(PODS, self._pod_left, self._pod_state)
        self._procs: list[subprocess.Popen[str]] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    @staticmethod
    def _workload_left(workload: Obj, event: str) -> bool:
        return event == "DELETED" or not admitted(workload)

    @staticmethod
    def _pod_left(pod: Obj, event: str) -> bool:
        deleting = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
        return event == "DELETED" or deleting or pod_failed(pod)

    @staticmethod
    def _workload_state(workload: Obj, event: str) -> tuple[Any, ...]:
        return (event == "DELETED", admitted(workload))

    @staticmethod
    def _pod_state(pod: Obj, event: str) -> tuple[Any, ...]:
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        deleting = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
        return (event == "DELETED", spec.get("nodeName"), status.get("phase"), deleting)

    def start(self) -> Recorder:
        for stream in (self.workloads, self.pods):
            listed = json.loads(self.sim.kubectl("get", "--raw", stream.path).stdout)
            stream.resource_version = str(listed["metadata"]["resourceVersion"])
            items = listed.get("items") or []
            stream.states = {key(o): stream.state(o, "LISTED") for o in items}
            if stream is self.workloads:
                items = [w for w in items if admitted(w)]
            else:
                items = [p for p in items if not pod_failed(p)]
            stream.start = {key(o): o for o in items}
            self._watch(stream)
        return self

    def _watch(self, stream: _Stream) -> None:
        plane = self.sim.plane
        env = dict(os.environ, KUBECONFIG=str(plane.admin_kubeconfig))
        env["KUBECACHEDIR"] = str(plane.run_dir / "kube-cache")
        url = f"{stream.path}?watch=1&allowWatchBookmarks=false&resourceVersion="
        proc = subprocess.Popen(
            [str(plane.kubectl_path), "get", "--raw", url + stream.resource_version],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        self._procs.append(proc)
        thread = threading.Thread(target=self._read, args=(stream, proc), daemon=True)
        thread.start()
        self._threads.append(thread)

    def _read(self, stream: _Stream, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if not line.strip():
                continue
            event = json.loads(line)
            kind, obj = str(event.get("type", "")), event.get("object") or {}
            with self._lock:
                stream.events += 1
                if kind == "ERROR":
                    stream.error = str(obj.get("message", obj))
                    continue
                name = key(obj)
                state = stream.state(obj, kind)
                if stream.states.get(name) != state:
                    stream.states[name] = state
                    stream.changes += 1
                if name in stream.start and name not in stream.left and stream.leaves(obj, kind):
                    stream.left[name] = kind

    def wait_for(self, what: Callable[[Recorder], bool], *, timeout: float, saying: str) -> None:
        """Until `what(self)` holds; on timeout, raise with what the watches saw."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if what(self):
                    return
            time.sleep(0.5)
        raise cluster.SimError(f"{saying} not seen within {timeout:.0f}s: {self.seen()}")

    def changes(self) -> int:
        """Workload and Pod state changes seen so far (what busy.settled waits to stop)."""
        with self._lock:
            return self.workloads.changes + self.pods.changes

    def evicted(self) -> list[str]:
        return sorted(self.workloads.left)

    def deleted(self) -> list[str]:
        return sorted(self.pods.left)

    def seen(self) -> dict[str, Any]:
        return {
            "workload-events": self.workloads.events,
            "pod-events": self.pods.events,
            "evicted": self.evicted(),
            "deleted": self.deleted(),
            "errors": [s.error for s in (self.workloads, self.pods) if s.error],
        }

    def stop(self) -> None:
        for proc in self._procs:
            proc.terminate()
        for proc in self._procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for thread in self._threads:
            thread.join(timeout=10)
        for proc in self._procs:
            if proc.stdout is not None:
                proc.stdout.close()
