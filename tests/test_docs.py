"""docs/: the generated pages are current and every relative link resolves."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_docs", REPO / "scripts" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_pages_are_current() -> None:
    gen = _generator()
    for path, make in gen.GENERATED.items():
        assert path.read_text() == make(), f"{path} is stale: run python scripts/gen_docs.py"


def test_policy_reference_lists_every_schema_field_of_every_kind() -> None:
    text = (REPO / "docs/reference/policy.md").read_text()
    for field in ("spec.quotas[].borrowingLimit", "spec.cluster", "spec.cardsPerNode",
                  "spec.mig.profileTable", "spec.value"):  # fmt: skip
        assert f"`{field}`" in text, field


def test_troubleshooting_has_a_section_per_rule() -> None:
    import hetgitops.adopt.findings
    import hetgitops.diff.hazards
    import hetgitops.drift.findings
    import hetgitops.load.git_tree  # noqa: F401
    from hetgitops.reporting.catalog import all_rules

    text = (REPO / "docs/troubleshooting.md").read_text()
    for rule in all_rules():
        assert f"\n## {rule.id}\n" in text, rule.id


def test_diff_md_hazard_table_has_a_row_per_hazard_rule() -> None:
    """The table between docs/diff.md's markers is made from the @hazard_rule registry
    (test_generated_pages_are_current fails when it is out of date)."""
    from hetgitops.diff.hazards import HAZARDS

    gen = _generator()
    begin, end = gen.HAZARD_TABLE
    table = (REPO / "docs/diff.md").read_text().split(begin)[1].split(end)[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == sorted(HAZARDS)
    for row, rule in zip(rows, sorted(HAZARDS.values(), key=lambda r: r.id), strict=True):
        assert row == f"| `{rule.id}` | {gen._cell(rule.when)} | {gen._cell(rule.fix)} |"


# The user guides (other docs pages belong to their stages' authors).
GUIDES = [
    "README.md",
    "CHANGELOG.md",
    "docs/README.md",
    "docs/getting-started.md",
    "docs/troubleshooting.md",
    "docs/reference",
    "docs/integrations",
    "docs/targets",
]


def test_relative_links_in_the_guides_resolve() -> None:
    pages = [p for g in GUIDES for p in ([REPO / g] if g.endswith(".md") else
                                         sorted((REPO / g).glob("*.md")))]  # fmt: skip
    broken = []
    for page in pages:
        text = re.sub(r"`[^`\n]*`", "", page.read_text())  # links never sit in code spans
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target:
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(REPO)} -> {target}")
    assert not broken, broken


def test_getting_started_lists_what_each_target_needs_before_the_first_sync() -> None:
    """A sync into a cluster without the CRDs and namespaces a target's objects need fails;
    the guide says, per target, what to install first (issue 32, item 7)."""
    text = (REPO / "docs/getting-started.md").read_text()
    assert "### Before your first sync" in text
    checklist = text.split("### Before your first sync")[1]
    for target in ("core", "kueue", "volcano", "nodes", "gpu-operator", "monitoring"):
        assert f"- [ ] **{target}**" in checklist, target
    for needed in ("Prometheus Operator CRDs", "integrations.frameworks", "NodeFeatureRule",
                   "scheduling.volcano.sh", "GPU Operator", "Namespaces"):  # fmt: skip
        assert needed in checklist, needed


def test_readme_names_the_extra_capacity_html_needs() -> None:
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert "html" in extras["optional-dependencies"]  # the plain install lacks altair
    row = next(line for line in (REPO / "README.md").read_text().splitlines()
               if "capacity --format html >" in line)  # fmt: skip
    assert "hetgitops[html]" in row
