"""The `jobs` compiler: routing per team and card, pod specs, queues, the template sandbox and
the golden job tree of the bundled fleet."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import golden
import job_policy
import pytest

from hetgitops.checks.registry import RULES, CheckContext
from hetgitops.compilers.jobs.render import TEMPLATES, compile_jobs, tree
from hetgitops.compilers.volcano import compile_volcano
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.model.policy import Policy
from hetgitops.output.manifests import Manifest
from hetgitops.plan.job_targets import JobTarget

Load = Callable[[str], Policy]
REPO = Path(__file__).resolve().parents[2]
POD_KEYS = ("template", "leaderTemplate", "workerTemplate")
GOLDEN = REPO / "tests" / "cases" / "jobs" / "bundled" / "expected"


def _jobs(policy: Policy, **kwargs: Any) -> dict[str, dict[str, Any]]:
    manifests, found = compile_jobs(policy, **kwargs)
    assert [d for d in found if d.severity == Severity.ERROR] == []
    return {m.filename or "": dict(m.obj) for m in manifests}


def _pods(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every pod template of any framework, found wherever it sits."""
    for key, value in obj.items():
        if key in POD_KEYS and "containers" in value.get("spec", {}):
            yield value
            continue
        if isinstance(value, dict):
            yield from _pods(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    yield from _pods(item)


def _container(pod: dict[str, Any]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = pod["spec"]["containers"]
    return containers[0]


# -- routing -----------------------------------------------------------------------------------


def test_a_team_gets_templates_only_for_cards_it_holds_quota_on() -> None:
    assert sorted(_jobs(job_policy.build())) == [
        "batch/beta/l40s.yaml",  # `teams: [beta]`; beta holds no H100 quota
        "lws/beta/l40s.yaml",
        "mig-serve/alpha/h100.yaml",  # gamma holds whole H100s, not 1g.10gb instances
        "npu/beta/ascend.yaml",  # alpha holds no Ascend quota
        "pretrain/alpha/l40s.yaml",
        "pretrain/beta/l40s.yaml",
        "split/alpha/l40s.yaml",
    ]


def test_a_gang_the_team_can_never_hold_gets_no_template() -> None:
    huge = job_policy.PROFILES.split("---\n")[-1].replace("name: split", "name: huge")
    huge = huge.replace("{cardsPerNode: 4, gang: 3", "{cardsPerNode: 8, gang: 3")
    jobs = _jobs(job_policy.build(extra=huge))
    assert "huge/alpha/l40s.yaml" not in jobs  # 24 cards at once; alpha has 16 per pool
    assert "split/alpha/l40s.yaml" in jobs


def test_a_gang_whose_cpu_the_team_can_never_hold_gets_no_template() -> None:
    # beta's ClusterQueue lists 16 x 500m = 8 cpu in l40s-a and no cohort; a gang of 2 x 8
    # cards at 10 cpu a card asks 160: Kueue never admits it ("insufficient quota for cpu").
    jobs = _jobs(job_policy.build(edit=("cpuPerCard: 250m", "cpuPerCard: 10")))
    assert "pretrain/beta/l40s.yaml" not in jobs
    assert "pretrain/alpha/l40s.yaml" in jobs  # alpha: 16 x 12 = 192 cpu per pool


def test_bundled_routing(scenario_policy: Load) -> None:
    jobs = _jobs(scenario_policy("bundled"))
    assert len(jobs) == 30
    research = sorted(f for f in jobs if f.startswith("data-filter/research/"))
    # research holds only MIG instances on the H100s, so no whole-card data-filter there
    assert research == [
        "data-filter/research/mlu370-x8.yaml",
        "data-filter/research/rtx4090-24gb.yaml",
    ]
    assert [f for f in jobs if f.startswith("llm-pretrain/")] == [
        "llm-pretrain/pretraining/a800-80gb.yaml"
    ]


def test_profile_and_team_filters() -> None:
    jobs = _jobs(job_policy.build(), profiles=["pretrain", "npu"], teams=["beta"])
    assert sorted(jobs) == ["npu/beta/ascend.yaml", "pretrain/beta/l40s.yaml"]


# -- pods --------------------------------------------------------------------------------------


def test_mig_profile_requests_one_mig_instance() -> None:
    job = _jobs(job_policy.build())["mig-serve/alpha/h100.yaml"]
    resources = _container(job["spec"]["template"])["resources"]
    assert resources["limits"] == {"cpu": "12", "memory": "96Gi", "nvidia.com/mig-1g.10gb": "1"}


def test_requests_equal_limits_everywhere(scenario_policy: Load) -> None:
    for policy in (job_policy.build(), scenario_policy("bundled")):
        for name, job in _jobs(policy).items():
            for pod in _pods(job):
                resources = _container(pod)["resources"]
                assert resources["requests"] == resources["limits"], name


def test_cpu_and_memory_per_card_profile_then_team_then_fleet() -> None:
    jobs = _jobs(job_policy.build())
    master = jobs["pretrain/beta/l40s.yaml"]["spec"]["pytorchReplicaSpecs"]["Master"]
    beta = _container(master["template"])
    # profile cpuPerCard 250m x 8; memory from beta's 1024Mi x 8, canonical
    assert beta["resources"]["requests"] == {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "8"}


def test_node_selector_pins_card_and_the_only_pool() -> None:
    jobs = _jobs(job_policy.build())
    beta = next(_pods(jobs["pretrain/beta/l40s.yaml"]))["spec"]
    alpha = next(_pods(jobs["pretrain/alpha/l40s.yaml"]))["spec"]
    assert beta["nodeSelector"] == {"example.io/card-type": "l40s", "example.io/pool": "l40s-a"}
    assert alpha["nodeSelector"] == {"example.io/card-type": "l40s"}  # two l40s pools
    assert alpha["tolerations"] == [
        {"key": "example.io/dedicated", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "example.io/pool", "operator": "Equal", "value": "l40s-a", "effect": "NoSchedule"},
    ]
    assert beta["tolerations"] == alpha["tolerations"][1:]


def test_image_env_probes_and_priority() -> None:
    job = _jobs(job_policy.build())["pretrain/beta/l40s.yaml"]
    replicas = job["spec"]["pytorchReplicaSpecs"]
    master, worker = (
        _container(replicas["Master"]["template"]),
        _container(replicas["Worker"]["template"]),
    )
    assert master["image"] == "pt:l40s" and master["name"] == "pytorch"
    assert [e["name"] for e in master["env"]] == ["A_FIRST", "NCCL_SOCKET_IFNAME"]
    assert master["livenessProbe"] == {
        "tcpSocket": {"port": 29500},
        "initialDelaySeconds": 900,
        "periodSeconds": 60,
        "failureThreshold": 5,
    }
    assert "readinessProbe" not in master
    assert "livenessProbe" not in worker  # only rank 0 listens on the rendezvous port
    assert replicas["Worker"]["replicas"] == 1
    assert replicas["Master"]["template"]["spec"]["priorityClassName"] == "train"


def test_serving_gets_tcp_probes_and_training_without_probes_none() -> None:
    jobs = _jobs(job_policy.build())
    serve = _container(jobs["mig-serve/alpha/h100.yaml"]["spec"]["template"])
    assert serve["readinessProbe"]["tcpSocket"] == {"port": 8000}
    assert serve["livenessProbe"]["tcpSocket"] == {"port": 8000}
    for pod in _pods(jobs["npu/beta/ascend.yaml"]):
        assert "livenessProbe" not in _container(pod)


SECOND_MIG_POOL = """\
apiVersion: hetgitops.io/v1alpha1
kind: Pool
metadata: {name: h100-b}
spec:
  cardType: h100
  purpose: inference
  cardsPerNode: 8
  nodes: [{names: "hb-[1:2]", zone: z1, rack: r5}]
  mig:
    devices: [{gpus: [0, 1], profiles: {1g.10gb: 7}}]
---
apiVersion: hetgitops.io/v1alpha1
kind: Team
metadata: {name: delta}
spec:
  namespaces: [delta]
  quotas:
    - {pool: h100-b, mig: {1g.10gb: 7}}
    - {pool: h100-infer, mig: {1g.10gb: 7}}
  tiers: [serve]
"""


@pytest.mark.parametrize(("strategy", "pinned"), [("mixed", False), ("single", True)])
def test_single_mig_strategy_pins_the_pool(strategy: str, pinned: bool) -> None:
    """Under `single` a slice is requested as nvidia.com/gpu: only the pool label keeps the
    pod off whole cards. Under `mixed` the resource name does that."""
    policy = job_policy.build(extra=SECOND_MIG_POOL, mig_strategy=strategy)
    pod = next(_pods(_jobs(policy, teams=["delta"])["mig-serve/delta/h100.yaml"]))
    resource = "nvidia.com/gpu" if pinned else "nvidia.com/mig-1g.10gb"
    assert _container(pod)["resources"]["limits"][resource] == "1"
    assert ("example.io/pool" in pod["spec"]["nodeSelector"]) is pinned


# -- queues ------------------------------------------------------------------------------------


def test_kueue_labels_and_suspend() -> None:
    jobs = _jobs(job_policy.build())
    for name in ("pretrain/alpha/l40s.yaml", "batch/beta/l40s.yaml", "mig-serve/alpha/h100.yaml"):
        labels = jobs[name]["metadata"]["labels"]
        team = name.split("/")[1].split("-")[0]
        assert labels["kueue.x-k8s.io/queue-name"] == team, name
        assert labels["kueue.x-k8s.io/priority-class"] in ("train", "serve"), name
    assert jobs["batch/beta/l40s.yaml"]["spec"]["suspend"] is True
    assert jobs["pretrain/alpha/l40s.yaml"]["spec"]["runPolicy"] == {"suspend": True}
    assert "suspend" not in jobs["mig-serve/alpha/h100.yaml"]["spec"]


def test_kueue_topology_annotations_and_pod_set_group() -> None:
    jobs = _jobs(job_policy.build())
    pretrain = [p["metadata"]["annotations"] for p in _pods(jobs["pretrain/beta/l40s.yaml"])]
    assert (
        pretrain
        == [
            {
                "kueue.x-k8s.io/podset-group-name": "pretrain-l40s",
                "kueue.x-k8s.io/podset-preferred-topology": "example.io/rack",
            }
        ]
        * 2
    )
    lws = jobs["lws/beta/l40s.yaml"]["spec"]["leaderWorkerTemplate"]
    assert lws["size"] == 2
    for key in ("leaderTemplate", "workerTemplate"):
        annotations = lws[key]["metadata"]["annotations"]
        assert annotations["kueue.x-k8s.io/podset-required-topology"] == "example.io/rack"
    assert "annotations" not in next(_pods(jobs["batch/beta/l40s.yaml"]))["metadata"]


def test_unknown_topology_level_is_reported_not_rendered() -> None:
    """The check reports it (validate and jobs alike); the compiler renders without it."""
    policy = job_policy.build()
    _, found = compile_jobs(policy, profiles=["batch"])
    assert found == []
    checked = RULES["job-integration"].function(policy, CheckContext(dt.date(2026, 9, 1)))
    wishes = [d for d in checked if d.path.startswith("spec.topology")]
    assert [(d.rule, d.severity, d.span.line) for d in wishes] == [
        ("job-integration", Severity.WARNING, job_policy.line_of("nvlink-domain"))
    ]


def test_volcano_job_names_the_leaf_queue() -> None:
    policy = job_policy.build()
    job = _jobs(policy)["npu/beta/ascend.yaml"]
    spec = job["spec"]
    assert (spec["schedulerName"], spec["queue"], spec["minAvailable"]) == (
        "volcano",
        "beta-ascend",
        2,
    )
    assert spec["priorityClassName"] == "train"
    assert [(t["name"], t["replicas"]) for t in spec["tasks"]] == [("master", 1), ("worker", 1)]
    queues = {m.name: m.obj["spec"] for m in compile_volcano(policy) if m.kind == "Queue"}
    assert queues["beta-ascend"]["parent"] == "root"  # a leaf (no children), as Volcano demands
    assert not [q for q in queues.values() if q["parent"] == "beta-ascend"]
    assert not any(q["parent"] == "beta-ascend" for q in queues.values())


def test_volcano_only_fleet_routes_every_framework_to_leaf_queues() -> None:
    jobs = _jobs(job_policy.build(volcano_only=True))
    pytorch = jobs["pretrain/beta/l40s.yaml"]["spec"]["runPolicy"]
    assert pytorch == {
        "schedulingPolicy": {"queue": "beta-l40s-a", "minAvailable": 2, "priorityClass": "train"}
    }
    deployment = jobs["mig-serve/alpha/h100.yaml"]
    pod = deployment["spec"]["template"]
    assert pod["metadata"]["annotations"] == {
        "scheduling.volcano.sh/queue-name": "alpha-h100-infer"
    }
    assert pod["spec"]["schedulerName"] == "volcano"
    assert deployment["metadata"]["annotations"] == {"scheduling.volcano.sh/group-min-member": "1"}
    # Volcano binds a leaf queue to one pool, so the two-pool team is pinned to its first
    alpha = next(_pods(jobs["pretrain/alpha/l40s.yaml"]))["spec"]["nodeSelector"]
    assert alpha["example.io/pool"] == "l40s-b"
    assert not any("kueue.x-k8s.io/queue-name" in j["metadata"]["labels"] for j in jobs.values())


# -- templates ---------------------------------------------------------------------------------


def _with_template(tmp_path: Path, body: str, name: str = "job.yaml.j2") -> list[Diagnostic]:
    (tmp_path / name).write_text(body)
    manifests, found = compile_jobs(job_policy.build(), profiles=["batch"], templates=tmp_path)
    assert manifests == []
    return [d for d in found if d.rule == "job-template"]


def _framework_line() -> int:
    return job_policy.line_of("framework: job", after="name: batch")


def test_unknown_variable_is_a_located_finding(tmp_path: Path) -> None:
    found = _with_template(tmp_path, "apiVersion: v1\nkind: {{ no_such_thing }}\n")
    assert [(d.rule, d.span.file, d.span.line, d.span.column) for d in found] == [
        ("job-template", job_policy.FILE, _framework_line(), 14)
    ]
    assert "no_such_thing" in found[0].message and "job.yaml.j2:2" in found[0].message


def test_sandbox_refuses_python_internals(tmp_path: Path) -> None:
    found = _with_template(tmp_path, "kind: {{ ''.__class__.__mro__[1].__subclasses__() }}\n")
    assert len(found) == 1 and "SecurityError" in found[0].message


def test_invalid_yaml_and_syntax_errors_are_findings(tmp_path: Path) -> None:
    assert len(_with_template(tmp_path, "kind: [unclosed\n")) == 1
    assert len(_with_template(tmp_path, "kind: {% if %}\n")) == 1
    assert len(_with_template(tmp_path, "- just\n- a list\n")) == 1


def test_an_override_folder_replaces_only_its_own_templates(tmp_path: Path) -> None:
    (tmp_path / "job.yaml.j2").write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: {{ job.name | tojson }}}\n"
    )
    manifests, _ = compile_jobs(job_policy.build(), profiles=["batch", "npu"], templates=tmp_path)
    objs = {m.filename: m.obj for m in manifests}
    assert objs["batch/beta/l40s.yaml"] == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "batch-l40s"},
    }
    assert objs["npu/beta/ascend.yaml"]["apiVersion"] == "batch.volcano.sh/v1alpha1"


def test_missing_image_is_a_finding_not_an_exception() -> None:
    policy = job_policy.build(
        extra=job_policy.PROFILES.split("---\n")[3]
        .replace("name: batch", "name: bare")
        .replace("  image: pytorch\n", "")
    )
    manifests, found = compile_jobs(policy, profiles=["bare"])
    assert manifests == []
    assert [d.rule for d in found if d.severity == Severity.ERROR] == ["job-template"]


def test_every_framework_has_a_bundled_template() -> None:
    folder = REPO / "templates"
    assert all((folder / name).is_file() for name in TEMPLATES.values())


# -- golden ------------------------------------------------------------------------------------


def test_bundled_jobs_match_golden(scenario_policy: Load, update_golden: bool) -> None:
    manifests, found = compile_jobs(scenario_policy("bundled"))
    assert found == []  # the PyTorchJob-on-Kueue-0.19 warning is the checks' (job-integration)
    golden.check_tree(tree(manifests), GOLDEN, update_golden)


def test_output_is_deterministic_and_never_applied(scenario_policy: Load) -> None:
    first, _ = compile_jobs(scenario_policy("bundled"))
    second, _ = compile_jobs(scenario_policy("bundled"))
    assert tree(first) == tree(second)
    assert [m.filename for m in first] == sorted(m.filename or "" for m in first)
    assert all(isinstance(m, Manifest) and not m.applied for m in first)
    assert not any("app.kubernetes.io/managed-by" in m.obj["metadata"]["labels"] for m in first)


def test_jobset_gang_gets_torchrun_rendezvous(scenario_policy: Load) -> None:
    job = _jobs(scenario_policy("bundled"))["llm-finetune/finetune-nlp/a800-80gb.yaml"]
    leader, worker = (
        {e["name"]: e for e in _container(pod).get("env", [])} for pod in _pods(job["spec"])
    )
    name = job["metadata"]["name"]
    assert leader["MASTER_ADDR"]["value"] == worker["MASTER_ADDR"]["value"]
    assert leader["MASTER_ADDR"]["value"] == f"{name}-leader-0-0.{name}"
    assert (leader["NNODES"]["value"], leader["NODE_RANK"]["value"]) == ("2", "0")
    assert worker["JOB_COMPLETION_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    )
    assert worker["NODE_RANK_OFFSET"]["value"] == "1" and "NODE_RANK" not in worker


def test_file_names_cannot_collide() -> None:
    """Team `a-b` on card `c` and team `a` on card `b-c` both made `p/a-b-c.yaml`, and one
    template was lost with exit 0."""

    def target(team: str, card: str) -> JobTarget:
        def named(name: str) -> Any:
            return cast(Any, SimpleNamespace(name=name))

        return JobTarget(named("p"), named(team), named(card), (), "kueue")

    assert target("a-b", "c").filename != target("a", "b-c").filename


def test_tree_refuses_to_overwrite_one_template_with_another() -> None:
    twice = [Manifest("jobs", {"kind": "Job"}, filename="p/a/b.yaml")] * 2
    with pytest.raises(ValueError, match=r"p/a/b\.yaml"):
        tree(twice)


# -- koordinator -------------------------------------------------------------------------------

KOORD_GOLDEN = REPO / "tests" / "cases" / "jobs" / "koordinator" / "expected"


def test_bundled_koordinator_jobs_match_golden(scenario_policy: Load, update_golden: bool) -> None:
    manifests, found = compile_jobs(scenario_policy("bundled"), scheduler="koordinator")
    assert found == []
    golden.check_tree(tree(manifests), KOORD_GOLDEN, update_golden)


def test_koordinator_jobs_name_only_leaf_quotas_the_policy_defines(scenario_policy: Load) -> None:
    """The quota label names a leaf the `koordinator` target renders in the pod's own pool (a
    parent is refused by the pod webhook, pod_check.go:55-58; an unknown name falls silently
    into koordinator-default-quota, :69-74); gang annotations from coscheduling.go:28-33; the
    PriorityClass is the tier's in-band one."""
    from hetgitops.compilers.koordinator import compile_koordinator

    policy = scenario_policy("bundled")
    rendered = compile_koordinator(policy)
    leaves = {
        m.name: m.obj["metadata"]["labels"]
        for m in rendered
        if m.kind == "ElasticQuota"
        and m.obj["metadata"]["labels"]["quota.scheduling.koordinator.sh/is-parent"] == "false"
    }
    classes = {m.name for m in rendered if m.kind == "PriorityClass"}
    jobs = _jobs(policy, scheduler="koordinator")
    seen = 0
    for name, job in jobs.items():
        for pod in _pods(job):
            labels = pod["metadata"]["labels"]
            if pod["spec"].get("schedulerName") == "volcano":
                continue  # a Volcano Job stays Volcano's
            seen += 1
            quota = labels["quota.scheduling.koordinator.sh/name"]
            assert quota in leaves, name
            assert leaves[quota]["hetgitops.io/pool"] == pod["spec"]["nodeSelector"].get(
                "hetgitops.io/pool"
            ), name
            assert pod["spec"]["schedulerName"] == "koord-scheduler"
            assert pod["spec"]["priorityClassName"] in classes
    assert seen
    gang = next(_pods(jobs["llm-pretrain/pretraining/a800-80gb.yaml"]))["metadata"]["annotations"]
    assert gang["gang.scheduling.koordinator.sh/min-available"] == "4"
    assert gang["gang.scheduling.koordinator.sh/name"] == "llm-pretrain-a800-80gb"
