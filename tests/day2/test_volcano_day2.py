"""Day-2: every single policy change syncs its Volcano Queues in one pass under Argo CD waves,
Flux stages (integrations/flux/) and a plain `kubectl apply -k`, replayed against Volcano
v1.15.1's queue admission rules (volcano_admission.py) on (before, after) renders."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from sync_models import (
    Outcome,
    Stage,
    argocd_sync,
    flux_reconcile,
    kubectl_apply,
    kustomize_order,
    queues,
)
from volcano_admission import Cluster, Queue, Rejected

from hetgitops import api
from hetgitops.output import manifests, writer

REPO = Path(__file__).resolve().parents[2]
FLUX_LAYOUT = REPO / "integrations" / "flux" / "kustomizations.yaml"
Edit = Callable[[Path], None]


def _replace(file: str, old: str, new: str) -> Edit:
    def edit(root: Path) -> None:
        path = root / file
        text = path.read_text()
        assert old in text, (file, old)
        path.write_text(text.replace(old, new, 1))

    return edit


def _both(*edits: Edit) -> Edit:
    def edit(root: Path) -> None:
        for one in edits:
            one(root)

    return edit


SHRINK_PRETRAINING = _replace(
    "teams/training.yaml",
    "{pool: a800-train, cards: 80, borrowingLimit: 32, lendingLimit: 16}",
    "{pool: a800-train, cards: 72, borrowingLimit: 32, lendingLimit: 16}",
)
# Lending changes move other teams' capability (Kueue's ceiling): a cross-queue change.
LEND_LESS = _replace(
    "teams/training.yaml",
    "{pool: a800-train, cards: 24, borrowingLimit: 16}",
    "{pool: a800-train, cards: 24, borrowingLimit: 16, lendingLimit: 2}",
)
GUARANTEE_MORE = _replace(
    "teams/training.yaml", "volcano: {weight: 4}", "volcano: {weight: 4, guaranteePercent: 90}"
)
TEAM_RESEARCH = "---\napiVersion: hetgitops.io/v1alpha1\nkind: Team\nmetadata:\n  name: research\n"


def _drop_research(root: Path) -> None:
    path = root / "teams" / "others.yaml"
    text = path.read_text()
    start = text.index(TEAM_RESEARCH)
    end = text.index("---\n", start + 4)
    path.write_text(text[:start] + text[end:])


def _drop_mlu_pool(root: Path) -> None:
    """Remove pool mlu370-eval (and the one quota on it)."""
    path = root / "pools" / "dev.yaml"
    text = path.read_text()
    path.write_text(text[: text.index("---\napiVersion: hetgitops.io/v1alpha1\nkind: Pool\n")])
    _replace("teams/others.yaml", "    - {pool: mlu370-eval, cards: 8}\n", "")(root)


def _nothing(root: Path) -> None:
    pass


# (name, edit of the "small" side, edit of the "large" side); each pair is tried both ways.
CHANGES: list[tuple[str, Edit, Edit]] = [
    ("quota 80->72 cards", _nothing, SHRINK_PRETRAINING),
    ("lendingLimit set", _nothing, LEND_LESS),
    ("guaranteePercent 90", _nothing, GUARANTEE_MORE),
    ("team research", _nothing, _drop_research),
    ("pool mlu370-eval", _nothing, _drop_mlu_pool),
    ("quota cut + lending", _nothing, _both(SHRINK_PRETRAINING, LEND_LESS)),
]
# Each change both ways: (before, after) = (A, B) and (B, A).
MATRIX = [
    pytest.param(a, b, id=f"{name}: {direction}")
    for name, x, y in CHANGES
    for direction, a, b in (("forward", x, y), ("back", y, x))
]


def _render(edit: Edit, workdir: Path) -> Path:
    """Render the bundled policy after `edit` into a tree; returns the tree."""
    policy = workdir / "policy"
    shutil.copytree(REPO / "policies", policy)
    edit(policy)
    result = api.render([policy], api.Options(check_output=False))
    assert not result.failed(), [str(d) for d in result.diagnostics]
    tree = workdir / "tree"
    writer.write_tree(manifests.tree(result.manifests), tree)
    return tree


def _installed(objects: list[dict[str, Any]]) -> Cluster:
    cluster = Cluster()
    for obj in queues(objects):
        cluster.queues[obj["metadata"]["name"]] = Queue.of(obj)
    return cluster


def _stages(tree: Path) -> list[Stage]:
    """The Flux stages of integrations/flux/, each built from the tree by the real kubectl."""
    stages = []
    for ks in yaml.safe_load_all(FLUX_LAYOUT.read_text()):
        target = Path(ks["spec"]["path"]).name
        objects = tuple(kustomize_order(tree / target)) if (tree / target).is_dir() else ()
        deps = tuple(d["name"] for d in ks["spec"].get("dependsOn", []))
        stages.append(Stage(ks["metadata"]["name"], objects, deps))
    return stages


def _converged(cluster: Cluster, new: list[dict[str, Any]], *, pruned: bool) -> None:
    wanted = {o["metadata"]["name"]: Queue.of(o) for o in queues(new)}
    for name, queue in wanted.items():
        assert cluster.queues.get(name) == queue, name
    if pruned:
        assert set(cluster.queues) == {*wanted, "root", "default"}


def _check(outcome: Outcome) -> None:
    assert outcome.ok, outcome.errors


@pytest.mark.slow  # a render pair per change
@pytest.mark.parametrize(("before", "after"), MATRIX)
def test_single_change_syncs_in_one_pass(tmp_path: Path, before: Edit, after: Edit) -> None:
    old_tree, new_tree = _render(before, tmp_path / "old"), _render(after, tmp_path / "new")
    old, new = kustomize_order(old_tree), kustomize_order(new_tree)

    cluster = _installed(old)
    _check(kubectl_apply(cluster, new))
    _converged(cluster, new, pruned=False)  # plain apply prunes nothing

    cluster = _installed(old)
    _check(argocd_sync(cluster, old, new))
    _converged(cluster, new, pruned=True)

    cluster = _installed(old)
    inventory = {s.name: s.objects for s in _stages(old_tree)}
    _check(flux_reconcile(cluster, inventory, _stages(new_tree)))
    _converged(cluster, new, pruned=True)


def test_first_install_syncs_in_one_pass(tmp_path: Path) -> None:
    tree = _render(_nothing, tmp_path)
    new = kustomize_order(tree)
    for sync in (
        lambda c: kubectl_apply(c, new),
        lambda c: argocd_sync(c, [], new),
        lambda c: flux_reconcile(c, {}, _stages(tree)),
    ):
        cluster = Cluster()
        _check(sync(cluster))
        _converged(cluster, new, pruned=True)


def test_flux_stages_cover_the_tree_exactly(tmp_path: Path) -> None:
    """Every applied object is in exactly one stage, each stage builds with the real kubectl
    kustomize, and every dependsOn names a stage."""
    tree = _render(_nothing, tmp_path)
    stages = _stages(tree)
    names = {s.name for s in stages}
    assert all(set(s.depends_on) <= names for s in stages)

    def key(obj: dict[str, Any]) -> tuple[str, str, str]:
        meta = obj["metadata"]
        return (obj["kind"], meta.get("namespace", ""), meta["name"])

    staged = sorted(key(o) for s in stages for o in s.objects)
    assert staged == sorted(key(o) for o in kustomize_order(tree))
    assert len(staged) == len(set(staged))


# -- the replay is a faithful model: it rejects what Volcano rejects ---------------------------


def _q(name: str, parent: str, gpus: int, guarantee: int = 0) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "parent": parent,
        "deserved": {"nvidia.com/gpu": str(gpus)},
        "capability": {"nvidia.com/gpu": str(gpus)},
    }
    if guarantee:
        spec["guarantee"] = {"resource": {"nvidia.com/gpu": str(guarantee)}}
    return {"kind": "Queue", "metadata": {"name": name}, "spec": spec}


def test_replay_rejects_a_parent_shrunk_below_its_children() -> None:
    cluster = Cluster()
    cluster.apply(_q("team", "root", 80, 40))
    cluster.apply(_q("team-a800", "team", 80, 40))
    with pytest.raises(Rejected, match="smaller than its descendants"):
        cluster.apply(_q("team", "root", 72, 36))  # the old wave-0-first shrink
    with pytest.raises(Rejected, match="exceeds its ancestor"):
        cluster.apply(_q("team-a800", "team", 88, 44))  # a grow, children first
    cluster.apply(_q("team", "root", 88, 44))
    with pytest.raises(Rejected, match="sum of children's guarantee"):
        cluster.apply(_q("team-b", "team", 8, 8))
    with pytest.raises(Rejected, match="failed to get parent"):
        Cluster().apply(_q("team-a800", "team", 8), dry_run=True)  # Flux: parent not there yet
    with pytest.raises(Rejected, match="child queues"):
        cluster.delete("team")


def test_the_old_team_tree_cannot_sync_a_shrink() -> None:
    """The tree hetgitops rendered before (team queue wave 0, leaves wave 1) fails exactly as
    the issue reports; the same replay passes the flat tree above."""
    old = [_q("pretraining", "root", 80, 40), _q("pretraining-a800", "pretraining", 80, 40)]
    new = [_q("pretraining", "root", 72, 36), _q("pretraining-a800", "pretraining", 72, 36)]
    old[1]["metadata"]["annotations"] = new[1]["metadata"]["annotations"] = {
        "argocd.argoproj.io/sync-wave": "1"
    }
    outcome = argocd_sync(_installed(old), old, new)
    assert not outcome.ok and "wave 0 apply pretraining" in outcome.errors[0]
    flux = flux_reconcile(_installed(old), {"v": old}, [Stage("v", tuple(new))])
    assert not flux.ok
