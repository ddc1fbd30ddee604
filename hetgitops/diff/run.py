"""Diff stage, orchestration: both sides through the render pipeline once, then the policy
impact, drain plan, hazards, findings and object changes between them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from hetgitops import api, compilers
from hetgitops.checks.reuse import NodeReuse
from hetgitops.conformance import output_checks
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.diff import drains as drain_plans
from hetgitops.diff.grant_changes import grant_changes
from hetgitops.diff.hazards import Hazard, hazards, policy_hazards
from hetgitops.diff.hazards.jobs import jobs_unmatched, selection_changed
from hetgitops.diff.hazards.mig_quota import quota_follows
from hetgitops.diff.hazards.sharing import staged
from hetgitops.diff.impact import Impact, cluster_sides, impact
from hetgitops.diff.objects import ObjectChange, ignored, object_changes
from hetgitops.load.changed import changed_values
from hetgitops.load.git_source import Side
from hetgitops.model import schema
from hetgitops.model.policy import Policy
from hetgitops.output.manifests import Manifest

SCHEMA_VERSION = 1


@dataclass
class SideResult:
    label: str
    result: api.Result

    @property
    def valid(self) -> bool:
        return not self.result.failed()

    @property
    def policy(self) -> Policy | None:
        return self.result.policy if self.valid else None

    @property
    def model(self) -> Policy | None:
        """The whole policy even when a semantic check fails (a quota above capacity): what
        the change asks for, which the quota and cost tables show. None when documents were
        dropped (schema errors, broken references): a partial model would read as removals."""
        return self.result.policy if self.valid or self.result.model_complete else None


@dataclass
class DiffResult:
    """Everything `hetgitops diff` reports; formatters print it, the CLI picks the exit code."""

    base: SideResult
    head: SideResult
    impact: Impact
    drains: list[drain_plans.Drain] = field(default_factory=list)
    hazards: list[Hazard] = field(default_factory=list)
    introduced: list[Diagnostic] = field(default_factory=list)
    resolved: list[Diagnostic] = field(default_factory=list)
    objects: list[ObjectChange] = field(default_factory=list)
    ignored: tuple[str, ...] = ()
    live_requests: int = 0  # requests made for the live blast radius (0: not read)
    # Kinds whose live copies could not be read for field ownership (not served, forbidden):
    # their field-co-owned hazards are not judged, and the CLI says so.
    live_unread: tuple[str, ...] = ()

    @property
    def invalid(self) -> bool:
        return not (self.base.valid and self.head.valid)

    @property
    def changed(self) -> bool:
        """Whether the rendered output differs (or a side could not be rendered)."""
        return bool(self.objects) or self.invalid

    @property
    def risks(self) -> list[str]:
        """One line per flagged change: what `--exit-code-on risk` fails on."""
        flags = [f"{h.rule}: {h.subject}" for h in self.hazards]
        flags += [f"drain: Node {d.node}" for d in self.drains]
        flags += [
            f"{c.flag}: {c.topic} {c.subject}" for c in self.impact.changes if c.flag is not None
        ]
        flags += [
            f"new error: {d.rule} at {d.span}"
            for d in self.introduced
            if d.severity is Severity.ERROR and d.consequence_of is None  # not counted twice
        ]
        if self.invalid:
            flags.append("invalid: a side fails validation")
        return flags


def _finding_key(d: Diagnostic) -> tuple[str, int, str]:
    # Lines move with every edit; a finding is "the same" when rule and message are.
    return (d.rule, int(d.severity), d.message)


def findings_delta(
    base: Sequence[Diagnostic], head: Sequence[Diagnostic]
) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """(introduced at head, resolved since base), counted as multisets."""
    old = Counter(map(_finding_key, base))
    new = Counter(map(_finding_key, head))
    introduced, resolved = [], []
    for d in head:
        if old[_finding_key(d)] > 0:
            old[_finding_key(d)] -= 1
        else:
            introduced.append(d)
    for d in base:
        if new[_finding_key(d)] > 0:
            new[_finding_key(d)] -= 1
        else:
            resolved.append(d)
    return introduced, resolved


def _run(
    side: Side,
    options: api.Options,
    memo: output_checks.Memo | None = None,
    clean: schema.CleanMemo | None = None,
    nodes: NodeReuse | None = None,
) -> SideResult:
    """The render pipeline: render's warnings downgrade; an invalid side gets no manifests."""
    result = api.analyse(
        side.loaded,
        options,
        downgrade=options.render_warnings,
        memo=memo,
        clean=clean,
        nodes=nodes,
    )
    if result.failed():
        result.manifests = []
    return SideResult(side.label, result)


def _drain_inputs(side: SideResult, cluster: str) -> list[Manifest]:
    """Node plans and MIG ConfigMaps of one cluster ("" for a single-cluster fleet); compiled
    here when the Fleet leaves those targets out, because the drain plan concerns the nodes
    either way."""
    policy = side.policy
    if policy is None:
        return []
    manifests = [m for m in side.result.manifests if (m.cluster or "") == cluster]
    have = {m.target for m in manifests}
    narrowed = dict(cluster_sides(policy)).get(cluster)
    extra: list[Manifest] = []
    for target in ("nodes", "gpu-operator"):
        if target not in have and narrowed is not None:
            compiled = compilers.COMPILERS[target](narrowed)
            extra.extend(replace(m, cluster=cluster or None) for m in compiled)
    return [*manifests, *extra]


def _clusters(*sides: SideResult) -> list[str]:
    """Every cluster either side renders for ("" alone for single-cluster fleets)."""
    names = {m.cluster or "" for side in sides for m in side.result.manifests}
    for side in sides:
        if side.policy is not None:
            names.update(name for name, _ in cluster_sides(side.policy))
    return sorted(names or {""})


def _of(side: SideResult, cluster: str) -> list[Manifest]:
    return [m for m in side.result.manifests if (m.cluster or "") == cluster]


def _day2(old: SideResult, new: SideResult) -> tuple[list[drain_plans.Drain], list[Hazard]]:
    """The drain plan and hazards, cluster by cluster: the same ConfigMap or LocalQueue name
    on two clusters is two objects. A hazard's subject names its cluster when there are
    several."""
    pools = _node_pools(old.policy, new.policy)
    drains: list[drain_plans.Drain] = []
    found: list[Hazard] = []
    for cluster in _clusters(old, new):
        planned = drain_plans.drain_plan(
            _drain_inputs(old, cluster), _drain_inputs(new, cluster), pools
        )
        drains += planned
        declared = _volcano(old.model, new.model)
        for hazard in hazards(_of(old, cluster), _of(new, cluster), planned, volcano=declared):
            subject = f"{cluster}: {hazard.subject}" if cluster else hazard.subject
            found.append(replace(hazard, subject=subject))
    found += _unmatched_jobs(old, new)
    return drains, found


def _volcano(*policies: Policy | None) -> tuple[int, ...] | None:
    """The highest Volcano version either side declares: the sync may meet either."""
    versions = [p.fleet.volcano for p in policies if p and p.fleet and p.fleet.volcano]
    return max(versions) if versions else None


def _unmatched_jobs(old: SideResult, new: SideResult) -> list[Hazard]:
    """jobs-unmatched, single-cluster fleets: the base policy's job templates are rendered
    only when node selection changed at all (rendering them costs a Jinja2 pass)."""
    policy = old.policy
    if policy is None or policy.clusters:
        return []
    before, after = _of(old, ""), _of(new, "")
    if not selection_changed(before, after):
        return []
    from hetgitops.compilers.jobs.render import compile_jobs  # Jinja2 only when needed

    templates, _ = compile_jobs(policy)
    return sorted(jobs_unmatched(templates, before, after), key=lambda h: h.subject)


def _node_pools(*policies: Policy | None) -> dict[str, str]:
    return {
        node.name: pool.name
        for policy in policies
        if policy is not None
        for pool in policy.pools.values()
        for node in pool.nodes
    }


def compare(
    base: Side, head: Side, options: api.Options, *, ignore: Sequence[str] = ()
) -> DiffResult:
    # A total found at head is reported at a contributor the change touched (issue 7, item 8);
    # changed lines are head's line numbers, so base's findings stay where they are.
    changed = options.changed
    if changed is None:
        changed = changed_values(base.loaded.documents, head.loaded.documents)
    # Most rendered objects are equal on both sides: head takes their output findings from
    # base's (tests/diff/test_shared_checks.py compares this with two separate analyses).
    memo, clean, nodes = output_checks.Memo(), schema.CleanMemo(), NodeReuse()
    old = _run(base, replace(options, changed=None), memo, clean, nodes)
    new = _run(head, replace(options, changed=changed), memo, clean, nodes)
    del memo, clean, nodes
    both = old.model is not None and new.model is not None
    empty = Impact((), (), (), ())
    effect = impact(old.model, new.model) if both else empty
    if old.model is not None and new.model is not None:  # time-boxed quota, on --now's day
        added = tuple(grant_changes(old.model, new.model, options.now))
        effect = replace(effect, changes=(*effect.changes, *added))
    result = DiffResult(old, new, effect)
    result.ignored = tuple(ignore)
    result.introduced, result.resolved = findings_delta(
        old.result.diagnostics, new.result.diagnostics
    )
    if result.invalid:
        return result  # an empty side would read as "everything removed"
    result.drains, found = _day2(old, new)
    found += policy_hazards(old.model, new.model)
    found = quota_follows(old.model, new.model, found)
    result.hazards = staged(old.model, new.model, found)
    changes = object_changes(old.result.manifests, new.result.manifests)
    result.objects = [c for c in changes if not ignored(c, ignore)]
    return result


class LiveNotSupported(Exception):
    """`diff --kubeconfig` on a policy it cannot read live (a usage error)."""


def read_live_radius(result: DiffResult, *, kubeconfig: Any, context: str | None) -> None:
    """Fill each hazard's `live` line from the cluster (read-only, diff/blast.py), and add the
    field-co-owned hazards of the objects the change updates (diff/live_fields.py). The base
    side is what runs in the cluster now: its teams own the namespaces."""
    base = result.base.policy
    if base is None or base.fleet is None:
        return
    if base.clusters:
        raise LiveNotSupported(
            "--kubeconfig reads one cluster; the live blast radius of a multi-cluster policy is "
            "not supported yet: leave --kubeconfig and --context out"
        )
    # Only here: blast pulls in the Kubernetes client (logging, signal), which a diff that
    # does not read the cluster never needs.
    from hetgitops.diff.blast import with_live_radius

    teams = {ns: team.name for team in base.teams.values() for ns in team.namespaces}
    if result.hazards:
        result.hazards, result.live_requests = with_live_radius(
            result.hazards,
            kueue_api_version=base.fleet.kueue_api_version,
            team_of_namespace=teams,
            kubeconfig=kubeconfig,
            context=context,
        )
    from hetgitops.diff.live_fields import co_owned

    # What the GitOps tool syncs: not the node label plans and values files (applied=False).
    # Judged for every change, also one no other hazard flags (a removed quota key).
    before = [m for m in result.base.result.manifests if m.applied]
    after = [m for m in result.head.result.manifests if m.applied]
    found, requests, unread = co_owned(before, after, kubeconfig=kubeconfig, context=context)
    result.hazards = [*result.hazards, *sorted(found, key=lambda h: h.subject)]
    result.live_requests += requests
    result.live_unread = unread
