"""Compile stage, part of target `kueue`: the Dynamic Resource Allocation objects of the pools on
NVIDIA's DRA driver (docs/targets/dra.md): a DeviceClass per card type and MIG profile, the Kueue
Configuration's `resources.deviceClassMappings`, and per-namespace ResourceClaimTemplates for
the job templates. A fleet without DRA pools renders none of them.

The facts (names, CEL, quota resources, template specs) are `plan/dra.py`'s; this module only
spells them as objects.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hetgitops.compilers.jobs.targets import JobTarget, Selector
from hetgitops.model.policy import Fleet, Policy, derived
from hetgitops.output.manifests import Manifest, metadata
from hetgitops.plan import dra

TARGET = "kueue"
RESOURCE_API = "resource.k8s.io/v1"
# Kueue v0.19.2's Configuration API (apis/config/v1beta2/configuration_types.go:604).
KUEUE_CONFIG_API = "config.kueue.x-k8s.io/v1beta2"
CONFIGURATION_FILE = "kueue-configuration-dra.yaml"
CLAIM = "gpu"


def device_class(fleet: Fleet, fact: dra.DeviceClassFact) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": fact.cel}}]}
    if fact.extended_resource_name:
        spec["extendedResourceName"] = fact.extended_resource_name
    return {
        "apiVersion": RESOURCE_API,
        "kind": "DeviceClass",
        "metadata": metadata(fleet, fact.name),
        "spec": spec,
    }


def configuration(policy: Policy) -> dict[str, Any]:
    """The fragment to merge into Kueue's controller_manager_config.yaml; Kueue reads it once
    at start-up (pkg/dra/mapper.go:44-45), so a change needs a restart of its manager."""
    mappings = [
        {"name": name, "deviceClassNames": list(classes)} for name, classes in dra.mappings(policy)
    ]
    return {
        "apiVersion": KUEUE_CONFIG_API,
        "kind": "Configuration",
        "resources": {"deviceClassMappings": mappings},
    }


def pod_claim(target: JobTarget) -> tuple[str, dict[str, Any]] | None:
    """(template name, template spec) a job template's pods claim, on the claims path."""
    route = target.route
    if not dra.claims(route.pool):
        return None
    profile = dra.mig_profile_of(route.card, route.resource)
    spec = dra.claim_template_spec(dra.class_name(route.card, profile), route.per_pod)
    return dra.claim_template_name(spec), spec


def _claimed(policy: Policy) -> Iterator[tuple[str, str, dict[str, Any], JobTarget]]:
    """(namespace, template name, spec, the job target claiming it) for every namespace of each
    team whose job templates claim, in the policy's order (repeats included)."""
    selector = Selector(policy)
    for profile in policy.profiles.values():
        for target in selector.targets(profile, None):
            claim = pod_claim(target)
            if claim is None:
                continue
            name, spec = claim
            for namespace in target.team.namespaces or (target.team.name,):
                yield namespace, name, spec, target


def rendered_claim_templates(policy: Policy) -> frozenset[tuple[str, str]]:
    """(namespace, name) of every ResourceClaimTemplate the render writes: a pod claims a
    template in its own namespace only (Kueue reads it there, and finds nothing elsewhere)."""
    return derived(
        policy,
        ("dra-rendered-claim-templates",),
        lambda: frozenset((ns, name) for ns, name, _, _ in _claimed(policy)),
    )


def claim_templates(policy: Policy, fleet: Fleet) -> Iterator[Manifest]:
    """One ResourceClaimTemplate per (namespace, content) the job templates claim."""
    seen: dict[tuple[str, str], Manifest] = {}
    for namespace, name, spec, target in _claimed(policy):
        obj = {
            "apiVersion": RESOURCE_API,
            "kind": "ResourceClaimTemplate",
            "metadata": metadata(fleet, name, namespace=namespace),
            "spec": spec,
        }
        seen.setdefault((namespace, name), Manifest(TARGET, obj, target.route.pool.origin.span))
    for key in sorted(seen):
        yield seen[key]


def dra_manifests(policy: Policy, fleet: Fleet) -> list[Manifest]:
    facts = dra.device_classes(policy)
    if not facts:
        return []
    out = [
        Manifest(TARGET, device_class(fleet, f), f.pools[0].origin.at("spec", "devices"))
        for f in facts
    ]
    if dra.mappings(policy):
        origin = next(f.pools[0].origin.at("spec", "devices") for f in facts)
        out.append(
            Manifest(
                TARGET, configuration(policy), origin, applied=False, filename=CONFIGURATION_FILE
            )
        )
    out.extend(claim_templates(policy, fleet))
    return out
