"""Model stage, building: `CardType` and `Pool` documents into their frozen dataclasses; a
pool's node name ranges are expanded here (a range that does not expand is a finding)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hetgitops.diagnostics import Diagnostic, error
from hetgitops.load.documents import Document
from hetgitops.model.origin import Origin
from hetgitops.model.pool_types import (
    CardType,
    MigDevice,
    Node,
    Performance,
    Pool,
    RetiringFlavor,
    Taint,
)
from hetgitops.model.ranges import RangeError, expand
from hetgitops.model.spec_values import optional_map


def card_type(doc: Document, spec: dict[str, Any], origin: Origin) -> CardType:
    perf = spec.get("performance")
    cost = spec.get("cost", {})
    return CardType(
        name=doc.name,
        vendor=spec["vendor"],
        model=spec["model"],
        resource_name=spec["resourceName"],
        product_names=tuple(spec.get("productNames", ())),
        pci_device_ids=tuple(spec.get("pciDeviceIds", ())),
        memory_gib=float(spec["memoryGiB"]),
        architecture=spec.get("architecture", ""),
        generation=spec.get("generation", ""),
        interconnect=spec.get("interconnect", "pcie"),
        precisions=tuple(spec.get("precisions", ())),
        mig_table=spec.get("mig", {}).get("profileTable"),
        performance=None
        if perf is None
        else Performance(
            float(perf["coefficient"]),
            perf["reference"],
            perf.get("benchmark", ""),
            perf.get("measuredOn"),
            perf["coefficientSet"],
        ),
        cost_per_hour=cost.get("perCardHour"),
        currency=cost.get("currency"),
        power_watts=spec.get("powerWatts"),
        lifecycle=spec["lifecycle"],
        images=dict(sorted(spec.get("images", {}).items())),
        origin=origin,
    )


def _nodes(spec: dict[str, Any], origin: Origin, problems: list[Diagnostic]) -> tuple[Node, ...]:
    nodes: list[Node] = []
    for i, group in enumerate(spec["nodes"]):
        where = origin.child("spec", "nodes", i)
        patterns = group["names"] if isinstance(group["names"], list) else [group["names"]]
        for j, pattern in enumerate(patterns):
            path = ("names", j) if isinstance(group["names"], list) else ("names",)
            try:
                names = expand(pattern)
            except RangeError as exc:
                problems.append(
                    error(
                        "node-range-invalid",
                        str(exc),
                        where.at(*path),
                        "spec.nodes",
                        "write ranges as name-[001:064]",
                    )
                )
                continue
            # One group's values and origin for all its nodes (thousands in a large pool).
            cards, zone, rack = (
                group.get("cardsPerNode", spec["cardsPerNode"]),
                group.get("zone"),
                group.get("rack"),
            )
            domain, at = group.get("nvlinkDomain"), where.child(*path)
            nodes.extend(Node(name, cards, zone, rack, domain, at) for name in names)
    return tuple(nodes)


def pool(doc: Document, spec: dict[str, Any], origin: Origin, problems: list[Diagnostic]) -> Pool:
    lending = spec.get("lending", {})
    sharing = spec.get("timeSlicing", {})
    expires = spec.get("expires")
    return Pool(
        name=doc.name,
        card_type=spec["cardType"],
        purpose=spec["purpose"],
        cards_per_node=spec["cardsPerNode"],
        nodes=_nodes(spec, origin, problems),
        placement=spec.get("placement", "binpack" if spec["purpose"] == "training" else "spread"),
        taints=tuple(
            Taint(t["key"], t.get("value"), t["effect"], t.get("evictsRunningPods", False))
            for t in spec.get("taints", [])
        ),
        isolated=spec.get("isolated", False),
        lend_max_percent=lending.get("maxPercent"),
        reclaim=lending.get("reclaim", True),
        mig=tuple(
            MigDevice(
                None if d["gpus"] == "all" else tuple(d["gpus"]),
                dict(d["profiles"]),
                origin.child("spec", "mig", "devices", i),
            )
            for i, d in enumerate(spec.get("mig", {}).get("devices", []))
        ),
        time_slicing_replicas=sharing.get("replicas"),
        rename_by_default=sharing.get("renameByDefault", False),
        fail_requests_greater_than_one=sharing.get("failRequestsGreaterThanOne", False),
        mps_replicas=spec.get("mps", {}).get("replicas"),
        expires=None if expires is None else dt.date.fromisoformat(expires),
        labels=dict(sorted(spec.get("labels", {}).items())),
        origin=origin,
        cluster=spec.get("cluster"),
        flavor_name=spec.get("kueue", {}).get("flavorName"),
        flavor_node_labels=optional_map(spec.get("kueue", {}).get("nodeLabels")),
        flavor_node_taints=bool(spec.get("kueue", {}).get("flavorNodeTaints", False)),
        volcano_node_group=spec.get("volcano", {}).get("nodeGroup"),
        allocation=spec.get("devices", {}).get("allocation", "devicePlugin"),
        migrating_from=spec.get("devices", {}).get("migratingFrom"),
        mig_config_name=spec.get("mig", {}).get("configName"),
        sharing_config_name=sharing.get("configName") or spec.get("mps", {}).get("configName"),
        retiring_flavor=_retiring_flavor(spec.get("kueue", {}).get("retiringFlavor"), origin),
        retiring_replicas=sharing.get("retiringReplicas")
        if sharing.get("replicas")
        else spec.get("mps", {}).get("retiringReplicas"),
    )


RETIRING_SPEC_FIELDS = ("nodeLabels", "tolerations", "topologyName")


def _retiring_flavor(value: dict[str, Any] | None, origin: Origin) -> RetiringFlavor | None:
    """The live flavor's spec is kept as written: it must equal the live object to the byte."""
    if value is None:
        return None
    return RetiringFlavor(
        name=value["name"],
        spec={f: value[f] for f in RETIRING_SPEC_FIELDS if f in value},
        holds={
            str(team): {str(r): str(q) for r, q in sorted(amounts.items())}
            for team, amounts in sorted((value.get("holds") or {}).items())
        },
        origin=origin.child("spec", "kueue", "retiringFlavor"),
    )
