"""Benchmarks: `fleetgen` (synthetic fleets, valid by construction) and `run` (the runner)."""
