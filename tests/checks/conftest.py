"""A minimal valid policy as YAML text that each rule test patches, then validates.

Tests assert where a rule fires as `file:line:col` strings; `pos()` computes the expected
position from a `^` marker in a snippet of the file, so a test reads like the YAML it breaks.
"""

from __future__ import annotations

import datetime as dt

import pytest

from hetgitops import api
from hetgitops.checks import RULES
from hetgitops.diagnostics import Diagnostic

NOW = dt.date(2026, 12, 1)
HEADER = "apiVersion: hetgitops.io/v1alpha1\n"

FLEET = f"""\
{HEADER}kind: Fleet
metadata:
  name: test
spec:
  cluster: test-cluster
  versions:
    kubernetes: "1.33"
    kueue: "0.19.2"
    volcano: "1.15.1"
  targets: [core, kueue, volcano, nodes, gpu-operator]
  cohorts:
    - name: org
    - name: ml
      parent: org
"""

CARDS = f"""\
{HEADER}kind: CardType
metadata:
  name: h100-80gb
spec:
  vendor: nvidia
  model: H100-SXM5-80GB
  resourceName: nvidia.com/gpu
  memoryGiB: 80
  interconnect: nvlink
  precisions: [fp32, bf16, fp8]
  mig:
    profileTable: H100-80GB
  performance: {{coefficient: 2.9, reference: A100-SXM4-80GB, coefficientSet: "2026.2"}}
  cost: {{perCardHour: 3.0}}
  lifecycle: production
  images: {{pytorch: nvcr.io/nvidia/pytorch:25.08-py3, vllm: vllm/vllm-openai:v0.11.0}}
---
{HEADER}kind: CardType
metadata:
  name: l40s-48gb
spec:
  vendor: nvidia
  model: L40S
  resourceName: nvidia.com/gpu
  memoryGiB: 48
  interconnect: pcie
  precisions: [fp32, bf16, fp8]
  performance: {{coefficient: 0.75, reference: A100-SXM4-80GB, coefficientSet: "2026.2"}}
  cost: {{perCardHour: 1.0}}
  lifecycle: production
  images: {{pytorch: nvcr.io/nvidia/pytorch:25.08-py3}}
"""

POOLS = f"""\
{HEADER}kind: Pool
metadata:
  name: h100-train
spec:
  cardType: h100-80gb
  purpose: training
  cardsPerNode: 8
  nodes:
    - {{names: "gpu-h100-[01:02]", zone: zone-a, rack: rack-a1}}
---
{HEADER}kind: Pool
metadata:
  name: l40s-infer
spec:
  cardType: l40s-48gb
  purpose: inference
  cardsPerNode: 8
  nodes:
    - {{names: "gpu-l40s-[01:02]", zone: zone-b, rack: rack-b1}}
"""

TEAMS = f"""\
{HEADER}kind: Team
metadata:
  name: ml
spec:
  namespaces: [ml]
  cohort: ml
  quotas:
    - {{pool: h100-train, cards: 8}}
    - {{pool: l40s-infer, cards: 8}}
  tiers: [training]
  budget: {{monthly: 100000}}
---
{HEADER}kind: Team
metadata:
  name: serving
spec:
  namespaces: [serving]
  cohort: ml
  quotas:
    - {{pool: l40s-infer, cards: 8}}
    - {{pool: h100-train, cards: 8}}
  tiers: [serving]
"""

TIERS = f"""\
{HEADER}kind: PriorityTier
metadata:
  name: training
spec:
  value: 1000
---
{HEADER}kind: PriorityTier
metadata:
  name: serving
spec:
  value: 10000
"""

PROFILES = f"""\
{HEADER}kind: WorkloadProfile
metadata:
  name: train
spec:
  framework: job
  tier: training
  requirements:
    cardsPerNode: 8
    gang: 2
    purposes: [training]
  image: pytorch
"""

BASE = {
    "fleet.yaml": FLEET,
    "cards.yaml": CARDS,
    "pools.yaml": POOLS,
    "teams.yaml": TEAMS,
    "tiers.yaml": TIERS,
    "profiles.yaml": PROFILES,
}


class PolicyText:
    """The policy files of one test; edit them, then ask where a rule fired."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = dict(files)

    def replace(self, file: str, old: str, new: str) -> PolicyText:
        """Replace the one occurrence of `old` (a typo in a test should fail loudly)."""
        text = self.files[file]
        assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {file}"
        self.files[file] = text.replace(old, new)
        return self

    def add(self, file: str, document: str) -> PolicyText:
        """Append a document (its apiVersion line is added) to a file, new or existing."""
        before = self.files.get(file)
        body = HEADER + document
        self.files[file] = body if before is None else before + "---\n" + body
        return self

    def drop(self, file: str) -> PolicyText:
        del self.files[file]
        return self

    def diagnostics(self, now: dt.date = NOW) -> list[Diagnostic]:
        sources = [(name, text.encode()) for name, text in sorted(self.files.items())]
        options = api.Options(now=now, check_output=False)
        found = api.validate_sources(sources, options).diagnostics
        for d in found:  # a rule reports at the severity it is registered with
            assert d.rule not in RULES or d.severity == RULES[d.rule].severity, d
        return found

    def spans(self, rule: str, now: dt.date = NOW) -> list[str]:
        """Where `rule` fired, as sorted `file:line:col` strings."""
        return sorted(str(d.span) for d in self.diagnostics(now) if d.rule == rule)

    def independent(self, rule: str, now: dt.date = NOW) -> list[str]:
        """Where `rule` fired on its own (not as a consequence of another finding)."""
        found = self.diagnostics(now)
        return sorted(str(d.span) for d in found if d.rule == rule and d.consequence_of is None)

    def causes(self, rule: str, now: dt.date = NOW) -> list[str]:
        """The rule ids of the findings each `rule` finding follows from ("" if none)."""
        found = [d for d in self.diagnostics(now) if d.rule == rule]
        return sorted(d.consequence_of.rule if d.consequence_of else "" for d in found)

    def findings(self, rule: str, now: dt.date = NOW) -> list[Diagnostic]:
        return [d for d in self.diagnostics(now) if d.rule == rule]

    def pos(self, file: str, marked: str) -> str:
        """`file:line:col` of the `^` in `marked`, a snippet that occurs once in the file."""
        snippet = marked.replace("^", "")
        text = self.files[file]
        assert text.count(snippet) == 1, f"{snippet!r} occurs {text.count(snippet)} times"
        offset = text.index(snippet) + marked.index("^")
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        return f"{file}:{line}:{column}"


@pytest.fixture
def policy() -> PolicyText:
    return PolicyText(BASE)
