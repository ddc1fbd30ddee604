"""Check stage, jobs family: settings outside the policy that a profile's job template depends
on. `validate` (the CI gate) reports them, so a render step (`jobs`) never warns about
something the gate passed in silence."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import warning_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.compilers.jobs.targets import KUEUE, VOLCANO, scheduler
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.model.policy import Policy, WorkloadProfile

RULE = "job-integration"
# Kueue 0.19 dropped the training-operator v1 kinds from its default integrations (#12606).
PYTORCHJOB_DEFAULT_OFF = (0, 19)


@rule(RULE, Severity.WARNING)
def job_integration(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A profile's job depends on a scheduler setting the policy does not show: a Kueue
    integration, the volcano target, a level of the Fleet's topology.

    `jobs` renders the template all the same; the job would then be ignored by Kueue, name a
    Volcano queue nobody renders, or lose its topology wish.
    Fails: `framework: pytorchjob` with Kueue 0.19 (PyTorchJob is no default integration
    there); `topology: {preferred: rack}` when the Fleet's topology has no level `rack`.
    Passes: `framework: jobset`; `preferred: rack` with `levels: [zone, rack, hostname]`.
    Fix: enable the integration or target in the Fleet (or Kueue's Configuration), pick
    another framework, or name a level the topology has.
    """
    if policy.fleet is None:
        return
    for profile in policy.profiles.values():
        chosen = scheduler(policy.fleet, profile)
        yield from _integration(policy, profile, chosen)
        yield from _topology(policy, profile, chosen)


def _integration(policy: Policy, profile: WorkloadProfile, chosen: str) -> Iterator[Diagnostic]:
    fleet = policy.fleet
    assert fleet is not None
    kueue = fleet.kueue or (0,)
    if chosen == KUEUE and profile.framework == "pytorchjob" and kueue >= PYTORCHJOB_DEFAULT_OFF:
        yield warning_at(
            RULE,
            "Kueue >= 0.19 ignores PyTorchJob unless `kubeflow.org/pytorchjob` is added to its "
            "Configuration's integrations.frameworks",
            profile.origin,
            "spec",
            "framework",
            hint="enable the integration, or use framework jobset or job",
        )
    if chosen == VOLCANO and VOLCANO not in fleet.targets:
        yield warning_at(
            RULE,
            "the job names a Volcano queue, but the Fleet does not render the volcano target",
            profile.origin,
            "spec",
            "framework",
            hint="add volcano to the Fleet's spec.targets",
        )


def _topology(policy: Policy, profile: WorkloadProfile, chosen: str) -> Iterator[Diagnostic]:
    """Topology wishes the job cannot carry: Kueue needs the level in the Fleet's Topology;
    Volcano would need HyperNodes, which hetgitops does not render (yet)."""
    fleet = policy.fleet
    assert fleet is not None
    levels = (("preferred", profile.topology_preferred), ("required", profile.topology_required))
    for field, level in levels:
        if level is None:
            continue
        if chosen == KUEUE and fleet.topology_name and level in fleet.topology_levels:
            continue
        if chosen != KUEUE:
            why = "is honoured only through Kueue's Topology-Aware Scheduling"
            hint = "drop the topology wish, or queue the job through Kueue"
        elif fleet.topology_name:
            why = "is not a level of the Fleet's topology"
            hint = "name one of its levels: " + ", ".join(fleet.topology_levels)
        else:
            why = "needs a Fleet topology (spec.topology)"
            hint = "add spec.topology to the Fleet, or drop the topology wish"
        yield warning_at(
            RULE,
            f"topology level '{level}' {why}; the job template ignores it",
            profile.origin,
            "spec",
            "topology",
            field,
            hint=hint,
        )
