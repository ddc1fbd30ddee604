"""hetgitops: one declarative policy for a heterogeneous GPU Kubernetes fleet."""

from __future__ import annotations

__version__ = "0.1.0"
API_VERSION = "hetgitops.io/v1alpha1"
