"""integrations/argocd/applicationset-multicluster.yaml: its matrix generator (git directories x
Argo CD clusters) yields exactly one Application per rendered <cluster>/<target> directory of
examples/multicluster, sent to that cluster.

Argo CD is not run here: the two generators are evaluated as Argo CD documents them
(Generators-Git.md: directories matched with Go's path.Match, `path.segments`, `path.basename`;
Generators-Cluster.md: cluster Secrets selected by label, `server`/`name` parameters;
Generators-Matrix.md: the second child's templates see the first child's parameters)."""

from __future__ import annotations

import datetime as dt
import fnmatch
import functools
import re
from typing import Any, NamedTuple

import yaml

from hetgitops import api
from hetgitops.output import manifests as output
from tests.integrations.conftest import REPO

APPSET = REPO / "integrations" / "argocd" / "applicationset-multicluster.yaml"
EXAMPLE = REPO / "examples" / "multicluster"
ROOT = "rendered"


class Rendered(NamedTuple):
    dirs: set[str]  # every directory of the committed tree: what the git generator sees
    targets: set[str]  # rendered/<cluster>/<target> directories holding a kustomization
    secrets: list[dict[str, Any]]  # one Argo CD cluster Secret per Cluster document


@functools.cache
def rendered() -> Rendered:
    result = api.render([EXAMPLE], api.Options(now=dt.date(2026, 12, 1), check_output=False))
    assert not result.failed() and result.policy is not None
    files = output.tree(result.manifests)
    dirs: set[str] = set()
    for path in files:
        parts = [ROOT, *path.split("/")[:-1]]
        dirs |= {"/".join(parts[:i]) for i in range(2, len(parts) + 1)}
    targets = {
        f"{ROOT}/{p.rsplit('/', 1)[0]}"
        for p in files
        if p.count("/") == 2 and p.endswith("/kustomization.yaml")
    }
    secrets = [
        {
            "name": c.argocd_name or c.name,
            "server": f"https://{c.name}.clusters.example:6443",
            "labels": {"argocd.argoproj.io/secret-type": "cluster", **c.argocd_labels},
        }
        for c in result.policy.clusters.values()
    ]
    return Rendered(dirs, targets, secrets)


def _template(text: str, params: dict[str, Any]) -> str:
    """The Go-template subset the ApplicationSet uses; anything else fails (missingkey=error)."""

    def one(match: re.Match[str]) -> str:
        expr = match.group(1).strip()
        index = re.fullmatch(r"index \.path\.segments (\d+)", expr)
        if index:
            return str(params["path"]["segments"][int(index.group(1))])
        value: Any = params
        assert expr.startswith("."), expr
        for key in expr[1:].split("."):
            value = value[key]
        return str(value)

    return re.sub(r"\{\{(.*?)\}\}", one, text)


def _render(node: Any, params: dict[str, Any]) -> Any:
    if isinstance(node, str):
        return _template(node, params)
    if isinstance(node, list):
        return [_render(item, params) for item in node]
    if isinstance(node, dict):
        return {key: _render(value, params) for key, value in node.items()}
    return node


def _git(generator: dict[str, Any], dirs: set[str]) -> list[dict[str, Any]]:
    patterns = [d["path"] for d in generator["directories"] if not d.get("exclude")]
    excluded = [d["path"] for d in generator["directories"] if d.get("exclude")]

    def match(path: str, pattern: str) -> bool:  # Go path.Match: `*` stops at `/`
        return path.count("/") == pattern.count("/") and fnmatch.fnmatchcase(path, pattern)

    chosen = sorted(
        d
        for d in dirs
        if any(match(d, p) for p in patterns) and not any(match(d, p) for p in excluded)
    )
    return [
        {"path": {"path": d, "basename": d.rsplit("/", 1)[-1], "segments": d.split("/")}}
        for d in chosen
    ]


def _clusters(
    generator: dict[str, Any], secrets: list[dict[str, Any]], params: dict[str, Any]
) -> list[dict[str, Any]]:
    wanted = _render(generator["selector"]["matchLabels"], params)
    return [
        {"name": s["name"], "server": s["server"]}
        for s in secrets
        if all(s["labels"].get(k) == v for k, v in wanted.items())
    ]


def applications(secrets: list[dict[str, Any]], dirs: set[str]) -> list[dict[str, Any]]:
    appset = yaml.safe_load(APPSET.read_text())
    [matrix] = appset["spec"]["generators"]
    first, second = matrix["matrix"]["generators"]
    apps = []
    for params in _git(first["git"], dirs):
        for cluster in _clusters(second["clusters"], secrets, params):
            apps.append(_render(appset["spec"]["template"], {**params, **cluster}))
    return apps


def test_one_application_per_rendered_cluster_and_target() -> None:
    tree = rendered()
    apps = applications(tree.secrets, tree.dirs)
    assert sorted(a["spec"]["source"]["path"] for a in apps) == sorted(tree.targets)
    assert len(tree.targets) == 2 + 5 + 5  # hub: core, kueue; each worker: five targets
    assert f"{ROOT}/hopper-east/nodes/plan" in tree.dirs  # seen, and not matched
    names = [a["metadata"]["name"] for a in apps]
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", n) for n in names)
    servers = {s["name"]: s["server"] for s in tree.secrets}
    for app in apps:
        cluster = app["spec"]["source"]["path"].split("/")[1]
        assert app["spec"]["destination"]["server"] == servers[cluster]
        assert app["metadata"]["labels"]["hetgitops.io/cluster"] == cluster


def test_a_cluster_without_a_labelled_secret_gets_no_application() -> None:
    tree = rendered()
    unlabelled = [
        {**s, "labels": {"argocd.argoproj.io/secret-type": "cluster"}} if s["name"] == "hub" else s
        for s in tree.secrets
    ]
    paths = {a["spec"]["source"]["path"].split("/")[1] for a in applications(unlabelled, tree.dirs)}
    assert paths == {"hopper-east", "ampere-west"}
