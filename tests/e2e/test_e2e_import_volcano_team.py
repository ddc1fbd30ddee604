"""E2E, issue 32 item 5: a hand-written cluster (tests/generated/clustergen.py) whose Volcano
queues each span a team's pools, created on the real API server with Volcano's Queue CRD and
imported live. The written policy says each as `spec.volcano.layout: team`, and its render,
server-side dry-run applied as field manager hetgitops, changes no Queue (one with deserved,
one without; a team over several pools)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import live_import
import pytest
import yaml
from harness.controlplane.harness import ControlPlane

from hetgitops.adopt import sources
from hetgitops.adopt.run import import_objects
from hetgitops.live.client import Cluster

pytestmark = pytest.mark.e2e

SEED = 1029  # five teams, each with one queue across its pools; two say deserved too


@pytest.fixture
def created(control_plane: ControlPlane) -> Iterator[list[dict[str, Any]]]:
    """The cluster of SEED on the API server; removed afterwards (live_import.seeded)."""
    with live_import.seeded(control_plane, SEED) as (objects, _):
        yield objects


def test_spanning_queues_imported_live_dry_run_with_no_change(
    control_plane: ControlPlane, created: list[dict[str, Any]], tmp_path: Any
) -> None:
    written = {
        o["metadata"]["name"]: o["spec"]
        for o in created
        if o["kind"] == "Queue" and o["metadata"]["name"] not in ("root", "default")
    }
    assert written and all("affinity" not in s for s in written.values())
    read = sources.from_cluster(control_plane.admin_kubeconfig, None)
    result = import_objects(read, tmp_path / "policy", cluster="lab")
    named = [d.message for d in result.diagnostics if d.message.startswith("Queue ")]
    assert not [m for m in named if m.split(":")[0].removeprefix("Queue ") in written], named
    docs = yaml.safe_load_all(result.files["teams.yaml"])
    teams = {t["metadata"]["name"]: t["spec"] for t in docs if t}
    assert {teams[n]["volcano"]["layout"] for n in written} == {"team"}
    assert any(len(teams[n]["quotas"]) > 1 for n in written)
    assert result.rendered is not None and not result.rendered.failed()
    live = {i.name: i.obj for i in read.objects if i.kind == "Queue"}
    client = Cluster(control_plane.admin_kubeconfig)
    compared = []
    try:
        for manifest in result.rendered.manifests:
            name = manifest.obj["metadata"]["name"]
            if manifest.obj["kind"] != "Queue" or name not in written:
                continue
            after, before = live_import.compared(
                "Queue", live_import.dry_run(client, manifest.obj), live[name]
            )
            assert after["spec"] == before["spec"], name
            compared.append(name)
    finally:
        client.close()
    assert sorted(compared) == sorted(written)
    assert any("deserved" in written[n] for n in compared)
    assert any("deserved" not in written[n] for n in compared)
