"""Plan stage: the ResourceQuota the `core` target writes in each team namespace: its name
and its hard limits, exactly as rendered. Each accelerator is capped at what the team's queue
can ever admit (`quota_plan.admissible`; a DRA claims resource by the devices of its
DeviceClass), or, where the team says so (`Team.spec.namespaceQuota.accelerators`, as a
cluster's own quota had it), only the accelerators listed, each at its cap; beside them the
limits an adopted quota already had (`Team.spec.namespaceQuota.hard`: cpu, pods, ...).
compilers/core.py spells it as an object; explain applies it to the pods a job creates; the
`namespace-quota-below-reach` check compares it with the reach; all read this one fact.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hetgitops.model import quantities
from hetgitops.model.policy import Policy, Team, derived
from hetgitops.plan import dra
from hetgitops.plan.quota_plan import admissible

QUOTA_NAME = "hetgitops-accelerators"
TARGET = "core"


@dataclass(frozen=True)
class NamespaceQuota:
    """One team's ResourceQuota: `hard` maps the quota's keys (`requests.nvidia.com/gpu`,
    `cpu`, `pods`, ...) to canonical quantities, sorted by key, as `spec.hard` says them."""

    name: str
    team: str
    hard: Mapping[str, str]


def quota_key(policy: Policy, resource: str) -> str:
    """`requests.<resource>`, or for a DRA claims resource the devices of its DeviceClass."""
    return dra.namespace_quota_key(policy, resource) or f"requests.{resource}"


def team_quota(policy: Policy, team: Team) -> NamespaceQuota | None:
    """The quota of each of the team's namespaces; None when the team can admit no
    accelerator (then no quota is written, and an adopted quota's other limits go with it)."""
    caps = admissible(policy, team)
    if not caps:
        return None
    # An adopted quota's other limits (cpu, pods, ...) are kept; the accelerators are ours.
    hard = {k: quantities.normalize(v) for k, v in team.namespace_quota_hard.items()}
    hard.update(
        {
            quota_key(policy, res): quantities.normalize(n)
            for res, n in caps_of(policy, team).items()
        }
    )
    return NamespaceQuota(
        team.namespace_quota_name or QUOTA_NAME, team.name, dict(sorted(hard.items()))
    )


def caps_of(policy: Policy, team: Team) -> dict[str, str]:
    """Per accelerator resource, the cap the quota puts on its requests: the team's own
    (`namespaceQuota.accelerators`), else what its queue can ever admit."""
    if team.namespace_quota_accelerators is not None:
        return dict(team.namespace_quota_accelerators)
    return {res: str(n) for res, n in admissible(policy, team).items()}


def below_reach(policy: Policy, team: Team) -> dict[str, tuple[str, int]]:
    """The accelerators the team's own caps hold below what its queue can admit: resource ->
    (the cap, the reach). Kueue admits up to the reach; the API server refuses pods past the cap."""
    if team.namespace_quota_accelerators is None:
        return {}
    found = {}
    for res, most in admissible(policy, team).items():
        cap = team.namespace_quota_accelerators.get(res)
        if cap is not None and quantities.value_of(cap) < most:
            found[res] = (cap, most)
    return found


def owner(policy: Policy, namespace: str) -> Team | None:
    """The team whose Namespace (and quota) the render writes: the first team listing it (a
    namespace two teams list is reported by the checks and rendered once, for the first)."""
    return next((t for t in policy.teams.values() if namespace in t.namespaces), None)


def of_namespace(policy: Policy, namespace: str | None) -> NamespaceQuota | None:
    """The quota the render writes in `namespace`: None without the core target, outside the
    teams' namespaces, or for a team that can admit no accelerator."""
    fleet = policy.fleet
    if fleet is None or TARGET not in fleet.targets or namespace is None:
        return None
    team = owner(policy, namespace)
    if team is None:
        return None
    return derived(policy, ("namespace_quota", team.name), lambda: team_quota(policy, team))
