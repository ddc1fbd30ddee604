"""Plan stage: the labels the `core` target writes on each team Namespace and the
namespaceSelector the team's ClusterQueue selects namespaces by, and whether one selects the
other. The render writes both; the `namespace-selector-misses` check, explain (does the
ClusterQueue admit from this namespace?) and diff's `namespace-unselected` hazard read them here.

Kueue admits a workload only from a namespace whose labels its ClusterQueue's selector matches
(`ErrNamespaceMismatch`, checked by the scheduler at admission only); the selector is read as
apimachinery's `LabelSelectorAsSelector` reads it: absent selects nothing, `{}` everything,
matchLabels are equalities and matchExpressions In, NotIn, Exists, DoesNotExist (the sources in
docs/upstream.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hetgitops.model.policy import Fleet, Team


def team_label(fleet: Fleet) -> str:
    """The label the core target gives a team's namespaces, naming the team."""
    return fleet.label("team")


def namespace_labels(fleet: Fleet, team: Team) -> dict[str, str]:
    """The labels of each of the team's rendered Namespaces: the team label, then the team's
    `namespaceLabels` (which win: a cluster's own value for the same key is kept)."""
    return dict(sorted({team_label(fleet): team.name, **team.namespace_labels}.items()))


def queue_selector(fleet: Fleet, team: Team) -> dict[str, Any]:
    """The team's ClusterQueue's namespaceSelector: `spec.kueue.namespaceSelector` as the
    cluster had it, else the team label."""
    if team.namespace_selector is not None:
        return dict(team.namespace_selector)
    return {"matchLabels": {team_label(fleet): team.name}}


def _requirement(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = str(expression.get("key")), expression.get("operator")
    values = {str(v) for v in expression.get("values") or ()}
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":  # apimachinery: a missing key satisfies NotIn
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False  # an operator the API server refuses selects nothing


def selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether a LabelSelector selects an object with `labels`, as apimachinery decides."""
    if selector is None:
        return False
    match = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if any(labels.get(str(k)) != str(v) for k, v in match.items()):
        return False
    return all(isinstance(e, Mapping) and _requirement(e, labels) for e in expressions)


def missing(selector: Mapping[str, Any], labels: Mapping[str, str]) -> dict[str, str]:
    """The matchLabels the selector names and `labels` lacks (what namespaceLabels must add)."""
    match = selector.get("matchLabels") or {}
    return {str(k): str(v) for k, v in sorted(match.items()) if labels.get(str(k)) != str(v)}


def admits_from(fleet: Fleet, team: Team) -> bool:
    """Whether the team's ClusterQueue admits from the team's own rendered namespaces."""
    return selects(queue_selector(fleet, team), namespace_labels(fleet, team))
