"""Drift stage: render the policy, read the cluster with one LIST per kind, compare, attribute,
and run the fleet checks; the one entry point is `drift()`."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hetgitops import api
from hetgitops.diagnostics import Diagnostic, sort_unique
from hetgitops.drift import adoption, queue_usage
from hetgitops.drift import fleet as fleet_checks
from hetgitops.drift import slices as dra_slices
from hetgitops.drift.findings import finding
from hetgitops.drift.ignore import Ignores
from hetgitops.drift.objects import compare_object, ident, missing, orphan, terminating
from hetgitops.live import resources
from hetgitops.live.client import (
    DEADLINE,
    Cluster,
    ClusterError,
    Deadline,
    Forbidden,
    NotServed,
    Resource,
)
from hetgitops.live.kinds import CRD_RESOURCE, Catalogue, KindKey
from hetgitops.model.policy import Fleet, Policy
from hetgitops.output.manifests import MANAGED_BY, Manifest
from hetgitops.plan import dra
from hetgitops.plan.clusters import cluster_policy

# The managers that apply a GitOps tree by server-side apply: Argo CD's (common.ArgoCDSSAManager)
# and Flux's kustomize-controller, plus `kubectl apply --server-side --field-manager=hetgitops`.
DEFAULT_MANAGERS = ("argocd-controller", "kustomize-controller", "hetgitops")
MODES = ("read-only", "server-dry-run")


@dataclass(frozen=True)
class DriftOptions:
    kubeconfig: Path | None = None
    context: str | None = None
    managers: tuple[str, ...] = DEFAULT_MANAGERS
    mode: str = "read-only"
    mig_pending_timeout: dt.timedelta = dt.timedelta(minutes=30)
    now: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    # Multi-cluster policies: the kubeconfig context of each Cluster (`--context NAME=CONTEXT`),
    # and the clusters deliberately left out (`--skip-cluster`, reported as not checked).
    contexts: Mapping[str, str] = field(default_factory=dict)
    skip: tuple[str, ...] = ()
    # Seconds for reading every cluster (`--timeout`): requests and credential plugins.
    timeout: float = DEADLINE


@dataclass(frozen=True)
class Read:
    """What drift read from one cluster: live objects, kinds listed, HTTP requests."""

    cluster: str  # "" for a single-cluster policy
    context: str
    requests: int
    kinds: int
    objects: int
    server: str = ""  # with any password in it redacted
    insecure: bool = False  # the kubeconfig turns TLS verification off


@dataclass
class DriftResult:
    """The findings (as an api.Result, so every report format works) and what it cost, per
    cluster read."""

    result: api.Result
    reads: list[Read] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return sum(r.requests for r in self.reads)

    @property
    def kinds(self) -> int:
        return sum(r.kinds for r in self.reads)

    @property
    def objects(self) -> int:
        return sum(r.objects for r in self.reads)

    @property
    def drifted(self) -> bool:
        return bool(self.result.diagnostics)


class EnvironmentFault(Exception):
    """The cluster could not be read at all (exit 4): unreachable, bad credentials, or the
    credentials may not even list the CRDs or nodes."""


class UsageProblem(Exception):
    """The options do not fit the policy (exit 2): a multi-cluster policy with a cluster that
    has no `--context CLUSTER=CONTEXT`, a context for a cluster the policy does not define, or
    per-cluster contexts for a single-cluster policy."""


def drift(
    paths: Iterable[Path],
    options: DriftOptions,
    *,
    cluster: Cluster | None = None,
    clusters: Mapping[str, Cluster] | None = None,
) -> DriftResult:
    """Compare the live cluster (each cluster of a multi-cluster policy) with the policy.
    Raises EnvironmentFault when a cluster cannot be read and UsageProblem when the contexts
    do not fit the policy; everything else is a finding. `cluster` / `clusters` are clients
    made by the caller (tests), used instead of the kubeconfig."""
    day = options.now.date()
    deadline = Deadline.start(options.timeout, option="--timeout")
    rendered = api.render(paths, api.Options(now=day, check_output=False))
    if rendered.failed() or rendered.policy is None or rendered.policy.fleet is None:
        return DriftResult(rendered)
    if rendered.policy.clusters:
        return _drift_clusters(rendered, options, clusters or {}, deadline)
    if options.contexts:
        raise UsageProblem(
            "--context CLUSTER=CONTEXT is for multi-cluster policies; this policy has no Cluster "
            "documents: give --context CONTEXT (or none for the current context)"
        )
    own = cluster is None
    try:
        cluster = cluster or Cluster(options.kubeconfig, options.context, deadline=deadline)
        desired = _desired(rendered.manifests)
        found, read = _drift(rendered.policy, desired, cluster, options)
    except ClusterError as exc:
        raise EnvironmentFault(str(exc)) from None
    finally:
        if own and cluster is not None:
            cluster.close()
    return DriftResult(_result(rendered, found), [read])


def _desired(manifests: Iterable[Manifest], cluster: str | None = None) -> list[Manifest]:
    # drift-rbac objects are not the fleet's (no fleet label): drift does not compare them.
    return [
        m
        for m in manifests
        if m.applied and m.target != "drift-rbac" and (cluster is None or m.cluster == cluster)
    ]


def _result(rendered: api.Result, found: Iterable[Diagnostic]) -> api.Result:
    # Render warnings (an expiring pool...) are validate's business, not drift's.
    return api.Result(
        sort_unique(found),
        rendered.files,
        rendered.documents,
        rendered.policy,
        rendered.manifests,
    )


def check_contexts(policy: Policy, options: DriftOptions) -> None:
    """Every Cluster of the policy needs its context, and every context a Cluster: a cluster
    drift cannot read is never skipped silently."""
    names = sorted(policy.clusters)
    if options.context:
        raise UsageProblem(
            f"this policy has {len(names)} clusters ({', '.join(names)}): give one "
            "--context CLUSTER=CONTEXT per cluster instead of a single --context"
        )
    unknown = sorted((set(options.contexts) | set(options.skip)) - set(policy.clusters))
    if unknown:
        raise UsageProblem(
            f"--context or --skip-cluster for cluster(s) the policy does not define: "
            f"{', '.join(unknown)} (its clusters: {', '.join(names)})"
        )
    both = sorted(set(options.contexts) & set(options.skip))
    if both:
        raise UsageProblem(f"cluster(s) {', '.join(both)} both given a context and skipped")
    missing = [n for n in names if n not in options.contexts and n not in options.skip]
    if missing:
        raise UsageProblem(
            f"no --context for cluster(s) {', '.join(missing)}: drift reads every cluster of "
            "the policy; add "
            + " ".join(f"--context {n}=CONTEXT" for n in missing)
            + " (or --skip-cluster NAME to leave one out, reported as not checked)"
        )


def _drift_clusters(
    rendered: api.Result, options: DriftOptions, given: Mapping[str, Cluster], deadline: Deadline
) -> DriftResult:
    """Each cluster with its own context, against its own tree and its own pools; findings
    carry the cluster they were found on."""
    policy = rendered.policy
    assert policy is not None
    if not given:
        check_contexts(policy, options)
    found: list[Diagnostic] = []
    reads: list[Read] = []
    for name in sorted(policy.clusters):
        if name in options.skip and name not in given:
            found.append(_not_checked(policy, name))
            continue
        context = options.contexts.get(name, "")
        client = given.get(name)
        try:
            client = client or Cluster(options.kubeconfig, context, deadline=deadline)
            desired = _desired(rendered.manifests, name)
            problems, read = _drift(cluster_policy(policy, name), desired, client, options)
        except (ClusterError, EnvironmentFault) as exc:
            raise EnvironmentFault(f"cluster {name} (context {context or '-'}): {exc}") from None
        finally:
            if name not in given and client is not None:
                client.close()
        found += [d.on_cluster(name) for d in problems]
        reads.append(replace(read, cluster=name, context=context))
    return DriftResult(_result(rendered, found), reads)


def _not_checked(policy: Policy, name: str) -> Diagnostic:
    return finding(
        "drift-cluster-not-checked",
        "not read (--skip-cluster): its objects and nodes were not compared with the policy",
        policy.clusters[name].origin.span,
        hint=f"run drift with --context {name}=CONTEXT to check it",
    ).on_cluster(name)


def selector(fleet: Fleet) -> str:
    """The labels every object hetgitops renders carries (output.manifests.common_labels)."""
    return f"app.kubernetes.io/managed-by={MANAGED_BY},{fleet.label('fleet')}={fleet.cluster}"


def _drift(
    policy: Policy, desired: list[Manifest], cluster: Cluster, options: DriftOptions
) -> tuple[list[Diagnostic], Read]:
    """Findings about one cluster: its rendered objects (`desired`) and the nodes of the
    policy's pools (`policy` is the cluster's own in a multi-cluster fleet)."""
    assert policy.fleet is not None
    fleet = policy.fleet
    catalogue = Catalogue.from_crds(_list_global(cluster, CRD_RESOURCE))
    by_kind: dict[KindKey, list[Manifest]] = defaultdict(list)
    for manifest in desired:
        by_kind[KindKey.of(manifest.obj)].append(manifest)
    found: list[Diagnostic] = []
    live: dict[str, list[dict[str, Any]]] = {}
    unmanaged: dict[str, list[dict[str, Any]]] = {}
    for key in sorted(by_kind, key=str):
        problems, live[key.kind], unmanaged[key.kind] = _kind(
            key, by_kind[key], catalogue, cluster, fleet, options
        )
        found += problems
    found += adoption.competing(desired, unmanaged, fleet)
    nodes = _list_global(cluster, resources.NODES)
    queues = live.get("ClusterQueue", [])
    found += fleet_checks.check(
        policy,
        nodes,
        queues,
        now=options.now,
        mig_pending_timeout=options.mig_pending_timeout,
    )
    found += queue_usage.usage(desired, queues)
    slices = _resource_slices(policy, cluster)
    found += dra_slices.check(policy, slices)
    objects = sum(map(len, live.values())) + len(nodes) + len(slices)
    read = Read(
        "",
        options.context or "",
        cluster.requests,
        len(by_kind),
        objects,
        cluster.server,
        cluster.insecure,
    )
    return found, read


def _resource_slices(policy: Policy, cluster: Cluster) -> list[dict[str, Any]]:
    """The live ResourceSlices, read only for a policy with DRA pools (one bounded LIST);
    a cluster that does not serve resource.k8s.io/v1 has its DeviceClasses reported missing
    already."""
    if not any(dra.on_dra(pool) for pool in policy.pools.values()):
        return []
    try:
        return cluster.list(resources.RESOURCE_SLICES)
    except NotServed:
        return []
    except Forbidden:
        return _list_global(cluster, resources.RESOURCE_SLICES)  # says what RBAC lacks


def _list_global(cluster: Cluster, resource: Resource) -> list[dict[str, Any]]:
    try:
        return cluster.list(resource)
    except Forbidden as exc:
        raise EnvironmentFault(
            f"the credentials may not {exc.what}: {exc.message} (drift needs the ClusterRole "
            "of `hetgitops render --target drift-rbac`)"
        ) from None
    except NotServed as exc:
        raise EnvironmentFault(f"the API server does not serve {resource.plural}: {exc}") from None


def _kind(
    key: KindKey,
    manifests: list[Manifest],
    catalogue: Catalogue,
    cluster: Cluster,
    fleet: Fleet,
    options: DriftOptions,
) -> tuple[list[Diagnostic], list[dict[str, Any]], list[dict[str, Any]]]:
    """Findings about one kind, its live managed objects and (adoptable kinds) the others."""
    first = manifests[0]
    resource = catalogue.resource(key)
    if resource is None:
        problem = finding(
            "drift-target-missing",
            f"{key} is not served: {catalogue.missing_reason(key)}; "
            f"{len(manifests)} object(s) of the policy cannot exist",
            first.origin,
            hint=f"install the {first.target} target's CRDs, or drop the target from the Fleet",
        )
        return [problem], [], []
    whole = key.kind in adoption.ADOPTABLE  # one LIST either way; these see unlabelled objects
    try:
        listed = cluster.list(resource, selector="" if whole else selector(fleet))
    except Forbidden as exc:
        message = f"{key}: the credentials may not {exc.what} ({exc.message})"
        return [finding("drift-forbidden", message, first.origin)], [], []
    except NotServed as exc:
        problem = finding("drift-target-missing", f"{key} is not served: {exc}", first.origin)
        return [problem], [], []
    live = [o for o in listed if not whole or adoption.managed(o, fleet)]
    others = {ident(o): o for o in listed if whole and not adoption.managed(o, fleet)}
    schema = catalogue.schema(key) if catalogue.is_custom(key) else None
    index = {ident(obj): obj for obj in live}
    ignores = Ignores(fleet)
    found: list[Diagnostic] = []
    for manifest in manifests:
        obj = index.pop(ident(manifest.obj), None)
        going = terminating(manifest, obj) if obj is not None else None
        if obj is None and ident(manifest.obj) in others:
            found.append(adoption.adopts(manifest, others[ident(manifest.obj)], schema))
        elif obj is None:
            found.append(missing(manifest))
        elif going is not None:
            found.append(going)  # its fields say nothing: it is on its way out
        elif options.mode == "server-dry-run":
            from hetgitops.drift.dryrun import dry_run_object

            found += dry_run_object(cluster, resource, manifest, obj)
        else:
            rules = ignores.for_object(manifest.kind, manifest.name)
            found += compare_object(manifest, obj, schema, managers=options.managers, ignore=rules)
    orphans = [
        o for _, o in sorted(index.items()) if not ignores.skips_object(key.kind, ident(o)[1])
    ]
    found += [orphan(obj, fleet) for obj in orphans]
    return found, live, list(others.values())
