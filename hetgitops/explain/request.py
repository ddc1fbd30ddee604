"""Workloads from the command line: a request (team, card or pool, count, split, gang, MIG,
tier) or a WorkloadProfile (its rendered job templates for one team, through the `jobs`
compiler, so `explain --profile` asks exactly what `hetgitops jobs` submits)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction

from hetgitops.compilers.kueue_queues import local_queue_name
from hetgitops.explain.workload import PodSet, Workload, WorkloadError, from_manifest
from hetgitops.model import mig
from hetgitops.model.policy import Policy, Pool, Team
from hetgitops.plan import capacity
from hetgitops.plan.flavors import toleration
from hetgitops.plan.node_labels import domain
from hetgitops.plan.quota_plan import host_quota, kueue_amount, team_plan


@dataclass(frozen=True)
class Request:
    team: str
    gpus: int | None = None
    card: str | None = None
    pool: str | None = None
    per_node: int | None = None
    gang: int | None = None
    mig: tuple[tuple[str, int], ...] = ()
    tier: str | None = None


def _team(policy: Policy, name: str) -> Team:
    team = policy.teams.get(name)
    if team is None:
        raise WorkloadError(f"no team {name!r}; teams: {', '.join(sorted(policy.teams))}")
    return team


def _pools(policy: Policy, request: Request, team: Team) -> list[Pool]:
    if request.pool is not None:
        if request.pool not in policy.pools:
            raise WorkloadError(f"no pool {request.pool!r}; pools: {', '.join(policy.pools)}")
        return [policy.pools[request.pool]]
    if request.card is not None:
        if request.card not in policy.card_types:
            known = ", ".join(policy.card_types)
            raise WorkloadError(f"no card type {request.card!r}; card types: {known}")
        # The team's own pools first, in its flavor order: the request's resource name and
        # cpu share are those of the flavor Kueue gives it, not of the alphabetically first
        # pool of the card type (issue 32).
        of_card = [p for p in policy.pools.values() if p.card_type == request.card]
        held = [plan.pool.name for plan in team_plan(policy, team)]
        return sorted(of_card, key=lambda p: held.index(p.name) if p.name in held else len(held))
    return [plan.pool for plan in team_plan(policy, team)]


def _resource(policy: Policy, pools: list[Pool], profile: str | None) -> str:
    """The resource a pod asks: the MIG profile's, else the first pool's whole (or shared)
    cards (how the device plugin names them there)."""
    if not pools:
        raise WorkloadError("no pool of that card type")
    card = policy.card_types[pools[0].card_type]
    if profile is not None:
        single = capacity.mig_strategy(policy.fleet) == "single"
        return card.resource_name if single else mig.resource_name(profile)
    return capacity.main_resource(pools[0], card)


def _largest(policy: Policy, pools: list[Pool]) -> int:
    return max((n.cards for p in pools for n in p.nodes), default=1)


def from_request(policy: Policy, request: Request) -> Workload:
    team = _team(policy, request.team)
    pools = _pools(policy, request, team)
    if request.mig:
        (profile, units), *rest = request.mig
        if rest:
            raise WorkloadError("one --mig PROFILE=N per request")
        per_pod_default = 1
    else:
        profile, units = None, request.gpus or 1
        per_pod_default = min(units, _largest(policy, pools))
    resource = _resource(policy, pools, profile)
    if request.gang:
        if units % request.gang:
            raise WorkloadError(f"{units} units do not split into a gang of {request.gang} pods")
        per_pod = units // request.gang
    else:
        per_pod = request.per_node or per_pod_default
    if per_pod <= 0 or units % per_pod:
        raise WorkloadError(f"{units} units do not split into pods of {per_pod}")
    pods = units // per_pod
    pool = pools[0]
    card = policy.card_types[pool.card_type]
    weight = capacity.unit_weight(pool, card, resource, policy.fleet)
    cpu, memory = host_quota(policy, team, Fraction(per_pod) * weight, pool.name)
    requests = {
        "cpu": kueue_amount("cpu", cpu),
        "memory": kueue_amount("memory", memory),
        resource: per_pod,
    }
    prefix = domain(policy)
    selector = {}
    if request.pool is not None:
        selector[f"{prefix}/pool"] = request.pool
    elif request.card is not None:
        selector[f"{prefix}/card-type"] = request.card
    tolerations = []
    for each in pools if (request.pool or request.card) else []:
        for taint in each.taints:
            if toleration(taint) not in tolerations:
                tolerations.append(toleration(taint))
    fleet = policy.fleet
    namespace = team.namespaces[0] if team.namespaces else team.name
    what = f"{units} {resource}" + (f" in {pods} pods" if pods > 1 else "")
    return Workload(
        kind="Request",
        name=what,
        namespace=namespace,
        pod_sets=(PodSet("main", pods, requests, selector, tuple(tolerations)),),
        queue=local_queue_name(fleet, team) if fleet else None,
        tier=request.tier,
        team=team.name,
    )


def from_profile(policy: Policy, profile_name: str, team_name: str) -> list[Workload]:
    """The job templates `hetgitops jobs` renders for the team and profile (one per card
    type); none when routing leaves the pair out (`explain` then says why)."""
    if profile_name not in policy.profiles:
        known = ", ".join(sorted(policy.profiles))
        raise WorkloadError(f"no profile {profile_name!r}; profiles: {known}")
    _team(policy, team_name)
    from hetgitops.compilers.jobs.render import compile_jobs  # Jinja2: only for --profile

    manifests, _ = compile_jobs(policy, profiles=[profile_name], teams=[team_name])
    found = []
    for manifest in manifests:
        found.append(dataclasses.replace(from_manifest(manifest.obj), team=team_name))
    return found


def profile_request(policy: Policy, profile_name: str, team_name: str) -> Request:
    """What the profile asks, as a request on its first eligible card (for a pair `jobs`
    leaves out: Kueue's verdict on it says why)."""
    profile = policy.profiles[profile_name]
    cards = profile.card_types or tuple(policy.card_types)
    team = _team(policy, team_name)
    held = {plan.pool.card_type for plan in team_plan(policy, team)}
    card = next((c for c in cards if c in held), cards[0] if cards else None)
    per_pod = profile.cards_per_node
    if profile.mig_profile is not None:
        return Request(
            team_name,
            card=card,
            mig=((profile.mig_profile, profile.gang),),
            per_node=1,
            tier=profile.tier,
        )
    return Request(
        team_name, gpus=per_pod * profile.gang, card=card, per_node=per_pod, tier=profile.tier
    )


def parse_mig(values: tuple[str, ...]) -> tuple[tuple[str, int], ...]:
    found = []
    for value in values:
        name, sep, count = value.partition("=")
        if not sep or not count.isdigit():
            raise WorkloadError(f"--mig {value!r}: expected PROFILE=N, e.g. 1g.10gb=4")
        found.append((name, int(count)))
    return tuple(found)


__all__ = ["Request", "from_profile", "from_request", "parse_mig", "profile_request"]
