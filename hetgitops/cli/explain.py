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
    "--preempt",
    is_flag=True,
    help="Who Kueue would preempt to admit the job now (Kueue v0.19.2's preemption replayed): "
    "among the admitted workloads of --usage FILE, or of the cluster with --kubeconfig. "
    "Exit 0 when it is admitted (with or without preemption), 1 when no preemption helps.",
)
@click.option(
    "--usage",
    type=click.File("rb"),
    help="With --preempt, offline: the admitted workloads, a RunningWorkloads file "
    "(schemas/preempt-usage.schema.json) or a List of Kueue Workloads; - reads stdin.",
)
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
    preempt: bool,
    usage: BinaryIO | None,
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
    if usage is not None and not preempt:
        raise click.UsageError("--usage goes with --preempt")
    if preempt and (workload_ref is not None or (usage is None) == (kubeconfig is None)):
        raise click.UsageError(
            "--preempt reads the admitted workloads from --usage FILE or from --kubeconfig (one)"
        )

    def asked_for(policy: Any) -> list[Any]:
        text = None
        if manifest is not None:
            raw = manifest.read(run.MAX_MANIFEST_BYTES + 1)
            text = (run.manifest_text(raw, _source(manifest)), _source(manifest))
        asked = None
        if team is not None and profile is None and manifest is None:
            asked = request.Request(
                team, gpus, card, pool, per_node, gang, request.parse_mig(mig), tier
            )
        return run.workloads_asked(policy, text=text, profile=profile, team=team, asked=asked)

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
        if preempt:
            return _preempt(policy, kubeconfig, context, usage, output_format, asked_for)
        state = _live(lambda c: read_state(policy, c), kubeconfig, context) if kubeconfig else None
        try:
            if manifest is not None:
                source = _source(manifest)
                text = run.manifest_text(manifest.read(run.MAX_MANIFEST_BYTES + 1), source)
                found = run.explain_all(policy, run.manifests(text, source), state)
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


def _preempt(
    policy: Any,
    kubeconfig: Path | None,
    context: str | None,
    usage: BinaryIO | None,
    output_format: str,
    asked_for: Callable[[Any], list[Any]],
) -> int:
    """`explain --preempt`: the admitted workloads (file or cluster), then each job's answer."""
    from hetgitops.explain import preemption_formats, preemption_input, run
    from hetgitops.explain.workload import WorkloadError

    try:
        free = None
        if kubeconfig is not None:
            read = lambda c: preemption_input.live_view(policy, c)  # noqa: E731
            view = _live(read, kubeconfig, context)
            holders, free = view.holders, view.free
            for said in view.notes:  # what the reading could not see, before the answer
                note(f"hetgitops explain: {said}")
            source = "the cluster"
        else:
            assert usage is not None
            name = str(getattr(usage, "name", "<stdin>"))
            text = run.manifest_text(usage.read(run.MAX_MANIFEST_BYTES + 1), name)
            holders = preemption_input.read_usage(policy, text, name)
            source = name
        reports = run.preemption_reports(policy, asked_for(policy), holders, free)
    except WorkloadError as exc:
        note(f"hetgitops explain: {exc}")
        return EXIT_USAGE
    echo_report(preemption_formats.FORMATS[output_format](reports, source))
    admitted = ("fits", "preempt")
    return EXIT_OK if all(r.outcome in admitted for r in reports) else EXIT_FINDINGS


def _source(stream: BinaryIO) -> str:
    """What findings call the manifest: its path, or "-" for a stream without a name (standard
    input handed over by a caller that is not a terminal's shell, e.g. a library's runner)."""
    name = getattr(stream, "name", None)
    return name if isinstance(name, str) else "-"


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
        raise OSError(
            f"{exc} (explain reads ClusterQueues, Workloads, Nodes, Pods and Events)"
        ) from None
