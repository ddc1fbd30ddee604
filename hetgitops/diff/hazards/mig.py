"""Diff stage, day-2 hazards of MIG: the drain plan's nodes whose GPUs flip MIG mode or are
re-partitioned, one hazard per pool and config change."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from hetgitops.diff.drains import Drain
from hetgitops.diff.hazards.registry import Hazard, hazard_rule


@hazard_rule(
    "mig-mode-flip",
    when="A node's MIG mode turns on or off on some GPU: the GPUs reset.",
    fix=(
        "one node at a time: cordon, drain GPU pods, wait for "
        "nvidia.com/mig.config.state=success, uncordon."
    ),
)
def mig_mode_flips(drains: Sequence[Drain]) -> Iterator[Hazard]:
    """One hazard per pool and config change: its nodes flip together."""
    groups: dict[tuple[str, str, str], list[Drain]] = {}
    for drain in drains:
        if drain.mode_flip:
            groups.setdefault((drain.pool, drain.before, drain.after), []).append(drain)
    for (pool, _, _), members in groups.items():
        nodes = ", ".join(d.node for d in members)
        yield Hazard(
            rule="mig-mode-flip",
            subject=f"Pool {pool}" if pool else f"Node {members[0].node}",
            message=f"flips MIG mode on node(s) {nodes}: mig-manager stops each node's GPU stack "
            "(device plugin, DCGM, GPU clients) while it reconfigures",
            action="one node at a time: cordon, drain its GPU pods, wait for "
            "nvidia.com/mig.config.state=success, uncordon",
            span=members[0].span,
            scope=(("nodes", ",".join(d.node for d in members)),),
        )


@hazard_rule(
    "mig-repartition",
    when=(
        "A node's MIG layout changes on some GPUs (MIG mode stays on). mig-manager evicts no "
        "workload pod: it pauses the GPU Operator operands on the node (device plugin, "
        "gpu-feature-discovery, DCGM, DCGM exporter: their pods are deleted), then mig-parted "
        "destroys every GPU and compute instance on each changed GPU and creates the new ones. "
        "An instance a process still uses cannot be destroyed (NVML: in use): the apply fails "
        "and the node is left at nvidia.com/mig.config.state=failed; an instance no process "
        "holds is destroyed under the pod it was allocated to."
    ),
    fix=(
        "one node at a time: cordon, drain the pods on the changed GPUs' MIG slices (or let them "
        "finish), wait for nvidia.com/mig.config.state=success, uncordon."
    ),
)
def mig_repartitions(drains: Sequence[Drain]) -> Iterator[Hazard]:
    """GPUs re-partitioned without a MIG-mode flip, one hazard per pool and config change.
    What the GPU Operator's mig-manager (NVIDIA/mig-parted bd7160f4, pkg/mig/reconfigure/
    reconfigure.go) does: it sets the operands' nvidia.com/gpu.deploy.* labels to
    paused-for-mig-change and waits for their pods to go (Run, lines 164-172;
    shutdownKubernetesGPUClients, 371-386; waitForPodsToBeDeleted, 389-427), runs
    `nvidia-mig-parted apply` (applyMigConfig, 471-481), which for each GPU whose layout
    differs clears every compute and GPU instance before creating the new ones
    (cmd/nvidia-mig-parted/apply/config.go:92-100; pkg/mig/config/config.go:125-148 and
    ClearMigConfig, 220-249), and restores the labels on exit, success or not (setState,
    538-573). Nothing in it evicts, drains or cordons a workload pod; NVML refuses to destroy
    a GPU instance a process uses (nvmlGpuInstanceDestroy: NVML_ERROR_IN_USE), so the apply
    fails then, with the node's nvidia.com/mig.config.state=failed."""
    groups: dict[tuple[str, str, str], list[Drain]] = {}
    for drain in drains:
        if not drain.mode_flip:
            groups.setdefault((drain.pool, drain.before, drain.after), []).append(drain)
    for (pool, before, after), members in groups.items():
        nodes = ", ".join(d.node for d in members)
        gpus = sorted({g for d in members for g in d.gpus})
        which = f"GPU(s) {', '.join(map(str, gpus))}" if gpus else "the GPUs"
        yield Hazard(
            rule="mig-repartition",
            subject=f"Pool {pool}" if pool else f"Node {members[0].node}",
            message=f"re-partitions {which} on node(s) {nodes} ({before} -> {after}): mig-manager "
            "evicts no workload pod; it deletes the node's GPU Operator operand pods (device "
            "plugin, gpu-feature-discovery, DCGM, DCGM exporter) while it reconfigures, and "
            "mig-parted destroys every MIG instance on those GPUs: one a running pod still uses "
            "cannot be destroyed, so the apply fails (nvidia.com/mig.config.state=failed, the "
            "layout half applied); one no process holds is destroyed under its pod",
            action="one node at a time: cordon, drain the pods on those GPUs' MIG slices (or let "
            "them "
            "finish), wait for nvidia.com/mig.config.state=success, uncordon",
            span=members[0].span,
            scope=(
                ("nodes", ",".join(d.node for d in members)),
                ("pool", pool),
                ("gpus", ",".join(map(str, gpus))),
            ),
        )
