"""The simulated cluster's own logic, without a cluster: the fleet counts what the policy
counts, node agents run only where tolerated, and the GitOps orders are the tools' orders."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.simcluster import build, cluster, fleet, flux, gitops, policyfleet, volcano

from hetgitops.model.policy import Taint
from hetgitops.plan.capacity import pool_resources

from .conftest import NOW, POLICIES, REPO


def test_fleet_capacity_sums_to_the_policy_capacity() -> None:
    policy = policyfleet.load(POLICIES, now=NOW)
    for pool in policy.pools.values():
        if not fleet.nvidia_plugin_runs(policy, pool):
            continue
        card = policy.card_types[pool.card_type]
        total: Counter[str] = Counter()
        for node in pool.nodes:
            resources = fleet.node_resources(policy, pool, node)
            total.update({k: int(v) for k, v in resources.items() if "/" in k})
        expected = {k: v for k, v in pool_resources(pool, card, policy.fleet).items() if v}
        assert dict(total) == expected, pool.name


def test_mig_node_advertises_its_layout() -> None:
    policy = policyfleet.load(POLICIES, now=NOW)
    pool = policy.pools["h100-infer"]
    resources = fleet.node_resources(policy, pool, pool.nodes[0])
    # GPUs 0-1: 7 x 1g.10gb each, GPUs 2-3: 2 x 3g.40gb each, GPUs 4-7 whole.
    assert resources["nvidia.com/mig-1g.10gb"] == "14"
    assert resources["nvidia.com/mig-3g.40gb"] == "4"
    assert resources["nvidia.com/gpu"] == "4"


def test_agents_only_where_tolerated() -> None:
    taint = (Taint(key="hetgitops.io/pool", value="a800-train", effect="NoSchedule"),)
    assert not fleet.tolerates([], taint)
    assert fleet.tolerates([{"key": "hetgitops.io/pool", "operator": "Exists"}], taint)
    assert fleet.tolerates([{"operator": "Exists"}], taint)
    assert not fleet.tolerates(
        [{"key": "hetgitops.io/pool", "value": "other", "effect": "NoSchedule"}], taint
    )
    soft = (Taint(key="x", value=None, effect="PreferNoSchedule"),)
    assert fleet.tolerates([], soft)


def test_node_features_only_for_nodes_nfd_worker_reaches() -> None:
    policy = policyfleet.load(POLICIES, now=NOW)
    nodes, features = fleet.fleet_objects(policy)
    assert len(nodes) == sum(len(p.nodes) for p in policy.pools.values())
    published = {f["metadata"]["name"] for f in features}
    for pool in policy.pools.values():
        reached = fleet.nfd_worker_runs(policy, pool)
        assert all((n.name in published) == reached for n in pool.nodes), pool.name
    assert all(f["spec"]["features"]["attributes"]["system.name"] for f in features)


def _doc(kind: str, name: str, wave: int | None = None) -> dict[str, object]:
    meta: dict[str, object] = {"name": name}
    if wave is not None:
        meta["annotations"] = {gitops.SYNC_WAVE: str(wave)}
    return {"apiVersion": "v1", "kind": kind, "metadata": meta}


def test_argocd_order_is_wave_then_kind_then_name() -> None:
    docs = [
        _doc("ClusterQueue", "b"),
        _doc("Cohort", "root", wave=0),
        _doc("Cohort", "child", wave=1),
        _doc("Namespace", "z"),
        _doc("ConfigMap", "a"),
        _doc("ClusterQueue", "a"),
    ]
    order = [d["metadata"]["name"] for d in sorted(docs, key=gitops.argo_sort_key)]  # type: ignore[index]
    assert order == ["z", "a", "a", "b", "root", "child"]


def test_stale_objects_are_what_left_the_tree(tmp_path: Path) -> None:
    old = [_doc("Namespace", "a"), _doc("Namespace", "b")]
    new = [_doc("Namespace", "a")]
    assert gitops.stale(old, new) == [_doc("Namespace", "b")]
    (tmp_path / "ns.yaml").write_text(yaml.safe_dump_all(new))
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({"resources": ["ns.yaml"]}))
    assert gitops.documents(tmp_path) == new


def _tree(folder: Path, docs: list[dict[str, object]]) -> Path:
    folder.mkdir()
    (folder / "all.yaml").write_text(yaml.safe_dump_all(docs))
    (folder / "kustomization.yaml").write_text(yaml.safe_dump({"resources": ["all.yaml"]}))
    return folder


def _with_options(doc: dict[str, object], options: str) -> dict[str, object]:
    meta = doc["metadata"]
    assert isinstance(meta, dict)
    meta["annotations"] = {gitops.SYNC_OPTIONS: options}
    return doc


def test_argocd_model_plan_prunes_keeps_and_replaces_as_argo_cd(tmp_path: Path) -> None:
    """What the model decides, named as Argo CD's sync result names it: Prune=false is skipped,
    the rest of what left the tree pruned; a Replace object recreated only when it changed
    (ApplyOutOfSyncOnly) and exists (else created)."""
    kept_ns = _with_options(_doc("Namespace", "team"), "Prune=false")
    tier = _with_options(_doc("PriorityClass", "training"), "Force=true,Replace=true")
    old = _tree(tmp_path / "old", [kept_ns, _doc("ConfigMap", "gone"), tier])
    changed = {**tier, "value": 2}
    new = _tree(tmp_path / "new", [changed])
    plan = gitops.argocd_plan(new, old, live={"PriorityClass/training"})
    assert plan.pruned == ["ConfigMap/gone"]
    assert plan.prune_skipped == ["Namespace/team"]
    assert plan.replaced == ["PriorityClass/training"]
    assert gitops.argocd_plan(old, old).replaced == []  # in sync: not replaced
    assert gitops.argocd_plan(new, old, live=set()).replaced == []  # absent: created


def test_every_component_has_a_module_and_a_stable_cache_key() -> None:
    assert build.available() == list(build.COMPONENTS)
    # Argo CD is built when named or on first use: a sim cluster runs without it (.ci/run
    # names it for tests/sim/test_sim_argocd.py).
    assert build.default() == [n for n in build.COMPONENTS if n != "argocd"]
    for component in build.COMPONENTS.values():
        assert component.version().startswith("v")
        assert build.source_hash(component) == build.source_hash(component)


def test_named_instances_live_beside_the_default_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HETGITOPS_SIMCLUSTER_DIR", raising=False)
    monkeypatch.setenv("HETGITOPS_CONTROLPLANE_DIR", "/tmp/cp-x/")
    assert cluster.run_dir() == Path("/tmp/cp-x-sim")
    assert cluster.run_dir("manager") == Path("/tmp/cp-x-sim-manager")
    monkeypatch.setenv("HETGITOPS_SIMCLUSTER_DIR", "/tmp/sim")
    assert cluster.run_dir("worker-a100") == Path("/tmp/sim-worker-a100")
    for bad in ("Manager", "../x", "a/b", "-a", "x" * 33):
        with pytest.raises(ValueError):
            cluster.run_dir(bad)


CHART_EXCERPT = """{{- if .Values.custom.admission_enable }}
{{- if .Values.custom.enabled_admissions | regexMatch "/queues/validate" }}
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: volcano-admission-service-queues-validate
  {{- if .Values.custom.common_labels }}
  labels:
    {{- toYaml .Values.custom.common_labels | nindent 4 }}
  {{- end }}
webhooks:
  - clientConfig:
      service:
        name: {{ .Release.Name }}-admission-service
        namespace: {{ .Release.Namespace }}
        path: /queues/validate
    namespaceSelector:
      matchExpressions:
        - key: kubernetes.io/metadata.name
          operator: NotIn
          values:
            - {{ .Release.Namespace }}
{{- if .Values.custom.webhooks_namespace_selector_expressions }}
        {{- toYaml .Values.custom.webhooks_namespace_selector_expressions | nindent 8 }}
{{- end }}
    name: validatequeue.volcano.sh
{{- end }}
{{- end }}
"""


def test_volcano_chart_webhooks_point_at_loopback() -> None:
    (config,) = volcano.webhook_configurations(
        CHART_EXCERPT, port=4443, ca_bundle=b"PEM", admissions=("/queues/validate",)
    )
    assert config["metadata"] == {"name": "volcano-admission-service-queues-validate"}
    (hook,) = config["webhooks"]
    assert hook["clientConfig"] == {
        "url": "https://127.0.0.1:4443/queues/validate",
        "caBundle": "UEVN",
    }
    assert hook["namespaceSelector"]["matchExpressions"][0]["values"] == ["volcano-system"]


def test_volcano_chart_without_an_enabled_admission_is_refused() -> None:
    with pytest.raises(ValueError, match="/pods/mutate"):
        volcano.webhook_configurations(
            CHART_EXCERPT, port=1, ca_bundle=b"", admissions=("/pods/mutate",)
        )


def test_volcano_data_files_come_with_the_build() -> None:
    wanted = set(build.COMPONENTS["volcano"].data.values())
    assert {"volcano-webhooks.yaml", "volcano-scheduler.conf", "crd-commands.yaml"} <= wanted


def test_spec_differences_count_what_the_tree_sets_and_compare_quantities() -> None:
    from .checks import spec_differences

    want = {"spec": {"capability": {"cpu": "12", "memory": "96Gi"}, "weight": 2}}
    same = {"spec": {"capability": {"cpu": "12000m", "memory": "96Gi"}, "weight": 2, "x": 1}}
    assert spec_differences(same, want) == []
    grown = {"spec": {"capability": {"cpu": "16", "memory": "96Gi"}, "weight": 2}}
    assert spec_differences(grown, want) == ["spec.capability.cpu is '16', not '12'"]
    groups = {"spec": {"resourceGroups": [{"flavors": [{"name": "a"}, {"name": "b"}]}]}}
    fewer = {"spec": {"resourceGroups": [{"flavors": [{"name": "a"}]}]}}
    assert len(spec_differences(fewer, groups)) == 1
    assert spec_differences({"spec": {"weight": True}}, {"spec": {"weight": 1}}) != []


def test_git_server_serves_a_commit_over_smart_http(tmp_path: Path) -> None:
    """What source-controller clones from: tests/harness/simcluster/githttp.py in front of
    `git http-backend` (a clone over http:// uses the smart protocol, as go-git does)."""
    import shutil
    import subprocess
    import sys
    import time

    from harness.controlplane import procs

    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not on PATH")
    env = {**flux._GIT_ENV, "PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    root = tmp_path / "git"
    subprocess.run([git, "init", "-q", "--bare", "-b", "main", str(root / "r.git")], check=True)
    work = tmp_path / "work"
    subprocess.run([git, "clone", "-q", str(root / "r.git"), str(work)], check=True, env=env)
    (work / "a.yaml").write_text("kind: Namespace\n")
    for args in (["add", "-A"], ["commit", "-qm", "x"], ["push", "-q", "origin", "HEAD:main"]):
        subprocess.run([git, *args], cwd=work, check=True, env=env)
    (port,) = procs.free_ports(1)
    server = subprocess.Popen(
        [sys.executable, str(Path(flux.__file__).with_name("githttp.py")), str(root), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/r.git"
        for _ in range(50):
            clone = subprocess.run(
                [git, "clone", "-q", url, str(tmp_path / "c")], capture_output=True, env=env
            )
            if clone.returncode == 0:
                break
            time.sleep(0.1)
        assert clone.returncode == 0, clone.stderr
        assert (tmp_path / "c" / "a.yaml").read_text() == "kind: Namespace\n"
    finally:
        server.terminate()
        server.wait(timeout=10)


def _gobuilds() -> Any:
    """scripts/gobuilds, which has no .py suffix, as a module."""
    loader = importlib.machinery.SourceFileLoader("gobuilds", str(REPO / "scripts" / "gobuilds"))
    spec = importlib.util.spec_from_loader("gobuilds", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_gobuilds_builds_every_component_once_and_the_sim_core_first() -> None:
    """.ci/run builds through scripts/gobuilds: a component missing from its lanes would be
    built on first use inside a test instead, and one listed twice would wait on itself."""
    gobuilds = _gobuilds()
    names = [name for lane in gobuilds.LANES for name in lane]
    assert sorted(names) == sorted(["controlplane", *build.COMPONENTS])
    assert len(names) == len(set(names))
    assert set(gobuilds.SIM_CORE) == {component for component, _ in cluster.DAEMONS}
