"""Model stage: how the builders read optional values the schema leaves loosely typed: a
Kubernetes quantity as the policy wrote it (a YAML number or string), a string map."""

from __future__ import annotations

from typing import Any


def quantity(value: Any) -> str | None:
    """The quantity as text (`8`, `64Gi`); None when the policy does not say."""
    return None if value is None else str(value)


def optional_map(value: dict[str, Any] | None) -> dict[str, str] | None:
    """A string map ordered by key; None (not an empty map) when the policy does not say."""
    return None if value is None else {str(k): str(v) for k, v in sorted(value.items())}
