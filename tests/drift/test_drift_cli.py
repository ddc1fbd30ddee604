"""`hetgitops drift` without a cluster: usage errors, environment errors, policy errors."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from hetgitops.cli.main import main

REPO = Path(__file__).resolve().parents[2]


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["drift", *args])
    return result.exit_code, result.output


def _kubeconfig(tmp_path: Path, server: str) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "s3cr3t-token-value"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(config))
    return path


def test_help_documents_exit_4_for_the_cluster() -> None:
    code, output = _invoke("--help")
    assert code == 0
    assert "4  environment error: the cluster is unreachable" in output
    assert "proposed exit 3" not in output  # help says what is true, not project history


def test_bad_duration_is_a_usage_error() -> None:
    code, output = _invoke(str(REPO / "policies"), "--mig-pending-timeout", "soon")
    assert code == 2 and "not a duration" in output


def test_unknown_format_is_a_usage_error() -> None:
    assert _invoke("--format", "junit")[0] == 2


def test_unusable_kubeconfig_is_an_environment_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.write_text("apiVersion: v1\nkind: Config\n")
    code, output = _invoke(str(REPO / "policies"), "--kubeconfig", str(broken))
    assert code == 4 and "kubeconfig" in output


def test_unreachable_cluster_is_exit_4_and_prints_no_credentials(tmp_path: Path) -> None:
    config = _kubeconfig(tmp_path, "https://127.0.0.1:9")
    code, output = _invoke(str(REPO / "policies"), "--kubeconfig", str(config))
    assert code == 4, output
    assert "cannot reach the API server https://127.0.0.1:9" in output
    assert "s3cr3t" not in output


def test_policy_errors_stop_before_the_cluster(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text("apiVersion: hetgitops.io/v1alpha1\nkind: Fleet\n")
    config = _kubeconfig(tmp_path, "https://127.0.0.1:9")
    code, output = _invoke(str(tmp_path / "fleet.yaml"), "--kubeconfig", str(config))
    assert code == 1 and "schema" in output and "cannot reach" not in output
