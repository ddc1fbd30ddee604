"""Diff stage, values: a structural diff of two YAML values, like dyff's.

Mappings compare key by key; lists of mappings are matched by a `name`/`key`/`id` field (by
position when they have none), so an inserted entry is one addition, not a shifted list;
quantities compare by value (`1000m` = `1`). `apply()` replays the changes, which is what the
property test checks: before + changes = after.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hetgitops.model import quantities

# `alert` and `record`: Prometheus rules (the monitoring target), so a changed threshold reads
# as `rules[alert=HetGitOpsGPUsAllocatedButIdle].expr`, not as a rule index. A recording rule's
# name repeats once per pool or flavor, told apart by its labels: `record{}` names it with them,
# as a PromQL selector, `rules[record=hetgitops:pool_declared_cards{pool="a800-train"}]`.
KEY_FIELDS = ("name", "key", "id", "nodeLabel", "alert", "record", "alert{}", "record{}")


@dataclass(frozen=True)
class Key:
    """A list entry picked by a field's value: `[name=a800-train]`."""

    field: str
    value: str

    @property
    def shown(self) -> str:
        """The field as users read it (`record{}` is `record`, its value carries the labels)."""
        return self.field.removesuffix("{}")

    def __str__(self) -> str:
        return f"[{self.shown}={self.value}]"


def entry_value(item: Mapping[str, Any], field: str) -> Any:
    """What names `item` by `field`: the field's value; with `{}`, its labels appended."""
    if not field.endswith("{}"):
        return item.get(field)
    name, labels = item.get(field.removesuffix("{}")), item.get("labels")
    if not isinstance(name, str) or not isinstance(labels, Mapping) or not labels:
        return None
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


Segment = str | int | Key
Path = tuple[Segment, ...]


@dataclass(frozen=True)
class FieldChange:
    """`op` is add, remove, change or order (`after` = the new key order of a keyed list).
    An added list entry keeps its index in the new list, so replaying keeps the order."""

    path: Path
    op: str
    before: Any = None
    after: Any = None
    index: int | None = None

    @property
    def dotted(self) -> str:
        return dotted(self.path)


def dotted(path: Path) -> str:
    text = ""
    for part in path:
        if isinstance(part, Key):
            text += str(part)
        elif isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + part
    return text or "."


def _quantity(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        return quantities.value_of(value)
    except quantities.QuantityError:
        return None


def same(before: Any, after: Any) -> bool:
    """Equal, with quantities compared canonically and containers compared recursively."""
    if before == after and type(before) is type(after):
        return True
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        return before.keys() == after.keys() and all(same(before[k], after[k]) for k in before)
    if _is_list(before) and _is_list(after):
        return len(before) == len(after) and all(map(same, before, after))
    left, right = _quantity(before), _quantity(after)
    return left is not None and left == right


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def diff(before: Any, after: Any, path: Path = ()) -> list[FieldChange]:
    if same(before, after):
        return []
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        return _diff_mappings(before, after, path)
    if _is_list(before) and _is_list(after):
        return _diff_lists(before, after, path)
    return [FieldChange(path, "change", before, after)]


def _diff_mappings(
    before: Mapping[str, Any], after: Mapping[str, Any], path: Path
) -> list[FieldChange]:
    changes: list[FieldChange] = []
    for key in before:
        if key not in after:
            changes.append(FieldChange((*path, key), "remove", before[key]))
        else:
            changes.extend(diff(before[key], after[key], (*path, key)))
    changes.extend(FieldChange((*path, k), "add", None, after[k]) for k in after if k not in before)
    return changes


def key_field(items: Sequence[Any]) -> str | None:
    """The field that names every entry uniquely, or None (then entries match by position)."""
    if not items or not all(isinstance(item, Mapping) for item in items):
        return None
    for field in KEY_FIELDS:
        values = [entry_value(item, field) for item in items]
        if all(isinstance(v, str | int) for v in values) and len(set(values)) == len(values):
            return field
    return None


def _common_key(before: Sequence[Any], after: Sequence[Any]) -> str | None:
    """A key field that names entries uniquely on both sides."""
    if not before or not after:
        return None
    field = key_field(before)
    return field if field is not None and key_field(after) == field else None


def _diff_lists(before: Sequence[Any], after: Sequence[Any], path: Path) -> list[FieldChange]:
    field = _common_key(before, after)
    if field is None:
        if len(before) == len(after) and all(isinstance(i, Mapping) for i in [*before, *after]):
            return [
                c
                for i, (b, a) in enumerate(zip(before, after, strict=True))
                for c in diff(b, a, (*path, i))
            ]
        return [FieldChange(path, "change", list(before), list(after))]
    old = {str(entry_value(item, field)): item for item in before}
    new = {str(entry_value(item, field)): item for item in after}
    changes = [
        FieldChange((*path, Key(field, k)), "remove", v) for k, v in old.items() if k not in new
    ]
    for index, (k, item) in enumerate(new.items()):
        if k in old:
            changes.extend(diff(old[k], item, (*path, Key(field, k))))
        else:
            changes.append(FieldChange((*path, Key(field, k)), "add", None, item, index))
    kept_old = [k for k in old if k in new]
    kept_new = [k for k in new if k in old]
    if kept_old != kept_new:
        changes.append(FieldChange(path, "order", kept_old, list(new)))
    return changes


def apply(value: Any, changes: Sequence[FieldChange]) -> Any:
    """`value` with `changes` replayed (a deep copy; the input is left alone)."""
    result = copy.deepcopy(value)
    adds = sorted(
        (c for c in changes if c.op == "add" and c.index is not None), key=lambda c: c.index or 0
    )
    rest = [c for c in changes if c.op != "order" and c not in adds]
    for change in [*rest, *adds]:
        result = _apply_one(result, change)
    for change in changes:
        if change.op == "order":
            result = _reorder(result, change)
    return result


def _apply_one(root: Any, change: FieldChange) -> Any:
    if not change.path:
        return copy.deepcopy(change.after)
    parent = _locate(root, change.path[:-1])
    last = change.path[-1]
    if isinstance(last, Key):
        if change.op == "add":
            parent.insert(change.index if change.index is not None else len(parent), change.after)
        elif change.op == "remove":
            del parent[_find(parent, last)]
        else:
            parent[_find(parent, last)] = copy.deepcopy(change.after)
    elif change.op == "remove":
        del parent[last]
    else:
        parent[last] = copy.deepcopy(change.after)
    return root


def _reorder(root: Any, change: FieldChange) -> Any:
    items = _locate(root, change.path)
    field = key_field(items)
    by_key = {str(entry_value(item, field)): item for item in items} if field else {}
    items[:] = [by_key[k] for k in change.after if k in by_key]
    return root


def _locate(root: Any, path: Path) -> Any:
    node = root
    for part in path:
        node = node[_find(node, part)] if isinstance(part, Key) else node[part]
    return node


def _find(items: list[Any], key: Key) -> int:
    for position, item in enumerate(items):
        if str(entry_value(item, key.field)) == key.value:
            return position
    raise KeyError(str(key))
