"""`hetgitops drift` on a multi-cluster policy, without a cluster: each Cluster needs its own
`--context CLUSTER=CONTEXT`; a missing or unknown one is a usage error (exit 2), never a
cluster skipped in silence; an unreachable cluster is named (exit 4) without credentials."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hetgitops.cli.main import main
from tests.checks.multi_policy import multi_policy

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    folder = tmp_path / "fleet"
    folder.mkdir()
    for name, text in multi_policy().files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _kubeconfig(tmp_path: Path) -> Path:
    """Three contexts on a port nothing listens on."""
    names = ("hub", "east", "west")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": n, "cluster": {"server": "https://127.0.0.1:9"}} for n in names],
        "users": [{"name": "u", "user": {"token": "s3cr3t-token-value"}}],
        "contexts": [{"name": f"ctx-{n}", "context": {"cluster": n, "user": "u"}} for n in names],
        "current-context": "ctx-hub",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(config))
    return path


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["drift", *args])
    return result.exit_code, result.output


def test_a_cluster_without_context_is_a_usage_error(fleet: Path, tmp_path: Path) -> None:
    config = str(_kubeconfig(tmp_path))
    code, output = _invoke(
        str(fleet), "--kubeconfig", config, "--context", "hub=ctx-hub", "--context", "east=ctx-east"
    )
    assert code == 2, output
    assert "no --context for cluster(s) west" in output and "--context west=CONTEXT" in output
    assert "cannot reach" not in output  # refused before any cluster is read


def test_no_context_at_all_names_every_cluster(fleet: Path, tmp_path: Path) -> None:
    code, output = _invoke(str(fleet), "--kubeconfig", str(_kubeconfig(tmp_path)))
    assert code == 2 and "no --context for cluster(s) east, hub, west" in output


def test_a_plain_context_does_not_fit_a_multi_cluster_policy(fleet: Path, tmp_path: Path) -> None:
    code, output = _invoke(
        str(fleet), "--kubeconfig", str(_kubeconfig(tmp_path)), "--context", "ctx-hub"
    )
    assert code == 2 and "one --context CLUSTER=CONTEXT per cluster" in output


def test_a_context_for_an_unknown_cluster_is_a_usage_error(fleet: Path, tmp_path: Path) -> None:
    args = [f"--context={n}=ctx-{n}" for n in ("hub", "east", "west", "south")]
    code, output = _invoke(str(fleet), "--kubeconfig", str(_kubeconfig(tmp_path)), *args)
    assert code == 2 and "cluster(s) the policy does not define: south" in output


def test_cluster_contexts_for_a_single_cluster_policy_are_a_usage_error(tmp_path: Path) -> None:
    code, output = _invoke(str(REPO / "policies"), "--context", "east=ctx-east")
    assert code == 2 and "this policy has no Cluster documents" in output


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (("a", "b"), "2 contexts without CLUSTER="),
        (("east=",), "is not CLUSTER=CONTEXT"),
        (("east=a", "east=b"), "cluster 'east' given twice"),
        (("a", "east=b"), "mixes a plain CONTEXT"),
    ],
)
def test_malformed_contexts_are_usage_errors(values: tuple[str, ...], message: str) -> None:
    args = [f"--context={v}" for v in values]
    code, output = _invoke(str(REPO / "policies"), *args)
    assert code == 2 and message in output, output


def test_unreachable_cluster_is_named_exit_4_without_credentials(
    fleet: Path, tmp_path: Path
) -> None:
    args = [f"--context={n}=ctx-{n}" for n in ("hub", "east", "west")]
    code, output = _invoke(str(fleet), "--kubeconfig", str(_kubeconfig(tmp_path)), *args)
    assert code == 4, output
    assert "cluster east (context ctx-east): " in output  # the first one read, by name
    assert "s3cr3t" not in output


def test_skipped_clusters_are_reported_as_not_checked(fleet: Path, tmp_path: Path) -> None:
    args = [f"--skip-cluster={n}" for n in ("hub", "east", "west")]
    code, output = _invoke(
        str(fleet), "--kubeconfig", str(_kubeconfig(tmp_path)), "--format", "json", *args
    )
    assert code == 1, output  # not checked is not clean
    found = json.loads(output)["diagnostics"]
    assert [(d["rule"], d["severity"], d["cluster"]) for d in found] == [
        ("drift-cluster-not-checked", "warning", name) for name in ("hub", "east", "west")
    ]
    assert all(d["file"].endswith("clusters.yaml") and d["line"] > 0 for d in found)


def test_skip_and_context_must_name_known_distinct_clusters(fleet: Path, tmp_path: Path) -> None:
    config = str(_kubeconfig(tmp_path))
    code, output = _invoke(str(fleet), "--kubeconfig", config, "--skip-cluster", "south")
    assert code == 2 and "does not define: south" in output
    code, output = _invoke(
        str(fleet),
        "--kubeconfig",
        config,
        "--context=hub=ctx-hub",
        "--skip-cluster=hub",
        "--skip-cluster=east",
        "--skip-cluster=west",
    )
    assert code == 2 and "cluster(s) hub both given a context and skipped" in output
