"""Scaffold stage: the policy documents of a minimal fleet built from the answers."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hetgitops.load.bundled import bundled_versions
from hetgitops.model.catalogue import card_types
from hetgitops.output.manifests import to_yaml
from hetgitops.scaffold.answers import BadAnswer, PoolAnswer
from hetgitops.scaffold.mig_layout import mig_devices, mig_slices

API_VERSION = "hetgitops.io/v1alpha1"
SCHEMA_DIR = ".hetgitops/schemas"
# A DNS-1123 label: pool, team and cluster names become object and queue names.
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
DEFAULT_TARGETS = ("core", "kueue", "nodes", "monitoring")


def with_targets(extra: Iterable[str]) -> tuple[str, ...]:
    """The default targets followed by `extra` (as the guide says: `--target` adds)."""
    return tuple(dict.fromkeys((*DEFAULT_TARGETS, *extra)))


@dataclass(frozen=True)
class Answers:
    cluster: str
    pools: tuple[PoolAnswer, ...]
    teams: tuple[str, ...] = ("ml",)
    targets: tuple[str, ...] = DEFAULT_TARGETS
    # CardType documents from `init --card-file`, for cards the catalogue lacks (name -> doc).
    card_files: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def known_cards(self) -> Mapping[str, Mapping[str, Any]]:
        return {**card_types(), **self.card_files}


def parse_pool(text: str) -> PoolAnswer:
    """`NAME=CARD[:NODES[:CARDS_PER_NODE]]`, or just `CARD` (the pool is named after it)."""
    name, _, rest = text.partition("=") if "=" in text else (text.split(":")[0], "", text)
    card, *numbers = rest.split(":")
    if len(numbers) > 2 or not all(n.isdigit() and int(n) > 0 for n in numbers):
        raise BadAnswer(f"pool {text!r}: expected NAME=CARD[:NODES[:CARDS_PER_NODE]]")
    sizes = [int(n) for n in numbers] + [2, 8][len(numbers) :]
    return PoolAnswer(name, card, sizes[0], sizes[1])


def check(answers: Answers) -> None:
    """Raise BadAnswer for what the policy could not express."""
    known = answers.known_cards()
    for name in (answers.cluster, *answers.teams, *(p.name for p in answers.pools)):
        if not _NAME.match(name):
            raise BadAnswer(f"{name!r} is not a lowercase DNS label (a-z, 0-9, '-')")
    if not answers.pools:
        raise BadAnswer("give at least one card type or pool")
    if not answers.teams:
        raise BadAnswer("give at least one team")
    for pool in answers.pools:
        if pool.card_type not in known:
            raise BadAnswer(
                f"unknown card type {pool.card_type!r} (known: {', '.join(known)}); for another "
                "card, describe it in a CardType file and pass --card-file FILE"
            )
        if pool.mig_layout:
            mig_devices(pool, known[pool.card_type])  # raises for a layout the card lacks
        if pool.cards < len(answers.teams):
            raise BadAnswer(f"pool {pool.name!r} has fewer cards than there are teams")
    for label, names in (("pool", [p.name for p in answers.pools]), ("team", answers.teams)):
        if len(set(names)) != len(names):
            raise BadAnswer(f"a {label} name is given twice")


def _document(kind: str, name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": {"name": name}, "spec": spec}


def _file(header: str, docs: Iterable[Mapping[str, Any]]) -> str:
    schema = f"# yaml-language-server: $schema=../{SCHEMA_DIR}/policy.schema.json\n"
    return schema + f"# {header}\n" + "---\n".join(to_yaml(dict(d)) for d in docs)


def borrows(answers: Answers) -> bool:
    """Teams share one cohort (and lend each other unused cards) when there are two or more."""
    return len(answers.teams) > 1


def _fleet(answers: Answers) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "cluster": answers.cluster,
        "versions": dict(bundled_versions()),
        "targets": list(answers.targets),
    }
    if borrows(answers):
        about = "Every team: each may borrow the cards the others leave unused."
        spec["cohorts"] = [{"name": answers.cluster, "description": about}]
    return _document("Fleet", answers.cluster, spec)


def _card(name: str, answers: Answers) -> dict[str, Any]:
    doc = answers.known_cards()[name]
    return _document("CardType", name, dict(doc["spec"]))


def _pool(pool: PoolAnswer, answers: Answers) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "cardType": pool.card_type,
        "purpose": "inference" if pool.mig_layout else "training",
        "cardsPerNode": pool.cards_per_node,
        "nodes": [{"names": name} for name in pool.names()],
    }
    if pool.mig_layout:
        card = answers.known_cards()[pool.card_type]
        spec["mig"] = {"devices": mig_devices(pool, card)}
    return _document("Pool", pool.name, spec)


def _quota(pool: PoolAnswer, answers: Answers) -> dict[str, Any]:
    """An equal share of the pool: whole cards, or in a MIG pool slices of each profile (every
    GPU is carved, so it offers no whole cards)."""
    share = len(answers.teams)
    if not pool.mig_layout:
        return {"pool": pool.name, "cards": pool.cards // share}
    slices = mig_slices(pool, answers.known_cards()[pool.card_type])
    return {"pool": pool.name, "mig": {p: n // share for p, n in slices.items()}}


def _team(name: str, answers: Answers) -> dict[str, Any]:
    quotas = [_quota(p, answers) for p in answers.pools]
    stages = sorted({str(answers.known_cards()[p.card_type]["spec"].get("lifecycle", "production"))
                     for p in answers.pools} | {"production"})  # fmt: skip
    spec: dict[str, Any] = {"namespaces": [name], "quotas": quotas, "tiers": ["standard"]}
    if borrows(answers):
        spec["cohort"] = answers.cluster
    if stages != ["production"]:
        spec["lifecycleStages"] = stages
    return _document("Team", name, spec)


def placeholder_note(answers: Answers) -> str | None:
    """What to replace, when some pool's node names are made up; None when all are real."""
    made_up = [f"{p.name}: {p.names()[0]}" for p in answers.pools if p.placeholder]
    if not made_up:
        return None
    return (
        f"REPLACE the placeholder node names ({'; '.join(made_up)}) with your nodes' names "
        "(`kubectl get nodes`; ranges like gpu-[01:16] expand)."
    )


def cohort_note(answers: Answers) -> str:
    if borrows(answers):
        return f"Teams share cohort {answers.cluster!r}: each borrows cards the others leave idle."
    return (
        "One team, so no cohort: borrowing needs two teams in one (add teams, a Fleet "
        "spec.cohorts entry and `cohort:` on each)."
    )


def _pools_header(answers: Answers) -> str:
    note = placeholder_note(answers)
    return "Pools: nodes of one card type." + (f"\n# {note}" if note else "")


def _teams_header(answers: Answers) -> str:
    return f"Teams and the cards they hold in each pool.\n# {cohort_note(answers)}"


def policy_files(answers: Answers) -> dict[str, str]:
    """policies/<file> -> text for the fleet the answers describe."""
    check(answers)
    cards = sorted({p.card_type for p in answers.pools})
    tier = {"value": 1000, "preemptionPolicy": "Never", "description": "Every team's work."}
    return {
        "policies/fleet.yaml": _file("The cluster and the systems hetgitops renders for it.",
                                     [_fleet(answers)]),
        "policies/cards.yaml": _file("Card types, copied from hetgitops' catalogue.",
                                     [_card(c, answers) for c in cards]),
        "policies/pools.yaml": _file(_pools_header(answers),
                                     [_pool(p, answers) for p in answers.pools]),
        "policies/teams.yaml": _file(_teams_header(answers),
                                     [_team(t, answers) for t in answers.teams]),
        "policies/tiers.yaml": _file("Priority tiers.",
                                     [_document("PriorityTier", "standard", tier)]),
    }  # fmt: skip
