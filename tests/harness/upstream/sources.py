"""What the upstream test data is made of: which file of which pinned Go module lands where.

Every module but the GPU Operator is pinned by the simulated cluster's go.mod files
(tests/harness/simcluster/go), version and go.sum hash alike, so the CRDs the tests check against
are those of the controllers the sim runs: Kueue, Volcano, NFD and Koordinator by their own
components, and JobSet, LeaderWorkerSet, KubeRay and the training operator (v1 PyTorchJob, v2
TrainJob) by the versions Kueue v0.19.2 itself is built against (its go.mod). The GPU
Operator's tags (v22.9 and later) are not valid Go module versions (its go.mod has no /vN
suffix), so the proxy
serves it only as pseudo-versions; it is pinned here by commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

SIM_GO = Path(__file__).resolve().parents[1] / "simcluster" / "go"
HERE = Path(__file__).resolve()


@dataclass(frozen=True)
class Pin:
    """One module at one version, with the go.sum hash its download must have."""

    module: str
    version: str
    sum: str  # `h1:` hash of the module zip, as in go.sum
    pinned_in: str  # where the version is written, for messages and provenance

    @property
    def spec(self) -> str:
        return f"{self.module}@{self.version}"


@dataclass(frozen=True)
class Source:
    """Files of one pinned module copied into `<project>/crds/`, `examples/` and `configs/`."""

    project: str  # top folder of the assembled tree, as in ../shared/upstream
    pin: Pin
    crds: tuple[str, ...]  # module-relative paths; the file keeps its upstream name
    examples: dict[str, str] = field(default_factory=dict)  # module-relative path -> file name
    # Configuration files (not Kubernetes objects: a ConfigMap's data) -> `<project>/configs/`.
    configs: dict[str, str] = field(default_factory=dict)


class PinError(RuntimeError):
    """A go.mod or go.sum does not pin the module it should."""


def pinned_by_sim(component: str, module: str) -> Pin:
    """The version and hash `tests/harness/simcluster/go/<component>` requires `module` at."""
    go_mod = SIM_GO / component / "go.mod"
    version = next(
        (
            fields[1]
            for line in go_mod.read_text().splitlines()
            if len(fields := line.replace("require", "").split()) >= 2 and fields[0] == module
        ),
        None,
    )
    if version is None:
        raise PinError(f"{go_mod} does not require {module}")
    go_sum = go_mod.with_name("go.sum")
    for line in go_sum.read_text().splitlines():
        fields = line.split()
        if fields[:2] == [module, version]:
            return Pin(module, version, fields[2], str(go_mod.relative_to(SIM_GO.parents[3])))
    raise PinError(f"{go_sum} has no hash for {module} {version}")


# The newest GPU Operator the Go module proxy serves (main, 2025-09-17, commit d73a0086a6ba).
GPU_OPERATOR = Pin(
    "github.com/NVIDIA/gpu-operator",
    "v0.0.0-20250917190837-d73a0086a6ba",
    "h1:LoeqwWjR0h2WRyHXmyYCPVwM/dAdKKxjE8LzyyeuqHI=",
    "tests/harness/upstream/sources.py",
)

_KUEUE_CRDS = "config/components/crd/bases/kueue.x-k8s.io_"
_VOLCANO_CRDS = "config/crd/volcano/bases/"
_KUEUEVIZ = "cmd/kueueviz/examples/"
_VOLCANO_CONF = "installer/helm/chart/volcano/config/"


def sources() -> tuple[Source, ...]:
    """Everything the tests read, in the layout of ../shared/upstream (<project>/crds/...)."""
    return (
        Source(
            "kueue",
            pinned_by_sim("kueue", "sigs.k8s.io/kueue"),
            tuple(
                f"{_KUEUE_CRDS}{kind}.yaml"
                for kind in (
                    "admissionchecks",
                    "clusterqueues",
                    "cohorts",
                    "localqueues",
                    "multikueueclusters",
                    "multikueueconfigs",
                    "resourceflavors",
                    "topologies",
                    "workloadpriorityclasses",
                    "workloads",
                )
            ),
            {
                f"{_KUEUEVIZ}{name}.yaml": f"kueueviz-examples__{name}.yaml"
                for name in (
                    "00-resource-flavor",
                    "01-cluster-queues",
                    "01.5-cohorts",
                    "07-workload-priority-classes",
                )
            },
            # The manager's Configuration as Kueue's own kustomize base ships it
            # (kueue-manager-config's controller_manager_config.yaml).
            configs={
                "config/components/manager/controller_manager_config.yaml": (
                    "controller_manager_config.yaml"
                )
            },
        ),
        Source(
            "volcano",
            pinned_by_sim("volcano", "volcano.sh/volcano"),
            tuple(
                f"{_VOLCANO_CRDS}{name}.yaml"
                for name in (
                    "batch.volcano.sh_jobs",
                    "scheduling.volcano.sh_podgroups",
                    "scheduling.volcano.sh_queues",
                    "topology.volcano.sh_hypernodes",
                )
            ),
            {
                "example/job.yaml": "example__job.yaml",
                "example/deployment/queue.yaml": "example__deployment__queue.yaml",
                "example/hierarchical-jobs/queues.yaml": "example__hierarchical-jobs__queues.yaml",
            },
            # The scheduler configs the Helm chart ships as volcano-scheduler-configmap's
            # volcano-scheduler.conf: the default one and the CI one.
            configs={
                f"{_VOLCANO_CONF}volcano-scheduler.conf": "volcano-scheduler.yaml",
                f"{_VOLCANO_CONF}volcano-scheduler-ci.conf": "volcano-scheduler-ci.yaml",
            },
        ),
        Source(
            "nfd",
            pinned_by_sim("nfd", "sigs.k8s.io/node-feature-discovery"),
            ("deployment/base/nfd-crds/nfd-api-crds.yaml",),
            {
                "examples/nodefeaturerule.yaml": "nodefeaturerule.yaml",
                "deployment/nodefeaturerule/samples/nodefeaturerule-pci.yaml": (
                    "nodefeaturerule-pci.yaml"
                ),
                "deployment/nodefeaturerule/samples/nodefeaturerule-system.yaml": (
                    "nodefeaturerule-system.yaml"
                ),
            },
        ),
        Source(
            "nvidia",
            GPU_OPERATOR,
            (
                "deployments/gpu-operator/crds/nvidia.com_clusterpolicies.yaml",
                "deployments/gpu-operator/crds/nvidia.com_nvidiadrivers.yaml",
            ),
            {
                "config/samples/v1_clusterpolicy.yaml": "v1_clusterpolicy.sample.yaml",
                # The operator's own mig-parted configs (all-1g.10gb, all-balanced, ...).
                "assets/state-mig-manager/0400_configmap.yaml": "default-mig-parted-config.yaml",
            },
        ),
        Source(
            "koordinator",
            pinned_by_sim("koordinator", "github.com/koordinator-sh/koordinator"),
            (
                "config/crd/bases/scheduling.sigs.k8s.io_elasticquotas.yaml",
                "config/crd/bases/quota.koordinator.sh_elasticquotaprofiles.yaml",
                "config/crd/bases/scheduling.sigs.k8s.io_podgroups.yaml",
            ),
        ),
        Source(
            "jobset",
            pinned_by_sim("kueue", "sigs.k8s.io/jobset"),
            ("config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml",),
        ),
        Source(
            "lws",
            pinned_by_sim("kueue", "sigs.k8s.io/lws"),
            ("config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml",),
            {"docs/examples/sample/lws.yaml": "lws.yaml"},
        ),
        # KubeRay v1.6.2: the version Kueue v0.19.2 is built against (and the sim's operator).
        Source(
            "kuberay",
            pinned_by_sim("kueue", "github.com/ray-project/kuberay/ray-operator"),
            tuple(
                f"config/crd/bases/ray.io_{kind}.yaml"
                for kind in ("rayclusters", "rayjobs", "rayservices")
            ),
        ),
        Source(
            "kubeflow",
            pinned_by_sim("kueue", "github.com/kubeflow/training-operator"),
            ("manifests/base/crds/kubeflow.org_pytorchjobs.yaml",),
        ),
        Source(
            "kubeflow",
            pinned_by_sim("kueue", "github.com/kubeflow/trainer/v2"),
            (
                "manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml",
                "manifests/base/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml",
            ),
        ),
    )
