"""Output-validation stage: rendered objects against Kubernetes and CRD schemas and Kueue's rules.

Every finding points at the policy line that produced the object (`Manifest.origin`) and names
the object and field, so a reviewer fixes the policy, not the generated YAML.
Rule ids: `k8s-schema` (built-in kinds, object metadata), `crd-schema` (the project's target
schemas and `--crd-dir` CRDs), `kueue-cel` and `kueue-limits` (Kueue rules a schema cannot say).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from hetgitops.conformance import k8s_schemas, koordinator_rules, kueue_rules
from hetgitops.diagnostics import Diagnostic, Severity, Span, register_rules
from hetgitops.model.fastschema import Checker
from hetgitops.model.policy import Policy
from hetgitops.output.manifests import Manifest

K8S, CRD = "k8s-schema", "crd-schema"
register_rules(
    "conformance",
    {
        K8S: "A rendered object fails the Kubernetes schema of the Fleet's Kubernetes minor "
        "(or object-metadata rules); reported at the policy line that produced it.\n"
        "Fix: change that policy value (a name too long, a label value with bad characters).",
        CRD: "A rendered custom resource fails its CRD schema (hetgitops' own target schemas, "
        "or CRDs given with --crd-dir); info when no schema is known for a kind.\n"
        "Fix: change the policy value it points at, or pass --crd-dir with the CRD.",
    },
)
KUEUE_GROUP = "kueue.x-k8s.io/"
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DNS1123_NAMES = ("Namespace",)  # kinds whose names must be DNS labels, not subdomains


@dataclass
class _Context:
    """What every object is checked against; validators come from process-wide caches."""

    minor: k8s_schemas.Minor | None
    legacy_kueue: bool
    crds: k8s_schemas.CrdValidators
    notes: list[Diagnostic] = field(default_factory=list)
    unchecked: dict[tuple[str, str], Span] = field(default_factory=dict)
    # Schema findings by object content without its name: thousands of plan Nodes share a few
    # label sets, and a schema cannot tell two names apart (names are checked by _metadata).
    seen: dict[str, list[tuple[str, str, str]] | None] = field(default_factory=dict)


def _wanted_minor(policy: Policy) -> k8s_schemas.Minor:
    fleet = policy.fleet
    if fleet is not None and len(fleet.kubernetes) > 1:
        return fleet.kubernetes[0], fleet.kubernetes[1]
    return k8s_schemas.bundled_minors()[-1]


def _fallback_note(
    policy: Policy, wanted: k8s_schemas.Minor, minor: k8s_schemas.Minor | None
) -> Diagnostic:
    used = f"checked against {minor[0]}.{minor[1]}" if minor else "built-in kinds not checked"
    fleet = policy.fleet
    where = fleet.origin.at("spec", "versions", "kubernetes") if fleet else Span("<policy>")
    message = (
        f"kubernetes-validate {k8s_schemas.package_version()} bundles no schemas for "
        f"Kubernetes {wanted[0]}.{wanted[1]}; {used}"
    )
    return Diagnostic(
        rule=K8S,
        severity=Severity.WARNING,
        message=message,
        span=where,
        path="spec.versions.kubernetes",
    )


def _context(policy: Policy, crd_dirs: Iterable[Path]) -> _Context:
    wanted = _wanted_minor(policy)
    minor = k8s_schemas.resolve_minor(wanted)
    crds, unreadable = k8s_schemas.crd_validators(tuple(crd_dirs))
    kueue = policy.fleet.kueue if policy.fleet else None
    context = _Context(minor, kueue is not None and kueue < (0, 14), crds)
    if minor != wanted:
        context.notes.append(_fallback_note(policy, wanted, minor))
    context.notes.extend(
        Diagnostic(rule=CRD, severity=Severity.ERROR, message=f"cannot read CRD file {message}")
        for message in unreadable
    )
    return context


def _ref(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    parts = [str(obj.get("kind")), meta.get("namespace"), str(meta.get("name"))]
    return "/".join(p for p in parts if p)


def _metadata(obj: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Object-metadata rules the API server applies to every kind; no schema states them.
    Labels are checked wherever a `metadata.labels` mapping sits: the object's own and its
    pod templates' (Job, JobSet, PyTorchJob, Volcano Job, LeaderWorkerSet)."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    pattern, limit = (_DNS_LABEL, 63) if obj.get("kind") in _DNS1123_NAMES else (_SUBDOMAIN, 253)
    if not pattern.match(name) or len(name) > limit:
        yield "metadata.name", f"{name!r} is not a valid name (lower-case DNS name, <= {limit})"
    for where, labels in _label_maps(obj, ""):
        for key, value in labels.items():
            # The path is spelled only for a problem: ~45,000 labels at 5,000 nodes have none.
            for message in _label_problems(key, value):
                yield f"{where}metadata.labels.{key}", message


def _label_maps(node: Any, where: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(path prefix, labels) of every `metadata.labels` mapping inside `node`, outermost first.
    Scalars are skipped before recursing: a NodeFeatureRule's node-name lists hold thousands."""
    if _is_mapping(node):
        meta = node.get("metadata")
        if _is_mapping(meta) and _is_mapping(meta.get("labels")):
            yield where, meta["labels"]
        for key, value in node.items():
            if key != "metadata" and type(value) not in _SCALARS:
                yield from _label_maps(value, f"{where}{key}.")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            if type(item) not in _SCALARS:
                yield from _label_maps(item, f"{where.removesuffix('.')}[{index}].")


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _is_mapping(value: object) -> TypeGuard[Mapping[str, Any]]:
    """isinstance(value, Mapping), the plain dict decided without the ABC machinery: ~60,000
    calls per validate at the 5,000-node fleet, 0.4 us each through abc.__instancecheck__."""
    return type(value) is dict or isinstance(value, Mapping)


def _label_problems(key: object, value: object) -> tuple[str, ...]:
    try:
        return _label_messages(key, value)
    except TypeError:  # an unhashable value: check it uncached
        return tuple(_label_check(key, value))


@functools.lru_cache(maxsize=1 << 16, typed=True)  # 1 and True are different values
def _label_messages(key: object, value: object) -> tuple[str, ...]:
    """Label checks by (key, value), once: a fleet's nodes share most of their labels."""
    return tuple(_label_check(key, value))


def _label_check(key: object, value: object) -> Iterator[str]:
    prefix, _, label = str(key).rpartition("/")
    valid_key = (
        _LABEL_NAME.match(label)
        and len(label) <= 63
        and (not prefix or (_SUBDOMAIN.match(prefix) and len(prefix) <= 253))
    )
    if not valid_key:
        yield f"{key!r} is not a valid label key"
    if not isinstance(value, str) or not _LABEL_VALUE.match(value) or len(value) > 63:
        yield f"{value!r} is not a valid label value (<= 63 chars)"


def _validators(key: k8s_schemas.GVK, context: _Context) -> list[tuple[str, Checker, str]]:
    """(rule, validator, message suffix) of every schema that knows the kind."""
    found: list[tuple[str, Checker, str]] = []
    core = k8s_schemas.k8s_validator(context.minor, *key) if context.minor else None
    if core is not None:
        found.append((K8S, core, ""))
    own = k8s_schemas.target_validators().get(key)
    if own is not None:
        found.append((CRD, own, ""))
    crd = context.crds.get(key)
    if crd is not None:
        found.append((CRD, crd[0], f" (CRD {Path(crd[1]).name})"))
    return found


def _schema_findings(
    obj: Mapping[str, Any], context: _Context
) -> list[tuple[str, str, str]] | None:
    """(rule, path, message) from every schema that knows the kind; None when none does."""
    validators = _validators(_key(obj), context)
    if not validators:
        return None
    return [
        (rule, p, m + suffix)
        for rule, validator, suffix in validators
        for p, m in k8s_schemas.problems(validator, obj)
    ]


def _key(obj: Mapping[str, Any]) -> k8s_schemas.GVK:
    return str(obj.get("apiVersion")), str(obj.get("kind"))


def _clean_kinds(objects: list[Mapping[str, Any]], context: _Context) -> set[k8s_schemas.GVK]:
    """Kinds whose every object passes every schema that knows the kind: one compiled call per
    kind and schema. Only objects of other kinds are checked (and explained) one by one."""
    groups: dict[k8s_schemas.GVK, list[Mapping[str, Any]]] = {}
    for obj in objects:
        groups.setdefault(_key(obj), []).append(obj)
    clean = set()
    for key, group in groups.items():
        validators = _validators(key, context)
        if validators and all(v.valid_all(group) for _, v, _ in validators):
            clean.add(key)
    return clean


def _fingerprint(obj: Mapping[str, Any]) -> str:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "name"}
    return json.dumps({**obj, "metadata": meta}, sort_keys=True, default=str)


Finding = tuple[str, str, str]  # (rule, path, message)
_Checked = tuple[tuple[Finding, ...], bool]  # an object's findings; whether no schema knew it


@dataclass
class Memo:
    """Findings of objects already checked, for a caller that checks two renders of nearly
    the same policy (diff's base and head: all but a few objects equal). An object equal to
    one checked before against the same Kubernetes minor, Kueue generation and CRDs has the
    same findings (they depend on nothing else); only the policy line it is reported at is
    its own."""

    # By (Kubernetes minor, Kueue generation, CRD dirs), then (kind, namespace, name): the
    # object as checked and its findings (`_CLEAN`, shared, for the thousands without any).
    entries: dict[
        tuple[Any, ...], dict[tuple[str, str, str], tuple[Mapping[str, Any], _Checked]]
    ] = field(default_factory=dict)


_CLEAN: _Checked = ((), False)


def _memo_key(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = obj.get("metadata") or {}
    return str(obj.get("kind")), str(meta.get("namespace", "")), str(meta.get("name", ""))


def _object_findings(obj: Mapping[str, Any], context: _Context, clean: bool) -> _Checked:
    """What the schemas, metadata rules and Kueue's rules say about one object: a function
    of the object and the context alone (`clean`, its kind passed as a batch, saves work)."""
    schema: list[Finding] | None = []
    if not clean:
        fingerprint = _fingerprint(obj)
        if fingerprint not in context.seen:
            context.seen[fingerprint] = _schema_findings(obj, context)
        schema = context.seen[fingerprint]
    findings = [(K8S, p, m) for p, m in _metadata(obj)] + (schema or [])
    if str(obj.get("apiVersion")).startswith(KUEUE_GROUP):
        findings += kueue_rules.check_object(obj, legacy=context.legacy_kueue)
    return (tuple(findings), schema is None) if findings or schema is None else _CLEAN


def _reported(manifest: Manifest, checked: _Checked, context: _Context) -> Iterator[Diagnostic]:
    obj, span = manifest.obj, manifest.origin
    findings, unknown = checked
    if unknown:
        context.unchecked.setdefault((str(obj.get("apiVersion")), manifest.kind), span)
    if not findings:  # nearly every object: no reference to spell out
        return
    ref = _ref(obj)
    for rule, path, message in findings:
        yield Diagnostic(
            rule=rule,
            severity=Severity.ERROR,
            message=f"{ref}: {path}: {message}",
            span=span,
            path=path,
        )


def _old_cohort_api(policy: Policy, manifests: list[Manifest]) -> Iterator[Diagnostic]:
    """Kueue < 0.13 served Cohort only as v1alpha1 (`spec.parent`); ours would be rejected, so
    the apply would fail: an error, not a warning."""
    fleet = policy.fleet
    if fleet is None or fleet.kueue is None or fleet.kueue >= (0, 13):
        return
    if any(
        m.kind == "Cohort" and str(m.obj.get("apiVersion")).startswith(KUEUE_GROUP)
        for m in manifests
    ):
        yield Diagnostic(
            rule=kueue_rules.LIMITS,
            severity=Severity.ERROR,
            message="Kueue < 0.13 serves Cohort only as v1alpha1; the rendered Cohorts need Kueue "
            "0.13+",
            span=fleet.origin.at("spec", "versions", "kueue"),
            path="spec.versions.kueue",
        )


CONFIG_FILES = frozenset({"Configuration"})


def check(
    manifests: list[Manifest],
    policy: Policy,
    *,
    crd_dirs: Iterable[Path] = (),
    unchecked: bool = True,
    memo: Memo | None = None,
) -> list[Diagnostic]:
    """Findings for every rendered object that has an apiVersion and kind; with `unchecked`,
    an info for each kind no schema is known for. With a `memo`, objects equal to ones it
    holds take their findings from it, and the others are added to it."""
    crd_dirs = tuple(crd_dirs)
    context = _context(policy, crd_dirs)
    found = [*context.notes, *_old_cohort_api(policy, manifests)]
    found += koordinator_rules.check(manifests, policy)
    # A component's configuration file (Kueue's Configuration fragment, compilers/dra.py) is
    # no API object: it has no metadata and no API server to validate it.
    checked = [
        m
        for m in manifests
        if m.obj.get("apiVersion") and m.obj.get("kind") and m.obj["kind"] not in CONFIG_FILES
    ]
    seen = None
    if memo is not None:
        seen = memo.entries.setdefault((context.minor, context.legacy_kueue, crd_dirs), {})
    known: dict[int, _Checked] = {}
    for index, manifest in enumerate(checked if seen else ()):
        entry = seen.get(_memo_key(manifest.obj)) if seen is not None else None
        if entry is not None and entry[0] == manifest.obj:  # apiVersion and all
            known[index] = entry[1]
    fresh = [m.obj for index, m in enumerate(checked) if index not in known]
    clean = _clean_kinds(fresh, context)
    for index, manifest in enumerate(checked):
        result = known.get(index)
        if result is None:
            result = _object_findings(manifest.obj, context, _key(manifest.obj) in clean)
            if seen is not None:
                seen[_memo_key(manifest.obj)] = (manifest.obj, result)
        found.extend(_reported(manifest, result, context))
    found.extend(
        Diagnostic(
            rule=CRD,
            severity=Severity.INFO,
            message=f"no schema for {kind} ({api_version}); not validated",
            span=span,
            hint="pass --crd-dir with its CustomResourceDefinition",
        )
        for (api_version, kind), span in sorted(context.unchecked.items())
        if unchecked
    )
    return found
