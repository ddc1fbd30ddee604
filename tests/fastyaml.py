"""PyYAML through libyaml's C emitter and parser, for the tests that write or read thousands of
documents (the fuzzers, the generated-policy and generated-cluster sweeps). The same safe
representer and constructor as `yaml.safe_dump`/`yaml.safe_load` (the data round-trips the
same; every generated policy dumps byte for byte as the pure-Python emitter writes it, seeds
0-239 compared), at a quarter of the CPU: on a 2-core CI machine the unit slice's CPU is what
the simulated clusters beside it wait on (issue 31)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def dump_all(docs: Iterable[Any], **options: Any) -> str:
    return str(yaml.dump_all(docs, Dumper=DUMPER, **options))


def dump(doc: Any, **options: Any) -> str:
    return str(yaml.dump(doc, Dumper=DUMPER, **options))


def load_all(text: str | bytes) -> list[Any]:
    return list(yaml.load_all(text, Loader=LOADER))
