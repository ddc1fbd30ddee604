"""`model.accelerators`: the one list of accelerator resources drift (and later import) reads,
tied to the card catalogue `init` and `import` offer."""

from __future__ import annotations

from hetgitops.model import catalogue, mig
from hetgitops.model.accelerators import is_accelerator


def test_every_catalogue_card_advertises_an_accelerator_resource() -> None:
    names = {str(doc["spec"]["resourceName"]) for doc in catalogue.card_types().values()}
    assert names and [n for n in sorted(names) if not is_accelerator(n)] == []


def test_mig_slices_are_accelerators_and_cpu_memory_are_not() -> None:
    assert is_accelerator(mig.resource_name("1g.10gb"))
    assert not any(is_accelerator(r) for r in ("cpu", "memory", "pods", "ephemeral-storage"))
