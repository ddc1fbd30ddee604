"""What the live import tests compare: an imported object against its render, server-side
dry-run applied by the real API server, in the round trip's view (ConfigMaps by what their
documents say, Volcano queues with the webhook's defaults, quota quantities in one form).
Shared by the hand-written fixtures (test_e2e_import.py) and the generated clusters
(test_e2e_import_generated.py)."""

from __future__ import annotations

from typing import Any

from hetgitops.adopt import roundtrip, sources
from hetgitops.diagnostics import Span
from hetgitops.live.client import Cluster, Resource
from hetgitops.model import quantities

QUANTITY_KEYS = {"nominalQuota", "borrowingLimit", "lendingLimit"}


def dry_run(cluster: Cluster, rendered: dict[str, Any]) -> dict[str, Any]:
    """The object as the API server would store `rendered`, applied as field manager
    hetgitops (nothing is written)."""
    meta = rendered["metadata"]
    group, _, version = rendered["apiVersion"].rpartition("/")
    resource = Resource(
        group, version, plural(rendered["kind"]), rendered["kind"], bool(meta.get("namespace"))
    )
    return cluster.apply_dry_run(resource, rendered)


def compared(kind: str, after: dict[str, Any], live: dict[str, Any]) -> tuple[Any, Any]:
    """(after the dry run, as the cluster has it) in the round trip's view of `kind`."""
    if kind == "ConfigMap":
        # Each key holds a YAML document: the render writes it in its own layout, the
        # mig-manager, device plugin and Volcano scheduler read what it says.
        return _parsed(after), _parsed(live)
    if kind == "Queue":
        # This control plane runs no Volcano webhook: the defaults it would add (weight,
        # reclaimable) and parent root as the scheduler reads an empty one are filled in on
        # both sides, quantities in one form.
        return _volcano(after), _volcano(live)
    # An absent spec and an empty one say the same (a Cohort without a parent or quota).
    # Quotas are int-or-string quantities: a hand-written `8` is stored as the number, the
    # render writes "8"; the same quantity (Argo CD's diff rules compare them so).
    fields = roundtrip.COMPARED[kind]
    return (
        {f: _quantities(after.get(f)) or None for f in fields},
        {f: _quantities(live.get(f)) or None for f in fields},
    )


def _volcano(obj: dict[str, Any]) -> dict[str, Any]:
    return roundtrip._defaulted(sources.Imported(obj, Span("live")))


def _parsed(obj: dict[str, Any]) -> dict[str, Any]:
    """The data's documents as the round trip reads them (Volcano's actions trimmed, as the
    scheduler splits them)."""
    return roundtrip._parsed(obj)["data"]


def _quantities(value: Any, key: str = "") -> Any:
    """`value` with every quota quantity in one canonical form (hetgitops' own)."""
    if isinstance(value, dict):
        return {k: _quantities(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_quantities(v) for v in value]
    if key in QUANTITY_KEYS and isinstance(value, int | float | str):
        return quantities.normalize(value)
    return value


def plural(kind: str) -> str:
    lower = kind.lower()
    if lower.endswith("y"):
        return lower[:-1] + "ies"  # Topology -> topologies
    return lower + "es" if lower.endswith("s") else lower + "s"
