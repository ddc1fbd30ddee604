"""The sim slice's shards (tests/sim/shards.py) and the port blocks that keep two clusters on
one machine apart (tests/harness/controlplane/procs.py), without a cluster."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from harness.controlplane import procs

from . import shards

HERE = Path(__file__).parent


def _sim_modules() -> list[str]:
    return sorted(p.name for p in HERE.glob("test_sim_*.py") if not p.name.endswith("_units.py"))


def test_every_sim_module_has_a_measured_cost() -> None:
    """A new module counts DEFAULT_COST until measured: add it to COST with its wall seconds."""
    missing = [m for m in _sim_modules() if m not in shards.COST]
    stale = sorted(set(shards.COST) - set(_sim_modules()))
    assert not missing, f"add to tests/sim/shards.py COST: {missing}"
    assert not stale, f"modules gone, drop from COST: {stale}"


def test_every_module_lands_on_exactly_one_shard_and_the_loads_are_close() -> None:
    modules = _sim_modules()
    where = shards.assign(modules, 2)
    assert sorted(where) == modules
    assert set(where.values()) == {1, 2}
    loads = [sum(shards.COST[m] for m in modules if where[m] == k) for k in (1, 2)]
    # longest-first onto the least loaded: the gap is at most the largest module
    assert abs(loads[0] - loads[1]) <= max(shards.COST.values()), loads


def test_assignment_ignores_the_order_modules_come_in() -> None:
    modules = _sim_modules()
    assert shards.assign(modules, 2) == shards.assign(list(reversed(modules)), 2)
    assert shards.assign(modules, 1) == dict.fromkeys(modules, 1)


@pytest.mark.parametrize("spec", ["0/2", "3/2", "1", "a/b", "1/0", "-1/2"])
def test_a_malformed_shard_is_refused(spec: str) -> None:
    with pytest.raises(ValueError, match="K/N"):
        shards.parse(spec)


def test_no_shard_means_everything() -> None:
    assert shards.parse("") is None
    assert shards.parse("2/3") == (2, 3)


def test_ports_come_from_the_block_in_turn_and_skip_a_taken_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        low, high = port - 1, port + 3
        if low < 1024 or high > 65535:
            pytest.skip(f"the kernel gave {port}, too near the edge for a block around it")
        monkeypatch.setenv(procs.PORT_RANGE, f"{low}-{high}")
        monkeypatch.setattr(procs, "_next_in_range", {})
        monkeypatch.setattr(procs, "_bindable", lambda p: p != port)
        first = procs.free_ports(2)
        second = procs.free_ports(2)
    assert first == [low, port + 1]
    assert second == [port + 2, port + 3]
    with pytest.raises(procs.ProcessError, match="no free port left"):
        procs.free_ports(1)


@pytest.mark.parametrize("spec", ["x", "2000", "5000-4000", "80-90", "60000-70000"])
def test_a_malformed_port_block_is_refused(monkeypatch: pytest.MonkeyPatch, spec: str) -> None:
    monkeypatch.setenv(procs.PORT_RANGE, spec)
    with pytest.raises(ValueError, match="LOW-HIGH"):
        procs.free_ports(1)
