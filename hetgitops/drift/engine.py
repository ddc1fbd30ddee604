"""Drift stage: render the policy, read the cluster with one LIST per kind, compare, attribute,
and run the fleet checks; the one entry point is `drift()`."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hetgitops import api
from hetgitops.diagnostics import Diagnostic, sort_unique
from hetgitops.drift import fleet as fleet_checks
from hetgitops.drift.client import Cluster, ClusterError, Forbidden, NotServed, Resource
from hetgitops.drift.compare import FieldDiff, attribute, compare, display
from hetgitops.drift.findings import finding, shown, writers_text
from hetgitops.drift.ignore import Ignores
from hetgitops.drift.kinds import CRD_RESOURCE, NODE_RESOURCE, Catalogue, KindKey
from hetgitops.drift.normalise import BUILTIN_DEFAULTS, drop_tracking, strip_live
from hetgitops.drift.ownership import Ownership
from hetgitops.drift.schema import apply_defaults
from hetgitops.model.policy import DriftIgnore, Fleet
from hetgitops.output.manifests import MANAGED_BY, Manifest

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


@dataclass
class DriftResult:
    """The findings (as an api.Result, so every report format works) and what it cost."""

    result: api.Result
    requests: int = 0
    kinds: int = 0
    objects: int = 0

    @property
    def drifted(self) -> bool:
        return bool(self.result.diagnostics)


class EnvironmentFault(Exception):
    """The cluster could not be read at all (exit 4): unreachable, bad credentials, or the
    credentials may not even list the CRDs or nodes."""


def drift(
    paths: Iterable[Path], options: DriftOptions, *, cluster: Cluster | None = None
) -> DriftResult:
    """Compare the live cluster with the policy. Raises EnvironmentFault when the cluster
    cannot be read; everything else is a finding."""
    day = options.now.date()
    rendered = api.render(paths, api.Options(now=day, check_output=False))
    if rendered.failed() or rendered.policy is None or rendered.policy.fleet is None:
        return DriftResult(rendered)
    own = cluster is None
    try:
        cluster = cluster or Cluster(options.kubeconfig, options.context)
        found = _drift(rendered, rendered.policy.fleet, cluster, options)
    except ClusterError as exc:
        raise EnvironmentFault(str(exc)) from None
    finally:
        if own and cluster is not None:
            cluster.close()
    return found


def selector(fleet: Fleet) -> str:
    """The labels every object hetgitops renders carries (output.manifests.common_labels)."""
    return f"app.kubernetes.io/managed-by={MANAGED_BY},{fleet.label('fleet')}={fleet.cluster}"


def _drift(
    rendered: api.Result, fleet: Fleet, cluster: Cluster, options: DriftOptions
) -> DriftResult:
    assert rendered.policy is not None
    catalogue = Catalogue.from_crds(_list_global(cluster, CRD_RESOURCE))
    # drift-rbac objects are not the fleet's (no fleet label): drift does not compare them.
    desired = [m for m in rendered.manifests if m.applied and m.target != "drift-rbac"]
    by_kind: dict[KindKey, list[Manifest]] = defaultdict(list)
    for manifest in desired:
        by_kind[KindKey.of(manifest.obj)].append(manifest)
    found: list[Diagnostic] = []
    live: dict[str, list[dict[str, Any]]] = {}
    for key in sorted(by_kind, key=str):
        problems, live[key.kind] = _kind(key, by_kind[key], catalogue, cluster, fleet, options)
        found += problems
    nodes = _list_global(cluster, NODE_RESOURCE)
    queues = live.get("ClusterQueue", [])
    found += fleet_checks.check(
        rendered.policy,
        nodes,
        queues,
        now=options.now,
        mig_pending_timeout=options.mig_pending_timeout,
    )
    found += fleet_checks.usage(desired, queues)
    # Render warnings (an expiring pool...) are validate's business, not drift's.
    result = api.Result(
        sort_unique(found),
        rendered.files,
        rendered.documents,
        rendered.policy,
        rendered.manifests,
    )
    objects = sum(map(len, live.values())) + len(nodes)
    return DriftResult(result, cluster.requests, len(by_kind), objects)


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
) -> tuple[list[Diagnostic], list[dict[str, Any]]]:
    """Findings about one kind, and its live objects."""
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
        return [problem], []
    try:
        live = cluster.list(resource, selector=selector(fleet))
    except Forbidden as exc:
        message = f"{key}: the credentials may not {exc.what} ({exc.message})"
        return [finding("drift-forbidden", message, first.origin)], []
    except NotServed as exc:
        return [finding("drift-target-missing", f"{key} is not served: {exc}", first.origin)], []
    schema = catalogue.schema(key) if catalogue.is_custom(key) else None
    index = {_ident(obj): obj for obj in live}
    ignores = Ignores(fleet)
    found: list[Diagnostic] = []
    for manifest in manifests:
        obj = index.pop(_ident(manifest.obj), None)
        if obj is None:
            found.append(_missing(manifest))
        elif options.mode == "server-dry-run":
            from hetgitops.drift.dryrun import dry_run_object

            found += dry_run_object(cluster, resource, manifest, obj)
        else:
            rules = ignores.for_object(manifest.kind, manifest.name)
            found += compare_object(manifest, obj, schema, managers=options.managers, ignore=rules)
    orphans = [
        o for _, o in sorted(index.items()) if not ignores.skips_object(key.kind, _ident(o)[1])
    ]
    found += [_orphan(obj, fleet) for obj in orphans]
    return found, live


def _ident(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def object_name(manifest_or_obj: Manifest | Mapping[str, Any]) -> str:
    obj = manifest_or_obj.obj if isinstance(manifest_or_obj, Manifest) else manifest_or_obj
    namespace, name = _ident(obj)
    return f"{obj.get('kind')} {namespace}/{name}" if namespace else f"{obj.get('kind')} {name}"


def _missing(manifest: Manifest) -> Diagnostic:
    return finding(
        "drift-missing",
        f"{object_name(manifest)} is not in the cluster",
        manifest.origin,
        path=object_name(manifest),
        hint="sync the GitOps application (or apply the rendered tree); an object that lost "
        "hetgitops' labels (app.kubernetes.io/managed-by, <domain>/fleet) is not seen either",
    )


def _orphan(obj: Mapping[str, Any], fleet: Fleet) -> Diagnostic:
    writer = Ownership(obj).latest()
    by = f"; last written by {writer}" if writer else ""
    return finding(
        "drift-orphan",
        f"{object_name(obj)} carries this fleet's labels but the policy no longer renders it{by}",
        fleet.origin.span,
        path=object_name(obj),
        hint="delete it, or let the GitOps tool prune it",
    )


def desired_form(obj: Mapping[str, Any], schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The desired object as the API server would store it: CRD schema defaults (read from
    the live CRD), or the built-in kinds' server defaults."""
    key = KindKey.of(obj)
    result = apply_defaults(dict(obj), schema)
    default = BUILTIN_DEFAULTS.get((key.group, key.kind)) if schema is None else None
    if default is not None:
        import copy

        result = copy.deepcopy(result)
        default(result)
    return dict(result)


def compare_object(
    manifest: Manifest,
    live: Mapping[str, Any],
    schema: Mapping[str, Any] | None,
    *,
    managers: tuple[str, ...],
    ignore: Sequence[DriftIgnore] = (),
) -> list[Diagnostic]:
    """Findings about one live object against its manifest (read-only mode)."""
    want = desired_form(manifest.obj, schema)
    have = strip_live(live)
    drop_tracking(have, want)
    diffs, extras = compare(want, have, schema=schema)
    if not diffs and not extras:
        return []
    ownership = Ownership(live)
    found = []
    for diff in (attribute(d, ownership) for d in diffs):
        if not Ignores.skips(ignore, diff.path, diff.writers):
            found.append(_changed(manifest, diff, ownership, managers))
    for path, value in extras:
        writers = ownership.under(path)
        # Nobody wrote it: the server or a default filled it in, or the ignore rules allow it.
        if writers and not Ignores.skips(ignore, path, writers):
            diff = FieldDiff("extra", path, display(live, path), live=value, writers=tuple(writers))
            found.append(_extra(manifest, diff, managers))
    return found


def _changed(
    manifest: Manifest, diff: FieldDiff, ownership: Ownership, managers: tuple[str, ...]
) -> Diagnostic:
    name = object_name(manifest)
    secret = manifest.kind == "Secret"
    if diff.change == "missing":
        latest = ownership.latest(excluding=managers)
        by = f"; last updated by {latest}" if latest else ""
        return finding(
            "drift-field-missing",
            f"{name}: {diff.display} is absent (desired {_value(diff.desired, secret)}){by}",
            manifest.origin,
            path=f"{name}: {diff.display}",
        )
    return finding(
        "drift-changed",
        f"{name}: {diff.display}: desired {_value(diff.desired, secret)}, live "
        f"{_value(diff.live, secret)}; changed by {writers_text(diff.writers)}",
        manifest.origin,
        path=f"{name}: {diff.display}",
        hint=_manager_hint(diff, managers),
    )


def _extra(manifest: Manifest, diff: FieldDiff, managers: tuple[str, ...]) -> Diagnostic:
    name = object_name(manifest)
    appliers = [w for w in diff.writers if w.manager in managers and w.operation == "Apply"]
    secret = manifest.kind == "Secret"
    if appliers:
        return finding(
            "drift-removed",
            f"{name}: {diff.display} is no longer in the policy but still live "
            f"({_value(diff.live, secret)}), owned by {writers_text(appliers)}",
            manifest.origin,
            path=f"{name}: {diff.display}",
            hint="sync with pruning so the applier drops the field, or remove it by hand",
        )
    return finding(
        "drift-added",
        f"{name}: {diff.display} = {_value(diff.live, secret)} is not in the policy; set by "
        f"{writers_text(diff.writers)}",
        manifest.origin,
        path=f"{name}: {diff.display}",
        hint="remove it, or add an ignore rule to the Fleet (spec.drift.ignore) if another "
        "team owns it deliberately",
    )


def _manager_hint(diff: FieldDiff, managers: tuple[str, ...]) -> str:
    if diff.writers and all(w.manager in managers for w in diff.writers):
        return "the applier wrote this value: the cluster runs an older render; sync it"
    return "a sync restores the policy's value; change the policy if the live value is right"


def _value(value: Any, secret: bool) -> str:
    """Secret data is never printed."""
    return "<redacted>" if secret else shown(value)
