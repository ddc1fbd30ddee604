"""`hetgitops explain`: where a job lands and why it would pend (thin: logic in explain/)."""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import click

from hetgitops.cli.common import (
    EXIT_CODES_HELP,
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    NOW_OPTION,
    echo_report,
    guarded,
    note,
    policy_paths,
)


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("target", nargs=-1, metavar="[PATH]... | workload NS/NAME")
@click.option(
    "--kubeconfig",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    help="Live mode, read-only: against the cluster's current usage; needed by "
    "`explain workload NS/NAME`.",
)
@click.option("--context", help="kubeconfig context (default: its current one).")
@click.option(
    "--policy",
    "paths",
    multiple=True,
    type=click.Path(path_type=Path, exists=True),
    help="Policy files or folders (default: policies/); the same as the PATH arguments.",
)
@click.option(
    "-f",
    "--filename",
    "manifest",
    type=click.File("rb"),
    help="A manifest to explain (Job, JobSet, PyTorchJob, Volcano Job, "
    "LeaderWorkerSet, Deployment, Pod, RayJob, RayCluster, RayService); - reads stdin.",
)
@click.option("--team", help="The team asking (request and --profile).")
@click.option("--profile", help="Explain the team's job templates of this WorkloadProfile.")
@click.option("--card", help="Card type the job selects (nodeSelector on the card-type label).")
@click.option("--pool", help="Pool the job selects (nodeSelector on the pool label).")
@click.option("--gpus", type=click.IntRange(min=1), help="Accelerator units in total.")
@click.option("--per-node", type=click.IntRange(min=1), help="Units per pod (one pod per node).")
@click.option("--gang", type=click.IntRange(min=1), help="Pods that start together.")
@click.option("--mig", multiple=True, metavar="PROFILE=N", help="N MIG instances of PROFILE.")
@click.option("--tier", help="PriorityTier (WorkloadPriorityClass) of the job.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
    help="Report format.",
)
@NOW_OPTION
def explain(
    target: tuple[str, ...],
    kubeconfig: Path | None,
    context: str | None,
    paths: tuple[Path, ...],
    manifest: BinaryIO | None,
    team: str | None,
    profile: str | None,
    card: str | None,
    pool: str | None,
    gpus: int | None,
    per_node: int | None,
    gang: int | None,
    mig: tuple[str, ...],
    tier: str | None,
    output_format: str,
    now: dt.date,
) -> None:
    """Where a job would land on an empty cluster, or why it would pend: the flavors Kueue
    tries in order, its reason and message, Volcano's and kube-scheduler's view, and the
    policy line to change. PATH: policy files or folders, as for validate (default:
    policies/). Exit 1 when the job would not be admitted."""
    from hetgitops.explain import existing, formats, request, run
    from hetgitops.explain.state import read_state
    from hetgitops.explain.workload import WorkloadError

    workload_ref, positional = _split_target(target)
    if positional and paths:
        raise click.UsageError("give the policy as PATH or as --policy PATH, not both")
    paths = paths or positional
    modes = sum(x is not None for x in (manifest, profile, workload_ref)) + bool(gpus or mig)
    if workload_ref is not None and kubeconfig is None:
        raise click.UsageError("explain workload NS/NAME reads the cluster: give --kubeconfig")
    if modes != 1:
        raise click.UsageError(
            "give one of -f FILE, --profile P --team T, or --team T --gpus N|--mig P=N"
        )
    if (profile or gpus or mig) and not team:
        raise click.UsageError("--team is required with --profile, --gpus and --mig")
    if card and pool:
        raise click.UsageError("--card and --pool exclude each other")

    def go() -> int:
        try:
            policy = run.load_policy(policy_paths(paths), now)
        except run.PolicyError as failed:
            from hetgitops.reporting import failure

            echo_report(failure.render(failed.result, output_format))
            return EXIT_FINDINGS
        if workload_ref is not None:
            assert kubeconfig is not None
            report = _live(
                lambda c: existing.explain_workload(policy, c, *workload_ref), kubeconfig, context
            )
            echo_report(formats.render_workload(report, output_format))
            done = ("admitted", "finished", "running", "succeeded")
            return EXIT_OK if report.state in done else EXIT_FINDINGS
        state = _live(lambda c: read_state(policy, c), kubeconfig, context) if kubeconfig else None
        try:
            if manifest is not None:
                text = run.manifest_text(manifest.read(run.MAX_MANIFEST_BYTES + 1), manifest.name)
                found = run.explain_all(policy, run.manifests(text, manifest.name), state)
            elif profile is not None:
                assert team is not None
                found = run.profile_explanations(policy, profile, team, state)
            else:
                assert team is not None
                asked = request.Request(
                    team, gpus, card, pool, per_node, gang, request.parse_mig(mig), tier
                )
                found = run.explain_all(policy, [request.from_request(policy, asked)], state)
        except WorkloadError as exc:
            # What was asked cannot be explained (a manifest the API server would refuse, a
            # team that does not exist): a usage error, said plainly with where it is.
            note(f"hetgitops explain: {exc}")
            return EXIT_USAGE
        echo_report(formats.FORMATS[output_format](found))
        return EXIT_OK if all(e.verdict == "admitted" for e in found) else EXIT_FINDINGS

    sys.exit(guarded(go))


def _split_target(target: tuple[str, ...]) -> tuple[tuple[str, str] | None, tuple[Path, ...]]:
    """`workload NS/NAME`, or the policy PATHs (as validate and render take them)."""
    # A folder named `workload` is a PATH unless a NAMESPACE/NAME that is no path follows it.
    live = len(target) == 2 and not Path(target[1]).exists()
    if target[:1] == ("workload",) and (live or not Path("workload").exists()):
        if len(target) != 2 or target[1].count("/") != 1:
            raise click.UsageError("expected `explain workload NAMESPACE/NAME`")
        namespace, name = target[1].split("/")
        return (namespace, name), ()
    missing = [t for t in target if not Path(t).exists()]
    if missing:
        raise click.UsageError(
            f"no such policy PATH {missing[0]!r} (or, for a live workload, "
            "`explain workload NAMESPACE/NAME --kubeconfig FILE`)"
        )
    return None, tuple(Path(t) for t in target)


T = TypeVar("T")


def _live(read: Callable[[Any], T], kubeconfig: Path, context: str | None) -> T:
    """Run `read` against the cluster; an unreachable or forbidden cluster is exit 4."""
    from hetgitops.live.client import Cluster, ClusterError, Forbidden, NotServed

    try:
        cluster = Cluster(kubeconfig, context)
        try:
            return read(cluster)
        finally:
            cluster.close()
    except (ClusterError, Forbidden, NotServed) as exc:
        raise OSError(f"{exc} (explain reads ClusterQueues, Workloads and Events)") from None
