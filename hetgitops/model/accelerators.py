"""Model stage: the extended resources accelerators are advertised under, by their device
plugins, so every reader that asks "does this node (or request) hold accelerators" uses one
list: drift (nodes in no pool) and import (`adopt/fields.py` ACCELERATOR_PREFIXES is this).

- NVIDIA: `nvidia.com/gpu`, and `nvidia.com/mig-<profile>` under migStrategy mixed
  (`model.mig.resource_name`);
- AMD: `amd.com/gpu`; Huawei Ascend: `huawei.com/Ascend910` and the like; Cambricon:
  `cambricon.com/mlu`; Intel Gaudi: `habana.ai/gaudi`;
- Intel GPUs: `gpu.intel.com/i915` and `gpu.intel.com/xe` (intel-device-plugins-for-kubernetes,
  cmd/gpu_plugin README: the plugin registers these and their `_monitoring` twins).
"""

from __future__ import annotations

from hetgitops.model import mig

PREFIXES = (
    "nvidia.com/gpu",
    mig.resource_name(""),
    "amd.com/gpu",
    "huawei.com/",
    "cambricon.com/",
    "habana.ai/",
    "gpu.intel.com/i915",
    "gpu.intel.com/xe",
)


def is_accelerator(resource: str) -> bool:
    """Whether `resource` is an accelerator's extended resource (a card type's own name is
    one whatever its prefix: callers check `CardType.resource_name` first)."""
    return resource.startswith(PREFIXES)
