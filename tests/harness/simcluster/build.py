"""Build stage: compile the simulated cluster's components from the Go modules under go/.

Each component is its own tiny Go module (a go.mod with `tool` lines, no code of ours): the
upstream projects pin different Kubernetes libraries, so they cannot share one module. Binaries
are cached like the control plane's, in `<cache>/simcluster/<component>-<hash>/`, keyed by the
module's go.mod and go.sum: a rebuild happens only when a version changes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.controlplane.build import (
    COMPILE_FLAGS,
    BuildError,
    build_lock,
    cache_root,
    go_available,
    go_download,
)

GO_DIR = Path(__file__).resolve().parent / "go"

# Part of the cache key, as in tests/harness/controlplane/build.py (COMPILE_FLAGS is not: see
# there).
_RECIPE = "v1 CGO_ENABLED=0 -trimpath -mod=readonly -ldflags=-s -w"


@dataclass(frozen=True)
class Component:
    """One Go module under go/ and the binaries built from it."""

    name: str
    module: str  # the upstream module whose version names the component
    binaries: dict[str, str]  # binary file name -> Go package path
    # Upstream data files copied next to the binaries (module-relative path -> file name):
    # read from the module cache at build time, never copied into this repository.
    data: dict[str, str] = field(default_factory=dict)
    kubernetes_version_flags: bool = False
    # GOTOOLCHAIN for this module's build (part of its cache key), when it needs a newer Go than
    # the one on PATH; "" = the Go on PATH.
    toolchain: str = ""
    # Built only when named (`scripts/simcluster build argocd`), never by a bare `build` nor by
    # `.ci/run`: its cold build does not fit CI's budget (docs/simcluster.md).
    opt_in: bool = False

    @property
    def directory(self) -> Path:
        return GO_DIR / self.name

    def version(self) -> str:
        return _required_version(self.directory / "go.mod", self.module)


_KWOK_STAGES = "kustomize/stage"
_ARGOCD_CRDS = "manifests/crds"
_FLUX_CRDS = "config/crd/bases"
_RAY_CRDS = "config/crd/bases"
_KOORD_CRDS = "config/crd/bases"
_KOORD_CRD_FILES = (
    "analysis.koordinator.sh_recommendations",
    "config.koordinator.sh_clustercolocationprofiles",
    "quota.koordinator.sh_elasticquotaprofiles",
    "scheduling.koordinator.sh_clusternetworktopologies",
    "scheduling.koordinator.sh_devices",
    "scheduling.koordinator.sh_podmigrationjobs",
    "scheduling.koordinator.sh_reservations",
    "scheduling.koordinator.sh_scheduleexplanations",
    "scheduling.sigs.k8s.io_elasticquotas",
    "scheduling.sigs.k8s.io_podgroups",
    "slo.koordinator.sh_nodemetrics",
    "slo.koordinator.sh_nodeslos",
    "topology.node.k8s.io_noderesourcetopologies",
)

COMPONENTS: dict[str, Component] = {
    c.name: c
    for c in (
        Component(
            "kube",
            "k8s.io/kubernetes",
            {
                "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
                "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
            },
            kubernetes_version_flags=True,
        ),
        Component(
            "kwok",
            "sigs.k8s.io/kwok",
            {"kwok": "sigs.k8s.io/kwok/cmd/kwok"},
            # kwok ships no stages in its binary: the default "fast" stages minus pod-complete
            # (a Job's pods must keep running, or every quota test would race the completion),
            # plus lease heartbeats for the node lifecycle controller.
            data={
                f"{_KWOK_STAGES}/node/fast/node-initialize.yaml": "stage-node-initialize.yaml",
                f"{_KWOK_STAGES}/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml": (
                    "stage-node-heartbeat-with-lease.yaml"
                ),
                f"{_KWOK_STAGES}/pod/fast/pod-ready.yaml": "stage-pod-ready.yaml",
                f"{_KWOK_STAGES}/pod/fast/pod-delete.yaml": "stage-pod-delete.yaml",
            },
        ),
        Component(
            "kueue",
            "sigs.k8s.io/kueue",
            {"kueue": "sigs.k8s.io/kueue/cmd/kueue"},
            # Upstream's webhook configurations; the harness points them at loopback.
            data={"config/components/webhook/manifests.yaml": "kueue-webhooks.yaml"},
        ),
        Component(
            "nfd",
            "sigs.k8s.io/node-feature-discovery",
            {"nfd-master": "sigs.k8s.io/node-feature-discovery/cmd/nfd-master"},
        ),
        Component(
            "volcano",
            "volcano.sh/volcano",
            {
                "vc-scheduler": "volcano.sh/volcano/cmd/scheduler",
                "vc-controller-manager": "volcano.sh/volcano/cmd/controller-manager",
                "vc-webhook-manager": "volcano.sh/volcano/cmd/webhook-manager",
            },
            data={
                # The chart's webhook configurations (a Helm template: the harness strips the
                # template lines and points them at loopback) and default scheduler config.
                "installer/helm/chart/volcano/templates/webhooks.yaml": "volcano-webhooks.yaml",
                "installer/helm/chart/volcano/config/volcano-scheduler.conf": (
                    "volcano-scheduler.conf"
                ),
                # CRDs the controllers and scheduler watch that hetgitops never renders, so
                # tests/harness/upstream does not assemble them (the job and queue controllers wait
                # for a Command informer).
                "config/crd/volcano/bases/bus.volcano.sh_commands.yaml": "crd-commands.yaml",
                "config/crd/volcano/bases/nodeinfo.volcano.sh_numatopologies.yaml": (
                    "crd-numatopologies.yaml"
                ),
            },
        ),
        # The real Flux (v1.9.6: v1.10 does not build from the proxy, see go/flux-source/go.mod),
        # started on demand by tests/harness/simcluster/flux.py; the CRDs come from the same
        # modules.
        Component(
            "flux-source",
            "github.com/fluxcd/source-controller",
            {"source-controller": "github.com/fluxcd/source-controller"},
            data={
                f"{_FLUX_CRDS}/source.toolkit.fluxcd.io_gitrepositories.yaml": (
                    "crd-gitrepositories.yaml"
                ),
                # The controller's manager watches these kinds too and waits for their informers.
                f"{_FLUX_CRDS}/source.toolkit.fluxcd.io_buckets.yaml": "crd-buckets.yaml",
                f"{_FLUX_CRDS}/source.toolkit.fluxcd.io_helmcharts.yaml": "crd-helmcharts.yaml",
                f"{_FLUX_CRDS}/source.toolkit.fluxcd.io_helmrepositories.yaml": (
                    "crd-helmrepositories.yaml"
                ),
                f"{_FLUX_CRDS}/source.toolkit.fluxcd.io_ocirepositories.yaml": (
                    "crd-ocirepositories.yaml"
                ),
                f"{_FLUX_CRDS}/source.toolkit.fluxcd.io_externalartifacts.yaml": (
                    "crd-externalartifacts.yaml"
                ),
            },
        ),
        Component(
            "flux-kustomize",
            "github.com/fluxcd/kustomize-controller",
            {"kustomize-controller": "github.com/fluxcd/kustomize-controller"},
            data={
                f"{_FLUX_CRDS}/kustomize.toolkit.fluxcd.io_kustomizations.yaml": (
                    "crd-kustomizations.yaml"
                ),
            },
        ),
        # The real KubeRay operator (tests/harness/simcluster/kuberay.py), started on demand; the
        # CRDs of the kinds Kueue admits come from the same module (RayCronJob's only with its
        # gate).
        Component(
            "kuberay",
            "github.com/ray-project/kuberay/ray-operator",
            {"ray-operator": "github.com/ray-project/kuberay/ray-operator"},
            data={
                f"{_RAY_CRDS}/ray.io_{kind}.yaml": f"crd-{kind}.yaml"
                for kind in ("rayclusters", "rayjobs", "rayservices")
            },
        ),
        # The real Koordinator (tests/harness/simcluster/koordinator.py, started on demand):
        # koord-manager (quota webhooks, pod webhooks, quota-profile controller) and
        # koord-scheduler. Every CRD of the module (koord-scheduler waits for informers of most of
        # them), and upstream's webhook configurations with their kustomize patch (namespaceSelector
        # of the pod hooks).
        Component(
            "koordinator",
            "github.com/koordinator-sh/koordinator",
            {
                "koord-manager": "github.com/koordinator-sh/koordinator/cmd/koord-manager",
                "koord-scheduler": "github.com/koordinator-sh/koordinator/cmd/koord-scheduler",
            },
            data={
                **{
                    f"{_KOORD_CRDS}/{f}.yaml": f"crd-{f.split('_')[1]}.yaml"
                    for f in _KOORD_CRD_FILES
                },
                "config/webhook/manifests.yaml": "koordinator-webhooks.yaml",
                "config/webhook/patch_manifests.yaml": "koordinator-webhook-patches.yaml",
            },
        ),
        # The real Argo CD (tests/harness/simcluster/argocd.py): one multi-call binary, started as
        # application-controller, repo-server and cmp-server (ARGOCD_BINARY_NAME). v3.6 needs
        # Go 1.27. Opt-in (see `opt_in`); the CRDs come from the same module.
        Component(
            "argocd",
            "github.com/argoproj/argo-cd/v3",
            {"argocd": "github.com/argoproj/argo-cd/v3/cmd"},
            data={
                f"{_ARGOCD_CRDS}/application-crd.yaml": "crd-applications.yaml",
                f"{_ARGOCD_CRDS}/appproject-crd.yaml": "crd-appprojects.yaml",
                # The image's script the repo-server runs on every manifest generation (v3.6.1
                # reposerver/repository/repository.go:556, util/git/client.go:1172-1179: the
                # generation fails with "permission denied" without it).
                "hack/git-verify-wrapper.sh": "git-verify-wrapper.sh",
            },
            toolchain="go1.27.3",
            opt_in=True,
        ),
    )
}


def available() -> list[str]:
    """Components whose Go module exists in this checkout (in build order)."""
    return [name for name, c in COMPONENTS.items() if (c.directory / "go.mod").is_file()]


def default() -> list[str]:
    """What a bare `scripts/simcluster build` builds: every available component but the opt-in."""
    return [name for name in available() if not COMPONENTS[name].opt_in]


def source_hash(component: Component) -> str:
    digest = hashlib.sha256(_RECIPE.encode())
    if component.toolchain:  # keeps every other component's key as it was
        digest.update(f" GOTOOLCHAIN={component.toolchain}".encode())
    digest.update(repr(sorted(component.binaries.items())).encode())
    digest.update(repr(sorted(component.data.items())).encode())
    for path in (component.directory / "go.mod", component.directory / "go.sum"):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def output_dir(component: Component) -> Path:
    return cache_root() / "simcluster" / f"{component.name}-{source_hash(component)}"


def cached(name: str) -> Path | None:
    """The folder holding `name`'s binaries, if they were built for the current go.mod."""
    component = COMPONENTS[name]
    folder = output_dir(component)
    wanted = [*component.binaries, *component.data.values()]
    return folder if all((folder / f).is_file() for f in wanted) else None


def ensure(name: str) -> Path:
    """Cached binaries of `name`, built first if needed (or waited for, while another process
    builds them: see controlplane.build.build_lock)."""
    found = cached(name)
    if found is not None:
        return found
    with build_lock(name):
        return cached(name) or _build(COMPONENTS[name])


def download(name: str) -> None:
    """Fetch `name`'s modules (and its Go toolchain, if it names one) without compiling."""
    component = COMPONENTS[name]
    go_download(component.directory, _build_env(component))


def _build(component: Component) -> Path:
    if not go_available():
        raise BuildError(f"the Go toolchain (`go`) is not on PATH; it builds {component.name}")
    target = output_dir(component)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Build beside the target and rename, as tests/harness/controlplane does: never a half-written
    # binary.
    staging = Path(tempfile.mkdtemp(prefix=f".build-{component.name}-", dir=target.parent))
    try:
        started = time.monotonic()
        print(
            f"simcluster: building {component.name} {component.version()} "
            f"({', '.join(component.binaries)}) into {target.parent}",
            file=sys.stderr,
            flush=True,
        )
        _go_build(component, staging)
        _copy_data(component, staging)
        seconds = time.monotonic() - started
        print(f"simcluster: built {component.name} in {seconds:.0f}s", file=sys.stderr, flush=True)
        try:
            staging.rename(target)
        except OSError:
            if cached(component.name) is None:  # else a concurrent build published it first
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _go_build(component: Component, out: Path) -> None:
    # One `go build` per binary: with -o DIR and several packages Go names the files after the
    # last path element, and Volcano's are all called `scheduler`, `controller-manager`, ...
    for binary, package in component.binaries.items():
        command = [
            "go",
            "build",
            *COMPILE_FLAGS,
            "-ldflags",
            _ldflags(component),
            "-o",
            str(out / binary),
            package,
        ]
        result = subprocess.run(
            command, cwd=component.directory, env=_build_env(component), check=False
        )
        if result.returncode != 0:
            raise BuildError(f"`go build {package}` failed with exit code {result.returncode}")


def _copy_data(component: Component, out: Path) -> None:
    if not component.data:
        return
    listed = subprocess.run(
        ["go", "list", "-m", "-f", "{{.Dir}}", component.module],
        cwd=component.directory,
        env=_build_env(component),
        capture_output=True,
        text=True,
        check=False,
    )
    if listed.returncode != 0:
        raise BuildError(f"cannot locate {component.module} in the module cache: {listed.stderr}")
    source = Path(listed.stdout.strip())
    for relative, name in component.data.items():
        shutil.copyfile(source / relative, out / name)


def _build_env(component: Component) -> dict[str, str]:
    env = dict(os.environ)
    env.update(GOFLAGS="-trimpath -mod=readonly -buildvcs=false", CGO_ENABLED="0")
    if component.toolchain:
        env["GOTOOLCHAIN"] = component.toolchain
    return env


def _ldflags(component: Component) -> str:
    flags = ["-s", "-w"]
    if component.kubernetes_version_flags:
        # Without these the binaries report v0.0.0-master (see tests/harness/controlplane/build.py).
        version = component.version()
        major, minor = version.lstrip("v").split(".")[:2]
        pairs = {"gitVersion": version, "gitMajor": major, "gitMinor": minor}
        for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
            flags += [f"-X {package}.{key}={value}" for key, value in pairs.items()]
    return " ".join(flags)


def _required_version(go_mod: Path, module: str) -> str:
    for line in go_mod.read_text().splitlines():
        fields = line.replace("require", "").split()
        if len(fields) >= 2 and fields[0] == module:
            return fields[1]
    raise BuildError(f"{go_mod} does not require {module}")
