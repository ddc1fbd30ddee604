"""Differential test on generated policies (issue 32 item 2): `hetgitops explain` against the
real Kueue v0.19.2 on fleets this repository did not write by hand.

Per seed, tests/generated/policygen.py draws a policy; its fleet is built on the simulated
cluster (kwok Nodes, NFD labels: harness.simcluster.policyfleet) and its render synced the Argo CD
way after the previous seed's, which prunes every object the previous seed had and this one
has not; the previous seed's Nodes and NodeFeatures are deleted first. The bundled fleet stays
beside the first seed: generated flavors select their own pools' nodes only, generated queues
sit in their own cohorts, and the bundled objects a seed overwrites (a tier of the same name)
are synced back at the end. Then requests drawn for
that policy (its teams, card types, MIG profiles, taints and tiers: harness.simcluster.workloads,
plus the topology edges of explain_requests) go through test_sim_explain's batching and
comparison: admitted or pending, the flavor, the reason and the exact message, on the empty
fleet. The agreement per seed and in total is printed (pytest -s) and, with
$HETGITOPS_EXPLAIN_REPORT set, appended there with every disagreement.

Turned off for this test only: the `koordinator` and `monitoring` targets (their objects need
Koordinator's and the Prometheus Operator's CRDs, which this module does not install, and
neither changes what Kueue admits). Everything else policygen draws is built.

$HETGITOPS_EXPLAIN_GENERATED=SEEDS:COUNT (e.g. `4,5,6,13,18,19:100`) runs other seeds and
another number of requests per seed; the default is the CI slice (DEFAULT). When the module ends,
the bundled fleet is put back: the last seed's objects and nodes are pruned, the bundled render
synced again and nfd-master and vc-scheduler reconfigured for it."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from generated.policygen import dump
from generated.policygen import generate as generate_policy
from harness.simcluster import cluster, gitops, policyfleet
from harness.simcluster.explain_requests import edge_requests
from harness.simcluster.fleet import fleet_objects
from harness.simcluster.workloads import Generated, generate

from hetgitops.explain.explanation import explain
from hetgitops.explain.workload import from_manifest
from hetgitops.model.policy import Policy

from .checks import converged
from .conftest import NOW, render
from .test_sim_explain import Tally, _category, _holds, _report, _run, node_sizes

pytestmark = pytest.mark.sim

KNOB = "HETGITOPS_EXPLAIN_GENERATED"
DEFAULT = "13,18:30"
OFF_TARGETS = ("koordinator", "monitoring")
# Seconds a batch may take to show the predicted verdicts (a disagreement waits this long):
# Kueue judges a batch of this module's small fleets in seconds.
WAIT = 60.0
PER_CARD = 8  # requests that hold quota or nodes, per card type: the batch count


def knob() -> tuple[list[int], int]:
    """(seeds, requests per seed) from $HETGITOPS_EXPLAIN_GENERATED, else DEFAULT."""
    spec = os.environ.get(KNOB) or DEFAULT
    seeds, _, count = spec.partition(":")
    try:
        return [int(s) for s in seeds.split(",") if s.strip()], int(count or 100)
    except ValueError:
        raise ValueError(f"${KNOB}={spec!r}: want SEEDS:COUNT, e.g. 4,5,6:100") from None


SEEDS, COUNT = knob()


def write(seed: int, folder: Path) -> Path:
    """policygen's policy of `seed`, without the targets this test does not build."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, docs in generate_policy(seed).items():
        for doc in docs:
            if doc["kind"] == "Fleet":
                targets = doc["spec"]["targets"]
                doc["spec"]["targets"] = [t for t in targets if t not in OFF_TARGETS]
        (folder / name).write_text(dump(docs))
    return folder


def chosen(policy: Policy, seed: int, count: int) -> list[Generated]:
    """`count` requests: an eighth at the topology edges, then the seeded random mix, each
    predicted category at most half of them, and at most PER_CARD that hold quota or nodes per
    card type (each needs a batch of its own)."""
    picked: list[Generated] = []
    taken: Counter[str] = Counter()
    bound: Counter[str] = Counter()
    prefix = f"sim-gen{seed}"
    mix = [
        *edge_requests(policy, seed, count // 8, prefix=f"{prefix}-edge"),
        *generate(policy, seed, count * 8, prefix=prefix),
    ]
    for g in mix:
        if len(picked) >= count:
            break
        e = explain(policy, from_manifest(g.job))
        category = _category(e)
        if taken[category] >= max(count // 2, 1):
            continue
        if _holds(e):
            if bound[g.card] >= PER_CARD:
                continue
            bound[g.card] += 1
        taken[category] += 1
        picked.append(g)
    return picked


class Stage:
    """The generated fleet on the cluster now: its policy, render and nodes."""

    def __init__(self, sim: cluster.SimCluster, bundled: Path, bundled_policy: Policy) -> None:
        self.sim = sim
        self.bundled = bundled
        self.bundled_policy = bundled_policy
        # The generated render Argo CD synced last (the bundled objects stay beside the first:
        # no generated name selects them, and those of equal name are re-synced at the end).
        self.tree: Path | None = None
        self.nodes: list[dict[str, object]] = []
        self.tallies: list[tuple[str, Tally]] = []

    def switch(self, policy: Policy, tree: Path) -> None:
        """Replace the previous seed's fleet by `policy`'s: its nodes first (a node name may
        come back with other labels), then the render, pruning what the previous one had."""
        bundled_nodes = {n.name for p in self.bundled_policy.pools.values() for n in p.nodes}
        mine = {n.name for p in policy.pools.values() for n in p.nodes}
        assert not mine & bundled_nodes, sorted(mine & bundled_nodes)
        self._drop_nodes()
        policyfleet.create_from(self.sim, policy)
        nodes, features = fleet_objects(policy)
        self.nodes = [*nodes, *features]
        gitops.sync_argocd(self.sim, tree, self.tree)
        self.tree = tree
        converged(self.sim, policy, tree)

    def _drop_nodes(self) -> None:
        if self.nodes:
            gitops.prune(self.sim, self.nodes)  # type: ignore[arg-type]
            self.nodes = []

    def restore(self) -> None:
        """The bundled fleet as the other modules expect it."""
        self._drop_nodes()
        policyfleet.create_from(self.sim, self.bundled_policy)
        gitops.sync_argocd(self.sim, self.bundled, self.tree)
        self.tree = None
        converged(self.sim, self.bundled_policy, self.bundled)


@pytest.fixture(scope="module")
def stage(sim: cluster.SimCluster, fleet_policy: Policy, synced: Path) -> Iterator[Stage]:
    staged = Stage(sim, synced, fleet_policy)
    try:
        yield staged
    finally:
        total = Tally()
        lines = []
        for name, tally in staged.tallies:
            total.total.update(tally.total)
            total.agree.update(tally.agree)
            lines.append(
                f"  {name}: verdict {tally.agree['verdict']}/{tally.total['verdict']}, "
                f"flavor {tally.agree['flavor']}/{tally.total['flavor']}, "
                f"message {tally.agree['message']}/{tally.total['message']}"
            )
        print("\n".join(["explain vs Kueue, generated policies:", *lines]))
        print("\n".join(total.lines("all seeds")))
        staged.restore()


@pytest.mark.parametrize("seed", SEEDS)
def test_explain_agrees_with_kueue_on_a_generated_policy(
    stage: Stage, seed: int, tmp_path: Path
) -> None:
    folder = write(seed, tmp_path / "policy")
    policy = policyfleet.load(folder, now=NOW)
    tree = render(folder, tmp_path / "tree")
    start = time.monotonic()
    stage.switch(policy, tree)
    built = time.monotonic() - start
    generated = chosen(policy, seed, COUNT)
    start = time.monotonic()
    tally = _run(stage.sim, policy, generated, node_free=node_sizes(policy), timeout=WAIT)
    name = f"seed {seed} ({len(generated)} requests, fleet built in {built:.0f} s)"
    _report(name, tally, time.monotonic() - start)
    stage.tallies.append((f"seed {seed}", tally))
    assert len(generated) >= min(COUNT, 20)
    assert not tally.disagreements, json.dumps(tally.disagreements[:5], indent=1)
