"""Drift stage, `--mode server-dry-run`: what a server-side apply of the policy as field manager
`hetgitops` would change, asked of the API server itself (one PATCH with dryRun=All per object;
it needs the `patch` verb, which read-only credentials lack)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hetgitops.diagnostics import Diagnostic
from hetgitops.drift.compare import compare, display
from hetgitops.drift.findings import finding, shown, writers_text
from hetgitops.drift.normalise import strip_live
from hetgitops.drift.ownership import Ownership
from hetgitops.live.client import Cluster, Forbidden, RequestFailed, Resource
from hetgitops.output.manifests import Manifest


class DryRunForbidden(Exception):
    """The credentials may not patch: server-dry-run mode cannot work with them (exit 4)."""


def dry_run_object(
    cluster: Cluster, resource: Resource, manifest: Manifest, live: Mapping[str, Any]
) -> list[Diagnostic]:
    try:
        after = cluster.apply_dry_run(resource, manifest.obj)
    except Forbidden as exc:
        raise DryRunForbidden(
            f"--mode server-dry-run needs `patch` on {resource.plural} ({exc.message}); "
            "read-only credentials can use the default --mode read-only"
        ) from None
    except RequestFailed as exc:
        return [
            finding(
                "drift-apply-changes",
                f"{_name(manifest)}: the API server would refuse the apply: {exc.message}",
                manifest.origin,
                path=_name(manifest),
            )
        ]
    diffs, extras = compare(strip_live(after), strip_live(live), schema=None)
    ownership = Ownership(live)
    secret = manifest.kind == "Secret"
    found = []
    for diff in diffs:
        before = "absent" if diff.change == "missing" else _shown(diff.live, secret)
        writers = ownership.at(diff.path)
        found.append(
            finding(
                "drift-apply-changes",
                f"{_name(manifest)}: an apply would set {diff.display} to "
                f"{_shown(diff.desired, secret)} (live {before}; written by "
                f"{writers_text(writers)})",
                manifest.origin,
                path=f"{_name(manifest)}: {diff.display}",
            )
        )
    for path, value in extras:
        found.append(
            finding(
                "drift-apply-changes",
                f"{_name(manifest)}: an apply would remove {display(live, path)} "
                f"(live {_shown(value, secret)})",
                manifest.origin,
                path=f"{_name(manifest)}: {display(live, path)}",
            )
        )
    return found


def _name(manifest: Manifest) -> str:
    ns = f"{manifest.namespace}/" if manifest.namespace else ""
    return f"{manifest.kind} {ns}{manifest.name}"


def _shown(value: Any, secret: bool) -> str:
    return "<redacted>" if secret else shown(value)
