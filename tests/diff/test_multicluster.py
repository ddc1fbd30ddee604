"""diff on a multi-cluster fleet: the quota table names each pool's cluster, the same object
on two clusters is two objects, and cluster-level policy changes are listed."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import jsonschema
import pytest

from hetgitops import api
from hetgitops.diff.formats import FORMATTERS
from hetgitops.diff.objects import object_changes, replay
from hetgitops.diff.run import DiffResult, compare
from hetgitops.diff.structure import same
from hetgitops.load.git_source import read_folder
from hetgitops.output.manifests import Manifest
from tests.checks.conftest import PolicyText
from tests.checks.multi_policy import multi_policy
from tests.diff.scenarios import REPO

NOW = dt.date(2026, 9, 1)
SCHEMA = json.loads((REPO / "schemas" / "diff.schema.json").read_text("utf-8"))


def _diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, base: PolicyText, head: PolicyText
) -> DiffResult:
    for side, policy in (("base", base), ("head", head)):
        for name, text in policy.files.items():
            (tmp_path / side).mkdir(exist_ok=True)
            (tmp_path / side / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    old = read_folder([Path("base")], "base")
    new = read_folder([Path("head")], "head")
    return compare(old, new, api.Options(now=NOW))


SERVING_L40S = (
    "    - {pool: l40s-infer, cards: 8}\n    - {pool: h100-train, cards: 8}\n  tiers: [serving]"
)


def _cut(policy: PolicyText) -> PolicyText:
    """Team serving: 8 -> 4 L40S cards (pool l40s-infer, on worker `west`)."""
    return PolicyText(dict(policy.files)).replace(
        "teams.yaml",
        SERVING_L40S,
        SERVING_L40S.replace("cards: 8}\n    - {pool: h100", "cards: 4}\n    - {pool: h100"),
    )


def test_quota_rows_name_the_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _diff(tmp_path, monkeypatch, multi_policy(), _cut(multi_policy()))
    assert not result.invalid, [d.message for d in result.introduced]
    rows = [(r.cluster, r.team, r.pool, r.before, r.after) for r in result.impact.quotas]
    ((cluster, team, pool, before, after),) = [
        r for r in rows if r[1:3] == ("serving", "l40s-infer")
    ]
    assert (cluster, team, pool) == ("west", "serving", "l40s-infer")
    assert before is not None and after is not None
    assert (before.cards, after.cards) == (8, 4)
    # Every row of a multi-cluster fleet names a cluster that holds the pool.
    assert {r.cluster for r in result.impact.quotas} <= {"east", "west"}
    text = FORMATTERS["text"](result)
    assert "  west: serving / l40s-infer (l40s-48gb): nominal whole 8 -> 4;" in text
    markdown = FORMATTERS["markdown"](result)
    assert "| Cluster | Team | Card type | Pool |" in markdown
    assert "| west | serving | l40s-48gb | l40s-infer | whole 8 → 4 |" in markdown
    body = json.loads(FORMATTERS["json"](result))
    jsonschema.Draft202012Validator(SCHEMA).validate(body)
    assert {q["cluster"] for q in body["impact"]["quotas"]} <= {"east", "west"}
    assert any(
        q["cluster"] == "west" and q["pool"] == "l40s-infer" for q in body["impact"]["quotas"]
    )


def test_single_cluster_rows_have_no_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    single = multi_policy().drop("clusters.yaml")
    single.replace("pools.yaml", "  cluster: east\n", "")
    single.replace("pools.yaml", "  cluster: west\n", "")
    grown = _cut(single)
    result = _diff(tmp_path, monkeypatch, single, grown)
    assert [r.cluster for r in result.impact.quotas] and not any(
        r.cluster for r in result.impact.quotas
    )
    assert "| Cluster |" not in FORMATTERS["markdown"](result)
    assert all(
        "cluster" not in q for q in json.loads(FORMATTERS["json"](result))["impact"]["quotas"]
    )


def test_pool_moved_to_another_cluster_is_flagged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    moved = multi_policy().replace(
        "pools.yaml",
        "  cluster: west\n  cardType: l40s-48gb\n",
        "  cluster: east\n  cardType: l40s-48gb\n",
    )
    result = _diff(tmp_path, monkeypatch, multi_policy(), moved)
    changes = [(c.topic, c.subject, c.before, c.after, c.flag) for c in result.impact.changes]
    assert ("cluster", "pool l40s-infer", "west", "east", "removal") in changes
    # Its quota rows move with it: gone on west, new on east.
    moved_rows = {
        (r.cluster, r.team, r.before is None, r.after is None)
        for r in result.impact.quotas
        if r.pool == "l40s-infer"
    }
    assert ("west", "ml", False, True) in moved_rows and ("east", "ml", True, False) in moved_rows


def _cq(cluster: str | None, nominal: str) -> Manifest:
    obj = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "ml"},
        "spec": {
            "resourceGroups": [
                {
                    "flavors": [
                        {
                            "name": "f",
                            "resources": [{"name": "nvidia.com/gpu", "nominalQuota": nominal}],
                        }
                    ]
                }
            ]
        },
    }
    return Manifest("kueue", obj, cluster=cluster)


def test_same_object_on_two_clusters_is_two_objects() -> None:
    before = [_cq("hub", "16"), _cq("east", "8")]
    after = [_cq("hub", "24"), _cq("east", "8"), _cq("west", "8")]
    changes = object_changes(before, after)
    shown = sorted((c.op, c.cluster, c.place, c.file) for c in changes)
    assert shown == [
        ("added", "west", "west/kueue", "west/kueue/clusterqueue-ml.yaml"),
        ("changed", "hub", "hub/kueue", "hub/kueue/clusterqueue-ml.yaml"),
    ]
    replayed = replay(before, changes)
    assert len(replayed) == 3
    for manifest in after:
        key = (manifest.cluster or "", "kueue", "kueue.x-k8s.io", "ClusterQueue", "", "ml")
        assert same(replayed[key], manifest.obj)


def test_example_fleet_change_shows_on_the_worker_and_the_hub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """examples/multicluster, research's A800 quota 32 -> 24 on ampere-west: the worker's
    queue, quota and Volcano queue change, and so does the hub's ClusterQueue (the sum)."""
    example = REPO / "examples" / "multicluster"
    base = PolicyText({p.name: p.read_text() for p in example.iterdir()})
    head = PolicyText(dict(base.files)).replace(
        "teams.yaml", "{pool: a800-train, cards: 32}", "{pool: a800-train, cards: 24}"
    )
    result = _diff(tmp_path, monkeypatch, base, head)
    assert [(r.cluster, r.team, r.pool) for r in result.impact.quotas] == [
        ("ampere-west", "research", "a800-train")
    ]
    places = {(c.place, c.kind, c.name) for c in result.objects}
    assert places == {
        ("ampere-west/core", "ResourceQuota", "hetgitops-accelerators"),
        ("ampere-west/kueue", "ClusterQueue", "research"),
        ("ampere-west/volcano", "Queue", "research-a800-train"),
        ("hub/kueue", "ClusterQueue", "research"),
    }
    hub = next(c for c in result.objects if c.place == "hub/kueue")
    assert hub.file == "hub/kueue/clusterqueue-research.yaml"
    gpu = [f for f in hub.fields if f.dotted.endswith("[name=nvidia.com/gpu].nominalQuota")]
    assert [(f.before, f.after) for f in gpu] == [("48", "40")]
    body = json.loads(FORMATTERS["json"](result))
    jsonschema.Draft202012Validator(SCHEMA).validate(body)
    assert {o["cluster"] for o in body["objects"]} == {"ampere-west", "hub"}
