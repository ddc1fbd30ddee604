"""Day-2 hazards, judged from before/after manifests only: each rule fires on the update the
target system refuses (or handles badly) and stays quiet on the safe variant."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from hetgitops.diff.drains import Drain
from hetgitops.diff.hazards import hazards
from hetgitops.output.manifests import Manifest
from tests.diff.test_golden import run_edits

KUEUE = "kueue.x-k8s.io/v1beta2"


def m(
    kind: str, name: str, body: dict[str, Any], *, namespace: str = "", wave: int | None = None
) -> Manifest:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if wave is not None:
        meta["annotations"] = {"argocd.argoproj.io/sync-wave": str(wave)}
    api = "scheduling.volcano.sh/v1beta1" if kind == "Queue" else KUEUE
    return Manifest("t", {"apiVersion": api, "kind": kind, "metadata": meta, **body})


def flavor(labels: dict[str, str], *, topology: bool = True) -> Manifest:
    spec: dict[str, Any] = {"nodeLabels": labels}
    if topology:
        spec["topologyName"] = "fleet-topology"
    return m("ResourceFlavor", "a800", {"spec": spec})


def rules(
    before: list[Manifest], after: list[Manifest], drains: list[Drain] | None = None
) -> list[str]:
    return [h.rule for h in hazards(before, after, drains or [])]


def test_flavor_node_labels_are_immutable_once_topology_is_set() -> None:
    assert rules([flavor({"pool": "a"})], [flavor({"pool": "b"})]) == ["kueue-flavor-immutable"]


def test_flavor_without_topology_may_change_its_labels() -> None:
    before, after = flavor({"pool": "a"}, topology=False), flavor({"pool": "b"}, topology=False)
    assert rules([before], [after]) == []


def test_local_queue_cluster_queue_is_immutable() -> None:
    before = m("LocalQueue", "lq", {"spec": {"clusterQueue": "a"}}, namespace="ns")
    after = m("LocalQueue", "lq", {"spec": {"clusterQueue": "b"}}, namespace="ns")
    assert rules([before], [after]) == ["kueue-localqueue-immutable"]


def _queue(name: str, parent: str, gpus: str, wave: int) -> Manifest:
    spec = {"parent": parent, "deserved": {"nvidia.com/gpu": gpus}}
    return m("Queue", name, {"spec": spec}, wave=wave)


def _queues(parent: str, child: str, *, child_wave: int = 1) -> list[Manifest]:
    return [_queue("team", "root", parent, 0), _queue("team-pool", "team", child, child_wave)]


def test_volcano_parent_shrunk_below_its_children_before_they_are_updated() -> None:
    assert rules(_queues("8", "8"), _queues("4", "4")) == ["volcano-shrink-order"]


def test_volcano_growth_or_children_synced_first_is_safe() -> None:
    assert rules(_queues("4", "4"), _queues("8", "8")) == []
    assert rules(_queues("8", "8", child_wave=-1), _queues("4", "4", child_wave=-1)) == []


def test_removed_flavor_still_named_by_a_cluster_queue() -> None:
    cq = m("ClusterQueue", "team", {"spec": {"resourceGroups": [{"flavors": [{"name": "a800"}]}]}})
    found = hazards([flavor({}), cq], [cq], [])
    assert [h.rule for h in found] == ["kueue-flavor-removed"]
    assert "still name it" in found[0].message


def _namespace(annotations: dict[str, str]) -> Manifest:
    meta = {"name": "x", "annotations": annotations}
    return Manifest("core", {"apiVersion": "v1", "kind": "Namespace", "metadata": meta})


def test_removed_namespace_says_what_each_gitops_tool_does() -> None:
    """The hazard reads the annotations the base render carried: only with both tools' switches
    is the namespace kept by both (a namespace written before Flux's was added is deleted)."""
    from hetgitops.compilers.argocd import NEVER_PRUNE

    lq = m("LocalQueue", "team", {}, namespace="x")
    (both,) = hazards([_namespace(NEVER_PRUNE), lq], [], [])
    assert both.rule == "namespace-removed"
    assert "Argo CD (Prune=false) and Flux (prune: disabled) both leave it" in both.message
    assert "LocalQueue team is pruned" in both.message
    (argo_only,) = hazards([_namespace({"argocd.argoproj.io/sync-options": "Prune=false"})], [], [])
    assert "Flux deletes it with every pod" in argo_only.message
    (bare,) = hazards([_namespace({})], [], [])
    assert "both Argo CD and Flux delete it" in bare.message


def test_mig_mode_flips_group_per_pool() -> None:
    drains = [Drain(f"n{i}", "p", "a", "b", (4,), True) for i in range(3)]
    drains.append(Drain("n9", "p", "a", "c", (1,), False))
    found = hazards([], [], drains)
    # n9 keeps MIG mode on: its re-partition is mig-repartition's, not a flip.
    assert [(h.rule, h.subject) for h in found] == [
        ("mig-mode-flip", "Pool p"),
        ("mig-repartition", "Pool p"),
    ]
    assert "n0, n1, n2" in found[0].message and "n9" not in found[0].message


def test_real_compile_pool_taint_change_replaces_the_topology_flavor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compilers name a topology-bound flavor by a digest of its immutable fields, so a
    taint change is a new flavor (never a refused update); the old one's removal is flagged."""
    edit = (
        "pools/training.yaml",
        "value: a800-train, effect: NoSchedule",
        "value: x, effect: NoSchedule",
    )
    result = run_edits(tmp_path, monkeypatch, [edit])
    assert [h.rule for h in result.hazards] == ["kueue-flavor-removed", "kueue-flavor-renamed"]
    assert all(h.subject.startswith("ResourceFlavor a800-train-") for h in result.hazards)
    # The rename double-books the pool: the old flavor's admitted work is no longer counted.
    renamed = result.hazards[1]
    assert "double-booked (up to 128 nvidia.com/gpu)" in renamed.message
    assert "HoldAndDrain" in renamed.action
    (flavor,) = [c for c in result.objects if c.kind == "ResourceFlavor"]
    assert flavor.op == "renamed" and flavor.old_name != flavor.name


def test_flavor_node_taints_change_the_flavor_in_place_without_a_hazard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`flavorNodeTaints` adds nodeTaints, which the CRD lets change and the digest leaves out:
    the same flavor updated in place, no rename, no refused update
    (tests/e2e/test_e2e_node_taints.py applies it)."""
    taint = "    - {key: hetgitops.io/pool, value: a800-train, effect: NoSchedule}\n"
    edit = ("pools/training.yaml", taint, taint + "  kueue: {flavorNodeTaints: true}\n")
    result = run_edits(tmp_path, monkeypatch, [edit])
    assert [h.rule for h in result.hazards] == []
    (flavor,) = [c for c in result.objects if c.kind == "ResourceFlavor"]
    assert flavor.op == "changed" and flavor.name.startswith("a800-train-")


def test_hazard_ids_are_documented_and_in_the_json_schema() -> None:
    import json

    from hetgitops.diff.hazards import HAZARD_RULES
    from tests.diff.scenarios import REPO

    schema = json.loads((REPO / "schemas" / "diff.schema.json").read_text("utf-8"))
    enum = schema["properties"]["hazards"]["items"]["properties"]["rule"]["enum"]
    assert sorted(enum) == sorted(HAZARD_RULES)
    docs = (REPO / "docs" / "diff.md").read_text("utf-8")
    assert all(f"`{rule}`" in docs for rule in HAZARD_RULES)


def test_every_hazard_id_yielded_is_registered_with_hazard_rule() -> None:
    """Each `Hazard(...)` (or `replace(hazard, rule=...)`) in hetgitops/diff/hazards/ names a
    literal id, and the ids yielded are exactly the ones registered with their user text."""
    import ast

    import hetgitops.diff.hazards as package
    from hetgitops.diff.hazards import HAZARD_RULES

    yielded: set[str] = set()
    passed_on: set[str] = set()  # an id a helper takes as its `rule` argument
    for path in Path(package.__file__).parent.glob("*.py"):
        for call in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
                continue
            args = call.args[:1] if call.func.id == "Hazard" else []
            args += [k.value for k in call.keywords if k.arg == "rule"]
            for arg in args:
                if isinstance(arg, ast.Constant):
                    yielded.add(str(arg.value))
                else:
                    passed_on.add(f"{path.name}: {ast.unparse(arg)}")
    assert yielded == set(HAZARD_RULES)
    assert passed_on == {"reading.py: rule"}  # immutable_field, called with literal ids


def test_github_format_annotates_hazards_with_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hetgitops.diff.formats import github
    from tests.diff.test_golden import run_scenario

    text = github.render(run_scenario(tmp_path, monkeypatch, "team-removed"))
    line = next(li for li in text.splitlines() if "title=namespace-removed" in li)
    assert line.startswith("::warning file=base/teams/others.yaml,line=")
    assert "%0Ahint: first move or finish its workloads" in line


def _priority_class(value: int, policy: str = "PreemptLowerPriority") -> Manifest:
    obj = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "training"},
        "value": value,
        "preemptionPolicy": policy,
    }
    return Manifest("core", obj)


def test_priority_class_value_change_is_a_recreate_hazard() -> None:
    found = hazards([_priority_class(10000)], [_priority_class(20000)], [])
    assert [(h.rule, h.subject) for h in found] == [
        ("priority-class-recreated", "PriorityClass training")
    ]
    assert "value 10000 -> 20000" in found[0].message
    assert "kubectl replace --force -f core/priorityclass-training.yaml" in found[0].action


def test_priority_class_preemption_policy_is_immutable_too() -> None:
    before, after = _priority_class(10000), _priority_class(10000, "Never")
    assert rules([before], [after]) == ["priority-class-recreated"]


def test_priority_class_description_change_is_no_hazard() -> None:
    before, after = _priority_class(10000), _priority_class(10000)
    after.obj["description"] = "new words"
    assert rules([before], [after]) == []


def _nfd(taints: list[dict[str, str]]) -> Manifest:
    rule = {
        "name": "a800-train",
        "taints": taints,
        "matchFeatures": [
            {"feature": "system.name", "matchExpressions": {"nodename": {"value": ["n1", "n2"]}}}
        ],
    }
    return m("NodeFeatureRule", "hetgitops-a800-train", {"spec": {"rules": [rule]}})


def test_a_noexecute_taint_reaching_nodes_evicts_and_noschedule_does_not() -> None:
    no_schedule = {"key": "maint", "value": "x", "effect": "NoSchedule"}
    no_execute = {**no_schedule, "effect": "NoExecute"}
    (found,) = hazards([_nfd([no_schedule])], [_nfd([no_execute])], [])
    assert found.rule == "taint-evicts"
    assert "maint=x to 2 node(s) (n1, n2)" in found.message
    assert "NoSchedule first" in found.action or "as NoSchedule first" in found.action
    assert rules([_nfd([])], [_nfd([no_schedule])]) == []
    assert rules([_nfd([no_execute])], [_nfd([no_execute])]) == []  # already there


def _cq(name: str, covered: list[str]) -> Manifest:
    return m("ClusterQueue", name, {"spec": {"resourceGroups": [{"coveredResources": covered}]}})


def test_stranding_changes_name_what_they_strand() -> None:
    ns = m("Namespace", "ml", {})
    old_lq, new_lq = (
        m("LocalQueue", "ml", {}, namespace="ml"),
        m("LocalQueue", "vision", {}, namespace="ml"),
    )
    (moved,) = hazards([ns, old_lq], [ns, new_lq], [])
    assert moved.rule == "localqueue-removed"
    assert "it now has vision" in moved.message and "doesn't exist" in moved.message

    tier = m("PriorityClass", "batch", {})
    (renamed,) = hazards([tier], [m("PriorityClass", "bulk", {})], [])
    assert renamed.rule == "priority-class-removed"
    assert "no PriorityClass with name batch was found" in renamed.message

    flip = hazards(
        [_cq("t", ["nvidia.com/mig-3g.40gb", "cpu"])], [_cq("t", ["nvidia.com/gpu", "cpu"])], []
    )
    assert [h.rule for h in flip] == ["kueue-resource-uncovered"]
    assert "stops covering nvidia.com/mig-3g.40gb" in flip[0].message

    (gone,) = hazards([_cq("t", ["cpu"])], [], [])
    assert gone.rule == "clusterqueue-removed" and "Terminating" in gone.message


def _rule(name: str, nodes: list[str], config: str = "") -> Manifest:
    labels = {"nvidia.com/device-plugin.config": config} if config else {}
    match = [{"feature": "system.name", "matchExpressions": {"nodename": {"value": nodes}}}]
    body = {"spec": {"rules": [{"name": name, "labels": labels, "matchFeatures": match}]}}
    return m("NodeFeatureRule", f"hetgitops-{name}", body)


def _device_plugin(replicas: dict[str, int]) -> Manifest:
    data = {
        key: "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
        f"    - name: nvidia.com/gpu\n      replicas: {n}\n"
        for key, n in replicas.items()
    }
    obj = {"metadata": {"name": "hetgitops-device-plugin-config"}, "data": data}
    return m("ConfigMap", "hetgitops-device-plugin-config", obj)


def test_nodes_leaving_a_pool_are_named_and_moving_between_pools_is_not_removal() -> None:
    (gone,) = hazards([_rule("l40s", ["n1", "n2", "n3"])], [_rule("l40s", ["n1"])], [])
    assert gone.rule == "node-removed" and "2 node(s) (n2, n3)" in gone.message
    # Moving is not removal: the node keeps pool labels, but another pool's (node-moved).
    moved = hazards([_rule("a", ["n1", "n2"])], [_rule("a", ["n1"]), _rule("b", ["n2"])], [])
    assert [(h.rule, h.subject) for h in moved] == [("node-moved", "NodeFeatureRule rule b")]
    assert "takes 1 node(s) (n2) from a" in moved[0].message and "drain n2" in moved[0].action


def test_lower_time_slicing_replicas_are_a_hazard_and_higher_are_not() -> None:
    plugin = _device_plugin({"time-slicing-4": 4, "time-slicing-2": 2})
    four, two = _rule("dev", ["n1"], "time-slicing-4"), _rule("dev", ["n1"], "time-slicing-2")
    (lower,) = hazards([plugin, four], [plugin, two], [])
    assert lower.rule == "sharing-reduced" and "from 4 to 2 replicas per GPU" in lower.message
    assert rules([plugin, two], [plugin, four]) == []


L40S_NODES = '    - {names: "gpu-l40s-[01:04]", zone: zone-b, rack: rack-b03}\n'
L40S_TAINT = "  taints:\n    - {key: hetgitops.io/dedicated, value: serving, effect: NoSchedule}\n"


def _transition_edits(snippet: str) -> list[Any]:
    """The l40s-infer pool tainted (a rename) with the entry `diff` printed, under its spec."""
    block = "".join(f"  {line}\n" for line in snippet.splitlines())
    return [("pools/inference.yaml", L40S_NODES, L40S_NODES + L40S_TAINT + block)]


def _compare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, base: list[Any], head: list[Any]):
    import shutil

    from hetgitops import api
    from hetgitops.diff.run import compare
    from hetgitops.load.git_source import read_folder
    from tests.diff.scenarios import BUNDLED, apply_edits
    from tests.diff.test_golden import NOW

    for side, edits in (("base", base), ("head", head)):
        shutil.copytree(BUNDLED, tmp_path / side)
        apply_edits(tmp_path / side, edits)
    monkeypatch.chdir(tmp_path)
    return compare(
        read_folder([Path("base")], "base"),
        read_folder([Path("head")], "head"),
        api.Options(now=NOW),
    )


def test_a_flavor_rename_proposes_the_transition_and_the_transition_keeps_the_old_flavor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rename's hazard carries the retiringFlavor entry; pasted as printed, the same
    change renders the old flavor kept (and tainted Kueue-side), no rename hazard, and a
    transition hazard saying the new flavor holds 0 cards while the old one keeps 32."""
    import yaml

    taint = [("pools/inference.yaml", L40S_NODES, L40S_NODES + L40S_TAINT)]
    bare = _compare(tmp_path / "bare", monkeypatch, [], taint)
    (renamed,) = [h for h in bare.hazards if h.rule == "kueue-flavor-renamed"]
    entry = yaml.safe_load(renamed.snippet)["kueue"]["retiringFlavor"]
    old = renamed.subject.removeprefix("ResourceFlavor ")
    assert entry["name"] == old and entry["topologyName"].startswith("fleet-topology-")
    assert entry["nodeLabels"]["hetgitops.io/pool"] == "l40s-infer"
    assert "retiringFlavor" in renamed.action

    result = _compare(tmp_path / "kept", monkeypatch, [], _transition_edits(renamed.snippet))
    assert [h.rule for h in result.hazards] == ["kueue-flavor-transition"]
    (transition,) = result.hazards
    assert transition.subject == renamed.subject
    assert "with its quota (32 nvidia.com/gpu)" in transition.message
    assert "gets 0 nvidia.com/gpu until the entry goes" in transition.message
    assert not [
        c
        for c in result.objects
        if c.kind == "ResourceFlavor" and c.name == old and c.op == "removed"
    ]

    retired = _compare(tmp_path / "retired", monkeypatch, _transition_edits(renamed.snippet), taint)
    assert [h.rule for h in retired.hazards] == ["kueue-flavor-retired"]
    assert "goes from 0 nvidia.com/gpu to 32 nvidia.com/gpu" in retired.hazards[0].message


def _paste(root: Path, hazards: Sequence[Any]) -> None:
    """Every snippet where its hazard says: retiringFlavor into its pool, the retiring
    Topology into the Fleet (what a user does with diff's hints)."""
    import yaml

    for path in sorted(root.rglob("*.yaml")):
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        for hazard in hazards:
            snippet = yaml.safe_load(hazard.snippet or "null")
            for doc in docs if snippet else []:
                if hazard.rule == "kueue-flavor-renamed" and doc["kind"] == "Pool":
                    name = snippet["kueue"]["retiringFlavor"]["name"]
                    if doc["metadata"]["name"] == name.rsplit("-", 1)[0]:
                        doc["spec"].setdefault("kueue", {}).update(snippet["kueue"])
                if hazard.rule == "kueue-topology-renamed" and doc["kind"] == "Fleet":
                    doc["spec"]["topology"].update(snippet["topology"])
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False))


TOPOLOGY_EDIT = [("fleet.yaml", "levels: [zone, rack, hostname]", "levels: [zone, hostname]")]


def test_a_topology_change_offers_the_transition_in_two_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In one step the Topology and every flavor are renamed (the double booking the busy
    fleet measured); the hazards carry the Fleet's retiring Topology and each pool's retiring
    flavor; pasted, step 1 keeps the old Topology and flavors (transition hazards only) and
    step 2 (both removed) is the retired hazards."""
    import shutil

    from hetgitops import api
    from hetgitops.diff.run import compare
    from hetgitops.load.git_source import read_folder
    from tests.diff.scenarios import BUNDLED, apply_edits
    from tests.diff.test_golden import NOW

    one = _compare(tmp_path / "one", monkeypatch, [], TOPOLOGY_EDIT)
    rules = Counter(h.rule for h in one.hazards)
    assert rules["kueue-topology-renamed"] == 1 and rules["kueue-flavor-renamed"] == 7
    (topology,) = [h for h in one.hazards if h.rule == "kueue-topology-renamed"]
    assert "fleet-topology-6d6042ad" in topology.snippet and "hetgitops.io/rack" in topology.snippet
    renamed = [h for h in one.hazards if h.rule == "kueue-flavor-renamed"]
    assert all(h.snippet and "spec.topology.retiring" in h.action for h in renamed)

    for side, step in (("base", 0), ("step1", 1), ("step2", 2)):
        shutil.copytree(BUNDLED, tmp_path / side)
        if step:
            apply_edits(tmp_path / side, TOPOLOGY_EDIT)
        if step == 1:
            _paste(tmp_path / side, one.hazards)
    monkeypatch.chdir(tmp_path)
    options = api.Options(now=NOW)
    start = compare(
        read_folder([Path("base")], "base"), read_folder([Path("step1")], "s1"), options
    )
    assert Counter(h.rule for h in start.hazards) == {
        "kueue-flavor-transition": 7,
        "kueue-topology-transition": 1,
    }
    assert not start.head.result.failed()
    end = compare(read_folder([Path("step1")], "s1"), read_folder([Path("step2")], "s2"), options)
    assert Counter(h.rule for h in end.hazards) == {
        "kueue-flavor-retired": 7,
        "kueue-topology-retired": 1,
    }


def test_sharing_reduced_in_one_step_gives_the_staged_way_and_the_steps_say_which(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rtx4090 4 -> 2 replicas: in one change sharing-reduced (hint: retiringReplicas first);
    step 1 (retiringReplicas: 4) keeps the device plugin and is sharing-staged; step 2 is
    sharing-retired; each carries what the nodes hold after (24 nvidia.com/gpu)."""
    replicas = ("pools/dev.yaml", "replicas: 4", "replicas: 2")
    staged = ("pools/dev.yaml", "replicas: 4", "replicas: 2\n    retiringReplicas: 4")
    quotas = [
        ("teams/others.yaml", "{pool: rtx4090-dev, cards: 16}", "{pool: rtx4090-dev, cards: 8}"),
        ("teams/others.yaml", "{pool: rtx4090-dev, cards: 32}", "{pool: rtx4090-dev, cards: 16}"),
    ]
    one = _compare(tmp_path / "one", monkeypatch, [], [replicas, *quotas])
    (reduced,) = [h for h in one.hazards if h.rule == "sharing-reduced"]
    assert "retiringReplicas: 4" in reduced.action and "two steps" in reduced.action
    assert ("capacity", "nvidia.com/gpu|24") in reduced.scope and reduced.span.line > 1
    start = _compare(tmp_path / "start", monkeypatch, [], [staged, *quotas])
    assert [h.rule for h in start.hazards] == ["sharing-staged"]
    assert "keeps advertising 4 (48 nvidia.com/gpu" in start.hazards[0].message
    assert not [c for c in start.objects if c.kind == "NodeFeatureRule"]  # plugin untouched
    end = _compare(tmp_path / "end", monkeypatch, [staged, *quotas], [replicas, *quotas])
    assert [h.rule for h in end.hazards] == ["sharing-retired"]
    assert "retiringReplicas: 4" in end.hazards[0].action


def test_a_tier_rename_also_strands_jobs_labelled_with_its_workload_priority_class() -> None:
    pc, wpc = m("PriorityClass", "dev", {}), m("WorkloadPriorityClass", "dev", {})
    (both,) = hazards([pc, wpc], [m("PriorityClass", "exp", {})], [])
    assert "kueue.x-k8s.io/priority-class: dev" in both.message and "stay suspended" in both.message
    (only,) = hazards([pc, wpc], [wpc], [])
    assert "stay suspended" not in only.message


def test_real_compile_pool_split_names_the_moving_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rtx4090-dev gives dev-4090-3 to a new pool for data-preprocessing's quota."""
    split = (
        "---\napiVersion: hetgitops.io/v1alpha1\nkind: Pool\nmetadata:\n  name: rtx4090-dp\n"
        "spec:\n  description: Split off.\n  cardType: rtx4090-24gb\n  purpose: dev\n"
        '  cardsPerNode: 4\n  nodes:\n    - {names: "dev-4090-3", zone: zone-c, rack: rack-c02}\n'
        "  timeSlicing:\n    replicas: 4\n"
        "  labels:\n    hetgitops.io/cost-center: cc-research\n---\n"
    )
    edits = [
        ("pools/dev.yaml", '"dev-4090-[1:3]"', '"dev-4090-[1:2]"'),
        ("pools/dev.yaml", "---\n", split),
        (
            "teams/others.yaml",
            "{pool: rtx4090-dev, cards: 16}\n",
            "{pool: rtx4090-dp, cards: 16}\n",
        ),
    ]
    result = run_edits(tmp_path, monkeypatch, edits)
    # data-preprocessing's templates pin pool rtx4090-dev, which its queue no longer lists;
    # its Volcano Queue for that pool is pruned (refused under a running gang on Volcano 1.15).
    assert [h.rule for h in result.hazards] == [
        "jobs-unmatched",
        "node-moved",
        "volcano-queue-pruned",
    ]
    assert "data-filter/data-preprocessing/rtx4090-24gb.yaml" in result.hazards[0].message
    assert "(dev-4090-3) from rtx4090-dev" in result.hazards[1].message


def test_a_renamed_pool_renames_its_flavor_onto_the_same_nodes() -> None:
    """Found on the busy simulated fleet: renaming l40s-infer gave only kueue-flavor-removed,
    while the new flavor admitted its quota on the nodes the old one's work still ran on."""

    def flavor_of(pool: str, digest: str) -> Manifest:
        spec = {"nodeLabels": {"hetgitops.io/pool": pool}, "topologyName": "t"}
        return m("ResourceFlavor", f"{pool}-{digest}", {"spec": spec})

    def rule_of(pool: str) -> Manifest:
        made = _rule(pool, ["n1", "n2"])
        made.obj["spec"]["rules"][0]["labels"] = {"hetgitops.io/pool": pool}
        return made

    found = hazards(
        [flavor_of("l40s-infer", "aaaa"), rule_of("l40s-infer")],
        [flavor_of("l40s-serving", "bbbb"), rule_of("l40s-serving")],
        [],
    )
    renamed = [h for h in found if h.rule == "kueue-flavor-renamed"]
    assert [h.subject for h in renamed] == ["ResourceFlavor l40s-infer-aaaa"]
    assert "replaced by l40s-serving-bbbb" in renamed[0].message


def test_a_mig_repartition_without_a_mode_flip_says_what_mig_manager_does() -> None:
    """GPUs re-partitioned in MIG mode: mig-manager deletes the operands' pods and mig-parted
    destroys the changed GPUs' instances; it evicts no workload pod (NVIDIA/mig-parted
    reconfigure.go), so the hazard says to drain them first."""
    drains = [Drain(f"n{i}", "p", "a", "b", (2, 3), False) for i in range(2)]
    drains.append(Drain("n9", "q", "a", "c", (4,), True))
    found = hazards([], [], drains)
    assert [(h.rule, h.subject) for h in found] == [
        ("mig-mode-flip", "Pool q"),
        ("mig-repartition", "Pool p"),
    ]
    repartition = found[1]
    assert "GPU(s) 2, 3 on node(s) n0, n1 (a -> b)" in repartition.message
    assert "evicts no workload pod" in repartition.message
    assert "nvidia.com/mig.config.state=failed" in repartition.message
    assert repartition.action.startswith("one node at a time: cordon, drain")
    assert repartition.scope == (("nodes", "n0,n1"), ("pool", "p"), ("gpus", "2,3"))


def _dra(classes: list[str], mappings: dict[str, list[str]]) -> list[Manifest]:
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "resources": {
            "deviceClassMappings": [
                {"name": n, "deviceClassNames": c} for n, c in sorted(mappings.items())
            ]
        },
    }
    out = [Manifest("t", config, applied=False)] if mappings else []
    for name in classes:
        body = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass"}
        out.append(Manifest("t", {**body, "metadata": {"name": name}, "spec": {}}))
    return out


def test_dra_mapping_change_says_restart_kueue() -> None:
    before = _dra(["a.gpu"], {"x/a": ["a.gpu"]})
    after = _dra(["a.gpu"], {"x/a": ["a.gpu", "b.gpu"]})
    found = hazards(before, after, [])
    assert [h.rule for h in found] == ["dra-mappings-changed"]
    assert "restart" in found[0].action


def test_dra_unchanged_mappings_are_quiet() -> None:
    same = _dra(["a.gpu"], {"x/a": ["a.gpu"]})
    assert rules(same, _dra(["a.gpu"], {"x/a": ["a.gpu"]})) == []


def test_dra_pool_moving_from_the_device_plugin() -> None:
    after = _dra(["a.gpu"], {"x/a": ["a.gpu"]})
    assert sorted(rules([], after)) == ["dra-mappings-changed", "dra-pool-moved"]
