"""One node-selection rule (model/node_selection.py) for explain and diff, as Kubernetes has it.

diff's "jobs no flavor admits" hazard had its own copy that let every `Gt` / `Lt` requirement
hold, and explain's copy read integers with Python's int(), which takes what Go's
strconv.ParseInt refuses ("1_000", " 5", non-ASCII digits)."""

from __future__ import annotations

import pytest

from hetgitops.diff.hazards.jobs import selects
from hetgitops.model.node_selection import label_integer, requirement_holds

MEMORY = "hetgitops.io/gpu-memory-gib"


def _spec(*requirements: dict[str, object]) -> dict[str, object]:
    terms = [{"matchExpressions": list(requirements)}]
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": terms}}}}  # fmt: skip


def test_diff_reads_gt_and_lt_as_kubernetes_does() -> None:
    """A flavor of 80 GiB cards does not admit a pod that asks for more than 100 GiB."""
    labels = {MEMORY: "80"}
    keys = {MEMORY}
    assert not selects(_spec({"key": MEMORY, "operator": "Gt", "values": ["100"]}), labels, keys)
    assert selects(_spec({"key": MEMORY, "operator": "Gt", "values": ["40"]}), labels, keys)
    assert not selects(_spec({"key": MEMORY, "operator": "Lt", "values": ["80"]}), labels, keys)


@pytest.mark.parametrize(
    ("text", "value"),
    [("5", 5), ("-3", -3), ("+7", 7), ("007", 7), (str(2**63 - 1), 2**63 - 1)],
)
def test_label_integers_are_what_parseint_reads(text: str, value: int) -> None:
    assert label_integer(text) == value


@pytest.mark.parametrize("text", ["1_000", " 5", "5 ", "\u0665", "", "5.0", "0x10", str(2**63)])
def test_label_integers_go_refuses_hold_nowhere(text: str) -> None:
    assert label_integer(text) is None
    assert not requirement_holds({"key": "a", "operator": "Gt", "values": ["0"]}, {"a": text})
    assert not requirement_holds({"key": "a", "operator": "Lt", "values": [text]}, {"a": "1"})
