"""What each rule id means: the one registry of emitted ids (`diagnostics.RULE_REGISTRY`), read
for `hetgitops rules`, the troubleshooting page and SARIF's rule descriptions."""

from __future__ import annotations

import inspect
import re
import textwrap
from dataclasses import dataclass

# Imported for their side effect too: each stage module registers the ids it emits, so every
# stage below reporting has registered once this module is loaded (diff and drift sit above
# reporting; `all_rules` callers import them, as the `rules` command does).
from hetgitops.checks import RULES
from hetgitops.compilers.jobs import rules as _jobs  # noqa: F401
from hetgitops.conformance import output_checks as _conformance  # noqa: F401
from hetgitops.diagnostics import RULE_REGISTRY, Severity
from hetgitops.model import building as _building  # noqa: F401
from hetgitops.model import schema as _schema  # noqa: F401

# What each stage is, for `rules RULE`.
STAGES: dict[str, str] = {
    "load": "load (reading files and YAML; later stages see nothing of a file that fails here)",
    "model": "model (JSON Schema and building the policy model)",
    "check": "check (semantic rules over the whole policy, hetgitops/checks/)",
    "compile": "compile (a target compiler refused the policy)",
    "conformance": "conformance (rendered objects against Kubernetes, CRD and Kueue rules)",
    "jobs": "jobs (rendering job templates, `hetgitops jobs`)",
    "diff": "diff (a day-2 hazard of a policy change, `hetgitops diff`)",
    "drift": "drift (the live cluster against the policy, `hetgitops drift`)",
}
# A section head, with an optional note before the colon: a warning's `Fails (warns):`.
_HEAD = re.compile(r"^(Fails|Passes|Fix)(?: \([^)]*\))?:")
WIDTH = 99  # `rules RULE` prose, like the code's line length


@dataclass(frozen=True)
class RuleInfo:
    id: str
    summary: str
    details: str
    severity: Severity
    stage: str = "check"

    def section(self, name: str) -> str:
        """The text after `Fails:`, `Passes:` or `Fix:` in the details ("" when absent)."""
        return _sections(self.details).get(name, "")

    @property
    def why(self) -> str:
        """The details before the first example or fix: why the rule exists."""
        return _sections(self.details).get("", "")


def _sections(details: str) -> dict[str, str]:
    """Split a rule's details into its prose ("") and its `Fails:`/`Passes:`/`Fix:` parts; a
    section runs until the next one starts a line."""
    found: dict[str, list[str]] = {"": []}
    current = ""
    for line in details.splitlines():
        head = _HEAD.match(line.strip())
        if head is not None:
            current, line = head[1] + ":", line.strip()[head.end() :]
            found.setdefault(current, [])
        found[current].append(line.strip())
    return {k: " ".join(" ".join(v).split()) for k, v in found.items()}


def describe(rule_id: str) -> RuleInfo:
    """The documentation of `rule_id` from the rule registry."""
    registered = RULES.get(rule_id)
    if registered is not None:
        summary, details = _summary_and_details(inspect.cleandoc(registered.doc))
        return RuleInfo(rule_id, summary or rule_id, details, registered.severity)
    entry = RULE_REGISTRY.get(rule_id)
    if entry is None:
        return RuleInfo(rule_id, f"hetgitops rule {rule_id}", "", Severity.ERROR, "")
    summary, details = _summary_and_details(entry.doc)
    return RuleInfo(rule_id, summary, details, entry.severity, entry.stage)


# A sentence's end: a full stop before a blank or the end, not the one of "e.g." or "i.e.".
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)\.(?=\s|$)")


def _summary_and_details(doc: str) -> tuple[str, str]:
    """The summary is the doc's first line when that is a whole sentence; when the sentence
    runs on (a docstring wraps at the line length) it is the whole first sentence, joined, and
    the details start after it. The first line alone printed "... says `evictsRunningPods:
    true`: the sync that" for a rule that fires when the field is missing."""
    first, _, rest = doc.partition("\n")
    first = first.strip()
    if not first or first.endswith(".") or not rest.strip():
        return first, rest.strip()
    lines = doc.splitlines()
    taken = 0
    while taken < len(lines) and lines[taken].strip() and not _HEAD.match(lines[taken].strip()):
        taken += 1
    text = " ".join(line.strip() for line in lines[:taken])
    end = _SENTENCE_END.search(text)
    cut = end.end() if end is not None else len(text)
    remainder = "\n".join([text[cut:].strip(), *lines[taken:]])
    return text[:cut], remainder.strip()


def known_rules(used: set[str]) -> list[RuleInfo]:
    """Every registered semantic rule plus the other ids `used` by a report, sorted by id."""
    return [describe(rule_id) for rule_id in sorted(set(RULES) | used)]


def all_rules() -> list[RuleInfo]:
    """Every registered rule id of every stage imported so far, sorted by id."""
    return [describe(rule_id) for rule_id in sorted(RULE_REGISTRY)]


def full_text(rule: RuleInfo) -> str:
    """A rule's whole documentation, as `hetgitops rules RULE` prints it."""
    lines = [f"{rule.id}\n", f"  severity: {rule.severity.label}\n"]
    lines.append(f"  stage:    {STAGES.get(rule.stage, rule.stage)}\n\n{rule.summary}\n")
    if rule.why:
        lines.append("\n" + _wrapped(f"Why: {rule.why}"))
    fails, passes = rule.section("Fails:"), rule.section("Passes:")
    if fails or passes:
        lines.append("\nExample:\n")
        lines += [f"  fails:  {fails}\n"] if fails else []
        lines += [f"  passes: {passes}\n"] if passes else []
    lines.append("\n" + _wrapped(f"How to fix: {fix_text(rule)}"))
    return "".join(lines)


def as_json(rule: RuleInfo) -> dict[str, str]:
    """A rule's documentation as `rules --format json` gives it (the same texts as `rules
    RULE`; the keys are public API)."""
    return {
        "id": rule.id,
        "severity": rule.severity.label,
        "stage": rule.stage,
        "summary": rule.summary,
        "why": rule.why,
        "fails": rule.section("Fails:"),
        "passes": rule.section("Passes:"),
        "fix": fix_text(rule),
    }


def fix_text(rule: RuleInfo) -> str:
    """The rule's own `Fix:` line (every registered rule has one: tests/test_rule_registry.py)."""
    return rule.section("Fix:")


def _wrapped(paragraph: str) -> str:
    return textwrap.fill(paragraph, width=WIDTH, break_on_hyphens=False) + "\n"
