"""Plan stage: which ResourceClaimTemplates the job templates claim, and in which namespaces.

One fact for the three readers: the `jobs` compiler writes each claim into its pod template,
the `dra` compiler renders one template per (namespace, content), and explain asks whether
the template a pod claims exists where Kueue looks for it (the pod's own namespace)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hetgitops.model.policy import Policy, derived
from hetgitops.plan import dra
from hetgitops.plan.job_targets import JobTarget, Selector


@dataclass(frozen=True)
class Claimed:
    """A template claimed in one namespace by one job target."""

    namespace: str
    name: str
    spec: dict[str, Any]
    target: JobTarget


def pod_claim(target: JobTarget) -> tuple[str, dict[str, Any]] | None:
    """(template name, template spec) a job template's pods claim, on the claims path."""
    route = target.route
    if not dra.claims(route.pool):
        return None
    profile = dra.mig_profile_of(route.card, route.resource)
    spec = dra.claim_template_spec(dra.class_name(route.card, profile), route.per_pod)
    return dra.claim_template_name(spec), spec


def claimed(policy: Policy) -> Iterator[Claimed]:
    """Every namespace of each team whose job templates claim, with the template, in the
    policy's order (repeats included)."""
    selector = Selector(policy)
    for profile in policy.profiles.values():
        for target in selector.targets(profile, None):
            claim = pod_claim(target)
            if claim is None:
                continue
            name, spec = claim
            for namespace in target.team.namespaces or (target.team.name,):
                yield Claimed(namespace, name, spec, target)


def rendered_claim_templates(policy: Policy) -> frozenset[tuple[str, str]]:
    """(namespace, name) of every ResourceClaimTemplate the render writes: a pod claims a
    template in its own namespace only (Kueue reads it there, and finds nothing elsewhere)."""
    return derived(
        policy,
        ("dra-rendered-claim-templates",),
        lambda: frozenset((c.namespace, c.name) for c in claimed(policy)),
    )
