"""Drift stage: one desired object against its live copy: changed and missing values, and live
values the policy does not declare, each attributed to the field manager that wrote it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from hetgitops.compilers.volcano_scheduler import as_read
from hetgitops.drift import schema as schemas
from hetgitops.drift.normalise import is_empty, prune_empty
from hetgitops.drift.ownership import Ownership, Path, Writer
from hetgitops.model import quantities

# Built-in kinds have no CRD schema; these fields hold quantities (the API server rewrites
# them canonically, the policy may not).
BUILTIN_QUANTITY_MAPS = {("ResourceQuota", ("spec", "hard")), ("LimitRange", ("spec",))}
# ConfigMap values that hold a YAML (or JSON) document: the GPU Operator's mig-parted and
# device-plugin configs, Volcano's scheduler conf. Their consumers parse them, so two texts
# that parse to the same mapping or list (a hand-written layout and hetgitops' rendering of
# it, as right after `hetgitops import`) are one value. A plain string compares byte for byte.
DOCUMENT_VALUES = {("ConfigMap", "data")}
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class FieldDiff:
    """`change` is changed (both sides, different), missing (desired, not live), removed (live,
    owned by the applier, no longer desired) or added (live, set by another manager)."""

    change: str
    path: Path
    display: str
    desired: Any = None
    live: Any = None
    writers: tuple[Writer, ...] = field(default=())


@dataclass
class _Walk:
    kind: str
    live_root: Mapping[str, Any]
    diffs: list[FieldDiff] = field(default_factory=list)
    extras: list[tuple[Path, Any]] = field(default_factory=list)


def compare(
    desired: Mapping[str, Any],
    live: Mapping[str, Any],
    *,
    schema: schemas.Schema | None,
) -> tuple[list[FieldDiff], list[tuple[Path, Any]]]:
    """Differences in what `desired` declares, plus the live-only paths (for attribution by
    the caller). Both objects must already be normalised (stripped, defaulted)."""
    walk = _Walk(str(desired.get("kind", "")), live)
    _value(walk, desired, live, (), schema)
    return walk.diffs, walk.extras


def _value(walk: _Walk, want: Any, have: Any, path: Path, schema: schemas.Schema | None) -> None:
    if isinstance(want, dict) and isinstance(have, dict):
        _object(walk, want, have, path, schema)
    elif isinstance(want, list) and isinstance(have, list):
        _list(walk, want, have, path, schema)
    elif not _same_scalar(walk, want, have, path, schema):
        walk.diffs.append(FieldDiff("changed", path, display(walk.live_root, path), want, have))


def _object(
    walk: _Walk,
    want: dict[str, Any],
    have: dict[str, Any],
    path: Path,
    schema: schemas.Schema | None,
) -> None:
    # Empty values (None, {}, [], or maps of nothing but those) count as absent on both
    # sides: Go's `omitempty` drops them from built-in kinds, the API server prunes nulls.
    for key, value in want.items():
        other = have.get(key)
        sub = (*path, key)
        if other is None or is_empty(other):
            if not is_empty(value):
                walk.diffs.append(
                    FieldDiff("missing", sub, display(walk.live_root, sub), prune_empty(value))
                )
        elif is_empty(value):
            walk.extras.append((sub, prune_empty(other)))
        else:
            _value(walk, value, other, sub, schemas.child(schema, key))
    walk.extras.extend(
        ((*path, key), prune_empty(value))
        for key, value in have.items()
        if key not in want and not is_empty(value)
    )


def _list(
    walk: _Walk, want: list[Any], have: list[Any], path: Path, schema: schemas.Schema | None
) -> None:
    keys = _keys(want, have, schema)
    if keys is None and len(want) == len(have) and not schemas.is_set(schema):
        # An atomic list of the same length: report the entries that differ, not the whole
        # list (its owner, who wrote every entry, is found from the list's path).
        for position, (a, b) in enumerate(zip(want, have, strict=True)):
            _value(walk, a, b, (*path, position), schemas.child(schema, 0))
        return
    if keys is None:
        if not _same_list(walk, want, have, path, schema):
            walk.diffs.append(FieldDiff("changed", path, display(walk.live_root, path), want, have))
        return
    index = {_key(item, keys): i for i, item in enumerate(have)}
    wanted = set()
    for item in want:
        key = _key(item, keys)
        wanted.add(key)
        if key not in index:
            shown = f"{display(walk.live_root, path)}[{_label(item, keys)}]"
            walk.diffs.append(FieldDiff("missing", path, shown, item))
            continue
        position = index[key]
        _value(walk, item, have[position], (*path, position), schemas.child(schema, 0))
    for key, position in index.items():
        if key not in wanted:
            walk.extras.append(((*path, position), have[position]))


def _keys(
    want: list[Any], have: list[Any], schema: schemas.Schema | None
) -> tuple[str, ...] | None:
    """Merge keys of an associative list: the schema's, or `name` for built-in lists of
    objects that all carry one (the convention of every core API list of objects)."""
    keys = schemas.list_keys(schema)
    if keys:
        return keys
    if schema is None and want and all(isinstance(i, dict) and "name" in i for i in want + have):
        return ("name",)
    return None


def _key(item: Any, keys: tuple[str, ...]) -> str:
    values = [item.get(k) if isinstance(item, dict) else None for k in keys]
    return json.dumps(values, sort_keys=True, default=str)


def _label(item: Any, keys: tuple[str, ...]) -> str:
    return ",".join(f"{k}={item.get(k)}" for k in keys if isinstance(item, dict))


def _same_list(
    walk: _Walk, want: list[Any], have: list[Any], path: Path, schema: schemas.Schema | None
) -> bool:
    if len(want) != len(have):
        return False
    items = schemas.child(schema, 0)
    pairs = zip(want, have, strict=True)
    if schemas.is_set(schema):
        pairs = zip(sorted(want, key=str), sorted(have, key=str), strict=True)
    probe = _Walk(walk.kind, walk.live_root)
    for position, (a, b) in enumerate(pairs):
        _value(probe, a, b, (*path, position), items)
    return not probe.diffs and not probe.extras


def _same_scalar(
    walk: _Walk, want: Any, have: Any, path: Path, schema: schemas.Schema | None
) -> bool:
    if want == have and type(want) is type(have):
        return True
    if isinstance(want, bool) or isinstance(have, bool):
        return False
    if isinstance(want, str) and isinstance(have, str) and _document_field(walk.kind, path):
        return _same_document(want, have, str(path[1]))
    if _quantity_field(walk.kind, path, schema) and _scalar(want) and _scalar(have):
        try:
            return quantities.value_of(want) == quantities.value_of(have)
        except quantities.QuantityError:
            return False
    # int-or-string and number fields: 8 and 8.0 are one value; "8" and 8 are not (except
    # for quantities, above), since the server keeps JSON types as sent.
    return isinstance(want, int | float) and isinstance(have, int | float) and want == have


def _document_field(kind: str, path: Path) -> bool:
    return len(path) == 2 and (kind, path[0]) in DOCUMENT_VALUES


def _same_document(want: str, have: str, key: str) -> bool:
    """Both texts parse (safe YAML, which reads JSON too) to the same mapping or list, as
    their reader reads it (Volcano trims its scheduler config's actions)."""
    try:
        a, b = yaml.load(want, Loader=_LOADER), yaml.load(have, Loader=_LOADER)
    except yaml.YAMLError:
        return False
    a, b = as_read(key, a), as_read(key, b)
    return isinstance(a, dict | list) and _strictly_equal(a, b)


def _strictly_equal(a: Any, b: Any) -> bool:
    """Equal with the same types throughout: Python's `True == 1` is no YAML equality."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_strictly_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_strictly_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _quantity_field(kind: str, path: Path, schema: schemas.Schema | None) -> bool:
    if schemas.is_quantity(schema):
        return True
    return any(
        kind == k and path[: len(p)] == p and len(path) > len(p) for k, p in BUILTIN_QUANTITY_MAPS
    )


def display(root: Any, path: Path) -> str:
    """`spec.resourceGroups[0].flavors[name=a100].resources[name=nvidia.com/gpu]`: list
    entries with a `name` are shown by it, others by index."""
    text = ""
    value = root
    for step in path:
        if isinstance(step, int):
            item = value[step] if isinstance(value, list) and step < len(value) else None
            name = item.get("name") if isinstance(item, dict) else None
            text += f"[name={name}]" if isinstance(name, str) else f"[{step}]"
            value = item
        else:
            text += f".{step}" if text else step
            value = value.get(step) if isinstance(value, dict) else None
    return text


def attribute(diff: FieldDiff, ownership: Ownership) -> FieldDiff:
    writers = ownership.at(diff.path) if diff.change == "changed" else ownership.under(diff.path)
    return FieldDiff(diff.change, diff.path, diff.display, diff.desired, diff.live, tuple(writers))
