"""Adopt stage: the Volcano scheduler's ConfigMap into the Fleet's `spec.volcano`.

`volcano-scheduler.conf` (in volcano-system/volcano-scheduler-configmap, the Helm chart's
default name, which hetgitops renders) says the actions, the plugin tiers, and optionally
per-action configurations and metrics settings. When its tiers are exactly the shape hetgitops
writes itself (upstream's two tiers with one queue plugin, the nodegroup plugin, extra plugins
appended), import says them with `queuePlugin`, `hierarchy` and `extraPlugins`; any other tiers
(Volcano's own Helm default: overcommit first, no nodegroup) are kept as written, in
`spec.volcano.tiers`. What the schema cannot hold (an action Volcano does not know, a plugin
option it has no switch for, another top-level key) is left out and the round trip reports it
as the field the first sync changes.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from hetgitops.adopt import fields
from hetgitops.adopt.findings import finding
from hetgitops.adopt.sources import Imported
from hetgitops.compilers.volcano_scheduler import CONFIG_KEY, CONFIG_MAP, CONFIG_NAMESPACE
from hetgitops.diagnostics import Diagnostic
from hetgitops.model.schema import raw_schemas

DEFAULT_ACTIONS = ["enqueue", "allocate", "preempt", "reclaim", "backfill"]
QUEUE_PLUGINS = ("capacity", "proportion")
# The two tiers hetgitops writes, up to the queue plugin (see compilers/volcano_scheduler.py).
_FIRST: list[dict[str, Any]] = [
    {"name": "priority"},
    {"name": "gang", "enablePreemptable": False},
    {"name": "conformance"},
]
_SECOND_HEAD: list[dict[str, Any]] = [
    {"name": "drf", "enablePreemptable": False},
    {"name": "predicates"},
]


@functools.cache
def _volcano_schema() -> Mapping[str, Any]:
    fleet = next(s for name, s in raw_schemas().items() if name.startswith("fleet"))
    return fleet["properties"]["spec"]["properties"]["volcano"]["properties"]  # type: ignore[no-any-return]


def _plugin_options() -> frozenset[str]:
    """The option switches a plugin may carry in the policy (Volcano's PluginOption)."""
    plugin = _volcano_schema()["tiers"]["items"]["properties"]["plugins"]["items"]
    return frozenset(plugin["properties"]) - {"name", "arguments"}


def _actions() -> frozenset[str]:
    return frozenset(_volcano_schema()["actions"]["items"]["enum"])


def config_maps(configmaps: Sequence[Imported]) -> list[Imported]:
    """The ConfigMaps that hold a Volcano scheduler config."""
    return [c for c in configmaps if CONFIG_KEY in (c.obj.get("data") or {})]


def adopt_scheduler(
    configmaps: Sequence[Imported], volcano: dict[str, Any], *, binpack: Collection[str]
) -> list[Diagnostic]:
    """Fills `volcano` (the Fleet's spec.volcano) from the scheduler ConfigMap hetgitops would
    render; a scheduler config under any other name is reported and left alone. `binpack`:
    the accelerator resources the written pools' binpack placement tells the plugin."""
    found: list[Diagnostic] = []
    for item in config_maps(configmaps):
        if (item.namespace, item.name) == (CONFIG_NAMESPACE, CONFIG_MAP):
            found += _adopt(item, volcano, binpack)
            continue
        found.append(
            finding(
                "import-object-not-adopted",
                f"ConfigMap {item.namespace}/{item.name} holds a {CONFIG_KEY}, but hetgitops "
                f"renders the scheduler's config as {CONFIG_NAMESPACE}/{CONFIG_MAP} (the Volcano "
                "Helm chart's default name); it stays as it is, and the policy's settings reach "
                "the scheduler only if it reads that one",
                item.span,
            )
        )
    return found


def _adopt(item: Imported, volcano: dict[str, Any], binpack: Collection[str]) -> list[Diagnostic]:
    text = item.obj["data"][CONFIG_KEY]
    where = f"{item.span.file}#data.{CONFIG_KEY}"
    conf, problem = fields.embedded(where, text, fields.VOLCANO_CONFIG)
    if problem:
        return [
            finding(
                "import-unreadable",
                f"ConfigMap {item.namespace}/{item.name}: {CONFIG_KEY} cannot be read "
                f"({problem}); the scheduler keeps its previous config while it is unreadable",
                item.span,
                path=f"data.{CONFIG_KEY}",
            )
        ]
    if not isinstance(conf, dict):
        return []
    known = _actions()
    actions = [a.strip() for a in str(conf.get("actions") or "").split(",") if a.strip()]
    actions = [a for a in dict.fromkeys(actions) if a in known]
    if actions and actions != DEFAULT_ACTIONS:
        volcano["actions"] = actions
    tiers = _tiers(conf.get("tiers"))
    generated = _generated(tiers, binpack)
    if generated is not None:
        volcano.update(generated)
    elif tiers:
        volcano["tiers"] = tiers
    configurations = [
        {"name": str(c["name"]), **({"arguments": c["arguments"]} if c.get("arguments") else {})}
        for c in conf.get("configurations") or []
        if isinstance(c, dict) and c.get("name") and isinstance(c.get("arguments", {}), dict)
    ]
    if configurations:
        volcano["configurations"] = configurations
    metrics = conf.get("metrics")
    if isinstance(metrics, dict) and metrics:
        volcano["metrics"] = {str(k): str(v) for k, v in metrics.items()}
    return []


def _tiers(raw: Any) -> list[dict[str, Any]]:
    """The tiers with what the policy can hold of each plugin: its name, its boolean option
    switches, its arguments (an empty tier is dropped, as Volcano ignores it)."""
    options = _plugin_options()
    tiers = []
    for tier in raw if isinstance(raw, list) else []:
        plugins = []
        for plugin in (tier or {}).get("plugins") or [] if isinstance(tier, dict) else []:
            if not isinstance(plugin, dict) or not plugin.get("name"):
                continue
            kept: dict[str, Any] = {"name": str(plugin["name"])}
            for option, value in plugin.items():
                if option in options and isinstance(value, bool):
                    kept[option] = value
            if isinstance(plugin.get("arguments"), dict) and plugin["arguments"]:
                kept["arguments"] = plugin["arguments"]
            plugins.append(kept)
        if plugins:
            tiers.append({"plugins": plugins})
    return tiers


def _generated(tiers: list[dict[str, Any]], binpack: Collection[str]) -> dict[str, Any] | None:
    """queuePlugin / hierarchy / extraPlugins when the tiers are what hetgitops would write
    with them, binpack's accelerator resources as the written pools' placement gives them;
    else None."""
    if len(tiers) != 2 or tiers[0]["plugins"] != _FIRST:
        return None
    second = tiers[1]["plugins"]
    if second[:2] != _SECOND_HEAD or len(second) < 5:
        return None
    queue, nodegroup, nodeorder, *extras = second[2:]
    if queue.get("name") not in QUEUE_PLUGINS or nodeorder != {"name": "nodeorder"}:
        return None
    hierarchy = nodegroup.get("enableHierarchy") is True
    if queue["name"] == "proportion" and hierarchy:
        return None  # a conflict hetgitops refuses to write
    switch = {"enableHierarchy": True} if hierarchy else {}
    wanted = {"name": queue["name"], **(switch if queue["name"] == "capacity" else {})}
    if queue != wanted or nodegroup != {
        "name": "nodegroup",
        **switch,
        "arguments": {"strict": False},
    }:
        return None
    if binpack:
        told = {"name": "binpack", "arguments": {"binpack.resources": ", ".join(sorted(binpack))}}
        if not extras or extras[0] != told:
            return None
        extras = extras[1:]
    names = [e.get("name") for e in extras]
    taken = {p["name"] for p in _FIRST + _SECOND_HEAD} | {"nodegroup", "nodeorder", queue["name"]}
    if any(e != {"name": e.get("name")} for e in extras) or taken & set(names):
        return None
    settings: dict[str, Any] = {}
    if queue["name"] != "capacity":
        settings["queuePlugin"] = queue["name"]
    if not hierarchy:
        settings["hierarchy"] = False
    if names:
        settings["extraPlugins"] = names
    return settings
