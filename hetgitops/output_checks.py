"""Output validation of rendered manifests (Kubernetes + CRD schemas, Kueue CEL rules)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hetgitops.diagnostics import Diagnostic
from hetgitops.manifests import Manifest
from hetgitops.model import Policy


def check(manifests: list[Manifest], policy: Policy, *, crd_dirs: Iterable[Path] = ()
          ) -> list[Diagnostic]:
    return []
