"""A structure-aware fuzzer of live answers (issue 33): realistic LIST answers of every kind the
live commands read (the bundled policy's render, its nodes, a few Workloads, Pods and a
PodGroup), one field of one object mutated at a time, fed to drift, import, explain, explain
workload and diff --kubeconfig through the real client (`Cluster.list`: decode, shape check)
with only its HTTP layer (`Cluster._send`) stubbed.

The oracle, per mutant and command: no exception the CLI would call internal (exit 3), no
hang (MUTANT_SECONDS), and no silent wrong answer: the answer equals the unmutated one, or the
command stops with a cluster error naming the object (or its item number), or the lines that
changed name the object. `python -m tests.live.fuzz [COUNT] [SEED]` runs a sweep and prints the
counts; tests/live/test_fuzz_live.py runs a seeded slice on every run and the full sweep (slow).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import json
import random
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hetgitops import api
from hetgitops.diff.blast import LiveUnavailable  # diff --kubeconfig's exit 4
from hetgitops.live import client
from hetgitops.live.said import Secrets

REPO = Path(__file__).resolve().parents[2]
POLICIES = REPO / "policies"
NOW = dt.date(2026, 12, 1)
MUTANT_SECONDS = 10.0  # one command on one mutant; the real ones take milliseconds
KUEUE = "kueue.x-k8s.io"
Obj = dict[str, Any]

# plural -> (group, version, kind): where the fake serves each kind.
KINDS: dict[str, tuple[str, str, str]] = {
    "nodes": ("", "v1", "Node"),
    "pods": ("", "v1", "Pod"),
    "events": ("", "v1", "Event"),
    "namespaces": ("", "v1", "Namespace"),
    "configmaps": ("", "v1", "ConfigMap"),
    "resourcequotas": ("", "v1", "ResourceQuota"),
    "priorityclasses": ("scheduling.k8s.io", "v1", "PriorityClass"),
    "customresourcedefinitions": ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
    "clusterqueues": (KUEUE, "v1beta2", "ClusterQueue"),
    "localqueues": (KUEUE, "v1beta2", "LocalQueue"),
    "cohorts": (KUEUE, "v1beta2", "Cohort"),
    "resourceflavors": (KUEUE, "v1beta2", "ResourceFlavor"),
    "workloadpriorityclasses": (KUEUE, "v1beta2", "WorkloadPriorityClass"),
    "topologies": (KUEUE, "v1beta2", "Topology"),
    "workloads": (KUEUE, "v1beta2", "Workload"),
    "queues": ("scheduling.volcano.sh", "v1beta1", "Queue"),
    "podgroups": ("scheduling.volcano.sh", "v1beta1", "PodGroup"),
    "nodefeaturerules": ("nfd.k8s-sigs.io", "v1alpha1", "NodeFeatureRule"),
}
PLURAL_OF = {kind: plural for plural, (_, _, kind) in KINDS.items()}


# ---- the unmutated cluster ----------------------------------------------------------------


def _crd(plural: str) -> Obj:
    group, version, kind = KINDS[plural]
    namespaced = plural in ("localqueues", "workloads", "podgroups")
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"plural": plural, "kind": kind, "listKind": f"{kind}List"},
            "scope": "Namespaced" if namespaced else "Cluster",
            "versions": [{"name": version, "served": True, "storage": True}],
        },
    }


def _cond(kind: str, status: bool, message: str = "") -> Obj:
    return {"type": kind, "status": str(status), "reason": kind, "message": message}


def _live_nodes(policy: Any, manifests: list[Any]) -> list[Obj]:
    from hetgitops.drift.accelerators import node_resources

    rendered = {m.obj["metadata"]["name"]: m.obj for m in manifests if m.kind == "Node"}
    nodes = []
    for pool in policy.pools.values():
        card = policy.card_type_of(pool)
        for node in pool.nodes:
            allocatable = {} if card is None else node_resources(policy, pool, card, node)
            obj = copy.deepcopy(rendered.get(node.name) or {"metadata": {"name": node.name}})
            obj.pop("apiVersion", None), obj.pop("kind", None)
            quantities = {k: str(v) for k, v in allocatable.items()}
            obj["status"] = {"allocatable": quantities, "capacity": dict(quantities)}
            nodes.append(obj)
    return nodes


def _work(queues: list[Obj], local: Obj, nodes: list[Obj]) -> dict[str, list[Obj]]:
    """Two Workloads (one holding quota, one waiting), their pods and a PodGroup."""
    namespace, queue = local["metadata"]["namespace"], local["metadata"]["name"]
    cq = next(q for q in queues if q["metadata"]["name"] == local["spec"]["clusterQueue"])
    offered = {r for n in nodes for r in n["status"]["allocatable"]}
    flavor, resource = next(
        (f["name"], r["name"])
        for group in cq["spec"]["resourceGroups"]
        for f in group["flavors"]
        for r in f["resources"]
        if r["name"] in offered and r["nominalQuota"] != "0"
    )
    node = next(n["metadata"]["name"] for n in nodes if resource in n["status"]["allocatable"])
    container = {"name": "main", "image": "x", "resources": {"requests": {resource: "1"}}}
    template = {"spec": {"containers": [container]}}

    def workload(name: str, admitted: bool) -> Obj:
        meta = {"name": name, "namespace": namespace, "labels": {f"{KUEUE}/queue-name": queue}}
        meta["creationTimestamp"] = "2026-11-30T10:00:00Z"
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": name}]
        spec = {"queueName": queue, "priority": 100, "active": True}
        spec["podSets"] = [{"name": "main", "count": 1, "template": template}]
        if not admitted:
            status = {"conditions": [_cond("QuotaReserved", False, "insufficient quota")]}
            return {"metadata": meta, "spec": spec, "status": status}
        assignment = {"name": "main", "count": 1, "flavors": {resource: flavor}}
        assignment["resourceUsage"] = {resource: "1"}
        admission = {"clusterQueue": cq["metadata"]["name"], "podSetAssignments": [assignment]}
        conditions = [_cond("QuotaReserved", True), _cond("Admitted", True)]
        return {
            "metadata": meta,
            "spec": spec,
            "status": {"admission": admission, "conditions": conditions},
        }

    def pod(name: str, bound: bool) -> Obj:
        spec: Obj = {"containers": [copy.deepcopy(container)]}
        if bound:
            spec["nodeName"] = node
        meta = {"name": name, "namespace": namespace, "labels": {f"{KUEUE}/queue-name": queue}}
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": name[:5]}]
        return {
            "metadata": meta,
            "spec": spec,
            "status": {"phase": "Running" if bound else "Pending"},
        }

    cq.setdefault("status", {})["flavorsUsage"] = [
        {"name": flavor, "resources": [{"name": resource, "total": "1", "borrowed": "0"}]}
    ]
    podgroup = {
        "metadata": {"name": "pg-1", "namespace": namespace},
        "spec": {"minMember": 1, "queue": queue},
        "status": {"phase": "Pending", "conditions": [_cond("Unschedulable", True, "no")]},
    }
    event = {
        "metadata": {"name": "job-2.1", "namespace": namespace},
        "involvedObject": {"kind": "Pod", "name": "job-2-abcde", "namespace": namespace},
        "reason": "FailedScheduling",
        "message": "0/3 nodes are available",
        "type": "Warning",
    }
    return {
        "workloads": [workload("job-1", True), workload("job-2", False)],
        "pods": [pod("job-1-abcde", True), pod("job-2-abcde", False)],
        "podgroups": [podgroup],
        "events": [event],
    }


@dataclasses.dataclass
class Seed:
    """What the fake cluster answers (plural -> items) and what each command needs."""

    items: dict[str, list[Obj]]
    policy: Any  # the bundled policy (explain, drift)
    desired: list[Any]  # drift's rendered objects
    diff: Any  # a DiffResult with hazards (diff --kubeconfig)
    team: str
    workload_ref: tuple[str, str]


def seed() -> Seed:
    from hetgitops.drift.run import _desired

    rendered = api.render([POLICIES], api.Options(now=NOW, check_output=False))
    assert rendered.policy is not None and not rendered.failed()
    items: dict[str, list[Obj]] = {plural: [] for plural in KINDS}
    for manifest in rendered.manifests:
        plural = PLURAL_OF.get(manifest.kind)
        if manifest.applied and plural is not None:
            items[plural].append(copy.deepcopy(manifest.obj))
    nodes = _live_nodes(rendered.policy, rendered.manifests)
    items["nodes"] = nodes
    crd_kinds = [p for p, (g, _, _) in KINDS.items() if g and g != "apiextensions.k8s.io"]
    items["customresourcedefinitions"] = [_crd(p) for p in crd_kinds]
    local = next(q for q in items["localqueues"] if q["spec"].get("clusterQueue"))
    items.update(_work(items["clusterqueues"], local, nodes))
    team = next(
        t.name
        for t in rendered.policy.teams.values()
        if local["metadata"]["namespace"] in t.namespaces
    )
    return Seed(
        items,
        rendered.policy,
        _desired(rendered.manifests),
        _diff_result(),
        team,
        (local["metadata"]["namespace"], "job-2"),
    )


def _diff_result() -> Any:
    """The bundled fleet against one with a retiring flavor: hazards with a live radius."""
    import tempfile

    from hetgitops.diff import run as diff_run
    from hetgitops.load import git_source
    from tests.checks.test_retiring import LIVE, _policy

    with tempfile.TemporaryDirectory(prefix="fuzz-live-") as tmp:  # read whole by compare
        head = _policy(Path(tmp), LIVE)
        sides = git_source.select_sides(
            [], base=None, head=None, base_dir=POLICIES, head_dir=head, cwd=REPO
        )
        result = diff_run.compare(*sides, api.Options(now=NOW))
    assert result.hazards
    return result


# ---- the fake client ------------------------------------------------------------------------


class FakeCluster(client.Cluster):
    """The real client (list, decode, shape check, messages) over answers held in memory."""

    def __init__(self, items: Mapping[str, list[Obj]]) -> None:  # no kubeconfig, no socket
        self._items = items
        self._deadline = client.Deadline.start(client.DEADLINE)
        self._secrets = Secrets()
        self._host = self.server = "https://fuzz.invalid"
        self.insecure = False
        self.requests = 0
        self.asked: set[str] = set()

    def close(self) -> None:
        pass

    def _send(
        self, method: str, path: str, query: Any, headers: Any, body: str | None
    ) -> tuple[int, str, bytes]:
        self.requests += 1
        if method != "GET":  # a dry-run apply: the object as the server would keep it
            return 200, "", (body or "{}").encode()
        plural = path.rstrip("/").rsplit("/", 1)[-1]
        self.asked.add(plural)
        if plural not in KINDS:
            return 404, "", b'{"kind": "Status", "message": "not found", "code": 404}'
        group, version, kind = KINDS[plural]
        answer = {
            "kind": f"{kind}List",
            "apiVersion": f"{group}/{version}" if group else version,
            "metadata": {"resourceVersion": "1"},
            "items": self._items.get(plural, []),
        }
        return 200, "", json.dumps(answer).encode()


# ---- the commands, as the CLI calls them ----------------------------------------------------

Outcome = tuple[str, str]  # ("ok", answer) | ("error", message) | ("crash", traceback)


def _lines(diagnostics: Any) -> str:
    return "\n".join(
        sorted(f"{d.rule}|{d.severity.name}|{d.message}|{d.hint}" for d in diagnostics)
    )


def _drift(s: Seed, cluster: FakeCluster) -> str:
    from hetgitops.drift.run import DriftOptions, _drift

    options = DriftOptions(
        kubeconfig=None, context=None, now=dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    )
    found, _ = _drift(s.policy, s.desired, cluster, options)
    return _lines(found)


def _import(s: Seed, cluster: FakeCluster) -> str:
    from hetgitops.adopt import run, sources

    original = sources.Cluster
    sources.Cluster = lambda *a: cluster  # type: ignore[assignment,misc]
    try:
        read = sources.from_cluster(None, None)
    finally:
        sources.Cluster = original  # type: ignore[misc]
    result = run.import_objects(read, Path("/nonexistent/out"), cluster="imported")
    files = "\n".join(f"== {name}\n{text}" for name, text in sorted(result.files.items()))
    return _lines(result.diagnostics) + "\n" + files


def _explain(s: Seed, cluster: FakeCluster) -> str:
    from hetgitops.explain import formats, request, run
    from hetgitops.explain.state import read_state

    state = read_state(s.policy, cluster)
    asked = request.Request(s.team, 8)
    found = run.explain_all(s.policy, [request.from_request(s.policy, asked)], state)
    return formats.FORMATS["json"](found)


def _explain_workload(s: Seed, cluster: FakeCluster) -> str:
    from hetgitops.explain import formats
    from hetgitops.explain.existing import explain_workload

    report = explain_workload(s.policy, cluster, *s.workload_ref)
    return formats.render_workload(report, "json")


def _diff(s: Seed, cluster: FakeCluster) -> str:
    from hetgitops.diff import run as diff_run

    result = copy.copy(s.diff)
    original = client.Cluster  # opened by live.session.reading, looked up when it runs
    client.Cluster = lambda *a: cluster  # type: ignore[assignment,misc]
    try:
        diff_run.read_live_radius(result, kubeconfig=None, context=None)
    finally:
        client.Cluster = original  # type: ignore[misc]
    return "\n".join(f"{h.rule}|{h.subject}|{h.live}" for h in result.hazards)


COMMANDS: dict[str, Callable[[Seed, FakeCluster], str]] = {
    "drift": _drift,
    "import": _import,
    "explain": _explain,
    "explain-workload": _explain_workload,
    "diff": _diff,
}


# ---- mutations --------------------------------------------------------------------------------

ODD_QUANTITIES = ("1k", "1e400", "\u00b2", "-8", "NaN", "8 ", "+-1", "0x10", "1Ei" * 3, "9" * 40)
CONTROL = "a\x1b]0;pwned\x07\x1b[2J\u202eb\n"
UNKNOWN = "zzUnknownField"


def _deep(depth: int) -> Any:
    value: Any = "x"
    for level in range(depth):
        value = [value] if level % 2 else {"a": value}
    return value


MUTATIONS: dict[str, Callable[[Any, random.Random], Any]] = {
    "null": lambda v, r: None,
    "number": lambda v, r: r.choice([0, -1, 42, 2**63, 10**30, 1e308, -1e-308, 0.5]),
    "string": lambda v, r: r.choice(["", "x", "True", "8", "null"]),
    "boolean": lambda v, r: r.choice([True, False]),
    "list": lambda v, r: r.choice([[], [1, "x"], [None], [{}]]),
    "object": lambda v, r: r.choice([{}, {"a": 1}, {"name": None}]),
    "quantity": lambda v, r: r.choice(ODD_QUANTITIES),
    "negative": lambda v, r: r.choice(["-1", "-8", -4, "-0.5"]),
    "deep": lambda v, r: _deep(r.choice([30, 200])),
    "long": lambda v, r: "x" * r.choice([300, 70_000]),
    "control": lambda v, r: (v if isinstance(v, str) else "v") + CONTROL,
}
OPS = (*MUTATIONS, "delete", "unknown")


def _paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in `value` (a key of a mapping, an index of a list), parents first."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key != "managedFields":
                yield (*at, key)
                yield from _paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*at, index)
            yield from _paths(item, (*at, index))


@dataclasses.dataclass(frozen=True)
class Mutant:
    plural: str
    index: int
    name: str  # the object's name before the mutation
    original: Any
    path: tuple[Any, ...]
    op: str
    value: Any = None

    def __str__(self) -> str:
        where = ".".join(str(p) for p in self.path)
        shown = repr(self.value)
        return f"{self.plural}[{self.index}] {self.name}: {where} {self.op} {shown[:60]}"

    def apply(self, items: Mapping[str, list[Obj]]) -> dict[str, list[Obj]]:
        mutated = dict(items)
        objects = list(items[self.plural])
        obj = copy.deepcopy(objects[self.index])
        parent = obj
        for step in self.path[:-1]:
            parent = parent[step]
        last = self.path[-1]
        if self.op == "delete":
            del parent[last]
        elif self.op == "unknown":
            target = parent[last]
            if isinstance(target, dict):
                target[UNKNOWN] = {"a": [1, "x"]}
            else:
                parent[last] = [target] if isinstance(target, list) else {UNKNOWN: target}
        else:
            parent[last] = self.value
        objects[self.index] = obj
        mutated[self.plural] = objects
        return mutated


def mutants(s: Seed, count: int, rng: random.Random) -> Iterator[Mutant]:
    """`count` mutants: a kind, an object, a place in it, an operation, all drawn by `rng`."""
    places = {
        (plural, index): list(_paths(obj))
        for plural, objects in s.items.items()
        for index, obj in enumerate(objects)
    }
    keys = sorted(places)
    plurals = sorted({plural for plural, _ in keys})
    for _ in range(count):
        plural = rng.choice(plurals)  # every kind as often, however many objects it has
        index = rng.choice([i for p, i in keys if p == plural])
        path = rng.choice(places[plural, index])
        op = rng.choice(OPS)
        value = MUTATIONS[op](_get(s.items[plural][index], path), rng) if op in MUTATIONS else None
        obj = s.items[plural][index]
        yield Mutant(plural, index, _name(obj), _get(obj, path), path, op, value)


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        obj = obj[step]
    return obj


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


# ---- the oracle -------------------------------------------------------------------------------


TYPES: dict[str, tuple[type, ...]] = {
    "number": (int, float),
    "boolean": (bool,),
    "list": (list,),
    "object": (dict,),
    "string": (str,),
}


def invalid(mutant: Mutant, original: Any) -> bool:
    """Whether the mutant is out of the API's shape (a type error, a quantity that is none):
    its changed answer must name the object. Absent, null, unknown fields and other strings
    are valid input, whose answer may change."""
    if mutant.op in TYPES:
        same = isinstance(original, TYPES[mutant.op]) and not (
            isinstance(original, bool) and mutant.op == "number"
        )
        return not same and original is not None
    if mutant.op in ("quantity", "negative"):
        from hetgitops.live.shape import QUANTITY

        return isinstance(original, (int, float)) or (
            isinstance(original, str) and bool(QUANTITY.fullmatch(original))
        )
    return mutant.op == "deep" and original is not None


class Hang(Exception):
    pass


@contextmanager
def _bounded(seconds: float) -> Iterator[None]:
    def expired(signum: int, frame: Any) -> None:
        raise Hang(f"no answer within {seconds:g}s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def outcome(s: Seed, command: str, items: Mapping[str, list[Obj]]) -> tuple[Outcome, set[str]]:
    """What `command` makes of the cluster `items`, and the kinds it listed."""
    cluster = FakeCluster(items)
    try:
        with _bounded(MUTANT_SECONDS):
            return ("ok", COMMANDS[command](s, cluster)), cluster.asked
    except Hang as exc:
        return ("hang", str(exc)), cluster.asked
    except (client.ClusterError, client.Forbidden, client.NotServed, LiveUnavailable) as exc:
        return ("error", str(exc)), cluster.asked  # exit 4, as each command says it
    except Exception:
        return ("crash", traceback.format_exc(limit=-6)), cluster.asked


@dataclasses.dataclass
class Tally:
    mutants: int = 0
    runs: int = 0
    same: int = 0
    located: int = 0  # an error or changed lines naming the object
    valid: int = 0  # a valid input (a field absent, another string) with its own answer
    crashes: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    hangs: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    silent: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    seconds: float = 0.0

    def line(self) -> str:
        return (
            f"{self.mutants} mutants, {self.runs} command runs: {self.same} same answer, "
            f"{self.located} located error or finding, {self.valid} other answer to valid input, "
            f"{len(self.crashes)} crashes, "
            f"{len(self.hangs)} hangs, {len(self.silent)} silent changes ({self.seconds:.0f}s)"
        )


def _names(mutant: Mutant, index: int) -> tuple[str, ...]:
    from hetgitops.live.said import shown

    names = {mutant.name, shown(mutant.name), f"item {index + 1}"} - {""}
    return tuple(names)


def _named(mutant: Mutant, text: str) -> bool:
    return any(name in text for name in _names(mutant, mutant.index))


def _changed(before: str, after: str) -> str:
    old, new = before.splitlines(), after.splitlines()
    return "\n".join(
        [
            *(line for line in old if line not in set(new)),
            *(line for line in new if line not in set(old)),
        ]
    )


def sweep(s: Seed, count: int, seed_value: int, *, out: Any = None) -> Tally:
    """Run `count` mutants through every command that lists the mutated kind."""
    rng = random.Random(seed_value)
    started = time.monotonic()
    baseline: dict[str, Outcome] = {}
    reads: dict[str, set[str]] = {}
    for command in COMMANDS:
        baseline[command], reads[command] = outcome(s, command, s.items)
        assert baseline[command][0] == "ok", (command, baseline[command][1])
    tally = Tally()
    for mutant in mutants(s, count, rng):
        tally.mutants += 1
        items = mutant.apply(s.items)
        for command in COMMANDS:
            if mutant.plural not in reads[command]:
                continue
            tally.runs += 1
            (kind, said), _ = outcome(s, command, items)
            _judge(tally, mutant, command, kind, said, baseline[command][1])
        if out is not None and tally.mutants % 250 == 0:
            print(f"  {tally.line()}", file=out, flush=True)
    tally.seconds = time.monotonic() - started
    return tally


def _judge(tally: Tally, mutant: Mutant, command: str, kind: str, said: str, before: str) -> None:
    case = (str(mutant), command, said[-3000:])
    if kind == "crash":
        tally.crashes.append(case)
    elif kind == "hang":
        tally.hangs.append(case)
    elif kind == "error" and _named(mutant, said):
        tally.located += 1
    elif kind == "error" and not invalid(mutant, mutant.original):
        tally.valid += 1  # e.g. a CRD's listKind changed: the list is then another kind's
    elif kind == "error":
        tally.silent.append(case)  # stopped, but not saying which object
    elif said == before:
        tally.same += 1
    elif _named(mutant, _changed(before, said)):
        tally.located += 1
    elif not invalid(mutant, mutant.original):
        tally.valid += 1
    else:
        tally.silent.append((str(mutant), command, _changed(before, said)[:3000]))


def main(argv: list[str]) -> int:
    count = int(argv[0]) if argv else 5000
    seed_value = int(argv[1]) if len(argv) > 1 else 33
    tally = sweep(seed(), count, seed_value, out=sys.stderr)
    for title, cases in (("CRASH", tally.crashes), ("HANG", tally.hangs), ("SILENT", tally.silent)):
        for mutant, command, said in cases[:40]:
            print(f"== {title} {command}: {mutant}\n{said}\n")
    print(tally.line())
    return 1 if tally.crashes or tally.hangs or tally.silent else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
