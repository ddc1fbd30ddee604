"""JUnit XML for CI test reports: a test case per rule id, a failure per finding."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable

from hetgitops.api import Result
from hetgitops.reporting.grouping import Group, grouped
from hetgitops.reporting.summary import summarize
from hetgitops.reporting.text import finding_lines

SUITE = "hetgitops validate"
# XML 1.0 cannot carry most control characters, even escaped; a policy value might.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def render(result: Result) -> str:
    # A consequence fails no rule of its own: it is listed in its root cause's failure.
    by_rule: dict[str, list[Group]] = {}
    for group in grouped(result.diagnostics):
        by_rule.setdefault(group.root.rule, []).append(group)
    cases = [_case(rule, found) for rule, found in sorted(by_rule.items())]
    if not cases:
        cases = [ET.Element("testcase", classname="hetgitops", name="policy")]
    failed = sum(1 for case in cases if len(case))
    counts = {"tests": str(len(cases)), "failures": str(failed), "errors": "0"}
    root = ET.Element("testsuites", {"name": "hetgitops", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": SUITE, "skipped": "0", **counts})
    suite.append(_properties(result))
    suite.extend(cases)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _properties(result: Result) -> ET.Element:
    properties = ET.Element("properties")
    for name, value in summarize(result).items():
        ET.SubElement(properties, "property", name=name, value=str(value))
    return properties


def _case(rule: str, found: Iterable[Group]) -> ET.Element:
    case = ET.Element("testcase", classname="hetgitops", name=rule)
    for group in found:
        d = group.root
        failure = ET.SubElement(
            case, "failure", type=d.severity.label, message=_clean(f"{d.span}: {d.message}")
        )
        lines = finding_lines(d, show=str) + [
            f"    {c.span}: note: consequence[{c.rule}]: {c.message}" for c in group.consequences
        ]
        failure.text = _clean("\n".join(lines))
    return case
