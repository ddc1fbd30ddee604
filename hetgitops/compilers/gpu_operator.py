"""Compile stage, `gpu-operator` target: the custom mig-parted ConfigMap, the device-plugin
sharing ConfigMap and the Helm values that point the NVIDIA GPU Operator at both.

The node labels that select a config per node come from the `nodes` target; both use
`hetgitops.compilers.nvidia`, so a label can only name a config shipped here.
"""

from __future__ import annotations

from typing import Any

from hetgitops.compilers import COMPILERS, agents, nodes, nvidia
from hetgitops.diagnostics import NOWHERE, Span
from hetgitops.model.policy import Fleet, Policy
from hetgitops.output.manifests import Manifest, metadata, to_yaml

TARGET = "gpu-operator"
MIG_CONFIG_KEY = "config.yaml"
HELM_VALUES_FILE = "helm-values.yaml"


def mig_configs(policy: Policy) -> dict[str, list[Any]]:
    """Config name -> mig-parted entries: `all-disabled` first, then one per distinct layout."""
    configs: dict[str, list[Any]] = {
        nvidia.ALL_DISABLED: [{"devices": "all", "mig-enabled": False}]
    }
    named: dict[str, list[Any]] = {}
    for pool, _card in nvidia.nvidia_pools(policy):
        for node in pool.nodes:
            found = nvidia.node_mig_config(policy, pool, node)
            if found is not None and found[0] != nvidia.ALL_DISABLED:
                # A name several card types share (an adopted `configName`, like the
                # operator's all-1g.10gb): one config, entries told apart by device filter.
                entries = named.setdefault(found[0], [])
                entries.extend(e for e in found[1] if e not in entries)
    configs.update(sorted(named.items()))
    return configs


def sharing_configs(policy: Policy) -> dict[str, dict[str, Any]]:
    """Device-plugin config key -> config file; `default` (no sharing) is always present."""
    configs = {nvidia.DEFAULT_SHARING: nvidia.default_sharing_config(policy)}
    for pool, card in nvidia.nvidia_pools(policy):
        name = nvidia.sharing_config_name(pool)
        config = nvidia.sharing_config(policy, pool, card)
        if name is not None and config is not None:
            configs[name] = config
    return dict(sorted(configs.items()))


def _origin(policy: Policy) -> Span:
    """The Fleet's gpuOperator settings (or the Fleet itself, where it has none)."""
    return policy.fleet.origin.at("spec", "gpuOperator") if policy.fleet else NOWHERE


def _mig_config_map(policy: Policy, fleet: Fleet) -> Manifest:
    document = {"version": "v1", "mig-configs": mig_configs(policy)}
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(fleet, fleet.mig_config_name, namespace=fleet.gpu_operator_namespace),
        "data": {MIG_CONFIG_KEY: to_yaml(document)},
    }
    return Manifest(TARGET, obj, _origin(policy))


def _sharing_config_map(policy: Policy, fleet: Fleet) -> Manifest:
    data = {name: to_yaml(config) for name, config in sharing_configs(policy).items()}
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(
            fleet, fleet.device_plugin_config_name, namespace=fleet.gpu_operator_namespace
        ),
        "data": data,
    }
    return Manifest(TARGET, obj, _origin(policy))


def helm_values(policy: Policy, fleet: Fleet) -> dict[str, Any]:
    """The GPU Operator chart values that wire both ConfigMaps in. `create: false` because
    the ConfigMaps are ours (applied from the tree); the chart must not own them too."""
    values: dict[str, Any] = {
        "mig": {"strategy": fleet.mig_strategy},
        "migManager": {
            "config": {
                "create": False,
                "name": fleet.mig_config_name,
                "default": nvidia.ALL_DISABLED,
            }
        },
        "devicePlugin": {
            "config": {
                "create": False,
                "name": fleet.device_plugin_config_name,
                "default": nvidia.DEFAULT_SHARING,
            }
        },
    }
    operands = agents.pool_tolerations(policy, nvidia_only=True)
    if operands:  # driver, device plugin, GFD, mig-manager... must run on tainted pools
        values["daemonsets"] = {
            "tolerations": agents.with_defaults(agents.GPU_OPERATOR_DEFAULT, operands)
        }
    bundled: dict[str, Any] = {}
    if "nodes" in fleet.targets:
        # The operator bundles NFD with `extraLabelNs: [nvidia.com]`; values replace lists.
        config = nodes.nfd_master_config(policy)
        config["extraLabelNs"] = sorted({*config["extraLabelNs"], "nvidia.com"})
        bundled["master"] = {"config": config}
    # The bundled NFD worker labels the GPU nodes GFD and the operands are scheduled by, so it
    # must run on every tainted pool whoever writes the node labels (with the nodes target or
    # without it, as on an imported cluster whose taints are already there).
    workers = agents.pool_tolerations(policy)
    if workers:
        tolerations = agents.with_defaults(agents.BUNDLED_NFD_DEFAULT, workers)
        bundled["worker"] = {"tolerations": tolerations}
    if bundled:
        values["node-feature-discovery"] = bundled
    return values


def compile_gpu_operator(policy: Policy) -> list[Manifest]:
    """Nothing when the fleet has no NVIDIA pool: the operator has nothing to configure."""
    fleet = policy.fleet
    if fleet is None or not nvidia.nvidia_pools(policy):
        return []
    values = Manifest(
        TARGET,
        helm_values(policy, fleet),
        _origin(policy),
        applied=False,
        filename=HELM_VALUES_FILE,
    )
    return [_mig_config_map(policy, fleet), _sharing_config_map(policy, fleet), values]


COMPILERS[TARGET] = compile_gpu_operator
