"""`model.tolerations`: Kubernetes' Toleration.ToleratesTaint, case by case."""

from __future__ import annotations

from typing import Any

import pytest

from hetgitops.model.tolerations import tolerates, tolerates_taint

TAINT = ("gpu", "a100", "NoSchedule")


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        ({"operator": "Exists"}, True),  # empty key with Exists: every taint
        ({"key": "", "operator": "Exists", "effect": ""}, True),
        ({"operator": "Exists", "effect": "NoSchedule"}, True),
        ({"operator": "Exists", "effect": "NoExecute"}, False),  # effect must match
        ({"key": "gpu", "operator": "Exists"}, True),  # any value
        ({"key": "other", "operator": "Exists"}, False),
        ({"key": "gpu", "operator": "Equal", "value": "a100"}, True),
        ({"key": "gpu", "value": "a100"}, True),  # no operator: Equal
        ({"key": "gpu", "operator": "", "value": "a100"}, True),
        ({"key": "gpu", "operator": "Equal", "value": "h100"}, False),  # Equal compares values
        ({"key": "gpu", "operator": "Equal"}, False),  # empty value against a100
        ({"key": "gpu", "value": "a100", "effect": "NoSchedule"}, True),
        ({"key": "gpu", "value": "a100", "effect": "PreferNoSchedule"}, False),
        ({"key": "gpu", "operator": "Gt", "value": "a100"}, False),  # unknown operator
    ],
)
def test_tolerates_taint(toleration: dict[str, Any], expected: bool) -> None:
    assert tolerates_taint(toleration, *TAINT) is expected


def test_an_empty_effect_matches_every_effect() -> None:
    for effect in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
        assert tolerates([{"key": "gpu", "operator": "Exists"}], "gpu", None, effect)


def test_a_taint_without_value_is_tolerated_by_equal_without_value() -> None:
    assert tolerates([{"key": "maint", "operator": "Equal"}], "maint", None, "NoExecute")
    assert not tolerates([{"key": "maint", "value": "x"}], "maint", None, "NoExecute")


def test_any_of_the_tolerations() -> None:
    assert tolerates([{"key": "x", "operator": "Exists"}, {"key": "gpu", "value": "a100"}], *TAINT)
    assert not tolerates([], *TAINT)


def test_tolerates_follows_kubernetes() -> None:
    exists = [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]
    assert tolerates(exists, "k", "v", "NoSchedule")
    assert not tolerates(exists, "k", "v", "NoExecute")
    equal = [{"key": "k", "operator": "Equal", "value": "v"}]
    assert tolerates(equal, "k", "v", "NoExecute")
    assert not tolerates(equal, "k", "w", "NoSchedule")
    assert tolerates([{"operator": "Exists"}], "any", None, "NoSchedule")
