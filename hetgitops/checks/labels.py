"""Check stage, labels family: node labels against the LabelTaxonomy (label governance)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import NamedTuple

from hetgitops.checks._common import (
    PathPart,
    error_at,
    node_group,
    pools_with_cards,
    repeats,
    warning_at,
)
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Related, Severity, Span
from hetgitops.model.policy import (
    DEFAULT_RESERVED_PREFIXES,
    CardType,
    LabelRule,
    Origin,
    Policy,
)
from hetgitops.plan.node_labels import CARD_VALUES, node_value

# Kubernetes label value syntax (the schema checks static values; derived ones land here).
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
MAX_VALUE_LENGTH = 63
# Well-known topology labels hetgitops may write besides its own domain.
SHARED_PREFIXES = ("topology.kubernetes.io/",)


# source -> (value of the card, where the card states it); the values are the compiler's own,
# so what is checked is exactly what `render` writes onto nodes.
CARD_SOURCES: dict[str, tuple[Callable[[CardType], str], tuple[str, ...]]] = {
    "card-type": (CARD_VALUES["card-type"], ("metadata", "name")),
    "vendor": (CARD_VALUES["vendor"], ("spec", "vendor")),
    "model": (CARD_VALUES["model"], ("spec", "model")),
    "memory": (CARD_VALUES["memory"], ("spec", "memoryGiB")),
    "architecture": (CARD_VALUES["architecture"], ("spec", "architecture")),
    "generation": (CARD_VALUES["generation"], ("spec", "generation")),
    "interconnect": (CARD_VALUES["interconnect"], ("spec", "interconnect")),
    "lifecycle": (CARD_VALUES["lifecycle"], ("spec", "lifecycle")),
}
NODE_FIELDS = {"zone": "zone", "rack": "rack", "nvlink-domain": "nvlinkDomain"}


class Site(NamedTuple):
    """One place a label value comes from: the value (None = absent) and where it is written."""

    value: str | None
    origin: Origin
    path: tuple[PathPart, ...]
    subject: str


def sites(policy: Policy, label: LabelRule) -> Iterator[Site]:
    """Every distinct value source of `label` across the fleet, once per card, pool or node
    entry (not once per node), so the rule stays linear and reports each mistake once."""
    source = label.source
    cards: dict[str, CardType] = {}
    seen_nodes: set[Span] = set()
    for pool, card in pools_with_cards(policy):
        if source in CARD_SOURCES:
            cards.setdefault(card.name, card)
        elif source == "pool":
            yield Site(pool.name, pool.origin, ("metadata", "name"), f"pool '{pool.name}'")
        elif source == "purpose":
            yield Site(pool.purpose, pool.origin, ("spec", "purpose"), f"pool '{pool.name}'")
        elif source == "static":
            where = ("spec", "labels", label.key)
            yield Site(pool.labels.get(label.key), pool.origin, where, f"pool '{pool.name}'")
        elif source in NODE_FIELDS:
            for node in pool.nodes:
                if node.origin.span in seen_nodes:
                    continue
                seen_nodes.add(node.origin.span)
                subject = f"node '{node.name}' of pool '{pool.name}'"
                value = node_value(source, node)
                yield Site(value, node_group(node), (NODE_FIELDS[source],), subject)
    for card in cards.values():
        getter, path = CARD_SOURCES[source]
        yield Site(getter(card) or None, card.origin, path, f"card type '{card.name}'")


def _taxonomy_rules(policy: Policy) -> list[LabelRule]:
    return list(policy.taxonomy.labels) if policy.taxonomy else []


def _governed(policy: Policy) -> list[LabelRule]:
    """Taxonomy labels hetgitops may write: values of reserved keys are label-reserved's."""
    reserved = _reserved(policy)
    return [label for label in _taxonomy_rules(policy) if not _prefix(label.key, reserved)]


@rule("label-missing", Severity.ERROR)
def label_missing(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Every node gets a value for each required taxonomy label.

    Fails: `{key: hetgitops.io/rack, from: rack}` (required by default) and a node entry
    without `rack`; a required static key a pool does not set in `spec.labels`.
    Passes: every node entry has `rack:`; or the label says `required: false`.
    Fix: set the field on the node entry or pool the finding points at (for a `from: static` key,
    under the pool's `spec.labels`); if some nodes legitimately have no value, mark the taxonomy
    entry `required: false`.
    """
    for label in _governed(policy):
        if not label.required:
            continue
        for site in sites(policy, label):
            if site.value is None:
                field = ".".join(map(str, site.path))
                yield error_at(
                    "label-missing",
                    f"required label '{label.key}' has no value: {site.subject} sets no {field}",
                    site.origin,
                    *site.path,
                    hint=f"set {field}, or mark the label required: false in the taxonomy",
                )


@rule("label-value-invalid", Severity.ERROR)
def label_value_invalid(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Label values are valid Kubernetes label values, allowed, and match the pattern.

    Fails: `{key: hetgitops.io/purpose, from: purpose, allowedValues: [training]}` and a pool
    with `purpose: dev`; `pattern: "[0-9]+"` and `memoryGiB: 94.5`.
    Passes: `allowedValues: [training, dev]`.
    Fix: write a value the taxonomy entry allows (its `allowedValues` or `pattern`, listed in the
    hint) and that Kubernetes accepts (at most 63 characters of letters, digits, `-`, `_`, `.`,
    alphanumeric at both ends); or add the value to the entry's `allowedValues`.
    """
    for label in _governed(policy):
        pattern = _compiled(label.pattern)
        for site in sites(policy, label):
            problem = _value_problem(site.value, label, pattern)
            if problem:
                yield error_at(
                    "label-value-invalid",
                    f"label '{label.key}' of {site.subject}: {problem}",
                    site.origin,
                    *site.path,
                    hint=_value_hint(label),
                )


def _compiled(pattern: str | None) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern) if pattern else None
    except re.error:
        return None  # the schema's `format: regex` already reported it


def _value_problem(value: str | None, label: LabelRule, pattern: re.Pattern[str] | None) -> str:
    if value is None:
        return ""
    if len(value) > MAX_VALUE_LENGTH or not LABEL_VALUE.match(value):
        return f"'{value}' is not a valid label value"
    if label.allowed_values and value not in label.allowed_values:
        return f"'{value}' is not an allowed value"
    if pattern is not None and not pattern.fullmatch(value):
        return f"'{value}' does not match {label.pattern}"
    return ""


def _value_hint(label: LabelRule) -> str:
    if label.allowed_values:
        return "allowed: " + ", ".join(label.allowed_values)
    if label.pattern:
        return f"values must match {label.pattern} in full"
    return "at most 63 characters of [A-Za-z0-9-_.], alphanumeric at both ends"


def _reserved(policy: Policy) -> tuple[str, ...]:
    return policy.taxonomy.reserved_prefixes if policy.taxonomy else DEFAULT_RESERVED_PREFIXES


def _prefix(key: str, prefixes: tuple[str, ...]) -> str | None:
    return next((p for p in prefixes if key.startswith(p)), None)


@rule("label-reserved", Severity.ERROR)
def label_reserved(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """No label under a prefix another system writes (GPU Feature Discovery's `nvidia.com/`).

    Reserved prefixes: LabelTaxonomy `reservedPrefixes` (default: nvidia.com/, NFD's
    feature.node.kubernetes.io/, kubernetes.io/, ...).

    Fails: a taxonomy key `nvidia.com/gpu.product`, or a pool label `nvidia.com/mig.config`.
    Passes: `hetgitops.io/product`.
    Fix: rename the key to one under the Fleet's labelDomain (e.g. `hetgitops.io/product`); read the
    value the other system writes (GPU Feature Discovery, NFD, kubelet) under its own key instead of
    setting it. If the prefix is yours, take it out of LabelTaxonomy `reservedPrefixes`.
    """
    reserved = _reserved(policy)
    for label in _taxonomy_rules(policy):
        prefix = _prefix(label.key, reserved)
        if prefix:
            yield _reserved_finding(label.key, prefix, label.origin, "key", key=False)
    for pool, _ in pools_with_cards(policy):
        for name in pool.labels:
            prefix = _prefix(name, reserved)
            if prefix:
                yield _reserved_finding(name, prefix, pool.origin, "spec", "labels", name)


def _reserved_finding(
    name: str, prefix: str, origin: Origin, *path: PathPart, key: bool = True
) -> Diagnostic:
    return error_at(
        "label-reserved",
        f"label '{name}' is under '{prefix}', which another system writes",
        origin,
        *path,
        key=key,
        hint="use a key under the Fleet's labelDomain (e.g. hetgitops.io/...)",
    )


@rule("label-unknown", Severity.ERROR)
def label_unknown(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A pool sets only static labels the taxonomy declares (`from: static`).

    Fails: pool `labels: {hetgitops.io/owner: ml}` and no taxonomy entry for that key.
    Passes: the taxonomy has `{key: hetgitops.io/owner, from: static}`.
    Fix: declare the key in the LabelTaxonomy with `from: static` (and `allowedValues` if it has a
    fixed set), or remove it from the pool's `spec.labels`; a typo of a declared key is fixed by
    writing the declared spelling.
    """
    taxonomy = policy.taxonomy
    if taxonomy is None:
        return
    declared = {label.key: label for label in taxonomy.labels}
    reserved = _reserved(policy)
    for pool, _ in pools_with_cards(policy):
        for name in pool.labels:
            label = declared.get(name)
            if _prefix(name, reserved) or (label is not None and label.source == "static"):
                continue  # reserved keys are label-reserved's
            problem = (
                "is not declared in the LabelTaxonomy"
                if label is None
                else (f"is derived from {label.source}, so a pool cannot set it")
            )
            yield error_at(
                "label-unknown",
                f"label '{name}' {problem}",
                pool.origin,
                "spec",
                "labels",
                name,
                key=True,
                hint=f"declare it in LabelTaxonomy '{taxonomy.name}' with from: static",
            )


@rule("label-duplicate", Severity.ERROR)
def label_duplicate(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """The taxonomy declares each key once.

    Fails: two entries with `key: hetgitops.io/pool`.
    Passes: one entry per key.
    Fix: delete one of the two taxonomy entries for the key, and move any `allowedValues`, `pattern`
    or `required` the deleted one carried into the one you keep.
    """
    for seen, label in repeats(_taxonomy_rules(policy), lambda rule: rule.key):
        yield error_at(
            "label-duplicate",
            f"label '{label.key}' is already declared at {seen.origin.at('key')}",
            label.origin,
            "key",
            hint="remove one of the two entries",
            related=[Related(seen.origin.at("key"), "first declared here")],
        )


@rule("label-outside-domain", Severity.WARNING)
def label_outside_domain(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Labels hetgitops writes live under the Fleet labelDomain (or topology.kubernetes.io/).

    Fails: `key: team/owner` or `key: example.com/owner` with labelDomain hetgitops.io.
    Passes: `key: hetgitops.io/owner`, `key: topology.kubernetes.io/zone`.
    Fix: rename the key to `<labelDomain>/<name>` (e.g. `hetgitops.io/owner`) or to a
    `topology.kubernetes.io/` key, and update every selector that names it; to keep an existing
    prefix, set Fleet.spec.labelDomain to it (this renames every label hetgitops writes).
    """
    domain = policy.fleet.label_domain if policy.fleet else "hetgitops.io"
    reserved = _reserved(policy)
    for label in _taxonomy_rules(policy):
        if not _owned(label.key, domain) and not _prefix(label.key, reserved):
            yield warning_at(
                "label-outside-domain",
                f"label '{label.key}' is outside the label domain '{domain}'",
                label.origin,
                "key",
                hint=f"use '{domain}/{label.key.rsplit('/', 1)[-1]}'; keys outside the domain "
                "may collide with other tools",
            )


def _owned(key: str, domain: str) -> bool:
    prefix, slash, _ = key.rpartition("/")
    if not slash:
        return False
    return prefix == domain or prefix.endswith("." + domain) or key.startswith(SHARED_PREFIXES)
