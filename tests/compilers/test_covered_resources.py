"""A team's `kueue.coveredResources` and a quota entry's `limitsCoverAll` (issue 32 item 5):
the ClusterQueue lists resources as hand-written queues do, through `plan.quota_plan`, and
Reach and explain read the same plan."""

from __future__ import annotations

from typing import Any

from small_policy import FLEET, TEAMS, build, objects

from hetgitops.compilers import compile_policy
from hetgitops.explain import request
from hetgitops.explain.explanation import explain
from hetgitops.model.policy import Policy

GAMMA = "  quotas: [{pool: h100-pool, cards: 4}]\n"
ALPHA_L40S = "    - {pool: l40s-pool, cards: 8, borrowingLimit: 4, lendingLimit: 2}\n"


def _policy(*, gamma: str = "", alpha_l40s: str = ALPHA_L40S) -> Policy:
    assert TEAMS.count(GAMMA) == 1 and TEAMS.count(ALPHA_L40S) == 1
    teams = TEAMS.replace(GAMMA, GAMMA + gamma).replace(ALPHA_L40S, alpha_l40s)
    return build(fleet=FLEET, teams=teams)


def _queue(policy: Policy, team: str) -> dict[str, Any]:
    spec: dict[str, Any] = objects(compile_policy(policy, ("kueue",)))["ClusterQueue", team]["spec"]
    return spec


def _flavor(spec: dict[str, Any], prefix: str) -> dict[str, dict[str, Any]]:
    flavor = next(f for f in spec["resourceGroups"][0]["flavors"] if f["name"].startswith(prefix))
    return {r["name"]: r for r in flavor["resources"]}


def test_the_queue_covers_the_listed_resources_in_their_order() -> None:
    """gamma's pool offers whole cards and 1g.10gb slices: by default both are covered,
    sorted; the list leaves the unclaimed slices out and adds a resource no pool of gamma's
    has, at 0 (Kueue v0.19.2: every flavor lists as many resources as are covered, CEL at
    apis/kueue/v1beta2/clusterqueue_types.go:254, each named as coveredResources names it in
    that order, pkg/webhooks/clusterqueue_webhook.go:331-340)."""
    plain = _queue(_policy(), "gamma")["resourceGroups"][0]["coveredResources"]
    assert plain == ["cpu", "memory", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"]
    listed = "  kueue: {coveredResources: [huawei.com/Ascend910, nvidia.com/gpu]}\n"
    spec = _queue(_policy(gamma=listed), "gamma")
    covered = spec["resourceGroups"][0]["coveredResources"]
    assert covered == ["cpu", "memory", "huawei.com/Ascend910", "nvidia.com/gpu"]
    h100 = _flavor(spec, "h100")
    assert list(h100) == covered
    assert h100["huawei.com/Ascend910"] == {"name": "huawei.com/Ascend910", "nominalQuota": "0"}
    assert h100["nvidia.com/gpu"]["nominalQuota"] == "4"


def test_a_claimed_resource_the_list_leaves_out_is_covered_after_it() -> None:
    listed = "  kueue: {coveredResources: [huawei.com/Ascend910]}\n"
    spec = _queue(_policy(gamma=listed), "gamma")
    covered = spec["resourceGroups"][0]["coveredResources"]
    assert covered == ["cpu", "memory", "huawei.com/Ascend910", "nvidia.com/gpu"]


def test_a_resource_left_uncovered_is_unavailable_in_kueues_words() -> None:
    """Kueue tells a 0 quota from an uncovered resource: a pod set asking a resource no group
    covers stops at "resource R unavailable in ClusterQueue" (flavorassigner.go:810-818); one
    the flavor lists at 0 is tried on the flavor (and here borrows what alpha lends)."""
    asked = request.Request(team="gamma", pool="h100-pool", mig=(("1g.10gb", 1),))
    plain = _policy()
    found = explain(plain, request.from_request(plain, asked))
    assert "unavailable in ClusterQueue" not in found.message
    listed = _policy(gamma="  kueue: {coveredResources: [nvidia.com/gpu]}\n")
    found = explain(listed, request.from_request(listed, asked))
    assert found.message == (
        "couldn't assign flavors to pod set main: "
        "resource nvidia.com/mig-1g.10gb unavailable in ClusterQueue"
    )


def test_limits_cover_all_bounds_the_resources_the_entry_claims_none_of_at_zero() -> None:
    """alpha's l40s flavor lists the h100 slices and the Ascend cards at 0: unlimited by
    default, a borrowingLimit of 0 under limitsCoverAll (no lendingLimit: a 0 quota lends
    nothing); the card resource and cpu keep their limits."""
    entry = ALPHA_L40S.replace("lendingLimit: 2}", "lendingLimit: 2, limitsCoverAll: true}")
    plain, covered = _policy(), _policy(alpha_l40s=entry)
    before, after = (
        _flavor(_queue(plain, "alpha"), "l40s"),
        _flavor(_queue(covered, "alpha"), "l40s"),
    )
    for name in ("nvidia.com/mig-1g.10gb", "huawei.com/Ascend910"):
        assert "borrowingLimit" not in before[name]
        assert after[name] == {"name": name, "nominalQuota": "0", "borrowingLimit": "0"}
    assert after["nvidia.com/gpu"] == before["nvidia.com/gpu"]
    assert after["cpu"] == before["cpu"]
