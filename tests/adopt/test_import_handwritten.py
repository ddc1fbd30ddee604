"""Regressions the import sweep (test_import_sweep.py) found on generated hand-written clusters:
each names an object import used to drop, change or name twice in silence."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml

from tests.adopt.importing import import_text, rendered_object
from tests.generated.clustergen import cluster


def test_a_queue_holding_nothing_on_mig_pools_is_a_team_with_its_namespace_quota(
    tmp_path: Path,
) -> None:
    """Seed 6: ClusterQueue nlp holds nothing on the cluster's MIG pools. It was no team (its
    empty flavors could not be said), so its namespace's GPU quota was named as in no team's
    namespace; with `kueue.coveredResources` its empty flavors come back (`cards: 0`), as a
    queue holding nothing on whole-card pools always did, and so does the quota."""
    got = import_text(cluster(6).text(), tmp_path / "p")
    assert [f for f in got.found if "nlp" in f] == []
    teams = {t["metadata"]["name"]: t["spec"] for t in yaml.safe_load_all(got.files["teams.yaml"])}
    assert {q["cards"] for q in teams["nlp"]["quotas"]} == {0}
    quota = next(
        m.obj
        for m in got.rendered.manifests
        if m.obj["kind"] == "ResourceQuota" and m.obj["metadata"]["namespace"] == "nlp-jobs"
    )
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == "0"


def test_namespace_labels_a_selector_matches_are_kept(tmp_path: Path) -> None:
    """Seed 0: ClusterQueue ads selects its namespace by team=ads; the rendered Namespace lacked
    the label (named, issue 32 item 5): now the team's `namespaceLabels` keeps it."""
    got = import_text(cluster(0).text(), tmp_path / "p")
    assert not [d for d in got.result.diagnostics if d.message.startswith("Namespace ads-jobs:")]
    teams = {t["metadata"]["name"]: t["spec"] for t in yaml.safe_load_all(got.files["teams.yaml"])}
    assert teams["ads"]["namespaceLabels"] == {"team": "ads"}
    namespace = rendered_object(got.rendered, "Namespace", "ads-jobs")
    assert namespace["metadata"]["labels"]["team"] == "ads"


def test_a_queue_infer_leaves_out_is_named_once(tmp_path: Path) -> None:
    """Seed 6: a Volcano queue bound to no single pool was named by infer ("binds to no single
    imported pool") and again by the round trip ("does not render it")."""
    got = import_text(cluster(6).text(), tmp_path / "p")
    left = "import-object-not-adopted: Queue "
    queues = Counter(f.split(":")[1] for f in got.found if f.startswith(left))
    assert queues and set(queues.values()) == {1}, queues


def test_a_dump_without_the_gpu_operator_configs_names_them_missing(tmp_path: Path) -> None:
    """Seed 3 as docs/adopt.md's first dump command wrote it (no ConfigMaps): the MIG pool's
    layout is unknown; import named only the ClusterQueue fields the render changes, as if the
    cluster were wrong, not the mig-parted config the nodes name."""
    generated = cluster(3)
    kept = [o for o in generated.objects if o["kind"] not in ("ConfigMap", "ClusterPolicy")]
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": kept})
    got = import_text(text, tmp_path / "p")
    missing = [d for d in got.result.diagnostics if d.rule == "import-config-missing"]
    assert [d.message.split(":")[0] for d in missing] == ["Node ip-10-1-0-140.ec2.internal"]
    assert "'h100-shared-layout'" in missing[0].message and missing[0].span.line > 0
    assert missing[0].severity.name == "ERROR"  # the import exits 1


def test_time_slicing_flags_left_out_are_the_device_plugins_false(tmp_path: Path) -> None:
    """Seed 9: the time-slicing config leaves renameByDefault and failRequestsGreaterThanOne
    out, as NVIDIA's examples do; the device plugin reads them as false, which the render
    writes: no change (import reported both as the first sync's)."""
    got = import_text(cluster(9).text(), tmp_path / "p")
    assert not [f for f in got.found if "ConfigMap" in f.split(":")[1]], got.found
