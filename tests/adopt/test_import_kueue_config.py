"""hetgitops import of Kueue's manager Configuration (kueue-manager-config): the integrations
and the fair-sharing switch the policy's checks need go to the Fleet's
spec.kueue.configuration; every other queueing setting is a located finding saying what it
does and that it stays the installer's. Kueue's own shipped Configuration (its pinned module)
and a hand-made v1beta1 one."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from hetgitops import api
from hetgitops.adopt import sources
from hetgitops.adopt.run import import_objects

HERE = Path(__file__).parent
REPO = HERE.parents[1]
CLUSTER = HERE / "cluster_a100.yaml"
# A demanding user's v1beta1 Configuration: fair sharing on, pods-ready gating, quota that
# ignores an exporter's resources and counts MIG slices as accelerator memory, and the
# kubeflow PyTorchJob integration that Kueue 0.19 no longer enables by default.
HAND_MADE = """apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
health: {healthProbeBindAddress: ":8081"}
metrics: {bindAddress: ":8443"}
webhook: {port: 9443}
leaderElection: {leaderElect: true, resourceName: c1f6bfd2.kueue.x-k8s.io}
manageJobsWithoutQueueName: false
waitForPodsReady:
  enable: true
  timeout: 10m
  blockAdmission: true
integrations:
  frameworks: [batch/job, jobset.x-k8s.io/jobset, kubeflow.org/pytorchjob]
fairSharing:
  enable: true
  preemptionStrategies: [LessThanOrEqualToFinalShare]
resources:
  excludeResourcePrefixes: [example.com/]
  transformations:
  - input: nvidia.com/mig-1g.10gb
    strategy: Replace
    outputs: {example.com/accelerator-memory: 10Gi}
"""


def _with_configuration(text: str, key: str = "controller_manager_config.yaml") -> sources.Read:
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
        "data": {key: text},
    }
    read = sources.Read()
    body = CLUSTER.read_text() + "\n---\n" + yaml.safe_dump(config_map)
    sources.from_text("cluster.yaml", body, read)
    return read


def _kueue(files: dict[str, str]) -> dict[str, Any]:
    return yaml.safe_load(files["fleet.yaml"])["spec"]["kueue"]  # type: ignore[no-any-return]


def _shipped() -> Path:
    from harness import upstream

    return upstream.for_test() / "kueue" / "configs" / "controller_manager_config.yaml"


def test_kueues_shipped_configuration_imports_its_integrations_and_nothing_to_report(
    tmp_path: Path,
) -> None:
    """Kueue v0.19.2's kustomize-base Configuration (v1beta2): the frameworks as listed, fair
    sharing off (commented out there); its process settings are the installer's, unreported."""
    result = import_objects(
        _with_configuration(_shipped().read_text()), tmp_path / "p", cluster="lab"
    )
    assert [d.message for d in result.diagnostics if d.rule != "import-first-sync-creates"] == []
    assert [d.message.split(" (")[0] for d in result.diagnostics] == [
        "the first sync creates 2 Namespace: nlp, vision",
        "the first sync creates 2 ResourceQuota: nlp/hetgitops-accelerators, "
        "vision/hetgitops-accelerators",
    ]
    configuration = _kueue(result.files)["configuration"]
    shipped = yaml.safe_load(_shipped().read_text())
    assert configuration == {
        "integrations": shipped["integrations"]["frameworks"],
        "fairSharing": False,
    }
    assert "kubeflow.org/pytorchjob" not in configuration["integrations"]


def test_a_hand_made_configuration_says_what_stays_unmanaged_and_why(tmp_path: Path) -> None:
    read = _with_configuration(HAND_MADE)
    result = import_objects(read, tmp_path / "p", cluster="lab")
    assert _kueue(result.files)["configuration"] == {
        "integrations": ["batch/job", "jobset.x-k8s.io/jobset", "kubeflow.org/pytorchjob"],
        "fairSharing": True,
    }
    found = [d for d in result.diagnostics if d.rule == "import-setting-not-managed"]
    settings = [d.message.split(": ")[1].split(" is set")[0] for d in found]
    assert settings == [
        "fairSharing.preemptionStrategies",
        "resources.excludeResourcePrefixes",
        "resources.transformations",
        "waitForPodsReady",
    ]  # manageJobsWithoutQueueName: false is Kueue's default, no finding
    (config_map,) = [o for o in read.objects if o.kind == "ConfigMap"]
    assert {str(d.span) for d in found} == {str(config_map.span)}
    assert all(d.severity.name == "WARNING" for d in found)
    transformed = next(d for d in found if "transformations" in d.message)
    assert "quota on a replaced input" in transformed.message


def test_a_v1beta1_configuration_without_enable_has_fair_sharing_off(tmp_path: Path) -> None:
    text = HAND_MADE.replace("  enable: true\n  preemptionStrategies", "  preemptionStrategies")
    result = import_objects(_with_configuration(text), tmp_path / "p", cluster="lab")
    assert _kueue(result.files)["configuration"]["fairSharing"] is False
    assert not [d for d in result.diagnostics if "preemptionStrategies" in d.message]


def test_two_configurations_are_reported_and_neither_is_read(tmp_path: Path) -> None:
    read = _with_configuration(HAND_MADE)
    second = dict(read.objects[-1].obj, metadata={"name": "other", "namespace": "kueue-b"})
    sources.from_text("more.yaml", yaml.safe_dump(second), read)
    result = import_objects(read, tmp_path / "p", cluster="lab")
    assert "configuration" not in _kueue(result.files)
    assert len([d for d in result.diagnostics if d.rule == "import-setting-not-managed"]) == 2


def _bundled_with(tmp_path: Path, configuration: str) -> api.Result:
    policy = tmp_path / "policies"
    shutil.copytree(REPO / "policies", policy)
    fleet = policy / "fleet.yaml"
    text = fleet.read_text().replace(
        "  kueue:\n    queueingStrategy: BestEffortFIFO\n",
        f"  kueue:\n    queueingStrategy: BestEffortFIFO\n    configuration: {configuration}\n",
    )
    assert text != fleet.read_text()
    fleet.write_text(text)
    return api.validate([policy], api.Options(now=dt.date(2026, 12, 1), check_output=False))


@pytest.mark.parametrize(
    "configuration, warned",
    [
        # Kueue's shipped list: PyTorchJob is not in it (the bundled training profile warns).
        ("{integrations: [batch/job, jobset.x-k8s.io/jobset, deployment, ray.io/rayjob, "
         "ray.io/raycluster, ray.io/rayservice]}", ["training.yaml:7"]),
        ("{integrations: [batch/job, kubeflow.org/pytorchjob, jobset.x-k8s.io/jobset, "
         "deployment, ray.io/rayjob, ray.io/raycluster, ray.io/rayservice]}", []),
        ("{integrations: [batch/job]}",
         ["ray.yaml:9", "ray.yaml:32", "ray.yaml:51",
          "serving.yaml:7", "serving.yaml:25", "training.yaml:7", "training.yaml:34"]),
    ],
)  # fmt: skip
def test_job_integration_reads_the_configurations_integrations(
    tmp_path: Path, configuration: str, warned: list[str]
) -> None:
    result = _bundled_with(tmp_path, configuration)
    found = [d for d in result.diagnostics if d.rule == "job-integration"]
    assert sorted(f"{Path(d.span.file).name}:{d.span.line}" for d in found) == sorted(warned)


def test_fair_sharing_weights_warn_when_the_configuration_has_it_off(tmp_path: Path) -> None:
    result = _bundled_with(tmp_path, "{fairSharing: false}")
    assert not [d for d in result.diagnostics if d.rule == "fair-sharing-not-enabled"]
    team = tmp_path / "policies" / "teams" / "others.yaml"
    team.write_text(
        team.read_text().replace(
            "  tiers: [online-inference]\n",
            '  tiers: [online-inference]\n  kueue: {fairSharingWeight: "2"}\n',
            1,
        )
    )
    again = api.validate(
        [tmp_path / "policies"], api.Options(now=dt.date(2026, 12, 1), check_output=False)
    )
    (found,) = [d for d in again.diagnostics if d.rule == "fair-sharing-not-enabled"]
    assert found.span.file.endswith("others.yaml") and "online-inference" in found.message
