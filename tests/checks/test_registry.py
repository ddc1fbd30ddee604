"""The rule registry: every family module is registered, ids are stable kebab-case, documented."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from hetgitops import api, checks
from hetgitops.checks import FAMILIES, RULES
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.model.policy import Policy

PACKAGE = Path(checks.__file__).parent
KEBAB = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
REPO = Path(__file__).resolve().parents[2]


def test_every_family_module_is_listed():
    # `registry` and `reuse` (what diff's head takes from its base) are mechanisms and `_*`
    # modules are shared helpers, not families.
    modules = {p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("_")}
    assert sorted(modules - {"registry", "reuse"}) == sorted(FAMILIES)


def test_every_family_registers_rules():
    families = {r.function.__module__.rsplit(".", 1)[-1] for r in RULES.values()}
    assert families == set(FAMILIES)


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_rule_id_and_docs(rule_id):
    registered = RULES[rule_id]
    assert KEBAB.match(rule_id)
    doc = registered.doc
    assert doc.splitlines()[0].strip(), "a one-line summary comes first"
    assert "Fails" in doc and "Passes" in doc, "the docs show a failing and a passing example"


def test_rule_ids_are_unique():
    with pytest.raises(ValueError, match="registered twice"):
        rule("missing-fleet")(RULES["missing-fleet"].function)


def test_bundled_policies_are_clean():
    result = api.validate(
        [REPO / "policies"], api.Options(now=dt.date(2026, 12, 1), check_output=False)
    )
    # The two warnings are true of the bundled fleet: PyTorchJob on Kueue 0.19 (job-integration),
    # and ascend-910b reached by Kueue's topology-aware admission (data-filter) and by Volcano
    # (ascend-pretrain), the race the busy simulated fleet met (kueue-volcano-share-pool).
    found = [f"{d.span}: {d.rule}" for d in result.diagnostics]
    assert found == [
        "policies/pools/training.yaml:44:9: kueue-volcano-share-pool",
        "policies/profiles/training.yaml:7:14: job-integration",
    ]


def test_an_empty_policy_gives_no_findings():
    empty = Policy(None, None, {}, {}, {}, {}, {})
    assert checks.run_checks(empty, CheckContext(dt.date(2026, 12, 1))) == []
