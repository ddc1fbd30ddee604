"""Structural value diff: keyed list matching, canonical quantities, removed fields, replay."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hetgitops.diff.structure import FieldChange, Key, apply, diff, same


def test_lists_of_named_entries_match_by_name_not_position() -> None:
    before = {"flavors": [{"name": "a", "q": 1}, {"name": "b", "q": 2}]}
    after = {"flavors": [{"name": "new", "q": 0}, {"name": "a", "q": 1}, {"name": "b", "q": 3}]}
    changes = diff(before, after)
    assert [(c.dotted, c.op) for c in changes] == [
        ("flavors[name=new]", "add"),
        ("flavors[name=b].q", "change"),
    ]
    assert apply(before, changes) == after


def test_quantities_compare_canonically() -> None:
    assert diff({"cpu": "1000m", "memory": "1024Mi"}, {"cpu": "1", "memory": "1Gi"}) == []
    assert diff({"cpu": "1500m"}, {"cpu": "2"}) == [FieldChange(("cpu",), "change", "1500m", "2")]


def test_removed_fields_are_reported_with_their_old_value() -> None:
    changes = diff({"spec": {"a": 1, "gone": {"x": 1}}}, {"spec": {"a": 1}})
    assert changes == [FieldChange(("spec", "gone"), "remove", {"x": 1})]


def test_reordered_keyed_list_is_an_order_change() -> None:
    before = [{"key": "a"}, {"key": "b"}]
    after = [{"key": "b"}, {"key": "a"}]
    changes = diff(before, after)
    assert [c.op for c in changes] == ["order"]
    assert apply(before, changes) == after


def test_key_segment_prints_like_dyff() -> None:
    assert diff([{"name": "x", "v": 1}], [{"name": "x", "v": 2}])[0].path == (Key("name", "x"), "v")


_names = st.sampled_from(["a", "b", "c", "d"])
_scalars = st.one_of(st.integers(-3, 3), st.sampled_from(["1", "1000m", "2Gi", "x", "y"]))
_values: st.SearchStrategy[Any] = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(_names, inner, max_size=3),
        st.lists(
            st.fixed_dictionaries({"name": _names, "v": inner}),
            max_size=4,
            unique_by=lambda d: d["name"],
        ),
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_values, _values)
def test_replaying_the_diff_gives_the_after_value(before: Any, after: Any) -> None:
    assert same(apply(before, diff(before, after)), after)


@given(_values)
def test_a_value_does_not_differ_from_itself(value: Any) -> None:
    assert diff(value, value) == []
