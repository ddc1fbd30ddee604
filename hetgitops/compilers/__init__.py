"""Compile stage: one module per target system; pure functions Policy -> list[Manifest]."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from hetgitops.diagnostics import register_rules
from hetgitops.model.policy import Policy
from hetgitops.output.manifests import Manifest

Compiler = Callable[[Policy], list[Manifest]]


class CompileError(ValueError):
    """The policy asks for something a target system would reject and no check caught.

    The API turns it into a diagnostic at the Fleet (exit 1), never a traceback (exit 3)."""

    rule = "compile-error"


register_rules(
    "compile",
    {
        "compile-error": "A target compiler refused the policy: a target system would reject "
        "what it asks for, and no check caught it earlier.\n"
        "Fix: change the field the message names; please also report the missing check.",
        "volcano-config": "The Volcano scheduler plugins or Queue tree would be rejected or "
        "silently misread by Volcano (capacity with proportion, guarantee > deserved > "
        "capability, ...).\n"
        "Fix: change Fleet.spec.volcano or the team's volcano settings as the message says.",
    },
)


# Target name -> compiler. Filled by the target modules' imports below; the keys are the CLI's
# --target choices and Fleet.spec.targets values.
COMPILERS: dict[str, Compiler] = {}


def compile_policy(policy: Policy, targets: tuple[str, ...] | None = None) -> list[Manifest]:
    """Every chosen target's manifests; with Cluster documents, one set per cluster (each
    Manifest names its cluster)."""
    if policy.clusters:
        from hetgitops.compilers.multicluster import compile_clusters

        return compile_clusters(policy, targets)
    return compile_single(policy, targets)


def compile_single(
    policy: Policy,
    targets: tuple[str, ...] | None = None,
    *,
    given: Mapping[str, list[Manifest]] | None = None,
    kept: dict[str, list[Manifest]] | None = None,
    keep: frozenset[str] = frozenset(),
) -> list[Manifest]:
    """The chosen targets' manifests, in target order. `given` holds targets' manifests known
    already (diff's head takes some from its base: `checks.reuse`); the `keep` targets' manifests
    are put into `kept`."""
    chosen = targets or (policy.fleet.targets if policy.fleet else tuple(COMPILERS))
    manifests: list[Manifest] = []
    for target in chosen:
        compiler = COMPILERS.get(target)
        if compiler is None:
            continue
        if given is not None and target in given:
            manifests.extend(given[target])
            continue
        compiled = compiler(policy)
        if kept is not None and target in keep:
            kept[target] = compiled
        manifests.extend(compiled)
    return manifests


from hetgitops.compilers import core, kueue  # noqa: E402,F401

# isort: split
from hetgitops.compilers import gpu_operator, koordinator, nodes, volcano  # noqa: E402,F401

# isort: split
from hetgitops.compilers import monitoring  # noqa: E402,F401

# isort: split
from hetgitops.compilers import drift_rbac  # noqa: E402,F401  (needs the others registered)
