"""Compile stage, `monitoring` target: recording rules joining exporter series to the policy.

Exporters know nodes, GPUs, namespaces and queues; the policy knows which pool, card type and
team each belongs to. Every join goes through the node labels NFD puts on (read from
`kube_node_labels`, hence the allowlist in the exporter values) or a `hetgitops-policy` fact.
Kueue series are read with `replica_role!="follower"`: in HA installs every replica reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hetgitops.compilers.monitoring import names
from hetgitops.compilers.monitoring import policy_rules as p
from hetgitops.compilers.monitoring.facts import Facts

NODE_POOL = "hetgitops:node_pool_info"
POOL_ALLOCATABLE = "hetgitops:pool_allocatable_cards"
NODE_CARDS = "hetgitops:node_cards_seen"
CQ_USAGE = "hetgitops:cq_flavor_usage_cards"
CQ_NOMINAL = "hetgitops:cq_flavor_nominal_cards"
CQ_FREE = "hetgitops:cq_flavor_free_cards"
POOL_USAGE = "hetgitops:pool_usage_cards"
COHORT_FREE = "hetgitops:cohort_card_type_free_cards"
TEAM_COST = "hetgitops:team_cost_per_hour"
GPU_UTILISATION = "hetgitops:gpu_utilisation_ratio"
TEAM_UTILISATION = "hetgitops:team_pool_gpu_utilisation_ratio"
TEAM_ALLOCATED = "hetgitops:team_pool_allocated_cards"
CQ_PENDING = "hetgitops:cq_pending_workloads"
CQ_WAIT = "hetgitops:cq_admission_wait_seconds"
NODE_MIG = "hetgitops:node_mig_info"
TEAM_VOLCANO = "hetgitops:team_volcano_allocated"
RUNNING = f'{names.POD_PHASE}{{phase="Running"}}'


def record(name: str, expr: str, **labels: str) -> dict[str, Any]:
    rule: dict[str, Any] = {"record": name, "expr": expr}
    if labels:
        rule["labels"] = labels
    return rule


def _kueue(metric: str) -> str:
    return f"max by (cluster_queue, flavor, resource) ({metric}{{{names.NOT_FOLLOWER}}})"


def _cards(metric: str) -> str:
    return (
        f"sum by (cluster_queue, flavor) ({_kueue(metric)}"
        f" * on (flavor, resource) group_left () {p.FLAVOR_WEIGHT})"
    )


def node_rules(pool_key: str, card_key: str, dra_pools: Sequence[str] = ()) -> list[dict[str, Any]]:
    """A node's pool and card type, and each pool's live cards on schedulable nodes: what
    the device plugin advertises (`kube_node_status_allocatable`, weighed into cards) or, on a
    pool whose GPUs are DRA devices (which no Node's allocatable and no kube-state-metrics
    series shows), the GPUs and MIG instances dcgm-exporter sees there, weighed the same way
    (`NODE_CARDS`)."""
    pool, card = names.node_label(pool_key), names.node_label(card_key)
    labelled = (
        f'label_replace(label_replace({names.NODE_LABELS}{{{pool}!=""}}, "pool", "$1", '
        f'"{pool}", "(.+)"), "card_type", "$1", "{card}", "(.+)")'
    )
    schedulable = (
        f"(max by (node, resource) ({names.NODE_ALLOCATABLE})"
        f" unless on (node) ({names.NODE_UNSCHEDULABLE} == 1))"
    )
    rules = [record(NODE_POOL, f"max by (node, pool, card_type) ({labelled})")]
    if not dra_pools:
        rules.append(record(POOL_ALLOCATABLE, _advertised(schedulable, "")))
        return rules
    on_dra = names.regex_of(sorted(dra_pools))
    seen = (
        f"(max by (node) ({NODE_CARDS})"
        f" unless on (node) ({names.NODE_UNSCHEDULABLE} == 1))"
        f' * on (node) group_left (pool, card_type) {NODE_POOL}{{pool=~"{on_dra}"}}'
    )
    others = f'{{pool!~"{on_dra}"}}'
    rules.append(record(NODE_CARDS, _cards_seen(on_dra)))
    rules.append(
        record(
            POOL_ALLOCATABLE,
            f"{_advertised(schedulable, others)} or sum by (pool, card_type) ({seen})",
        )
    )
    return rules


def _advertised(schedulable: str, pools: str) -> str:
    return (
        f"sum by (pool, card_type) ({schedulable}"
        f" * on (node) group_left (pool, card_type) {NODE_POOL}{pools}"
        f" * on (pool, resource) group_left () {p.NODE_WEIGHT})"
    )


def _dcgm_series(matcher: str = "") -> str:
    """dcgm-exporter's per-GPU (or per-MIG-instance) series with the node as `node`."""
    both = f"{names.GPU_UTIL}{matcher} or {names.GR_ENGINE_ACTIVE}{matcher}"
    return f'label_replace({both}, "node", "$1", "Hostname", "(.+)")'


def _cards_seen(on_dra: str) -> str:
    """Per node of a DRA pool, the cards dcgm-exporter sees, as the device plugin's allocatable
    weighs them: a whole GPU (one series per GPU it monitors) is one card, a MIG-partitioned
    GPU (one series per instance, the parent's `gpu` index, `GPU_I_PROFILE`) the share of
    each of its instances (`policy_rules.MIG_WEIGHT`, the pool's `node_resource_cards` of that
    profile). Series of both counters are seen once (GPU_UTIL on whole GPUs, GR_ENGINE_ACTIVE
    on MIG instances, as `gpu_rules` reads them)."""
    sliced_only = _dcgm_series('{GPU_I_PROFILE!=""}')
    instances = f"group by (node, gpu, GPU_I_ID, GPU_I_PROFILE) ({sliced_only})"
    whole = f"group by (node, gpu) ({_dcgm_series()}) unless on (node, gpu) {instances}"
    sliced = (
        f'label_replace({instances}, "mig_profile", "$1", "GPU_I_PROFILE", "(.+)")'
        f' * on (node) group_left (pool) {NODE_POOL}{{pool=~"{on_dra}"}}'
        f" * on (pool, mig_profile) group_left () {p.MIG_WEIGHT}"
    )
    return f"sum by (node) (({whole}) or ({sliced}))"


def kueue_rules(facts: Facts, wait_window: str, percentile: float) -> list[dict[str, Any]]:
    usage_or_zero = f"({CQ_USAGE} or {CQ_NOMINAL} * 0)"
    return [
        record(CQ_USAGE, _cards(names.USAGE)),
        record(CQ_NOMINAL, _cards(names.NOMINAL)),
        record(CQ_FREE, f"clamp_min({CQ_NOMINAL} - {usage_or_zero}, 0)"),
        record(
            POOL_USAGE,
            f"sum by (pool, card_type) ({CQ_USAGE}"
            f" * on (flavor) group_left (pool, card_type) {p.FLAVOR_INFO})",
        ),
        record(
            COHORT_FREE,
            f"sum by (root_cohort, card_type) ({CQ_FREE}"
            f" * on (flavor) group_left (card_type) {p.FLAVOR_INFO}"
            f' * on (cluster_queue) group_left (root_cohort) {p.TEAM_INFO}{{root_cohort!=""}})',
        ),
        record(
            TEAM_COST,
            f"sum by (team) ({_kueue(names.USAGE)}"
            f" * on (flavor, resource) group_left () {p.FLAVOR_COST}"
            f" * on (cluster_queue) group_left (team) {p.TEAM_INFO})",
        ),
        record(
            CQ_PENDING,
            f'max by (cluster_queue) ({names.PENDING}{{status="active", {names.NOT_FOLLOWER}}})',
        ),
        record(
            CQ_WAIT,
            f"histogram_quantile({p.number(percentile)}, sum by (le, cluster_queue, "
            f"priority_class) (rate({names.ADMISSION_WAIT}_bucket{{{names.NOT_FOLLOWER}}}"
            f"[{wait_window}])))",
            quantile=p.number(percentile),
        ),
    ]


def _dcgm(metric: str, pools: list[str], scale: str) -> str:
    return (
        f'(label_replace({metric}, "node", "$1", "Hostname", "(.+)"){scale}'
        f" * on (node) group_left (pool, card_type)"
        f' {NODE_POOL}{{pool=~"{names.regex_of(pools)}"}})'
    )


def gpu_rules(facts: Facts) -> list[dict[str, Any]]:
    """Utilisation per GPU: `DCGM_FI_PROF_GR_ENGINE_ACTIVE` in MIG pools (GPU_UTIL is not
    reported for MIG instances), `DCGM_FI_DEV_GPU_UTIL` (percent) elsewhere. A team's cards:
    what its running pods request (weighed), or on a DRA pool the GPUs dcgm-exporter labels
    with a pod of its namespaces (`_dra_allocated`): a claim is no container request."""
    whole = [f.name for f in facts.pools.values() if f.nvidia and not f.mig]
    sliced = [f.name for f in facts.pools.values() if f.nvidia and f.mig]
    parts = []
    if whole:
        parts.append(_dcgm(names.GPU_UTIL, whole, " / 100"))
    if sliced:
        parts.append(_dcgm(names.GR_ENGINE_ACTIVE, sliced, ""))
    if not parts:
        return []
    requests = (
        f'max by (namespace, pod, container, node, resource) ({names.POD_REQUESTS}{{node!=""}})'
        f" * on (namespace, pod) group_left () (max by (namespace, pod) ({RUNNING}) == 1)"
    )
    on_dra = sorted(f.name for f in facts.pools.values() if f.nvidia and f.dra)
    plugin = f'{{pool!~"{names.regex_of(on_dra)}"}}' if on_dra else ""
    allocated = (
        f"sum by (team, pool, card_type) ({requests}"
        f" * on (node) group_left (pool, card_type) {NODE_POOL}{plugin}"
        f" * on (pool, resource) group_left () {p.NODE_WEIGHT}"
        f" * on (namespace) group_left (team) {p.NAMESPACE_TEAM})"
    )
    if on_dra:
        allocated += f" or {_dra_allocated(on_dra)}"
    return [
        record(GPU_UTILISATION, " or ".join(parts)),
        record(
            TEAM_UTILISATION,
            f"avg by (team, pool, card_type) ({GPU_UTILISATION}"
            f" * on (namespace) group_left (team) {p.NAMESPACE_TEAM})",
        ),
        record(TEAM_ALLOCATED, allocated),
    ]


def _dra_allocated(pools: list[str]) -> str:
    """A team's cards in DRA pools: the distinct GPUs dcgm-exporter labels with a pod of one
    of its namespaces. Its DRA pod mapping (`KUBERNETES_ENABLE_DRA`) copies a GPU's series
    once per pod holding it, with `namespace`, `pod`, `container` and `dra_*` labels; it finds
    whole GPUs only (an instance is looked up as `<gpu>-<instance>`, DRA devices are keyed by
    the parent's UUID: docs/upstream.md), and kube-state-metrics shows no claim as a request."""
    held = (
        f"group by (node, gpu, namespace, pool, card_type) ({GPU_UTILISATION}"
        f'{{pool=~"{names.regex_of(pools)}", namespace!="", GPU_I_PROFILE=""}})'
    )
    return (
        f"count by (team, pool, card_type) ({held}"
        f" * on (namespace) group_left (team) {p.NAMESPACE_TEAM})"
    )


def mig_rules(facts: Facts, pool_key: str) -> list[dict[str, Any]]:
    pools = [f.name for f in facts.pools.values() if f.mig_configs]
    if not pools:
        return []
    pool = names.node_label(pool_key)
    config, state = (
        names.node_label(names.MIG_CONFIG_LABEL),
        names.node_label(names.MIG_STATE_LABEL),
    )
    selected = f'{names.NODE_LABELS}{{{pool}=~"{names.regex_of(pools)}"}}'
    renamed = (
        f'label_replace(label_replace(label_replace({selected}, "pool", "$1", "{pool}", "(.+)"),'
        f' "mig_config", "$1", "{config}", "(.*)"), "mig_state", "$1", "{state}", "(.*)")'
    )
    return [record(NODE_MIG, f"max by (node, pool, mig_config, mig_state) ({renamed})")]


def volcano_rules(facts: Facts) -> list[dict[str, Any]]:
    if not facts.volcano:
        return []
    return [
        record(
            TEAM_VOLCANO,
            f"max by (queue_name, resource) ({names.VOLCANO_ALLOCATED})"
            f" * on (queue_name) group_left (team, pool) {p.VOLCANO_QUEUE}",
        )
    ]
