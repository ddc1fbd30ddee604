"""A Cohort with nothing to say is rendered without `spec`.

After an apply that set a field (a fairSharing weight), a server-side apply of `spec: {}` leaves
the spec null and Kueue's CRD refuses it ("spec in body must be of type object: null"): seen
against the real API server with Kueue v0.19.2's Cohort CRD (the generated-policy differential
of issue 32 hit it moving from one generated policy to the next). Leaving `spec` out removes
the field and applies; the CRD does not require `spec`."""

from __future__ import annotations

from pathlib import Path

from hetgitops import api

REPO = Path(__file__).resolve().parents[2]


def test_an_empty_cohort_has_no_spec_and_a_weighted_one_keeps_it(tmp_path: Path) -> None:
    result = api.render([REPO / "policies"], api.Options(check_output=True))
    cohorts = {m.obj["metadata"]["name"]: m.obj for m in result.manifests if m.kind == "Cohort"}
    assert cohorts, "the bundled fleet renders Cohorts"
    assert all("spec" not in obj or obj["spec"] for obj in cohorts.values()), cohorts
    roots = [obj for obj in cohorts.values() if not obj.get("spec")]
    assert roots and all("spec" not in obj for obj in roots)
    assert not [d for d in result.diagnostics if d.rule == "crd-schema"]
