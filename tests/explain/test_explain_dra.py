"""explain on the DRA claims path: a rendered job's claim is charged as Kueue charges it, the
mapped resource x the template's device count (hetgitops/explain/explanation.py `charged`)."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path
from typing import Any

from hetgitops.explain import request, run
from hetgitops.explain.explanation import charged, explain
from hetgitops.explain.workload import from_manifest
from hetgitops.model.policy import Policy
from hetgitops.plan import dra

VARIANT = Path(__file__).resolve().parents[1] / "cases" / "render" / "dra" / "policy"
L40S = "dra.hetgitops.io/l40s-48gb"


def _rendered(name: str):
    policy = run.load_policy([VARIANT], dt.date(2026, 12, 1))
    found = request.from_profile(policy, "llm-serving", "online-inference")
    return policy, next(w for w in found if w.name == name)


def test_a_claiming_job_is_charged_its_mapped_resource() -> None:
    policy, workload = _rendered("llm-serving-l40s-48gb")
    assert workload.pod_sets[0].claims and L40S not in workload.pod_sets[0].requests
    found = run.explain_all(policy, [workload])[0]
    assert found.verdict == "admitted"
    assert found.workload.pod_sets[0].requests[L40S] == 1


def test_charging_is_done_once() -> None:
    policy, workload = _rendered("llm-serving-l40s-48gb")
    once = charged(policy, workload)
    assert charged(policy, once) == once


def test_a_claim_template_the_policy_does_not_render_is_inadmissible_not_admitted() -> None:
    """Kueue charges a claim only through a mapped DeviceClass and refuses the Workload before
    any flavor otherwise (pkg/dra/claims.go:211-219). explain used to drop the unknown claim
    and admit the job with no accelerator; the real Kueue in tests/sim/test_sim_dra.py pends
    it, reason Inadmissible."""
    policy, workload = _rendered("llm-serving-l40s-48gb")
    sets = tuple(replace(ps, claims=("hand-written-claim",)) for ps in workload.pod_sets)
    found = run.explain_all(policy, [replace(workload, pod_sets=sets)])[0]
    assert (found.verdict, found.reason) == ("pending", "Inadmissible")
    assert "hand-written-claim" in found.message
    assert "l40s-48gb.gpu.dra.hetgitops.io" in found.policy[0]


def _claiming_job(namespace: str, queue: str, claim: dict[str, str]) -> dict[str, Any]:
    """A batch Job as a user writes it, its pod claiming through `claim` (a pod resourceClaims
    entry)."""
    container = {
        "name": "main",
        "image": "busybox",
        "resources": {"requests": {"cpu": "1", "memory": "8Gi"}, "claims": [{"name": "gpu"}]},
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "mig-by-hand",
            "namespace": namespace,
            "labels": {"kueue.x-k8s.io/queue-name": queue},
        },
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "resourceClaims": [{"name": "gpu", **claim}],
                    "containers": [container],
                }
            }
        },
    }


def _slice_template(policy: Policy) -> str:
    """The 1g.10gb template the variant renders (for online-inference's namespaces only)."""
    card = policy.card_types["h100-80gb"]
    spec = dra.claim_template_spec(dra.class_name(card, "1g.10gb"), 1)
    return dra.claim_template_name(spec)


def test_a_pod_naming_a_resource_claim_is_inadmissible_as_kueue_says() -> None:
    """Kueue's DRA integration refuses a Workload whose pods name a ResourceClaim (only templates
    are charged), reason Inadmissible, with its own message (docs/upstream.md); explain used to
    ignore the claim and admit the job with no accelerator."""
    policy = run.load_policy([VARIANT], dt.date(2026, 12, 1))
    job = _claiming_job("serving", "online-inference", {"resourceClaimName": "my-slice"})
    found = explain(policy, from_manifest(job))
    assert (found.verdict, found.reason) == ("pending", "Inadmissible")
    assert found.message == "KueueDRAIntegration feature does not support use of resource claims"
    assert "my-slice" in found.policy[0]


def test_a_template_rendered_only_in_other_namespaces_is_inadmissible_there() -> None:
    """A pod's ResourceClaimTemplate is read from the pod's namespace; the variant renders the
    1g.10gb template for online-inference only, so finetune-nlp (which could borrow the slice
    from the cohort) claiming it in ft-nlp is refused by Kueue ("not found"). explain used to
    charge it by name and admit; in online-inference's namespace it still admits."""
    policy = run.load_policy([VARIANT], dt.date(2026, 12, 1))
    claim = {"resourceClaimTemplateName": _slice_template(policy)}
    found = explain(policy, from_manifest(_claiming_job("ft-nlp", "finetune-nlp", claim)))
    assert (found.verdict, found.reason) == ("pending", "Inadmissible")
    assert "in namespace ft-nlp" in found.message
    home = explain(policy, from_manifest(_claiming_job("serving", "online-inference", claim)))
    assert (home.verdict, home.flavor) == ("admitted", "h100-infer")
    assert home.workload.pod_sets[0].requests["dra.hetgitops.io/h100-80gb-mig-1g-10gb"] == 1
