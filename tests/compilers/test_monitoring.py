"""The `monitoring` target: PrometheusRules checked and unit-tested by the real promtool.

promtool (Debian's `prometheus` package, installed by .ci/run) runs `check rules` on every
generated rule file and `test rules` on the generated unit tests, for the bundled fleet and a
benchmark fleet. Under HETGITOPS_REQUIRE_PROMTOOL (set in CI) a missing promtool fails.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from bench.fleetgen import FleetSpec, write_policy
from hetgitops import api
from hetgitops.compilers.monitoring import exporters
from hetgitops.compilers.monitoring.promtests import promtool_files
from hetgitops.model.policy import Policy

REPO = Path(__file__).resolve().parents[2]
NOW = dt.date(2026, 9, 1)
REQUIRE = "HETGITOPS_REQUIRE_PROMTOOL"
BENCH = FleetSpec(nodes=240, pools=8, teams=16, cards=5, cluster="bench-monitoring")


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        if os.environ.get(REQUIRE):
            pytest.fail(f"promtool not found and {REQUIRE} is set (apt-get install prometheus)")
        pytest.skip("promtool not installed (apt-get install prometheus)")
    return found


def _policy(folder: Path, targets: tuple[str, ...] | None = None) -> api.Result:
    result = api.render([folder], api.Options(now=NOW, targets=targets))
    assert not result.failed(), [f"{d.span}: {d.rule}: {d.message}" for d in result.diagnostics]
    return result


def _write(policy: Policy, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in promtool_files(policy).items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=1200, check=False)


def _check_and_test(policy: Policy, folder: Path) -> None:
    tool = promtool()
    _write(policy, folder)
    rules = sorted(p.name for p in folder.glob("*.rules.yaml"))
    tests = sorted(p.name for p in folder.glob("*.test.yaml"))
    assert len(rules) == 3 and tests
    checked = _run([tool, "check", "rules", *rules], folder)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = _run([tool, "test", "rules", *tests], folder)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert tested.stdout.count("SUCCESS") == len(tests)


def _bench(tmp: Path) -> Path:
    return write_policy(BENCH, tmp / "bench")


@pytest.mark.slow  # the real promtool
def test_bundled_fleet_rules_pass_promtool(tmp_path: Path) -> None:
    result = _policy(REPO / "policies", ("monitoring",))
    assert result.policy is not None
    _check_and_test(result.policy, tmp_path / "promtool")


@pytest.mark.slow  # the bench fleet through promtool
def test_bench_fleet_rules_pass_promtool(tmp_path: Path) -> None:
    result = _policy(_bench(tmp_path), ("monitoring",))
    assert result.policy is not None
    _check_and_test(result.policy, tmp_path / "promtool")


def _with_monitoring(tmp: Path, section: dict[str, object]) -> Path:
    """The bundled policy with a `monitoring` section in the Fleet."""
    folder = tmp / "policy"
    shutil.copytree(REPO / "policies", folder)
    fleet_file = folder / "fleet.yaml"
    docs = list(yaml.safe_load_all(fleet_file.read_text(encoding="utf-8")))
    docs[0]["spec"]["monitoring"] = section
    docs[0]["spec"]["targets"] = [*docs[0]["spec"]["targets"], "monitoring"]
    fleet_file.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    return folder


def test_generated_tests_fail_against_other_thresholds(tmp_path: Path) -> None:
    """The tests state the policy's arithmetic: rules rendered with another idle threshold
    and admission objective fail them (so they can fail at all)."""
    tool = promtool()
    strict = _policy(_with_monitoring(tmp_path / "a", {"idle": {"utilisationPercent": 40}}))
    loose = _policy(_with_monitoring(tmp_path / "b", {"idle": {"utilisationPercent": 2}}))
    assert strict.policy is not None and loose.policy is not None
    folder = _write(strict.policy, tmp_path / "promtool")
    for name, text in promtool_files(loose.policy).items():
        if name.endswith(".rules.yaml"):
            (folder / name).write_text(text, encoding="utf-8")
    tested = _run([tool, "test", "rules", "HetGitOpsGPUsAllocatedButIdle.test.yaml"], folder)
    assert tested.returncode != 0
    assert "FAILED" in tested.stdout + tested.stderr


def test_monitoring_is_off_unless_listed() -> None:
    result = _policy(REPO / "policies")
    assert not [m for m in result.manifests if m.target == "monitoring"]


def test_thresholds_reach_the_rules(tmp_path: Path) -> None:
    section = {
        "namespace": "observability",
        "ruleLabels": {"release": "kube-prometheus-stack"},
        "idle": {"utilisationPercent": 25, "for": "2h"},
        "admissionWait": {"tiers": {"online-inference": "5m"}, "default": "4h"},
        "budget": {"percent": 80},
    }
    result = _policy(_with_monitoring(tmp_path, section))
    rules = {m.name: m for m in result.manifests if m.kind == "PrometheusRule"}
    assert set(rules) == {"hetgitops-policy", "hetgitops-recording", "hetgitops-alerts"}
    alerts = rules["hetgitops-alerts"]
    assert alerts.namespace == "observability"
    assert alerts.obj["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    by_name = {r["alert"]: r for r in alerts.obj["spec"]["groups"][0]["rules"]}
    idle = by_name["HetGitOpsGPUsAllocatedButIdle"]
    assert "< 0.25)" in idle["expr"] and idle["for"] == "2h"
    assert "* 0.8)" in by_name["HetGitOpsBudgetBurnAboveMonthly"]["expr"]
    facts = rules["hetgitops-policy"].obj["spec"]["groups"][0]["rules"]
    objectives = {
        r["labels"]["priority_class"]: r["expr"]
        for r in facts
        if r["record"] == "hetgitops:tier_admission_objective_seconds"
    }
    assert objectives == {
        "online-inference": "vector(300)",
        "training": "vector(14400)",
        "dev": "vector(14400)",
    }


def test_allowlist_names_exactly_the_policy_label_keys() -> None:
    result = _policy(REPO / "policies", ("monitoring",))
    assert result.policy is not None and result.policy.taxonomy is not None
    values = next(
        m.obj for m in result.manifests if m.filename == "kube-state-metrics-helm-values.yaml"
    )
    (allowlist,) = values["metricLabelsAllowlist"]
    keys = allowlist.removeprefix("nodes=[").removesuffix("]").split(",")
    taxonomy = {rule.key for rule in result.policy.taxonomy.labels}
    mig = {"nvidia.com/mig.config", "nvidia.com/mig.config.state"}
    assert set(keys) == taxonomy | {"hetgitops.io/pool", "hetgitops.io/card-type"} | mig
    assert keys == exporters.node_label_keys(result.policy)


def test_cli_writes_promtool_tests_outside_the_tree(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from hetgitops.cli.main import main as cli

    runner = CliRunner()
    base = ["render", str(REPO / "policies"), "--now", "2026-09-01", "--target", "monitoring"]
    inside = runner.invoke(
        cli, [*base, "--output", str(tmp_path / "t"), "--promtool-tests", str(tmp_path / "t/p")]
    )
    assert inside.exit_code == 2
    ok = runner.invoke(
        cli, [*base, "--output", str(tmp_path / "t"), "--promtool-tests", str(tmp_path / "p")]
    )
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "p" / "HetGitOpsPoolCapacityBelowCommitment.test.yaml").is_file()
    assert not list((tmp_path / "t").rglob("*.test.yaml"))
    without = runner.invoke(
        cli,
        [
            "render",
            str(REPO / "policies"),
            "--now",
            "2026-09-01",
            "--target",
            "core",
            "--output",
            str(tmp_path / "c"),
            "--promtool-tests",
            str(tmp_path / "q"),
        ],
    )
    assert without.exit_code == 2


def test_drift_rbac_lists_prometheus_rules(tmp_path: Path) -> None:
    """drift compares the PrometheusRules like any rendered kind: its ClusterRole may list them."""
    folder = _with_monitoring(tmp_path, {"idle": {"utilisationPercent": 5}})
    result = _policy(folder, ("drift-rbac",))
    role = next(m.obj for m in result.manifests if m.kind == "ClusterRole")
    groups = {rule["apiGroups"][0]: rule["resources"] for rule in role["rules"]}
    assert "prometheusrules" in groups["monitoring.coreos.com"]
    assert "configmaps" in groups[""]


def test_prometheus_rules_are_checked_against_their_schema() -> None:
    from hetgitops.conformance.k8s_schemas import target_validators

    result = _policy(REPO / "policies", ("monitoring",))
    assert not [d for d in result.diagnostics if "PrometheusRule" in d.message]
    checker = target_validators()[("monitoring.coreos.com/v1", "PrometheusRule")]
    rule = next(m.obj for m in result.manifests if m.name == "hetgitops-alerts")
    assert checker.is_valid(rule)
    broken = yaml.safe_load(yaml.safe_dump(rule))
    broken["spec"]["groups"][0]["rules"][0]["for"] = "1 hour"
    assert not checker.is_valid(broken)


# -- issue 33 item 4: every duration the policy accepts is one Prometheus loads and evaluates ----

LONGEST = "106751d23h47m16s854ms"  # Prometheus' limit: 2^63-1 ns, in whole milliseconds


@pytest.mark.parametrize(
    "section",
    [
        {"admissionWait": {"window": "0s"}},
        {"budget": {"window": "0m"}},
        {"admissionWait": {"window": "1ms"}},
        {"idle": {"for": "300y"}},
        {"admissionWait": {"window": "293y"}},
    ],
)
def test_durations_prometheus_refuses_fail_render(
    tmp_path: Path, section: dict[str, object]
) -> None:
    """They used to render with exit 0 into rule files promtool refuses (`duration must be
    greater than 0`, `duration out of range`) or generated tests that fail (`1ms`)."""
    from click.testing import CliRunner

    from hetgitops.cli.main import main as cli

    folder = _with_monitoring(tmp_path, section)
    args = ["render", str(folder), "--now", "2026-09-01", "--output", str(tmp_path / "out")]
    result = CliRunner().invoke(cli, [*args, "--promtool-tests", str(tmp_path / "p")])
    assert result.exit_code == 1, result.output
    assert "monitoring-duration" in result.output
    assert not (tmp_path / "p").exists()


def test_the_shortest_windows_pass_promtool(tmp_path: Path) -> None:
    section = {"admissionWait": {"window": "10m"}, "budget": {"window": "10m"}}
    result = _policy(_with_monitoring(tmp_path, section))
    assert result.policy is not None
    _check_and_test(result.policy, tmp_path / "promtool")


def test_the_longest_durations_pass_promtool_check(tmp_path: Path) -> None:
    tool = promtool()
    section = {"idle": {"for": LONGEST}, "admissionWait": {"window": LONGEST}}
    result = _policy(_with_monitoring(tmp_path, section))
    assert result.policy is not None
    folder = tmp_path / "promtool"
    folder.mkdir()
    for name, text in promtool_files(result.policy).items():
        if name.endswith(".rules.yaml"):
            (folder / name).write_text(text, encoding="utf-8")
    checked = _run([tool, "check", "rules", *sorted(p.name for p in folder.iterdir())], folder)
    assert checked.returncode == 0, checked.stdout + checked.stderr
