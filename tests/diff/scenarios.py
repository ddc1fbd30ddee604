"""Typical policy changes on the bundled fleet, as edits of its files: the diff golden cases.

Each scenario is a list of edits: (file, old text, new text) replaces one exact occurrence;
(file, None, text) writes a new file; (file, old, None) deletes the file.
"""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "policies"

Edit = tuple[str, str | None, str | None]

NEW_TEAM = """\
apiVersion: hetgitops.io/v1alpha1
kind: Team
metadata:
  name: speech
spec:
  description: Speech recognition fine-tuning.
  namespaces: [speech]
  cohort: research
  quotas:
    - {pool: rtx4090-dev, cards: 8}
  tiers: [dev]
  budget: {monthly: 5000, currency: USD}
"""

NEW_CARD = """\
apiVersion: hetgitops.io/v1alpha1
kind: CardType
metadata:
  name: mi300x-192gb
spec:
  vendor: amd
  model: Instinct MI300X
  resourceName: amd.com/gpu
  memoryGiB: 192
  architecture: cdna3
  generation: cdna3
  interconnect: xgmi
  precisions: [fp32, bf16, fp16, fp8]
  cost: {perCardHour: 2.40, currency: USD}
  lifecycle: pilot
---
apiVersion: hetgitops.io/v1alpha1
kind: Pool
metadata:
  name: mi300x-pilot
spec:
  description: Two MI300X nodes on trial.
  cardType: mi300x-192gb
  purpose: training
  cardsPerNode: 8
  nodes:
    - {names: "gpu-mi300-[01:02]", zone: zone-c, rack: rack-c04}
  taints:
    - {key: hetgitops.io/pool, value: mi300x-pilot, effect: NoSchedule}
  labels:
    hetgitops.io/cost-center: cc-research
"""

DATA_PREPROCESSING = """\
---
apiVersion: hetgitops.io/v1alpha1
kind: Team
metadata:
  name: data-preprocessing
spec:
  description: Tokenisation, filtering and embedding jobs.
  namespaces: [dataproc]
  cohort: research
  quotas:
    - {pool: ascend-910b, cards: 8}
    - {pool: rtx4090-dev, cards: 16}
  tiers: [training, dev]
  lifecycleStages: [production, pilot]
  budget: {monthly: 20000, currency: USD}
"""

TRAINING = "teams/training.yaml"
OTHERS = "teams/others.yaml"

SCENARIOS: dict[str, list[Edit]] = {
    "quota-cut": [
        (TRAINING, "cards: 80, borrowingLimit: 32", "cards: 64, borrowingLimit: 32"),
    ],
    "new-team": [
        ("teams/speech.yaml", None, NEW_TEAM),
        (OTHERS, "    - {pool: rtx4090-dev, cards: 32}", "    - {pool: rtx4090-dev, cards: 24}"),
    ],
    "team-removed": [(OTHERS, DATA_PREPROCESSING, "")],
    "mig-repartition": [
        (
            "pools/inference.yaml",
            "      - gpus: [2, 3]\n        profiles: {3g.40gb: 2}\n",
            "      - gpus: [2, 3]\n        profiles: {3g.40gb: 2}\n"
            "      - gpus: [4]\n        profiles: {3g.40gb: 2}\n",
        ),
        (OTHERS, "      cards: 16\n      mig:", "      cards: 10\n      mig:"),
    ],
    "tier-demotion": [
        ("tiers.yaml", "  value: 10000\n", "  value: 1000\n"),
        (
            OTHERS,
            "  tiers: [training, dev]\n  lifecycleStages: [production, pilot]",
            "  tiers: [dev]\n  lifecycleStages: [production, pilot]",
        ),
    ],
    "pool-expiry": [
        (
            "pools/inference.yaml",
            '  placement: spread\n  nodes:\n    - {names: "gpu-l40s',
            '  placement: spread\n  expires: 2026-12-31\n  nodes:\n    - {names: "gpu-l40s',
        ),
    ],
    "card-type-added": [("cards/amd.yaml", None, NEW_CARD)],
    "cohort-change": [
        (
            OTHERS,
            "  namespaces: [dataproc]\n  cohort: research",
            "  namespaces: [dataproc]\n  cohort: training",
        ),
    ],
    # A pool moves from the device plugin to DRA claims (docs/targets/dra.md).
    "pool-to-dra": [
        ("fleet.yaml", 'kubernetes: "1.33"', 'kubernetes: "1.35"'),
        (
            "pools/inference.yaml",
            "  cardType: l40s-48gb\n  purpose: inference\n",
            "  cardType: l40s-48gb\n  purpose: inference\n"
            "  devices: {allocation: draClaims, migratingFrom: devicePlugin}\n",
        ),
    ],
    "invalid-policy": [
        (TRAINING, "cards: 80, borrowingLimit: 32", "cards: 800, borrowingLimit: 32"),
    ],
}


def build(root: Path, edits: list[Edit]) -> None:
    """`root/base` = the bundled policies; `root/head` = the same with `edits` applied."""
    shutil.copytree(BUNDLED, root / "base")
    shutil.copytree(BUNDLED, root / "head")
    apply_edits(root / "head", edits)


def apply_edits(tree: Path, edits: list[Edit]) -> None:
    for name, old, new in edits:
        path = tree / name
        if old is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(new or "", encoding="utf-8")
        elif new is None:
            path.unlink()
        else:
            text = path.read_text(encoding="utf-8")
            assert text.count(old) == 1, f"{name}: edit target not found once"
            path.write_text(text.replace(old, new or ""), encoding="utf-8")
