"""The `jobs` compiler's Ray templates: heterogeneous worker groups on their card types, the
head's placement, Ray resources for accelerators KubeRay does not map, Kueue's and KubeRay's
rules by construction, the Volcano path."""

from __future__ import annotations

from typing import Any

import job_policy

from hetgitops.compilers.jobs.render import compile_jobs
from hetgitops.diagnostics import Severity
from hetgitops.plan.ray import ray_resource_name, ray_sees, ray_sees_gpu

DELTA = """\
apiVersion: hetgitops.io/v1alpha1
kind: Team
metadata: {name: delta}
spec:
  namespaces: [delta]
  quotas:
    - {pool: h100-infer, cards: 8}
    - {pool: l40s-a, cards: 16}
  tiers: [train]
"""
MIXED = """\
apiVersion: hetgitops.io/v1alpha1
kind: WorkloadProfile
metadata: {name: rlhf}
spec:
  framework: rayjob
  tier: train
  teams: [delta]
  # 4: two of an h100-infer node's eight cards are MIG-partitioned
  requirements: {cardsPerNode: 4}
  image: pytorch
  command: [python, rlhf.py]
  env: {NCCL_SOCKET_IFNAME: eth0}
  ray:
    workerGroups:
      - {name: trainer, cardType: h100, replicas: 1}
      - {name: rollout, cardType: l40s, replicas: 2}
"""
NPU = """\
apiVersion: hetgitops.io/v1alpha1
kind: WorkloadProfile
metadata: {name: ray-npu}
spec:
  framework: raycluster
  tier: train
  requirements: {cardsPerNode: 8, vendors: [huawei]}
  image: pytorch
"""
SERVE = """\
apiVersion: hetgitops.io/v1alpha1
kind: WorkloadProfile
metadata: {name: rs}
spec:
  framework: rayservice
  tier: serve
  teams: [gamma]
  requirements: {cardsPerNode: 1, vendors: [nvidia]}
  image: vllm
  port: 8000
  ray: {serveConfigV2: "applications: []"}
"""


def _jobs(extra: str, **kwargs: Any) -> dict[str, dict[str, Any]]:
    manifests, found = compile_jobs(job_policy.build(extra=extra, **kwargs))
    assert [d.message for d in found if d.severity == Severity.ERROR] == []
    return {m.filename or "": dict(m.obj) for m in manifests}


def _cluster(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]
    return spec.get("rayClusterSpec") or spec.get("rayClusterConfig") or spec


def _groups(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {g["groupName"]: g for g in _cluster(obj)["workerGroupSpecs"]}


def test_heterogeneous_groups_each_on_its_card_type_in_one_rayjob() -> None:
    jobs = _jobs(DELTA + "---\n" + MIXED)
    assert [f for f in jobs if f.startswith("rlhf/")] == ["rlhf/delta/h100+l40s.yaml"]
    job = jobs["rlhf/delta/h100+l40s.yaml"]
    assert job["kind"] == "RayJob" and job["metadata"]["name"] == "rlhf"
    groups = _groups(job)
    assert list(groups) == ["trainer", "rollout"]
    trainer, rollout = (groups[n]["template"]["spec"] for n in ("trainer", "rollout"))
    assert trainer["nodeSelector"] == {
        "example.io/card-type": "h100",
        "example.io/pool": "h100-infer",
    }
    assert rollout["nodeSelector"] == {"example.io/card-type": "l40s", "example.io/pool": "l40s-a"}
    assert rollout["tolerations"] == [
        {"key": "example.io/pool", "operator": "Equal", "value": "l40s-a", "effect": "NoSchedule"}
    ]
    assert "tolerations" not in trainer
    assert trainer["containers"][0]["image"] == "pt:h100"
    assert rollout["containers"][0]["image"] == "pt:l40s"
    assert trainer["containers"][0]["env"] == [{"name": "NCCL_SOCKET_IFNAME", "value": "eth0"}]
    assert trainer["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "4"
    # fixed replicas: KubeRay requires min and max without autoscaling (validation.go:124)
    assert [(g["replicas"], g["minReplicas"], g["maxReplicas"]) for g in groups.values()] == [
        (1, 1, 1),
        (2, 2, 2),
    ]


def test_kueue_rules_are_met_by_construction() -> None:
    job = _jobs(DELTA + "---\n" + MIXED)["rlhf/delta/h100+l40s.yaml"]
    spec = job["spec"]
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "delta"
    assert spec["shutdownAfterJobFinishes"] is True and spec["suspend"] is True
    assert "clusterSelector" not in spec and "enableInTreeAutoscaling" not in spec["rayClusterSpec"]
    assert spec["submissionMode"] == "K8sJobMode" and spec["entrypoint"] == "python rlhf.py"


def test_the_submitter_pod_sits_beside_the_head() -> None:
    stated = MIXED + "    head: {pool: l40s-a}\n"
    spec = _jobs(DELTA + "---\n" + stated)["rlhf/delta/h100+l40s.yaml"]["spec"]
    submitter = spec["submitterPodTemplate"]["spec"]
    head = spec["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    assert submitter["nodeSelector"] == head["nodeSelector"]
    assert submitter["tolerations"] == head["tolerations"] != []
    assert submitter["restartPolicy"] == "Never"
    (container,) = submitter["containers"]
    assert "command" not in container  # KubeRay writes `ray job submit ...`
    assert container["resources"]["limits"] == {"cpu": "500m", "memory": "512Mi"}
    http = stated + "    submissionMode: HTTPMode\n"
    spec = _jobs(DELTA + "---\n" + http)["rlhf/delta/h100+l40s.yaml"]["spec"]
    assert "submitterPodTemplate" not in spec


def test_the_cpu_only_head_sits_in_the_first_groups_pool_or_a_stated_one() -> None:
    job = _jobs(DELTA + "---\n" + MIXED)["rlhf/delta/h100+l40s.yaml"]
    head = job["spec"]["rayClusterSpec"]["headGroupSpec"]
    pod = head["template"]["spec"]
    assert pod["nodeSelector"] == {"example.io/card-type": "h100", "example.io/pool": "h100-infer"}
    assert set(pod["containers"][0]["resources"]["limits"]) == {"cpu", "memory"}
    assert head["rayStartParams"] == {"num-cpus": "0"}
    assert pod["containers"][0]["livenessProbe"]["tcpSocket"] == {"port": 6379}
    stated = MIXED + "    head: {pool: l40s-a, cpu: 4, memory: 32Gi}\n"
    job = _jobs(DELTA + "---\n" + stated)["rlhf/delta/h100+l40s.yaml"]
    pod = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"example.io/card-type": "l40s", "example.io/pool": "l40s-a"}
    assert pod["tolerations"] == [
        {"key": "example.io/pool", "operator": "Equal", "value": "l40s-a", "effect": "NoSchedule"}
    ]
    assert pod["containers"][0]["resources"]["limits"] == {"cpu": "4", "memory": "32Gi"}


def test_a_team_missing_one_groups_card_gets_no_template() -> None:
    one_card = DELTA.replace("    - {pool: l40s-a, cards: 16}\n", "")
    assert not [f for f in _jobs(one_card + "---\n" + MIXED) if f.startswith("rlhf/")]


def test_ascend_is_declared_to_ray_as_npu() -> None:
    job = _jobs(NPU)["ray-npu/beta/ascend.yaml"]
    assert job["kind"] == "RayCluster" and job["spec"]["suspend"] is True
    (group,) = _groups(job).values()
    assert group["groupName"] == "workers" and group["replicas"] == 1
    assert group["rayStartParams"] == {"resources": "'{\"NPU\": 8}'"}


def test_ray_sees_gpus_and_plain_mig_but_not_me_profiles_or_other_vendors() -> None:
    assert ray_sees_gpu("nvidia.com/gpu") and ray_sees_gpu("amd.com/gpu")
    assert ray_sees_gpu("nvidia.com/mig-1g.10gb")
    assert not ray_sees_gpu("nvidia.com/mig-1g.10gb+me")
    assert ray_sees("google.com/tpu") and not ray_sees("huawei.com/Ascend910")
    policy = job_policy.build(extra=NPU)
    profile, cards = policy.profiles["ray-npu"], policy.card_types
    assert ray_resource_name(profile, cards["h100"], "nvidia.com/mig-1g.10gb+me") == "GPU"
    assert ray_resource_name(profile, cards["ascend"], "huawei.com/Ascend910") == "NPU"
    assert ray_resource_name(profile, cards["h100"], "nvidia.com/gpu") is None
    assert ray_resource_name(profile, cards["ascend"], "habana.ai/gaudi") == "HPU"
    assert ray_resource_name(profile, cards["ascend"], "gpu.intel.com/i915") == "GPU"


def test_rayservice_serves_on_the_profile_port_and_is_not_suspended() -> None:
    job = _jobs(SERVE)["rs/gamma/h100.yaml"]
    assert job["kind"] == "RayService" and "suspend" not in job["spec"]
    assert job["spec"]["serveConfigV2"] == "applications: []"
    head = job["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert {"name": "serve", "containerPort": 8000} in head["ports"]
    assert head["readinessProbe"]["tcpSocket"] == {"port": 8000}


def test_autoscaling_with_elastic_slicing_is_annotated() -> None:
    elastic = MIXED + "    autoscaling: true\n    elasticSlicing: true\n"
    job = _jobs(DELTA + "---\n" + elastic)["rlhf/delta/h100+l40s.yaml"]
    assert job["metadata"]["annotations"] == {"kueue.x-k8s.io/elastic-job": "true"}
    cluster = job["spec"]["rayClusterSpec"]
    assert cluster["enableInTreeAutoscaling"] is True
    assert [g["minReplicas"] for g in cluster["workerGroupSpecs"]] == [0, 0]


def test_volcano_teams_get_kuberays_volcano_labels() -> None:
    jobs = _jobs(NPU, volcano_only=True)
    job = jobs["ray-npu/beta/ascend.yaml"]
    labels = job["metadata"]["labels"]
    assert labels["volcano.sh/queue-name"] == "beta-ascend"
    assert labels["ray.io/priority-class-name"] == "train"
    assert "kueue.x-k8s.io/queue-name" not in labels and "suspend" not in job["spec"]
    (group,) = _groups(job).values()
    assert group["template"]["spec"]["schedulerName"] == "volcano"


def test_heterogeneous_groups_under_volcano_render_nothing() -> None:
    jobs = _jobs(DELTA + "---\n" + MIXED, volcano_only=True)
    assert not [f for f in jobs if f.startswith("rlhf/")]


def test_a_name_kuberay_refuses_is_a_finding_not_a_manifest() -> None:
    long = MIXED.replace("name: rlhf", "name: " + "r" * 48)
    manifests, found = compile_jobs(job_policy.build(extra=DELTA + "---\n" + long))
    assert not [m for m in manifests if m.kind == "RayJob"]
    (problem,) = [d for d in found if d.rule == "job-template"]
    assert "48 characters; KubeRay accepts at most 47" in problem.message
