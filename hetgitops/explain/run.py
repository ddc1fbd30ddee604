"""The explain stage's entry points for the CLI: load the policy once, build the workloads
asked about and explain each."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from hetgitops.diagnostics import has_errors
from hetgitops.explain import manifest
from hetgitops.explain import request as requests
from hetgitops.explain.answer import Explanation
from hetgitops.explain.explanation import explain
from hetgitops.explain.lines import live_lines, volcano_lines
from hetgitops.explain.preemption_formats import live_lines as preemption_lines
from hetgitops.explain.preemption_report import PreemptReport, preempt
from hetgitops.explain.state import Holder, LiveState
from hetgitops.explain.workload import Workload, WorkloadError, from_manifest
from hetgitops.load.documents import LoadResult, load_paths
from hetgitops.load.policyfiles import MAX_FILE_BYTES
from hetgitops.model import schema
from hetgitops.model.building import build_policy
from hetgitops.model.policy import Policy
from hetgitops.plan import grants

if TYPE_CHECKING:
    from hetgitops.api import Result


class PolicyError(Exception):
    """The policy did not load into a model: the findings say why (exit 1)."""

    def __init__(self, result: Result) -> None:
        super().__init__("policy has errors")
        self.result = result


def _result(loaded: LoadResult) -> Result:
    # api (and with it every rule and compiler) is imported only to report a broken policy:
    # explain's own work is a fraction of what importing them costs.
    from hetgitops import api

    return api.Result(list(loaded.diagnostics), loaded.files, len(loaded.documents))


def load_policy(paths: Iterable[Path], now: dt.date) -> Policy:
    """The policy model, refused when a file does not load, a document fails its schema or
    the model cannot be built. The semantic rules are `validate`'s (the CI gate) and are not
    run again: they cost most of the time at 5,000 nodes and none changes what Kueue does."""
    # Pool expiry is a rule of validate's (Kueue admits onto an expired pool all the same), but
    # a time-boxed grant in force on `now` is nominal quota, as render writes it (plan/grants).
    loaded = load_paths(list(paths))
    found = list(loaded.diagnostics)
    for problems in schema.check_documents(loaded.documents):
        found.extend(problems)
    policy = None
    if not has_errors(found) and loaded.documents:
        policy, problems = build_policy(loaded.documents, list(loaded.losses))
        found.extend(problems)
    if policy is None or has_errors(found):
        result = _result(loaded)
        result.diagnostics = found
        result.policy = policy
        raise PolicyError(result)
    return grants.at(policy, now)


MAX_MANIFEST_BYTES = MAX_FILE_BYTES


def manifest_text(raw: bytes, name: str) -> str:
    """A manifest file's text: UTF-8 (a BOM allowed), at most MAX_MANIFEST_BYTES."""
    if len(raw) > MAX_MANIFEST_BYTES:
        raise WorkloadError(f"{name}: larger than the {MAX_MANIFEST_BYTES} byte limit")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise WorkloadError(f"{name}: not UTF-8 text (byte {exc.start})") from None


def manifests(text: str, name: str) -> list[Workload]:
    """The workloads of every document of `text` (a `List` gives its items), read through the
    bounded YAML reader and the typed accessors of explain/manifest.py."""
    found: list[Workload] = []
    for doc in manifest.documents(text, name):
        listed = isinstance(doc.value, dict) and doc.value.get("kind") == "List"
        found.extend(from_manifest(item) for item in (doc["items"].each() if listed else [doc]))
    if not found:
        raise WorkloadError(f"{name}: no manifest")
    return found


def explain_all(
    policy: Policy, workloads: Iterable[Workload], state: LiveState | None = None
) -> list[Explanation]:
    """Each workload explained on the empty cluster, or against `state` (live mode): its usage
    is what Kueue's Available subtracts, and who it would queue behind is added."""
    if state is None:
        return [explain(policy, w) for w in workloads]
    found = []
    for workload in workloads:
        e = explain(
            policy,
            workload,
            usage=state.usage,
            node_free=state.node_free,
            koord=state.koordinator,
            namespaces=state.namespaces,
        )
        lines = (
            f"read from {state.server}",
            *live_lines(policy, e.team, state),
            *volcano_lines(policy, e.team, state),
            *_preemption(policy, workload, e, state),
            *state.notes,
        )
        found.append(dataclasses.replace(e, notes=lines))
    return found


def _preemption(
    policy: Policy, workload: Workload, e: Explanation, state: LiveState
) -> tuple[str, ...]:
    """For a job Kueue would not admit now: whom it preempts instead, or why none helps (the
    preemption model `explain --preempt` answers with)."""
    if e.verdict == "admitted" or e.kueue is None:
        return ()
    return preemption_lines([preempt(policy, workload, state.holders, state.node_free)])


def profile_explanations(
    policy: Policy, profile: str, team: str, state: LiveState | None = None
) -> list[Explanation]:
    """The rendered templates explained; when `jobs` renders none for the pair, the profile's
    request on its first card type, so Kueue's verdict says why."""
    rendered = requests.from_profile(policy, profile, team)
    if rendered:
        return explain_all(policy, rendered, state)
    asked = requests.profile_request(policy, profile, team)
    workload = requests.from_request(policy, asked)
    note = f"hetgitops jobs renders no template of {profile} for {team}"
    found = explain(policy, workload)
    return [
        Explanation(
            found.workload,
            found.team,
            found.verdict,
            found.reason,
            found.message,
            kueue=found.kueue,
            volcano=found.volcano,
            scheduler=found.scheduler,
            policy=(note, *_why_not_rendered(policy, profile, team), *found.policy),
            fixes=found.fixes,
            advice=found.advice,
        )
    ]


def _why_not_rendered(policy: Policy, profile_name: str, team_name: str) -> list[str]:
    from hetgitops.plan import routing
    from hetgitops.plan.quota_plan import reach

    profile, team = policy.profiles[profile_name], policy.teams[team_name]
    if profile.tier not in team.tiers:
        return [f"tier {profile.tier} is not among the team's tiers ({', '.join(team.tiers)})"]
    if profile.teams is not None and team_name not in profile.teams:
        return [f"the profile lists teams {', '.join(profile.teams)} only"]
    routes = routing.router(policy).routes(profile)
    if not routes:
        return ["no pool of an eligible card type offers what a pod requests"]
    verdict = routing.admissible(reach(policy), team, routes, profile)
    if verdict.route is None:
        pools = ", ".join(sorted({r.pool.name for r in routes}))
        return [f"the team holds no quota in a pool the profile may run on ({pools})"]
    need = routing.gang_need(verdict.route, profile)
    return [
        f"best pool {verdict.route.pool.name}: the gang needs {need} {verdict.route.resource}, "
        f"the team reaches {verdict.most}"
    ]


def workloads_asked(
    policy: Policy,
    *,
    text: tuple[str, str] | None,
    profile: str | None,
    team: str | None,
    asked: requests.Request | None,
) -> list[Workload]:
    """The workloads a command line asks about: a manifest's (`text`: its text and name), a
    profile's rendered templates (or its request when none renders), or a request."""
    if text is not None:
        return manifests(*text)
    if profile is not None and team is not None:
        rendered = requests.from_profile(policy, profile, team)
        if rendered:
            return list(rendered)
        return [requests.from_request(policy, requests.profile_request(policy, profile, team))]
    assert asked is not None
    return [requests.from_request(policy, asked)]


def preemption_reports(
    policy: Policy,
    workloads: Iterable[Workload],
    holders: Iterable[Holder],
    node_free: Mapping[str, Mapping[str, int]] | None = None,
) -> list[PreemptReport]:
    """`explain --preempt`: each workload's preemption answer among the admitted `holders`
    (`node_free`: read live, None offline)."""
    held = tuple(holders)
    return [preempt(policy, w, held, node_free) for w in workloads]
