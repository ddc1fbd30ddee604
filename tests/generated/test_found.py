"""Bugs the generated policies found (tests/generated/policygen.py), each as the small policy
edit that shows it, so the regression test does not depend on the generator's draw."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hetgitops import api

REPO = Path(__file__).resolve().parents[2]


def _bundled(tmp_path: Path) -> Path:
    policy = tmp_path / "policy"
    shutil.copytree(REPO / "policies", policy)
    return policy


def test_fair_sharing_weights_pass_the_kueue_output_checks(tmp_path: Path) -> None:
    """Seed 12: every policy with a team's or cohort's fairSharingWeight failed `validate`
    with crd-schema errors: the compiler writes `spec.fairSharing.weight` on the ClusterQueue
    and the Cohort (Kueue v0.19.2 apis/kueue/v1beta2/clusterqueue_types.go:150,
    cohort_types.go:71), but hetgitops' target schemas did not allow it."""
    policy = _bundled(tmp_path)
    fleet = policy / "fleet.yaml"
    fleet.write_text(
        fleet.read_text()
        .replace("  kueue:\n    queueingStrategy: BestEffortFIFO\n",
                 "  kueue:\n    queueingStrategy: BestEffortFIFO\n"
                 "    configuration: {fairSharing: true}\n")
        .replace("    - name: training\n      parent: ai-centre\n",
                 "    - name: training\n      parent: ai-centre\n      fairSharingWeight: 2\n")
    )  # fmt: skip
    teams = policy / "teams" / "training.yaml"
    teams.write_text(
        teams.read_text().replace(
            "  volcano: {weight: 4}\n",
            "  volcano: {weight: 4}\n  kueue: {fairSharingWeight: 500m}\n",
        )
    )
    result = api.render([policy])
    assert [d for d in result.diagnostics if d.severity.name == "ERROR"] == []
    specs = {(m.kind, m.name): m.obj.get("spec") for m in result.manifests}
    assert specs["ClusterQueue", "pretraining"]["fairSharing"] == {"weight": "500m"}
    assert specs["Cohort", "training"]["fairSharing"] == {"weight": "2"}


def test_koordinator_namespaces_do_not_follow_the_policy_order(tmp_path: Path) -> None:
    """Seed 4: the ElasticQuota's namespaces annotation listed the team's namespaces in the
    policy's order; import writes them sorted, so the round trip changed the annotation.
    Koordinator reads it as a set (quota_topology.go:74-79 binds each namespace once)."""
    policy = _bundled(tmp_path)
    teams = policy / "teams" / "others.yaml"
    teams.write_text(
        teams.read_text().replace(
            "namespaces: [serving, serving-canary]", "namespaces: [serving-canary, serving]"
        )
    )
    options = api.Options(check_output=False, targets=("core", "kueue", "koordinator"))
    annotations = [
        m.obj["metadata"].get("annotations", {})
        for m in api.render([policy], options).manifests
        if m.kind == "ElasticQuota"
    ]
    found = [json.loads(v) for a in annotations for k, v in a.items() if k.endswith("/namespaces")]
    assert ["serving", "serving-canary"] in found


def _round_trip(policy: Path, tmp_path: Path) -> list[str]:
    """policy -> render -> the cluster's objects -> import: the round trip's error findings."""
    import yaml
    from adopt.test_import import _as_cluster

    from hetgitops.adopt import sources
    from hetgitops.adopt.run import import_objects

    rendered = api.render([policy])
    assert not rendered.failed(), [d.message for d in rendered.diagnostics]
    objects = [o for o in _as_cluster(rendered) if isinstance(o.get("kind"), str)]
    read = sources.Read()
    sources.from_text("rendered.yaml", "---\n".join(yaml.safe_dump(o) for o in objects), read)
    result = import_objects(read, tmp_path / "imported", cluster="lab")
    return [d.message for d in result.diagnostics if d.severity.name == "ERROR"]


def test_a_mig_config_without_device_filter_imports_without_pci_ids(tmp_path: Path) -> None:
    """Seed 0: a MIG card the catalogue knows (with pciDeviceIds) on a cluster whose
    mig-parted config names no device-filter: import wrote the catalogue's ids, so the first
    sync would add a device-filter to every entry of the ConfigMap."""
    policy = _bundled(tmp_path)
    cards = policy / "cards" / "nvidia.yaml"
    cards.write_text(cards.read_text().replace('  pciDeviceIds: ["0x233010DE"]\n', ""))
    found = _round_trip(policy, tmp_path)
    assert [m for m in found if "device-filter" in m] == []


def test_a_mig_pools_percentage_is_kept_when_no_team_holds_slices(tmp_path: Path) -> None:
    """Seed 0: a MIG pool with lending.maxPercent where teams hold only whole cards: every
    MIG resource's entry is 0 with lendingLimit 0 (what any percentage gives), import wrote
    no percentage, and the written policy dropped those lendingLimits (and the cpu and memory
    ones they bound) from the ClusterQueues."""
    policy = _bundled(tmp_path)
    teams = policy / "teams" / "others.yaml"
    teams.write_text(
        teams.read_text()
        .replace("      cards: 16\n      mig: {1g.10gb: 56, 3g.40gb: 24}\n", "      cards: 16\n")
        .replace("    - pool: h100-infer\n      mig: {1g.10gb: 28}\n", "")
    )
    serving = policy / "profiles" / "serving.yaml"  # its 1g.10gb slice: nobody holds one now
    serving.write_text(serving.read_text().split("---\n")[0])
    found = _round_trip(policy, tmp_path)
    assert [m for m in found if "ClusterQueue" in m and "lendingLimit" in m] == []


def test_an_isolated_pool_of_teams_in_no_cohort_is_read_back_isolated(tmp_path: Path) -> None:
    """Seed 27: an isolated pool whose teams are in no cohort (no Kueue limit says it): import
    wrote it not isolated, so its Volcano queues came back reclaimable."""
    policy = _bundled(tmp_path)
    pools = policy / "pools" / "dev.yaml"
    pools.write_text(
        pools.read_text().replace(
            "    - {names: mlu-370-01, zone: zone-c, rack: rack-c03}\n",
            "    - {names: mlu-370-01, zone: zone-c, rack: rack-c03}\n  isolated: true\n",
        )
    )
    teams = policy / "teams" / "others.yaml"
    research = "  namespaces: [research, research-sandbox]\n"
    teams.write_text(teams.read_text().replace(research + "  cohort: research\n", research))
    found = _round_trip(policy, tmp_path)
    assert [m for m in found if "reclaimable" in m] == []


def test_mig_only_quotas_lending_unlike_amounts_keep_the_pools_percentage(
    tmp_path: Path,
) -> None:
    """Seed 34: a team's MIG-only quota on a pool with lending.maxPercent 50 lends 0 of its
    one 3g.40gb and 1 of its three 1g.10gb. Import read those limits as the quota's own, found
    no percentage, and wrote neither: the ClusterQueue's lendingLimits and the Volcano queue's
    guarantee changed on the first sync."""
    policy = _bundled(tmp_path)
    teams = policy / "teams" / "others.yaml"
    teams.write_text(
        teams.read_text()
        .replace("      cards: 16\n      mig: {1g.10gb: 56, 3g.40gb: 24}\n", "      cards: 16\n")
        .replace("      mig: {1g.10gb: 28}\n", "      mig: {1g.10gb: 3, 3g.40gb: 1}\n")
    )
    serving = policy / "profiles" / "serving.yaml"
    serving.write_text(serving.read_text().split("---\n")[0])
    found = _round_trip(policy, tmp_path)
    assert [m for m in found if "lendingLimit" in m or "guarantee" in m] == []


def test_lending_limits_under_mig_strategy_single_weigh_the_slice(tmp_path: Path) -> None:
    """Seed 37: under migStrategy single a MIG pool's nvidia.com/gpu counts slices; import
    weighed a lent slice as a whole card when reading cpuPerCard back from the cpu
    lendingLimit, wrote a per-card amount no render gives (16333333334n), and every cpu and
    memory quota of the team moved by one on the first sync."""
    policy = tmp_path / "policy"
    shutil.copytree(REPO / "tests/cases/render/mig-single/policy", policy)
    fleet = policy / "fleet.yaml"
    fleet.write_text(fleet.read_text() + "  cohorts: [{name: lab}]\n")
    teams = policy / "teams.yaml"
    teams.write_text(
        teams.read_text()
        .replace("  quotas:\n", "  cohort: lab\n  quotas:\n")
        .replace("mig: {1g.5gb: 112}", "mig: {1g.5gb: 110}\n      lendingLimit: 9")
        + "---\napiVersion: hetgitops.io/v1alpha1\nkind: Team\nmetadata: {name: other}\n"
        "spec:\n  namespaces: [other]\n  cohort: lab\n  tiers: [batch]\n"
        "  quotas:\n    - {pool: a100-slices, mig: {1g.5gb: 2}}\n"
    )
    found = _round_trip(policy, tmp_path)
    assert found == []
