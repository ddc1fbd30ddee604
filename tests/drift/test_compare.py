"""Drift stage, offline: defaults from CRD schemas, canonical quantities, empty == absent,
attribution from managedFields, ignore rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hetgitops.drift.compare import compare, display
from hetgitops.drift.ignore import Ignores, pointer_segments
from hetgitops.drift.ownership import Ownership, Writer
from hetgitops.drift.schema import apply_defaults, is_quantity

REPO = Path(__file__).resolve().parents[2]

QUANTITY = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$",
    "x-kubernetes-int-or-string": True,
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "stopPolicy": {"type": "string", "default": "None"},
                "preemption": {
                    "type": "object",
                    "default": {},
                    "properties": {"withinClusterQueue": {"type": "string", "default": "Never"}},
                },
                "flavors": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "quota": QUANTITY},
                    },
                },
                "covered": {"type": "array", "items": {"type": "string"}},
            },
        }
    },
}


def _cq(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "a"},
        "spec": spec,
    }


def test_defaults_come_from_the_schema_top_down() -> None:
    defaulted = apply_defaults(_cq(), SCHEMA)
    assert defaulted["spec"] == {
        "stopPolicy": "None",
        "preemption": {"withinClusterQueue": "Never"},
    }


def test_a_live_default_is_no_drift_but_a_changed_default_is() -> None:
    want = apply_defaults(_cq(), SCHEMA)
    assert compare(want, apply_defaults(_cq(), SCHEMA), schema=SCHEMA) == ([], [])
    diffs, _ = compare(
        want, _cq(stopPolicy="Hold", preemption={"withinClusterQueue": "Never"}), schema=SCHEMA
    )
    assert [(d.change, d.display, d.live) for d in diffs] == [
        ("changed", "spec.stopPolicy", "Hold")
    ]


def test_quantities_compare_canonically_only_where_the_schema_says_quantity() -> None:
    assert is_quantity(QUANTITY)
    want = _cq(flavors=[{"name": "a100", "quota": "12000m"}])
    live = _cq(flavors=[{"name": "a100", "quota": 12}])
    assert compare(want, live, schema=SCHEMA) == ([], [])
    diffs, _ = compare(_cq(stopPolicy="12000m"), _cq(stopPolicy="12"), schema=SCHEMA)
    assert len(diffs) == 1


def test_map_lists_match_by_key_not_position() -> None:
    want = _cq(flavors=[{"name": "a", "quota": "1"}, {"name": "b", "quota": "2"}])
    live = _cq(flavors=[{"name": "b", "quota": "3"}, {"name": "a", "quota": "1"}])
    diffs, extras = compare(want, live, schema=SCHEMA)
    assert [(d.path, d.display) for d in diffs] == [
        (("spec", "flavors", 0, "quota"), "spec.flavors[name=b].quota")
    ]
    assert extras == []


def test_empty_and_absent_are_alike() -> None:
    assert compare(_cq(covered=[], preemption={}), _cq(), schema=None) == ([], [])
    assert compare(_cq(), _cq(covered=[], x=None), schema=None) == ([], [])


def test_live_only_fields_are_returned_for_attribution() -> None:
    want, live = _cq(stopPolicy="None"), _cq(stopPolicy="None", fairSharing={"weight": "2"})
    _, extras = compare(want, live, schema=SCHEMA)
    assert extras == [(("spec", "fairSharing"), {"weight": "2"})]


LIVE = {
    "metadata": {
        "name": "a",
        "managedFields": [
            {
                "manager": "argocd-controller",
                "operation": "Apply",
                "time": "2026-11-30T10:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:spec": {
                        "f:covered": {},
                        "f:flavors": {'k:{"name":"a"}': {".": {}, "f:name": {}, "f:quota": {}}},
                    }
                },
            },
            {
                "manager": "kubectl-patch",
                "operation": "Update",
                "time": "2026-11-30T11:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:flavors": {'k:{"name":"b"}': {"f:quota": {}}}}},
            },
            {
                "manager": "kueue",
                "operation": "Update",
                "subresource": "status",
                "time": "2026-11-30T12:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:status": {}},
            },
        ],
    },
    "spec": {
        "covered": ["cpu", "gpu"],
        "flavors": [{"name": "b", "quota": "3"}, {"name": "a", "quota": "1"}],
    },
}


def test_keyed_list_entries_resolve_to_live_indexes() -> None:
    owners = Ownership(LIVE)
    assert owners.at(("spec", "flavors", 0, "quota")) == [
        Writer("kubectl-patch", "Update", "2026-11-30T11:00:00Z")
    ]
    assert [w.manager for w in owners.at(("spec", "flavors", 1, "quota"))] == ["argocd-controller"]
    # An atomic list is owned whole: its elements belong to the list's owner.
    assert [w.manager for w in owners.at(("spec", "covered", 1))] == ["argocd-controller"]
    assert [w.manager for w in owners.under(("spec",))] == ["kubectl-patch", "argocd-controller"]
    assert owners.at(("status",)) == []
    assert display(LIVE, ("spec", "flavors", 1, "quota")) == "spec.flavors[name=a].quota"


def test_ignore_rules_by_pointer_and_by_manager() -> None:
    from hetgitops.model.policy import DriftIgnore

    assert pointer_segments("/metadata/annotations/a~1b") == ["metadata", "annotations", "a/b"]
    bot = Writer("quota-bot", "Update", "")
    rule = DriftIgnore("ClusterQueue", None, ("/spec/flavors/*/quota",), ("autoscaler",), None)  # type: ignore[arg-type]
    assert Ignores.skips([rule], ("spec", "flavors", 3, "quota"), [bot])
    assert not Ignores.skips([rule], ("spec", "stopPolicy"), [bot])
    assert Ignores.skips([rule], ("spec", "stopPolicy"), [Writer("autoscaler", "Update", "")])


def test_a_kind_without_a_served_crd_version_is_a_finding_not_a_crash() -> None:

    import yaml
    from harness import upstream

    from hetgitops.diagnostics import NOWHERE
    from hetgitops.drift.run import DriftOptions, _kind
    from hetgitops.live.kinds import Catalogue, KindKey
    from hetgitops.output.manifests import Manifest

    crd = upstream.for_test() / "kueue" / "crds" / "kueue.x-k8s.io_clusterqueues.yaml"
    catalogue = Catalogue.from_crds([yaml.safe_load(crd.read_text())])
    served = KindKey("kueue.x-k8s.io", "v1beta2", "ClusterQueue")
    assert catalogue.resource(served) is not None
    assert catalogue.schema(served) is not None
    manifest = Manifest("kueue", _cq(), NOWHERE)
    for key, reason in (
        (KindKey("kueue.x-k8s.io", "v1alpha9", "ClusterQueue"), "does not serve v1alpha9"),
        (KindKey("scheduling.volcano.sh", "v1beta1", "Queue"), "no CustomResourceDefinition"),
    ):
        found, live, _ = _kind(key, [manifest], catalogue, None, None, DriftOptions())  # type: ignore[arg-type]
        assert [d.rule for d in found] == ["drift-target-missing"] and live == []
        assert reason in found[0].message


def test_secret_values_are_never_printed() -> None:
    from hetgitops.diagnostics import NOWHERE
    from hetgitops.drift.objects import compare_object
    from hetgitops.output.manifests import Manifest

    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n"}}
    desired = Manifest("core", {**secret, "data": {"token": "ZGVzaXJlZA=="}}, NOWHERE)
    live = {
        **secret,
        "data": {"token": "bGl2ZQ==", "extra": "c2VjcmV0"},
        "metadata": {
            **secret["metadata"],
            "managedFields": [
                {
                    "manager": "kubectl-edit",
                    "operation": "Update",
                    "time": "2026-11-30T10:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {"f:token": {}, "f:extra": {}}},
                }
            ],
        },
    }
    found = compare_object(desired, live, None, managers=("argocd-controller",))
    assert sorted(d.rule for d in found) == ["drift-added", "drift-changed"]
    text = " ".join(d.message for d in found)
    assert "<redacted>" in text and "kubectl-edit" in text
    assert not any(v in text for v in ("ZGVzaXJlZA", "bGl2ZQ", "c2VjcmV0"))


def test_configmap_documents_compare_by_what_they_say_not_their_layout() -> None:
    """The GPU Operator's mig-parted config as a hand-written file and as hetgitops renders it
    (another key order, flow style, quoting): one value. A changed value, a bool for an int,
    or a plain string of another text is drift."""
    hand = "version: v1\nmig-configs:\n  half: [{devices: [0, 1], mig-enabled: true}]\n"
    ours = (
        "mig-configs:\n  half:\n  - devices:\n    - 0\n    - 1\n    mig-enabled: true\n"
        'version: "v1"\n'
    )

    def diffs(want: str, have: str) -> list[str]:
        desired = {"kind": "ConfigMap", "data": {"config.yaml": want}}
        live = {"kind": "ConfigMap", "data": {"config.yaml": have}}
        return [d.display for d in compare(desired, live, schema=None)[0]]

    assert diffs(ours, hand) == []
    assert diffs(ours, hand.replace("true", "false")) == ["data.config.yaml"]
    assert diffs(ours, hand.replace("true", "1")) == ["data.config.yaml"]
    assert diffs("plain text", "plain  text") == ["data.config.yaml"]
    assert diffs("a: [", "a: [") == []  # unparsable but the same bytes
    other = {"kind": "Secret", "data": {"config.yaml": ours}}
    assert compare(other, {"kind": "Secret", "data": {"config.yaml": hand}}, schema=None)[0]


def test_volcano_scheduler_actions_compare_as_volcano_splits_them() -> None:
    """Volcano splits `actions` on commas and trims each (pkg/scheduler/util.go): a hand-written
    "enqueue,allocate" is the render's "enqueue, allocate"; another order or action is drift.
    Only in the scheduler's key: elsewhere a string is a string."""
    key = "volcano-scheduler.conf"

    def diffs(want: str, have: str, name: str = key) -> list[str]:
        desired = {"kind": "ConfigMap", "data": {name: f"actions: {want}\ntiers: []\n"}}
        live = {"kind": "ConfigMap", "data": {name: f"actions: {have}\ntiers: []\n"}}
        return [d.display for d in compare(desired, live, schema=None)[0]]

    assert diffs('"enqueue, allocate"', '"enqueue,allocate"') == []
    assert diffs('"enqueue, allocate"', '" enqueue ,allocate"') == []
    # An empty entry is no action: Volcano refuses the whole config.
    assert diffs('"enqueue, allocate"', '"enqueue, allocate,"') == [f"data.{key}"]
    assert diffs('"enqueue, allocate"', '"allocate, enqueue"') == [f"data.{key}"]
    assert diffs('"enqueue, allocate"', '"enqueue,allocate"', "other.conf") == ["data.other.conf"]


def test_what_koordinator_writes_on_a_quota_is_no_drift() -> None:
    """The accounting annotations, the defaulted shared-weight and status.used are Koordinator's
    (apis/extension/elastic_quota.go:45-58, quota_topology.go:251-252); another annotation a
    person adds is still reported."""
    from hetgitops import api
    from hetgitops.drift.objects import compare_object

    rendered = api.render([REPO / "policies"], api.Options(targets=("koordinator",)))
    desired = next(m for m in rendered.manifests if m.name == "pretraining-a800-train")
    prefix = "quota.scheduling.koordinator.sh"
    written = {
        f"{prefix}/{name}": '{"nvidia.com/gpu":"80"}'
        for name in ("runtime", "request", "child-request", "guaranteed", "allocated",
                     "non-preemptible-request", "non-preemptible-used", "shared-weight",
                     "unschedulable-resource", "total-resource", "admission")
    }  # fmt: skip
    meta = desired.obj["metadata"]
    fields = {f"f:{key}": {} for key in [*written, "note"]}
    live = {
        **desired.obj,
        "metadata": {
            **meta,
            "annotations": {**meta["annotations"], **written},
            "managedFields": [
                {
                    "manager": "koord-manager",
                    "operation": "Update",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:annotations": fields}},
                }
            ],
        },
        "status": {"used": {"nvidia.com/gpu": "8"}},
    }
    assert compare_object(desired, live, None, managers=("argocd-controller",)) == []
    live["metadata"]["annotations"]["note"] = "x"
    found = compare_object(desired, live, None, managers=("argocd-controller",))
    assert [d.rule for d in found] == ["drift-added"]


def test_dra_device_classes_are_listed_and_compared() -> None:
    from hetgitops.drift.objects import compare_object
    from hetgitops.live.kinds import Catalogue, KindKey
    from hetgitops.output.manifests import Manifest

    resource = Catalogue().resource(KindKey("resource.k8s.io", "v1", "DeviceClass"))
    assert resource is not None and not resource.namespaced
    template = Catalogue().resource(KindKey("resource.k8s.io", "v1", "ResourceClaimTemplate"))
    assert template is not None and template.namespaced
    cel = "device.driver == 'gpu.nvidia.com'"
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "c"}}
    desired = Manifest("kueue", {**obj, "spec": {"selectors": [{"cel": {"expression": cel}}]}})
    live = {**obj, "spec": {"selectors": [{"cel": {"expression": cel + " && true"}}]}}
    assert [d.rule for d in compare_object(desired, live, None, managers=())] == ["drift-changed"]
    assert compare_object(desired, dict(desired.obj), None, managers=()) == []
