"""Object-level diff: identity, renames, ConfigMap data as YAML, --ignore, and the property
that the listed changes turn render A into render B."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from hetgitops import api
from hetgitops.diff.objects import ignored, object_changes, object_key, replay
from hetgitops.diff.run import compare
from hetgitops.diff.structure import same
from hetgitops.load.git_source import read_folder
from hetgitops.output.manifests import Manifest
from tests.diff.scenarios import SCENARIOS, build

NOW = dt.date(2026, 9, 1)


def _m(kind: str, name: str, spec: dict[str, object], target: str = "kueue") -> Manifest:
    obj = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": {"name": name}}
    return Manifest(target, {**obj, "spec": spec})


def test_renamed_object_is_paired_not_removed_and_added() -> None:
    spec = {"nodeLabels": {f"k{i}": str(i) for i in range(8)}}
    (change,) = object_changes(
        [_m("ResourceFlavor", "old", spec)], [_m("ResourceFlavor", "new", spec)]
    )
    assert (change.op, change.old_name, change.name) == ("renamed", "old", "new")
    assert [f.dotted for f in change.fields] == ["metadata.name"]


def test_dissimilar_objects_are_not_paired() -> None:
    before = [_m("ResourceFlavor", "old", {"nodeLabels": {"a": "1"}})]
    after = [_m("ResourceFlavor", "new", {"nodeLabels": {"b": "2"}, "tolerations": []})]
    assert sorted(c.op for c in object_changes(before, after)) == ["added", "removed"]


def test_api_version_bump_is_a_field_change_of_the_same_object() -> None:
    old = _m("ClusterQueue", "q", {"cohortName": "x"})
    new = Manifest("kueue", {**old.obj, "apiVersion": "kueue.x-k8s.io/v1beta1"})
    assert object_key(old) == object_key(new)
    (change,) = object_changes([old], [new])
    assert [f.dotted for f in change.fields] == ["apiVersion"]


def test_configmap_yaml_data_is_diffed_as_a_document() -> None:
    def cm(body: str) -> Manifest:
        obj = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c"},
            "data": {"f": body},
        }
        return Manifest("gpu-operator", obj)

    (change,) = object_changes([cm("a: 1\nb: [x, y]\n")], [cm("a: 1\nb: [x, z]\n")])
    assert [(f.dotted, f.after) for f in change.embedded["f"]] == [("b", ["x", "z"])]


def test_ignore_matches_kind_and_name_globs() -> None:
    (change,) = object_changes([], [_m("ClusterQueue", "team-a", {})])
    assert ignored(change, ["clusterqueue"])
    assert ignored(change, ["ClusterQueue/team-*"])
    assert not ignored(change, ["ClusterQueue/other", "LocalQueue"])


def _sides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> tuple[api.Result, api.Result]:
    build(tmp_path, SCENARIOS[name])
    monkeypatch.chdir(tmp_path)
    options = api.Options(now=NOW)
    return (
        api.render([Path("base")], options),
        api.render([Path("head")], options),
    )


@pytest.mark.parametrize("name", sorted(n for n in SCENARIOS if n != "invalid-policy"))
def test_listed_changes_turn_render_a_into_render_b(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, head = _sides(tmp_path, monkeypatch, name)
    changes = object_changes(base.manifests, head.manifests)
    rebuilt = replay(base.manifests, changes)
    wanted = {object_key(m): m.obj for m in head.manifests}
    assert rebuilt.keys() == wanted.keys()
    assert all(same(rebuilt[k], wanted[k]) for k in wanted)


@pytest.mark.parametrize("name", ["quota-cut", "mig-repartition"])
def test_a_side_compared_with_itself_is_empty(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build(tmp_path, SCENARIOS[name])
    monkeypatch.chdir(tmp_path)
    side = read_folder([Path("head")], "head")
    result = compare(side, side, api.Options(now=NOW))
    assert not result.changed and result.risks == [] and result.objects == []
    assert result.impact.quotas == () and result.introduced == result.resolved == []
