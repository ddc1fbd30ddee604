"""The seeded koord-scheduler request generator (tests/harness/simcluster/koordrequests.py)
without a cluster: deterministic, every kind drawn, each band where it says against the leaf's
min and max, cards per pod that pack the pool's nodes, batches that never share a tree, and
explain's empty-fleet verdict per kind as the differential expects it."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
from harness.simcluster.koordrequests import KINDS, batches, generate

from hetgitops.explain import run
from hetgitops.explain.explanation import explain
from hetgitops.explain.nodes import pool_nodes
from hetgitops.explain.workload import from_manifest
from hetgitops.model.policy import Policy
from hetgitops.plan.koordinator_quota import quota_nodes

from .conftest import NOW, POLICIES


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory) -> Policy:
    root = tmp_path_factory.mktemp("koordrequests") / "policies"
    shutil.copytree(POLICIES, root)
    fleet = root / "fleet.yaml"
    text = fleet.read_text()
    fleet.write_text(text.replace("gpu-operator]", "gpu-operator, koordinator]"))
    return run.load_policy([Path(root)], NOW)


def test_requests_are_deterministic_and_in_their_band(policy: Policy) -> None:
    first, again = generate(policy, 34, 120), generate(policy, 34, 120)
    assert first == again and len({r.name for r in first}) == 120
    assert {r.kind.split("/")[0] for r in first} == set(KINDS)
    leaves = {n.name: n for n in quota_nodes(policy) if not n.is_parent}
    verdicts: Counter[tuple[str, str]] = Counter()
    for r in first:
        verdicts[r.kind.split("/")[-1], explain(policy, from_manifest(r.manifest)).verdict] += 1
        if r.kind == "parent-label":
            continue
        leaf = leaves[r.pods[0]["metadata"]["labels"].get(
            "quota.scheduling.koordinator.sh/name", r.quota).removesuffix("x")]  # fmt: skip
        (key,) = [k for k in r.pods[0]["spec"]["containers"][0]["resources"]["requests"]
                  if k not in ("cpu", "memory")]  # fmt: skip
        per_pod = int(r.pods[0]["spec"]["containers"][0]["resources"]["requests"][key])
        asked = per_pod * len(r.pods)
        assert all(n.units[key] % per_pod == 0 for n in pool_nodes(policy, policy.pools[leaf.pool]))
        band = r.kind.split("/")[-1]
        least, most = int(leaf.min[key]), int(leaf.max[key])
        assert {
            "within-min": asked <= least,
            "parent-runtime": least < asked <= most,
            "over-max": asked > most,
        }[band], (r.name, band, asked, least, most)
    # on the empty fleet: within the max runs, over it waits, a parent's name is refused
    # (or refused at creation by the namespace's ResourceQuota)
    assert {v for (band, v) in verdicts if band == "over-max"} == {"pending", "rejected"}
    assert {v for (band, v) in verdicts if band in ("within-min", "parent-runtime")} == {"admitted"}
    assert {v for (band, v) in verdicts if band == "parent-label"} == {"rejected"}


def test_no_batch_touches_a_tree_twice(policy: Policy) -> None:
    requests = generate(policy, 34, 120)
    found = batches(requests)
    assert [r for b in found for r in b] == requests
    for batch in found:
        trees = [r.tree for r in batch if r.tree is not None]
        assert len(trees) == len(set(trees))
