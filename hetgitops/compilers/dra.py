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

from hetgitops.model.policy import Fleet, Policy
from hetgitops.output.manifests import Manifest, metadata
from hetgitops.plan import dra, dra_claims

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


def claim_templates(policy: Policy, fleet: Fleet) -> Iterator[Manifest]:
    """One ResourceClaimTemplate per (namespace, content) the job templates claim."""
    seen: dict[tuple[str, str], Manifest] = {}
    for claim in dra_claims.claimed(policy):
        obj = {
            "apiVersion": RESOURCE_API,
            "kind": "ResourceClaimTemplate",
            "metadata": metadata(fleet, claim.name, namespace=claim.namespace),
            "spec": claim.spec,
        }
        origin = claim.target.route.pool.origin.span
        seen.setdefault((claim.namespace, claim.name), Manifest(TARGET, obj, origin))
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
