"""Ray rules: pod-set limit (with the submitter), invisible accelerators, KubeRay name limits,
autoscaling without elastic slicing, heterogeneous groups under Volcano."""

from __future__ import annotations

import datetime as dt

RAYJOB = """\
kind: WorkloadProfile
metadata:
  name: rl
spec:
  framework: rayjob
  tier: training
  requirements:
    cardsPerNode: 1
  image: pytorch
  command: [python, rl.py]
"""


def _groups(count: int) -> str:
    lines = "".join(
        f"      - {{name: g{i}, cardType: {'h100-80gb' if i % 2 else 'l40s-48gb'}}}\n"
        for i in range(count)
    )
    return "  ray:\n    workerGroups:\n" + lines


def _errors(policy) -> list[str]:
    """Errors of any rule: a passing Ray profile must validate clean (the schema takes it)."""
    return [f"{d.rule}: {d.message}" for d in policy.diagnostics() if d.severity.name == "ERROR"]


def _profile(framework: str = "rayjob", ray: str = "", name: str = "rl") -> str:
    text = RAYJOB.replace("framework: rayjob", f"framework: {framework}")
    return text.replace("name: rl\n", f"name: {name}\n") + ray


def test_seventeen_groups_and_a_submitter_pass_the_webhook_but_not_the_workload(policy):
    policy.add("profiles.yaml", _profile(ray=_groups(17)))
    assert policy.spans("ray-pod-sets") == [policy.pos("profiles.yaml", "    ^workerGroups:")]
    (found,) = policy.findings("ray-pod-sets")
    assert "19 Kueue pod sets" in found.message and "refused later" in found.message


def test_sixteen_groups_with_a_submitter_and_seventeen_without_pass(policy):
    policy.add("profiles.yaml", _profile(ray=_groups(16)))
    assert policy.spans("ray-pod-sets") == []
    assert _errors(policy) == []
    policy.add("profiles.yaml", _profile("raycluster", _groups(17), name="cl"))
    policy.add(
        "profiles.yaml", _profile(ray=_groups(17) + "    submissionMode: HTTPMode\n", name="h")
    )
    assert policy.spans("ray-pod-sets") == []
    policy.add("profiles.yaml", _profile("raycluster", _groups(18), name="big"))
    assert len(policy.spans("ray-pod-sets")) == 1


MLU = """\
kind: CardType
metadata:
  name: mlu370
spec:
  vendor: cambricon
  model: MLU370-X8
  resourceName: cambricon.com/mlu
  memoryGiB: 48
  lifecycle: production
  performance: {coefficient: 0.5, reference: A100-SXM4-80GB, coefficientSet: "2026.2"}
  cost: {perCardHour: 1.0}
  images: {pytorch: "pt:mlu"}
"""
MLU_POOL = """\
kind: Pool
metadata:
  name: mlu-pool
spec:
  cardType: mlu370
  purpose: training
  cardsPerNode: 8
  nodes:
    - {names: "mlu-[01:02]", zone: zone-c, rack: rack-c1}
"""


def _mlu(policy) -> None:
    policy.add("cards.yaml", MLU).add("pools.yaml", MLU_POOL)
    policy.replace(
        "teams.yaml",
        "    - {pool: l40s-infer, cards: 8}\n  tiers: [training]",
        "    - {pool: l40s-infer, cards: 8}\n    - {pool: mlu-pool, cards: 8}\n  tiers: [training]",
    )


def test_an_accelerator_ray_cannot_see_without_a_ray_resource_is_an_error(policy):
    _mlu(policy)
    policy.add("profiles.yaml", _profile("raycluster", "  cardTypes: [mlu370]\n"))
    (found,) = policy.findings("ray-accelerator-invisible")
    assert str(found.span) == policy.pos("profiles.yaml", "  framework: ^raycluster")
    assert "cambricon.com/mlu" in found.message and "resourceName" in found.hint


def test_a_named_ray_resource_or_a_gpu_passes(policy):
    _mlu(policy)
    ray = "  cardTypes: [mlu370]\n  ray: {resourceName: MLU}\n"
    policy.add("profiles.yaml", _profile("raycluster", ray))
    policy.add("profiles.yaml", _profile("raycluster", "  cardTypes: [h100-80gb]\n", "gpu"))
    assert policy.spans("ray-accelerator-invisible") == []
    assert _errors(policy) == []


def test_names_over_kuberay_limits(policy):
    # 39 + "-h100-80gb" = 49 > 47 for a RayJob; the RayCluster limit is 53.
    long = "a" * 39
    policy.add("profiles.yaml", _profile(name=long))
    policy.add("profiles.yaml", _profile("raycluster", name="c" + long))
    spans = policy.spans("ray-name-too-long")
    assert spans == sorted(
        [
            policy.pos("profiles.yaml", f"  name: ^{long}\n"),  # rl-job on both cards
            policy.pos("profiles.yaml", f"  name: ^{long}\n"),
        ]
    )
    (one,) = {d.message for d in policy.findings("ray-name-too-long") if "h100" in d.message}
    assert "49 characters" in one and "at most 47" in one


def test_a_short_name_passes(policy):
    policy.add("profiles.yaml", _profile())
    assert policy.spans("ray-name-too-long") == []
    assert _errors(policy) == []


def test_autoscaling_without_elastic_slicing(policy):
    policy.add("profiles.yaml", _profile(ray="  ray: {autoscaling: true}\n"))
    assert policy.spans("ray-autoscaling-without-slicing") == [
        policy.pos("profiles.yaml", "  ray: {autoscaling: ^true}")
    ]


def test_autoscaling_with_elastic_slicing_passes_on_kueue_0_19_but_not_0_17(policy):
    policy.add("profiles.yaml", _profile(ray="  ray: {autoscaling: true, elasticSlicing: true}\n"))
    assert policy.spans("ray-autoscaling-without-slicing") == []
    assert _errors(policy) == []
    policy.replace("fleet.yaml", 'kueue: "0.19.2"', 'kueue: "0.17.0"')
    (found,) = policy.findings("ray-autoscaling-without-slicing")
    assert "0.17" in found.message


def test_heterogeneous_groups_under_volcano_warn(policy):
    policy.replace("fleet.yaml", "targets: [core, kueue, volcano,", "targets: [core, volcano,")
    policy.add("profiles.yaml", _profile(ray=_groups(2)))
    assert policy.spans("ray-volcano-mixed") == [policy.pos("profiles.yaml", "    ^workerGroups:")]
    policy.replace("fleet.yaml", "targets: [core, volcano,", "targets: [core, kueue, volcano,")
    assert policy.spans("ray-volcano-mixed") == []


def test_the_rules_are_quiet_on_a_policy_without_ray(policy):
    from hetgitops.checks import FAMILIES

    assert "ray" in FAMILIES
    found = {d.rule for d in policy.diagnostics(dt.date(2026, 12, 1))}
    assert not {r for r in found if r.startswith("ray-")}


EXTRA_POOL = """\
kind: Pool
metadata:
  name: h100-extra
spec:
  cardType: h100-80gb
  purpose: training
  cardsPerNode: 8
  nodes:
    - {names: "gpu-h100-[03:04]", zone: zone-a, rack: rack-a2}
"""


def test_a_head_pool_that_is_undefined_or_not_held_is_an_error(policy):
    policy.add("pools.yaml", EXTRA_POOL)
    policy.add("profiles.yaml", _profile(ray="  ray: {head: {pool: nowhere}}\n"))
    policy.add("profiles.yaml", _profile(ray="  ray: {head: {pool: h100-extra}}\n", name="rl2"))
    assert policy.spans("ray-head-pool") == sorted(
        [
            policy.pos("profiles.yaml", "  ray: {head: {pool: ^h100-extra}}"),
            policy.pos("profiles.yaml", "  ray: {head: {pool: ^nowhere}}"),
        ]
    )
    held = [d for d in policy.findings("ray-head-pool") if "h100-extra" in d.message]
    assert "team(s) ml hold no quota" in held[0].message


def test_a_head_pool_the_team_holds_passes(policy):
    policy.add("profiles.yaml", _profile(ray="  ray: {head: {pool: l40s-infer}}\n"))
    assert policy.spans("ray-head-pool") == []
    assert _errors(policy) == []
