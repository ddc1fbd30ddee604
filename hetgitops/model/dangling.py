"""Model stage, dangling references: what the policy cannot know because one of its own names
does not resolve (a tier, pool or card type typo, a MIG profile the card lacks).

`unresolved-reference` and `mig-profile-unknown` report the typo; a rule whose conclusion
rests on the object that holds it ("no team may use tier x" while a team names a tier that
does not exist, "no pool of card y" while a pool's card type is a typo, "pool p offers no
1g.10gb" while p's layout is invalid) reports a consequence of that finding instead of a
second mistake. Each fact carries the `Cause` naming the finding exactly as the rule makes it.
"""

from __future__ import annotations

from dataclasses import replace

from hetgitops.diagnostics import Cause
from hetgitops.model import mig
from hetgitops.model.policy import Policy, Pool

UNRESOLVED = "unresolved-reference"
MIG_PROFILE_UNKNOWN = "mig-profile-unknown"


def with_dangling(policy: Policy) -> Policy:
    """`policy` with its unknown facts extended by its own unresolved names."""
    unknown = policy.unknown
    team_tiers: dict[str, Cause] = {}
    team_pools: dict[str, Cause] = {}
    for team in policy.teams.values():
        for index, tier in enumerate(team.tiers):
            if tier not in policy.tiers:
                span = team.origin.at("spec", "tiers", index)
                cause = unknown.object("PriorityTier", tier) or Cause(span, UNRESOLVED)
                team_tiers.setdefault(team.name, cause)
        for quota in team.quotas:
            if quota.pool not in policy.pools:
                cause = unknown.object("Pool", quota.pool) or Cause(
                    quota.origin.at("pool"), UNRESOLVED
                )
                team_pools.setdefault(team.name, cause)
    pool_cards: dict[str, Cause] = {}
    pools = dict(unknown.pools)
    for pool in policy.pools.values():
        if pool.card_type not in policy.card_types:
            span = pool.origin.at("spec", "cardType")
            cause = unknown.object("CardType", pool.card_type) or Cause(span, UNRESOLVED)
            pool_cards[pool.name] = cause
            pools.setdefault(pool.name, cause)
        elif (layout := _unknown_layout(policy, pool)) is not None:
            pools.setdefault(pool.name, layout)
    extended = replace(
        unknown, pools=pools, team_tiers=team_tiers, team_pools=team_pools, pool_cards=pool_cards
    )
    return replace(policy, unknown=extended)


def _unknown_layout(policy: Policy, pool: Pool) -> Cause | None:
    """The first profile of the pool's MIG layout its card lacks (mig-profile-unknown)."""
    card = policy.card_types[pool.card_type]
    table = mig.TABLES.get(card.mig_table) if card.mig_table else None
    if table is None:
        return None
    for device in pool.mig:
        for profile in device.profiles:
            if mig.gpu_instance_profile(profile) not in table.profiles:
                where = device.origin.child("profiles")
                return Cause(where.key_at(profile), MIG_PROFILE_UNKNOWN)
    return None
