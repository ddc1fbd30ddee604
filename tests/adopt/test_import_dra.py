"""import reads DRA pools back: DeviceClasses, Kueue's deviceClassMappings, claim templates."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from hetgitops import api
from hetgitops.adopt import sources
from hetgitops.adopt.run import import_objects
from hetgitops.plan import dra

HERE = Path(__file__).parent
DRA = HERE.parents[1] / "tests/cases/render/dra/policy"


def _imported(tmp_path: Path, edit: str = "") -> tuple[dict[str, dict], list]:  # type: ignore[type-arg]
    sys.path.insert(0, str(HERE))
    from test_import import _as_cluster

    text = "---\n".join(yaml.safe_dump(o) for o in _as_cluster(api.render([DRA])))
    if edit:
        text += "---\n" + edit
    read = sources.Read()
    sources.from_text("cluster.yaml", text, read)
    result = import_objects(read, tmp_path / "policy", cluster="lab")
    pools = {
        p["metadata"]["name"]: p["spec"] for p in yaml.safe_load_all(result.files["pools.yaml"])
    }
    return pools, result.diagnostics


def test_each_pool_gets_its_allocation_mode_back(tmp_path: Path) -> None:
    pools, _ = _imported(tmp_path)
    assert pools["h100-infer"]["devices"] == {
        "allocation": "draClaims",
        "migratingFrom": "devicePlugin",
    }
    assert pools["l40s-infer"]["devices"] == {"allocation": "draClaims"}
    assert "devices" not in pools["a800-train"]
    assert pools["h100-infer"]["nodes"][0]["names"] == "gpu-h100-[001:006]"


def test_a_device_class_whose_cel_cannot_be_read_is_a_finding_at_it(tmp_path: Path) -> None:
    odd = (
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: odd}\n"
        "spec:\n  selectors:\n  - cel: {expression: \"device.attributes['gpu.nvidia.com']"
        '.index == 0"}\n'
    )
    _, found = _imported(tmp_path, odd)
    (unread,) = [d for d in found if d.rule == "import-device-class-unread"]
    assert unread.span.file == "cluster.yaml" and unread.span.line > 1
    assert "DeviceClass odd" in unread.message


def test_the_selector_reader_reads_what_the_writer_writes() -> None:
    policy = api.render([DRA]).policy
    assert policy is not None
    facts = dra.device_classes(policy)
    assert facts
    for fact in facts:
        read = dra.read_selector(fact.cel)
        assert read is not None and read.profile == fact.profile
        card = fact.card
        assert dra.selects(read, architecture=card.architecture, product_names=card.product_names)
    assert dra.read_selector("device.driver == 'gpu.nvidia.com'") is None


DRIVER_CLASS = """apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.nvidia.com}
spec:
  extendedResourceName: nvidia.com/gpu
  selectors:
  - cel:
      expression: >-
        device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'
"""


def test_the_extended_resource_path_comes_back_from_the_drivers_class(tmp_path: Path) -> None:
    """A pool whose pods keep `nvidia.com/gpu` on DRA nodes: the driver's own class (its
    chart's deviceclass-gpu.yaml) serves the name and the nodes switch the plugin off."""
    import shutil

    policy = tmp_path / "in"
    shutil.copytree(DRA, policy)
    pools = policy / "pools" / "inference.yaml"
    pools.write_text(
        pools.read_text().replace(
            "devices: {allocation: draClaims}\n", "devices: {allocation: draExtendedResource}\n"
        )
    )
    sys.path.insert(0, str(HERE))
    from test_import import _as_cluster

    text = "---\n".join(yaml.safe_dump(o) for o in _as_cluster(api.render([policy])))
    read = sources.Read()
    sources.from_text("cluster.yaml", text + "---\n" + DRIVER_CLASS, read)
    result = import_objects(read, tmp_path / "out", cluster="lab")
    found = {
        p["metadata"]["name"]: p["spec"] for p in yaml.safe_load_all(result.files["pools.yaml"])
    }
    assert found["l40s-infer"]["devices"] == {"allocation": "draExtendedResource"}
    assert found["h100-infer"]["devices"]["allocation"] == "draClaims"
    assert not [d for d in result.diagnostics if d.rule == "import-device-class-unread"]
    changes = [d.message for d in result.diagnostics if d.rule == "import-field-changes"]
    assert changes == [], changes


def test_broken_dra_objects_are_findings_not_crashes(tmp_path: Path) -> None:
    broken = (
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: a}\nspec: [1]\n"
        "---\napiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: b}\n"
        "spec: {selectors: [{cel: nope}, 3]}\n"
        "---\napiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        "resources: {deviceClassMappings: [{name: x, deviceClassNames: 7}, 5]}\n"
    )
    pools, found = _imported(tmp_path, broken)
    unread = sorted(
        d.message.split(":")[0] for d in found if d.rule == "import-device-class-unread"
    )
    assert unread == ["DeviceClass a", "DeviceClass b"]
    assert pools["l40s-infer"]["devices"] == {"allocation": "draClaims"}
