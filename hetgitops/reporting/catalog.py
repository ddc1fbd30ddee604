"""What each rule id means, for reports that describe their rules (SARIF): one lookup over the
semantic registry and the ids the load and schema stages report."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass

from hetgitops.checks import RULES
from hetgitops.diagnostics import Severity
from hetgitops.load.documents import LOAD_RULES

# Stages other than load and check report a handful of fixed ids; documented here, once.
STAGE_RULES: dict[str, str] = {
    "schema": "A policy document does not match the JSON Schema of its kind (see `schema KIND`).",
    "k8s-schema": "A rendered object fails the Kubernetes schema of the Fleet's Kubernetes minor "
    "(or object-metadata rules); reported at the policy line that produced it.",
    "crd-schema": "A rendered custom resource fails its CRD schema (hetgitops' own target "
    "schemas, or CRDs given with --crd-dir).",
    "kueue-cel": "A rendered Kueue object breaks a CEL or webhook rule of Kueue (limits need a "
    "cohort, borrowWithinCohort needs reclaimWithinCohort, flavors list the covered resources).",
    "compile-error": "A target compiler refused the policy: a target system would reject what it "
    "asks for, and no check caught it earlier.",
    "volcano-config": "The Volcano scheduler plugins or Queue tree would be rejected or silently "
    "misread by Volcano (capacity with proportion, guarantee > deserved > capability, ...).",
    "job-template": "`jobs`: a job template did not render one valid object (template error, "
    "invalid YAML, or an input the policy lacks, such as the profile's image).",
    "job-integration": "`jobs`: a job depends on a scheduler setting the policy does not show "
    "(a Kueue integration, the volcano target, a level of the Fleet's topology).",
}
# Stage rules that report below error (the default for the ids above).
STAGE_SEVERITIES: dict[str, Severity] = {"job-integration": Severity.WARNING}


@dataclass(frozen=True)
class RuleInfo:
    id: str
    summary: str
    details: str
    severity: Severity


def describe(rule_id: str, extra: Mapping[str, str] | None = None) -> RuleInfo:
    """The documentation of `rule_id` (from `extra` for a stage above reporting, such as
    drift); an id nobody documented still gets a usable entry."""
    registered = RULES.get(rule_id)
    if registered is not None:
        summary, _, details = inspect.cleandoc(registered.doc).partition("\n")
        return RuleInfo(rule_id, summary.strip() or rule_id, details.strip(), registered.severity)
    doc = (
        LOAD_RULES.get(rule_id)
        or STAGE_RULES.get(rule_id)
        or (extra or {}).get(rule_id)
        or f"hetgitops rule {rule_id}"
    )
    return RuleInfo(rule_id, doc, "", STAGE_SEVERITIES.get(rule_id, Severity.ERROR))


def known_rules(used: set[str], extra: Mapping[str, str] | None = None) -> list[RuleInfo]:
    """Every registered semantic rule plus the other ids `used` by a report, sorted by id."""
    return [describe(rule_id, extra) for rule_id in sorted(set(RULES) | used)]
