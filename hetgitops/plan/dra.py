"""Plan stage: Dynamic Resource Allocation facts: which pools claim devices through NVIDIA's DRA
driver, the DeviceClass each card type (and MIG profile) gets, the CEL that selects exactly that
card, the Kueue quota resource it is charged as, and the ResourceClaimTemplates jobs claim.

Compilers spell these as objects (`compilers/dra.py`); checks (`checks/dra.py`) read the same facts,
so a class a template claims and the class a mapping names cannot come from two places.

The driver's vocabulary is pinned to NVIDIA/k8s-dra-driver-gpu v25.12.0 (commit 0882da87):
- full GPU attributes: `cmd/gpu-kubelet-plugin/partitions.go` (type, uuid, productName, brand,
  architecture, cudaComputeCapability, driverVersion, cudaDriverVersion, the standard
  `resource.kubernetes.io/pciBusID`), `deviceinfo.go` (capacity `memory` in bytes,
  `resource.kubernetes.io/pcieRoot`, `addressingMode`);
- MIG attributes and capacities: `deviceinfo.go` (parentUUID, profile; multiprocessors, copyEngines,
  decoders, encoders, jpegEngines, ofaEngines, memory, memorySlice<i>);
- `index` and `minor` are gone since v25.8.0 (commits 36fc80ab and 50d90da0);
- architecture strings: go-nvlib `pkg/nvlib/device/device.go` (vendored at the tag);
- DeviceClasses the chart ships: `deployments/helm/nvidia-dra-driver-gpu/templates/
  deviceclass-gpu.yaml` (`gpu.nvidia.com`, `extendedResourceName: nvidia.com/gpu` on
  resource.k8s.io/v1) and `deviceclass-mig.yaml` (`mig.nvidia.com`, no extended resource name).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hetgitops.model import mig
from hetgitops.model.policy import CardType, Policy, Pool, derived

DRIVER = "gpu.nvidia.com"
DRIVER_RELEASE = "v25.12.0"
CLAIMS = "draClaims"
EXTENDED = "draExtendedResource"
DEVICE_PLUGIN = "devicePlugin"
# The GPU Operator's per-node switch of its device-plugin DaemonSet (gpu-operator
# controllers/state_manager.go:86-96).
DEVICE_PLUGIN_SWITCH = "nvidia.com/gpu.deploy.device-plugin"
# The quota resources and DeviceClasses hetgitops names live under this domain.
DOMAIN = "dra.hetgitops.io"
STANDARD = "resource.kubernetes.io/"

GPU_ATTRIBUTES = frozenset(
    {
        "type",
        "uuid",
        "productName",
        "brand",
        "architecture",
        "cudaComputeCapability",
        "driverVersion",
        "cudaDriverVersion",
        "addressingMode",
        STANDARD + "pciBusID",
        STANDARD + "pcieRoot",
    }
)
MIG_ATTRIBUTES = GPU_ATTRIBUTES | {"parentUUID", "profile"}
GPU_CAPACITIES = frozenset({"memory"})
MIG_CAPACITIES = frozenset(
    {"memory", "multiprocessors", "copyEngines", "decoders", "encoders", "jpegEngines"}
    | {"ofaEngines"}
)
MEMORY_SLICE = re.compile(r"memorySlice\d+")
# Attributes older driver releases published and the release that removed them.
REMOVED = {"index": "v25.8.0", "minor": "v25.8.0"}
# The catalogue's architecture -> the string the driver publishes (go-nvlib, see above).
ARCHITECTURES = {
    "kepler": "Kepler",
    "maxwell": "Maxwell",
    "pascal": "Pascal",
    "volta": "Volta",
    "turing": "Turing",
    "ampere": "Ampere",
    "ada": "Ada Lovelace",
    "ada-lovelace": "Ada Lovelace",
    "hopper": "Hopper",
    "blackwell": "Blackwell",
}
# The classes the driver's chart ships, by extended resource name.
DRIVER_EXTENDED_CLASSES = {"nvidia.com/gpu": "gpu.nvidia.com"}
# A card's published memory is NVML's total (an 80 GB H100 reports 79.6 GiB): the selector
# accepts the catalogue's memoryGiB within this fraction either way.
MEMORY_TOLERANCE = 0.1


def on_dra(pool: Pool) -> bool:
    return pool.allocation in (CLAIMS, EXTENDED)


def claims(pool: Pool) -> bool:
    return pool.allocation == CLAIMS


def _dns(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")


def quota_resource(card: CardType, profile: str | None = None) -> str:
    """The Kueue resource (a deviceClassMappings name) one claimed device is charged as."""
    suffix = f"-mig-{_dns(profile)}" if profile else ""
    return f"{DOMAIN}/{_dns(card.name)}{suffix}"


def class_name(card: CardType, profile: str | None = None) -> str:
    """The DeviceClass selecting exactly this card type (or MIG profile of it)."""
    if profile:
        return f"{_dns(card.name)}-{_dns(profile)}.mig.{DOMAIN}"
    return f"{_dns(card.name)}.gpu.{DOMAIN}"


def _gib(value: float) -> str:
    return f"quantity('{value}Gi')"


def selector(card: CardType, profile: str | None = None) -> str:
    """CEL over the pinned driver's attributes selecting exactly this card (or profile)."""
    attr = f"device.attributes['{DRIVER}']"
    terms = [f"device.driver == '{DRIVER}'", f"{attr}.type == '{'mig' if profile else 'gpu'}'"]
    if card.product_names:
        # GPU feature discovery's product label is NVML's name with spaces as "-"; the driver
        # publishes NVML's name itself.
        names = ", ".join(f"'{n}'" for n in card.product_names)
        terms.append(f"{attr}.productName.replace(' ', '-') in [{names}]")
    terms.append(f"{attr}.architecture == '{ARCHITECTURES.get(card.architecture, '')}'")
    if profile:
        terms.append(f"{attr}.profile == '{profile}'")
    else:
        low = math.floor(card.memory_gib * (1 - MEMORY_TOLERANCE))
        high = math.ceil(card.memory_gib * (1 + MEMORY_TOLERANCE))
        memory = f"device.capacity['{DRIVER}'].memory"
        terms.append(f"{memory}.compareTo({_gib(low)}) >= 0")
        terms.append(f"{memory}.compareTo({_gib(high)}) <= 0")
    return " && ".join(terms)


@dataclass(frozen=True)
class DeviceClassFact:
    """One DeviceClass hetgitops renders, with the pools whose claims it serves."""

    name: str
    card: CardType
    profile: str | None
    cel: str
    resource: str  # the Kueue quota resource (deviceClassMappings name)
    pools: tuple[Pool, ...]
    extended_resource_name: str | None = None


def _pool_profiles(pool: Pool) -> list[str]:
    return sorted({p for device in pool.mig for p in device.profiles})


def device_classes(policy: Policy) -> tuple[DeviceClassFact, ...]:
    """Every DeviceClass the DRA pools need, sorted by name: one per card type and MIG profile
    of a claims pool; one per card type of an extended-resource pool whose card's resource
    name the driver's own class does not carry."""
    return derived(policy, ("dra-classes",), lambda: _device_classes(policy))


def _device_classes(policy: Policy) -> tuple[DeviceClassFact, ...]:
    found: dict[str, DeviceClassFact] = {}

    def add(pool: Pool, card: CardType, profile: str | None, extended: str | None) -> None:
        name = class_name(card, profile)
        if extended:  # a class per (card, extended name): two cards on one name are two classes
            name = f"{_dns(card.name)}.{_dns(extended)}.{DOMAIN}"
        known = found.get(name)
        pools = (*known.pools, pool) if known else (pool,)
        resource = extended or quota_resource(card, profile)
        found[name] = DeviceClassFact(
            name, card, profile, selector(card, profile), resource, pools, extended
        )

    for pool in policy.pools.values():
        card = policy.card_types.get(pool.card_type)
        if card is None or not on_dra(pool):
            continue
        if claims(pool):
            add(pool, card, None, None)
            for profile in _pool_profiles(pool):
                add(pool, card, profile, None)
        elif card.resource_name not in DRIVER_EXTENDED_CLASSES:
            add(pool, card, None, card.resource_name)
    return tuple(found[name] for name in sorted(found))


def mappings(policy: Policy) -> list[tuple[str, tuple[str, ...]]]:
    """Kueue's `resources.deviceClassMappings`: (quota resource, its DeviceClass names), one
    entry per claims-path resource, sorted."""
    by_resource: dict[str, list[str]] = {}
    for fact in device_classes(policy):
        if fact.extended_resource_name is None:
            by_resource.setdefault(fact.resource, []).append(fact.name)
    return [(r, tuple(sorted(names))) for r, names in sorted(by_resource.items())]


def claim_template_spec(class_name: str, count: int) -> dict[str, Any]:
    """A ResourceClaimTemplate's `spec` asking for `count` devices of one class."""
    request = {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": count}
    return {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": request}]}}}


def claim_template_name(spec: Mapping[str, Any]) -> str:
    """Content-named, as ResourceFlavors are: a template's spec is immutable, so a changed
    spec is a new template and running pods keep the old one."""
    request = spec["spec"]["devices"]["requests"][0]["exactly"]
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    head = request["deviceClassName"].split(".")[0]
    return f"{head}-x{request['count']}-{digest}"


def mig_profile_of(card: CardType, resource: str) -> str | None:
    """The MIG profile a claims-path quota resource charges, or None."""
    table = mig.TABLES.get(card.mig_table or "")
    for profile in table.profiles if table else ():
        if quota_resource(card, profile) == resource:
            return profile
    return None


_ATTRIBUTE = re.compile(r"device\.attributes\['([^']+)'\]\.([A-Za-z_][A-Za-z0-9_]*)")
_CAPACITY = re.compile(r"device\.capacity\['([^']+)'\]\.([A-Za-z_][A-Za-z0-9_]*)")
_PAIRS = {")": "(", "]": "["}


def _balanced(expression: str) -> str:
    """ "" when quotes and brackets pair up, else what does not."""
    stack: list[str] = []
    quote = ""
    for char in expression:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([":
            stack.append(char)
        elif char in _PAIRS and (not stack or stack.pop() != _PAIRS[char]):
            return f"unmatched '{char}'"
    if quote:
        return f"unterminated string ({quote})"
    return f"unclosed '{stack[-1]}'" if stack else ""


def cel_problems(expression: str, *, mig_device: bool) -> list[str]:
    """What keeps a DeviceClass selector from compiling or from matching the pinned driver's
    devices: a structural check only (quotes, brackets, attribute and capacity names of the
    driver's domain). The real compile is the API server's (docs/targets/dra.md)."""
    problems = [p for p in [_balanced(expression)] if p]
    attributes = MIG_ATTRIBUTES if mig_device else GPU_ATTRIBUTES
    capacities = MIG_CAPACITIES if mig_device else GPU_CAPACITIES
    for domain, name in _ATTRIBUTE.findall(expression):
        if domain != DRIVER or name in attributes:
            continue
        removed = REMOVED.get(name)
        why = f"removed in {removed}" if removed else "not published"
        problems.append(f"attribute '{name}' is {why} by {DRIVER} {DRIVER_RELEASE}")
    for domain, name in _CAPACITY.findall(expression):
        if domain == DRIVER and name not in capacities and not MEMORY_SLICE.fullmatch(name):
            problems.append(f"capacity '{name}' is not published by {DRIVER} {DRIVER_RELEASE}")
    return problems


# The largest device count a rendered claim template asks for that readers look up by name.
MAX_CLAIM_COUNT = 64


def claim_charges(policy: Policy) -> Mapping[str, tuple[str, int]]:
    """Template name -> (the Kueue resource it charges, devices per pod), for every template
    the policy would render (names are content digests, so every count is tried)."""
    return derived(policy, ("dra-claim-charges",), lambda: _claim_charges(policy))


def _claim_charges(policy: Policy) -> dict[str, tuple[str, int]]:
    found: dict[str, tuple[str, int]] = {}
    for fact in device_classes(policy):
        if fact.extended_resource_name is None:
            for count in range(1, MAX_CLAIM_COUNT + 1):
                name = claim_template_name(claim_template_spec(fact.name, count))
                found[name] = (fact.resource, count)
    return found


# A ResourceQuota key counting the devices claimed with one DeviceClass (k8s.io/api
# core/v1/types.go:7724, ResourceClaimsPerClass).
CLAIMS_PER_CLASS = ".deviceclass.resource.k8s.io/devices"


def namespace_quota_key(policy: Policy, resource: str) -> str | None:
    """The ResourceQuota key that caps a claims-path quota resource in a namespace: the devices
    claimed with its DeviceClass; None for a resource pods request directly."""
    for name, classes in mappings(policy):
        if name == resource and len(classes) == 1:
            return classes[0] + CLAIMS_PER_CLASS
    return None


@dataclass(frozen=True)
class SelectorRead:
    """What a DeviceClass selector written by `selector` says: the device type, the product
    names (GPU feature discovery's spelling), the architecture and the MIG profile."""

    device_type: str
    product_names: tuple[str, ...]
    architecture: str
    profile: str | None


_ATTR = re.escape(f"device.attributes['{DRIVER}']")
_READ_TYPE = re.compile(_ATTR + r"\.type == '(gpu|mig)'")
_READ_NAMES = re.compile(_ATTR + r"\.productName\.replace\(' ', '-'\) in \[([^\]]*)\]")
_READ_ARCH = re.compile(_ATTR + r"\.architecture == '([^']*)'")
_READ_PROFILE = re.compile(_ATTR + r"\.profile == '([^']*)'")


def read_selector(expression: str) -> SelectorRead | None:
    """The reader of `selector`'s CEL (the one place import and drift read a DeviceClass):
    None when the expression is not of that shape (hetgitops then cannot say which card it
    selects)."""
    if f"device.driver == '{DRIVER}'" not in expression or cel_problems(
        expression, mig_device="profile" in expression
    ):
        return None
    kind, arch = _READ_TYPE.search(expression), _READ_ARCH.search(expression)
    if kind is None or arch is None:
        return None
    names = _READ_NAMES.search(expression)
    products = tuple(re.findall(r"'([^']*)'", names.group(1))) if names else ()
    profile = _READ_PROFILE.search(expression)
    if (kind.group(1) == "mig") != (profile is not None):
        return None
    return SelectorRead(
        kind.group(1), products, arch.group(1), profile.group(1) if profile else None
    )


def selects(read: SelectorRead, *, architecture: str, product_names: Sequence[str]) -> bool:
    """Whether a read selector picks a card's devices (a catalogue card's `architecture` and
    `productNames`): its architecture, and one of its product names when it names any."""
    if ARCHITECTURES.get(architecture, "") != read.architecture:
        return False
    return not read.product_names or bool(set(read.product_names) & set(product_names))
