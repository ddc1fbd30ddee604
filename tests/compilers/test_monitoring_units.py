"""The `monitoring` target counts a node's units as the plan does (`plan.capacity.node_units`,
issue 30): the promtool scenarios feed `kube_node_status_allocatable` with what a node holds,
and the recording rules weigh it back into physical cards, in the two cases a private count
once got wrong: a staged sharing reduction (the device plugin still advertises the retiring
replicas) and a MIG pool whose devices are DRA claims (the quota resources of `plan.dra`)."""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml

from hetgitops import api
from hetgitops.compilers.monitoring import names
from hetgitops.compilers.monitoring.facts import facts
from hetgitops.compilers.monitoring.promtests import promtool_files, rule_files
from hetgitops.compilers.monitoring.scenario_base import nominal_resource
from hetgitops.drift.accelerators import node_resources
from hetgitops.model.policy import Policy, Pool
from hetgitops.plan import dra
from hetgitops.plan.capacity import card_equivalents, covered_gpus, node_units
from hetgitops.plan.node_labels import domain
from tests.compilers.test_monitoring import promtool

REPO = Path(__file__).resolve().parents[2]
DRA_VARIANT = REPO / "tests" / "cases" / "render" / "dra" / "policy"
NOW = dt.date(2026, 9, 1)
CAPACITY = "HetGitOpsPoolCapacityBelowCommitment.test.yaml"
# The pool under test is renamed to sort first, so the scenarios (three pools per alert)
# sample it.
FIRST = "a000-first"


def _policy(source: Path, tmp: Path, pool: str, edits: Sequence[tuple[str, str, str]]) -> Policy:
    """`source` with `pool` renamed to FIRST, `edits` (file, old, new) applied and the
    monitoring target on."""
    root = tmp / "policy"
    shutil.copytree(source, root)
    for name, old, new in edits:
        path = root / name
        assert old in path.read_text(), (name, old)
        path.write_text(path.read_text().replace(old, new))
    for path in root.rglob("*.yaml"):
        path.write_text(path.read_text().replace(pool, FIRST))
    fleet = root / "fleet.yaml"
    docs = list(yaml.safe_load_all(fleet.read_text()))
    docs[0]["spec"]["targets"] = [*docs[0]["spec"]["targets"], "monitoring"]
    fleet.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    result = api.render([root], api.Options(now=NOW))
    assert result.policy is not None and not result.failed(), result.diagnostics
    return result.policy


def _staged_reduction(tmp: Path) -> Policy:
    """rtx4090-dev in step 1 of a staged sharing reduction: 4 -> 2 replicas per GPU, the
    device plugin kept at 4 (`retiringReplicas`), the teams' quotas fitting the new count."""
    edits = (
        ("pools/dev.yaml", "    replicas: 4\n", "    replicas: 2\n    retiringReplicas: 4\n"),
        ("teams/others.yaml", "{pool: rtx4090-dev, cards: 16}", "{pool: rtx4090-dev, cards: 8}"),
        ("teams/others.yaml", "{pool: rtx4090-dev, cards: 32}", "{pool: rtx4090-dev, cards: 16}"),
    )
    policy = _policy(REPO / "policies", tmp, "rtx4090-dev", edits)
    pool = policy.pools[FIRST]
    assert pool.retiring_replicas == 4 and pool.shared_replicas == 2
    return policy


def _dra_mig(tmp: Path) -> Policy:
    """The DRA variant's h100-infer: MIG GPUs claimed through NVIDIA's DRA driver."""
    policy = _policy(DRA_VARIANT, tmp, "h100-infer", ())
    pool = policy.pools[FIRST]
    assert dra.claims(pool) and pool.mig
    return policy


def _allocatable(test_file: str, nodes: set[str]) -> dict[str, dict[str, int]]:
    """node -> resource -> count: the capacity scenarios' kube_node_status_allocatable
    series for `nodes` (every case and replica agree, which this checks too)."""
    seen: dict[str, dict[str, int]] = {}
    for test in yaml.safe_load(test_file)["tests"]:
        found: dict[str, dict[str, int]] = {}
        for item in test["input_series"]:
            series: str = item["series"]
            if not series.startswith(names.NODE_ALLOCATABLE + "{"):
                continue
            labels = dict(
                part.split("=", 1) for part in series[series.index("{") + 1 : -1].split(", ")
            )
            node, resource = labels["node"].strip('"'), labels["resource"].strip('"')
            if node in nodes and resource != "cpu":
                count = int(item["values"].split("x")[0])
                assert found.setdefault(node, {}).setdefault(resource, count) == count
        for node, units in found.items():
            assert seen.setdefault(node, units) == units, (test["name"], node)
    return seen


def _expected(policy: Policy, pool: Pool) -> dict[str, dict[str, int]]:
    """What drift says each node's device plugin advertises, in the series' spelling."""
    card = policy.card_type_of(pool)
    assert card is not None
    return {
        node.name: {
            names.sanitise(r): n for r, n in node_resources(policy, pool, card, node).items()
        }
        for node in pool.nodes
    }


def policy_cards(policy: Policy) -> list[tuple[str, list[Any]]]:
    """The capacity scenarios of FIRST: each case's name and the alerts it expects there
    (with the weighed cards left after the cordons, in the annotation)."""
    document = yaml.safe_load(promtool_files(policy)[CAPACITY])
    found = []
    for test in document["tests"]:
        if f"pool {FIRST} " not in test["name"]:
            continue
        alerts = [e for c in test["alert_rule_test"] for e in c["exp_alerts"]]
        found.append((test["name"], [e for e in alerts if e["exp_labels"]["pool"] == FIRST]))
    assert len(found) == 2 and found[1][1], found  # ready and degraded; degraded fires
    return found


def _run_promtool(policy: Policy, folder: Path) -> None:
    tool = promtool()
    folder.mkdir(parents=True)
    for name, text in promtool_files(policy).items():
        (folder / name).write_text(text)
    tests = sorted(p.name for p in folder.glob("*.test.yaml"))
    run = subprocess.run(
        [tool, "test", "rules", *tests], cwd=folder, capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr


def _recorded_cards(
    policy: Policy,
    pool: Pool,
    node_series: Mapping[str, Mapping[str, int]],
    expected: Fraction,
    folder: Path,
) -> None:
    """The rules fed `node_series` as every node's allocatable record
    `hetgitops:pool_allocatable_cards` = `expected` for the pool (checked by promtool, to the
    thousandth: MIG slices weigh sevenths)."""
    tool = promtool()
    assert policy.fleet is not None
    folder.mkdir(parents=True)
    files = rule_files(policy, policy.fleet)
    for name, text in files.items():
        (folder / name).write_text(text)
    card = policy.card_type_of(pool)
    assert card is not None
    prefix = domain(policy)
    labels = {
        names.node_label(f"{prefix}/pool"): pool.name,
        names.node_label(f"{prefix}/card-type"): card.name,
    }
    recorded = f'hetgitops:pool_allocatable_cards{{pool="{pool.name}"}}'
    series: list[dict[str, Any]] = []
    for node, units in node_series.items():
        inner = ", ".join(f'{k}="{v}"' for k, v in sorted({**labels, "node": node}.items()))
        series.append({"series": f"{names.NODE_LABELS}{{{inner}}}", "values": "1x3"})
        for resource, count in units.items():
            ids = f'node="{node}", resource="{resource}", unit="integer"'
            series.append({"series": f"{names.NODE_ALLOCATABLE}{{{ids}}}", "values": f"{count}x3"})
    test = {
        "rule_files": sorted(files),
        "evaluation_interval": "5m",
        "tests": [
            {
                "interval": "5m",
                "input_series": series,
                "promql_expr_test": [
                    {
                        "expr": f"round(sum({recorded}), 0.001)",
                        "eval_time": "10m",
                        "exp_samples": [{"labels": "{}", "value": round(float(expected), 3)}],
                    }
                ],
            }
        ],
    }
    (folder / "cards.test.yaml").write_text(yaml.safe_dump(test, sort_keys=False))
    run = subprocess.run(
        [tool, "test", "rules", "cards.test.yaml"],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_scenarios_give_nodes_the_retiring_replicas_during_a_staged_reduction(
    tmp_path: Path,
) -> None:
    policy = _staged_reduction(tmp_path)
    pool = policy.pools[FIRST]
    nodes = {n.name for n in pool.nodes}
    generated = _allocatable(promtool_files(policy)[CAPACITY], nodes)
    # The device plugin still advertises 4 replicas per GPU (not the new 2).
    assert generated == {n.name: {"nvidia_com_gpu": n.cards * 4} for n in pool.nodes}
    assert generated == _expected(policy, pool)
    _run_promtool(policy, tmp_path / "promtool")


def test_rules_count_retiring_replicas_as_the_cards_they_are(tmp_path: Path) -> None:
    """What the nodes hold during the reduction (4 replicas per GPU) is recorded as the pool's
    physical cards, not twice them (a replica held there is a quarter of a GPU)."""
    policy = _staged_reduction(tmp_path)
    pool = policy.pools[FIRST]
    held = {n.name: {"nvidia_com_gpu": n.cards * 4} for n in pool.nodes}
    cards = Fraction(sum(n.cards for n in pool.nodes))
    _recorded_cards(policy, pool, held, cards, tmp_path / "cards")


def test_dra_nodes_show_no_accelerator_allocatable_in_the_scenarios(tmp_path: Path) -> None:
    """kube-state-metrics reports a Node's status.allocatable (v2.20.0 internal/store/node.go)
    and DRA devices are never there: the capacity scenarios of a DRA pool feed none (they used
    to feed the DRA quota resources, a series that never exists), but dcgm-exporter's GPUs,
    and the generated tests pass in the real rule engine."""
    policy = _dra_mig(tmp_path)
    pool = policy.pools[FIRST]
    generated = _allocatable(promtool_files(policy)[CAPACITY], {n.name for n in pool.nodes})
    # only the trap: a node of the pool moving off the device plugin (migratingFrom) that
    # still advertises its GPUs there, counted once with what dcgm-exporter sees
    assert pool.migrating_from == "devicePlugin"
    assert generated == {pool.nodes[0].name: {"nvidia_com_gpu": pool.nodes[0].cards}}
    text = promtool_files(policy)[CAPACITY]
    assert f'{names.GR_ENGINE_ACTIVE}{{GPU_I_ID="0", GPU_I_PROFILE="1g.10gb"' in text
    _run_promtool(policy, tmp_path / "promtool")


def _dcgm(node: str, gpus: int, mig: Mapping[int, Sequence[str]]) -> list[dict[str, Any]]:
    """dcgm-exporter 4.x on a node: a series per whole GPU (DCGM_FI_DEV_GPU_UTIL), one per MIG
    instance (DCGM_FI_PROF_GR_ENGINE_ACTIVE with the parent's `gpu`, GPU_I_PROFILE and
    GPU_I_ID; GPU_UTIL is not reported there), `Hostname` the node name."""
    series = []
    for gpu in range(gpus):
        ids = f'Hostname="{node}", UUID="GPU-{node}-{gpu}", gpu="{gpu}", modelName="NVIDIA H100"'
        if gpu not in mig:
            series.append({"series": f"{names.GPU_UTIL}{{{ids}}}", "values": "35x3"})
        for number, profile in enumerate(mig.get(gpu, ())):
            instance = f'{ids}, GPU_I_ID="{number}", GPU_I_PROFILE="{profile}"'
            series.append({"series": f"{names.GR_ENGINE_ACTIVE}{{{instance}}}", "values": "0.2x3"})
    return series


def _dra_series(
    policy: Policy, pool: Pool, cordoned: set[str], mig: Mapping[int, Sequence[str]]
) -> list[dict[str, Any]]:
    """Every node of `pool` as the exporters report a DRA node: labels, cpu allocatable only,
    its cordon, and dcgm-exporter's GPUs (8, those of `mig` partitioned into MIG instances)."""
    card = policy.card_type_of(pool)
    assert card is not None
    prefix = domain(policy)
    series: list[dict[str, Any]] = []
    for node in (n.name for n in pool.nodes):
        labels = {
            names.node_label(f"{prefix}/pool"): pool.name,
            names.node_label(f"{prefix}/card-type"): card.name,
            "node": node,
        }
        inner = ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        series.append({"series": f"{names.NODE_LABELS}{{{inner}}}", "values": "1x5"})
        ids = f'node="{node}", resource="cpu", unit="core"'
        series.append({"series": f"{names.NODE_ALLOCATABLE}{{{ids}}}", "values": "64x5"})
        held = f'{names.NODE_UNSCHEDULABLE}{{node="{node}"}}'
        series.append({"series": held, "values": f"{int(node in cordoned)}x5"})
        series += _dcgm(node, 8, mig)
    return series


def promtool_suite(
    policy: Policy, folder: Path, tests: list[dict[str, Any]], suite_file: str = "dra.test.yaml"
) -> None:
    """`tests` against `policy`'s rule files in the real promtool (written under `folder`)."""
    assert policy.fleet is not None
    folder.mkdir(parents=True)
    files = rule_files(policy, policy.fleet)
    for name, text in files.items():
        (folder / name).write_text(text)
    suite = {"rule_files": sorted(files), "evaluation_interval": "5m", "tests": tests}
    (folder / suite_file).write_text(yaml.safe_dump(suite, sort_keys=False))
    run = subprocess.run(
        [promtool(), "test", "rules", suite_file],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def _cards_test(series: list[dict[str, Any]], pool: Pool, value: Fraction) -> dict[str, Any]:
    recorded = f'hetgitops:pool_allocatable_cards{{pool="{pool.name}"}}'
    return {
        "interval": "5m",
        "input_series": series,
        "promql_expr_test": [
            {
                "expr": f"round(sum({recorded}), 0.001)",
                "eval_time": "20m",
                "exp_samples": [{"labels": "{}", "value": round(float(value), 3)}],
            }
        ],
    }


def test_a_dra_pool_has_the_gpus_dcgm_exporter_sees_on_schedulable_nodes(tmp_path: Path) -> None:
    """What the exporters really report for a DRA pool (kube-state-metrics: cpu allocatable
    only; dcgm-exporter: one series per GPU or MIG instance): the rules record the pool's
    cards on schedulable nodes (a partitioned GPU the shares of its instances), a cordoned
    node's none, and the capacity alert stays quiet on the healthy pool. On the old rules the
    pool had no allocatable cards at all: the alert fired with 0 on a healthy pool, for good."""
    policy = _dra_mig(tmp_path)
    pool = policy.pools[FIRST]
    assert policy.fleet is not None and all(n.cards == 8 for n in pool.nodes)
    layout = {4: ["1g.10gb"] * 7, 5: ["3g.40gb", "3g.40gb"]}
    per_node = 6 + Fraction(7, 7) + Fraction(6, 7)  # 1g.10gb is 1/7 of an H100, 3g.40gb 3/7
    gpus = per_node * len(pool.nodes)
    assert facts(policy, policy.fleet).pools[FIRST].committed_cards <= gpus
    healthy = _cards_test(_dra_series(policy, pool, set(), layout), pool, gpus)
    firing = f'ALERTS{{alertname="HetGitOpsPoolCapacityBelowCommitment", pool="{FIRST}"}}'
    healthy["promql_expr_test"].append({"expr": firing, "eval_time": "20m", "exp_samples": []})
    cordoned = _dra_series(policy, pool, {pool.nodes[0].name}, layout)
    one_cordoned = _cards_test(cordoned, pool, gpus - per_node)
    promtool_suite(policy, tmp_path / "dra", [healthy, one_cordoned])


def test_a_mig_pool_has_the_same_cards_on_the_device_plugin_and_on_dra(tmp_path: Path) -> None:
    """The bundled fleet's h100-infer (GPUs 0-1 as 7 x 1g.10gb, 2-3 as 2 x 3g.40gb, 4-7
    whole) once on the device plugin and once on DRA claims, each fed what its exporters
    report for that layout: `hetgitops:pool_allocatable_cards` is the same, the plan's card
    equivalents (a 3g.40gb is 3/7 of a card), and so is the point where the capacity alert
    fires. It used to be 8 cards per node on DRA (a partitioned GPU whole) and 7.714 on the
    device plugin, so a DRA pool short of its commitment by MIG's unused slices never fired."""
    plugin = _policy(REPO / "policies", tmp_path / "plugin", "h100-infer", ())
    on_dra = _dra_mig(tmp_path / "dra")
    pool_dp, pool_dra = plugin.pools[FIRST], on_dra.pools[FIRST]
    card = plugin.card_type_of(pool_dp)
    assert card is not None and not dra.on_dra(pool_dp)
    layout = covered_gpus(pool_dp, 8)
    assert layout == covered_gpus(pool_dra, 8) and layout == {
        0: {"1g.10gb": 7},
        1: {"1g.10gb": 7},
        2: {"3g.40gb": 2},
        3: {"3g.40gb": 2},
    }
    per_node = card_equivalents(
        node_units(pool_dp, card, plugin.fleet, 8, replicas="advertised"),
        pool=pool_dp,
        card=card,
        fleet=plugin.fleet,
    )
    assert per_node == 4 + 2 + Fraction(12, 7)
    total = per_node * len(pool_dp.nodes)
    _recorded_cards(plugin, pool_dp, _expected(plugin, pool_dp), total, tmp_path / "dp")
    instances = {
        gpu: [p for p, n in profiles.items() for _ in range(n)] for gpu, profiles in layout.items()
    }
    series = _dra_series(on_dra, pool_dra, set(), instances)
    promtool_suite(on_dra, tmp_path / "dra-cards", [_cards_test(series, pool_dra, total)])
    # The capacity alert fires at the same point: the generated scenarios of each policy
    # cordon nodes until the pool's weighed cards fall under its commitment.
    assert policy_cards(plugin) == policy_cards(on_dra)
    _run_promtool(on_dra, tmp_path / "scenarios")


def test_idle_scenarios_request_a_slice_of_a_mig_pool_on_claims() -> None:
    """The MIG slices of a pool are the plan's (`capacity.is_mig`), not a name prefix: on DRA
    claims they are `dra.hetgitops.io/<card>-mig-<profile>`, and a team holding whole cards
    and slices there is given a slice in the idle scenarios (GR_ENGINE_ACTIVE's case)."""
    result = api.render([DRA_VARIANT], api.Options(now=NOW, targets=("monitoring",)))
    policy = result.policy
    assert policy is not None and policy.fleet is not None
    found = facts(policy, policy.fleet)
    team = found.teams["online-inference"]
    flavor = next(f for f, p in team.pools.items() if p == "h100-infer")
    card = policy.card_type_of(policy.pools["h100-infer"])
    assert card is not None
    whole = dra.quota_resource(card)
    assert team.nominal[flavor][whole] > 0  # the team holds whole cards there too
    assert nominal_resource(team, flavor, found) == dra.quota_resource(card, "1g.10gb")
