"""The `core` target: PriorityClasses, team Namespaces and accelerator ResourceQuotas."""

from __future__ import annotations

from small_policy import FLEET, build, objects

from hetgitops.compilers import compile_policy
from hetgitops.plan.namespace_quota import QUOTA_NAME


def _core(**kwargs: str) -> dict[tuple[str, str], dict[str, object]]:
    return objects(compile_policy(build(**kwargs), ("core",)))


def test_priority_class_per_tier() -> None:
    pc = _core()["PriorityClass", "dev"]
    assert pc["apiVersion"] == "scheduling.k8s.io/v1"
    assert (pc["value"], pc["preemptionPolicy"], pc["description"]) == (
        100,
        "Never",
        "Experiments.",
    )
    # false is what the API server omits; writing it would be drift
    assert "globalDefault" not in pc
    assert list(pc) == [
        "apiVersion",
        "kind",
        "metadata",
        "value",
        "preemptionPolicy",
        "description",
    ]


def test_priority_class_asks_both_gitops_tools_to_recreate_it() -> None:
    # value and preemptionPolicy are immutable: a changed tier syncs only by delete + create
    meta = _core()["PriorityClass", "dev"]["metadata"]
    assert isinstance(meta, dict)
    assert meta["annotations"] == {
        "argocd.argoproj.io/sync-options": "Force=true,Replace=true",
        "kustomize.toolkit.fluxcd.io/force": "enabled",
    }


def test_namespace_per_team_namespace_carries_team_label() -> None:
    found = _core()
    namespaces = sorted(name for kind, name in found if kind == "Namespace")
    assert namespaces == ["alpha", "alpha-dev", "beta", "gamma"]
    assert found["Namespace", "alpha-dev"]["metadata"] == {
        "name": "alpha-dev",
        "labels": {
            "app.kubernetes.io/managed-by": "hetgitops",
            "example.io/fleet": "test-cluster",
            "example.io/team": "alpha",
        },
        # Removing a team must not make Argo CD or Flux delete the namespace and everything in
        # it, nor deleting the Application / Kustomization.
        "annotations": {
            "argocd.argoproj.io/sync-options": "Prune=false,Delete=false",
            "kustomize.toolkit.fluxcd.io/prune": "disabled",
        },
    }


def _hard(found: dict[tuple[str, str], dict[str, object]], namespace: str) -> object:
    quota = found["ResourceQuota", f"{namespace}/{QUOTA_NAME}"]
    return quota["spec"]["hard"]  # type: ignore[index]


def test_quota_caps_at_nominal_plus_borrowing_within_the_cohort_tree() -> None:
    found = _core()
    # l40s: 8 + borrowingLimit 4, but nobody else in the tree holds l40s -> 8; h100 borrowing
    # is unbounded, but gamma lends at most the pool's 50% of its 4 -> 4 + 2; the isolated
    # ascend pool stays at its nominal 8.
    assert _hard(found, "alpha") == {
        "requests.huawei.com/Ascend910": "8",
        "requests.nvidia.com/gpu": "14",
        "requests.nvidia.com/mig-1g.10gb": "7",
    }
    assert _hard(found, "alpha") == _hard(found, "alpha-dev")
    # gamma holds no MIG quota; alpha lends the pool's 50% of its 7 instances (3) and of its
    # 4 cards (2), so gamma reaches 4 + 2 cards
    assert _hard(found, "gamma") == {
        "requests.nvidia.com/gpu": "6",
        "requests.nvidia.com/mig-1g.10gb": "3",
    }


def test_quota_without_cohort_is_nominal_only() -> None:
    assert _hard(_core(), "beta") == {"requests.nvidia.com/gpu": "8"}


def test_manifests_point_at_the_namespace_line() -> None:
    manifests = compile_policy(build(), ("core",))
    quota = next(m for m in manifests if m.kind == "ResourceQuota" and m.namespace == "alpha-dev")
    namespace = next(m for m in manifests if m.kind == "Namespace" and m.name == "alpha-dev")
    assert quota.origin == namespace.origin
    assert quota.origin.file == "test.yaml"
    assert quota.origin.line > FLEET.count("\n")


def test_output_is_deterministic() -> None:
    first = compile_policy(build(), ("core",))
    assert first == compile_policy(build(), ("core",))
