"""Compile stage, target `core`: PriorityClasses, team Namespaces and their ResourceQuotas."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hetgitops.compilers import COMPILERS
from hetgitops.compilers.argocd import NEVER_PRUNE, RECREATE_ON_IMMUTABLE
from hetgitops.model.policy import Fleet, Policy, PriorityTier, Team
from hetgitops.output.manifests import Manifest, metadata
from hetgitops.plan import namespace_labels as namespace_labels_plan
from hetgitops.plan.namespace_quota import team_quota

TARGET = "core"


def team_label(fleet: Fleet) -> str:
    """The namespace label a team's ClusterQueue selects on (`plan.namespace_labels`)."""
    return namespace_labels_plan.team_label(fleet)


def priority_class(fleet: Fleet, tier: PriorityTier) -> dict[str, Any]:
    """`value` and `preemptionPolicy` are immutable (Kubernetes pkg/apis/scheduling/validation/
    validation.go, ValidatePriorityClassUpdate: "may not be changed in an update"), so a tier
    change could never sync; the annotations let Argo CD and Flux delete and recreate the class
    (see `RECREATE_ON_IMMUTABLE`, and the `priority-class-recreated` hazard of `diff`)."""
    obj: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": metadata(fleet, tier.name, annotations=RECREATE_ON_IMMUTABLE),
        "value": tier.value,
        "preemptionPolicy": tier.preemption_policy,
    }
    # The API server omits `globalDefault: false`; writing it would show as drift.
    if tier.global_default:
        obj["globalDefault"] = True
    if tier.description:
        obj["description"] = tier.description
    return obj


def namespace(fleet: Fleet, team: Team, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        # Dropping a team (or a namespace) from the policy must not let the GitOps tool delete
        # the Namespace, which would take every workload, PVC and Secret in it along: the object
        # is left behind for a human to remove. Each tool has its own switch and ignores the
        # other's: Argo CD skips pruning with Prune=false and, with Delete=false, keeps the
        # object when the Application itself is deleted; Flux's kustomize-controller skips
        # garbage collection (on prune and on deletion of the Kustomization) of objects
        # annotated prune: disabled.
        "metadata": metadata(
            fleet,
            name,
            labels=namespace_labels_plan.namespace_labels(fleet, team),
            annotations=NEVER_PRUNE,
        ),
    }


def resource_quota(policy: Policy, team: Team, *, fleet: Fleet, name: str) -> dict[str, Any] | None:
    """Caps accelerator requests at what the team's queue can ever admit, so pods created
    around Kueue (no queue label) cannot take more than the team's share (the name and limits
    are `plan.namespace_quota`'s, which explain applies to a job's pods)."""
    quota = team_quota(policy, team)
    if quota is None:
        return None
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": metadata(
            fleet,
            quota.name,
            namespace=name,
            labels={team_label(fleet): team.name},
        ),
        "spec": {"hard": dict(quota.hard)},
    }


def _team_manifests(
    policy: Policy, team: Team, *, fleet: Fleet, claimed: set[str]
) -> Iterator[Manifest]:
    for index, name in enumerate(team.namespaces):
        if name in claimed:  # a namespace listed by two teams is reported by the checks
            continue
        claimed.add(name)
        origin = team.origin.at("spec", "namespaces", index)
        yield Manifest(TARGET, namespace(fleet, team, name), origin)
        quota = resource_quota(policy, team, fleet=fleet, name=name)
        if quota is not None:
            yield Manifest(TARGET, quota, origin)


def compile_core(policy: Policy) -> list[Manifest]:
    fleet = policy.fleet
    if fleet is None:
        return []
    manifests = [
        Manifest(TARGET, priority_class(fleet, tier), tier.origin.span)
        for tier in policy.tiers.values()
    ]
    claimed: set[str] = set()
    for team in policy.teams.values():
        manifests.extend(_team_manifests(policy, team, fleet=fleet, claimed=claimed))
    return manifests


COMPILERS[TARGET] = compile_core
