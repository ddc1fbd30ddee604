"""The fixed vocabulary tests/generated/policygen.py draws from: card types of four vendors,
MIG layouts and sizes, job kinds and Kueue integrations."""

from __future__ import annotations

from typing import Any

HEADER = {"apiVersion": "hetgitops.io/v1alpha1"}
Doc = dict[str, Any]
IMAGES = {
    "pytorch": "nvcr.io/nvidia/pytorch:25.08-py3",
    "vllm": "vllm/vllm-openai:v0.11.0",
    "ray": "rayproject/ray:2.49.0-py312-gpu",
}

# name -> (vendor, model, resourceName, product, memory GiB, interconnect, MIG table, coeff)
CARDS: dict[str, tuple[str, str, str, str, int, str, str | None, float]] = {
    "h100-80gb": ("nvidia", "H100-SXM5-80GB", "nvidia.com/gpu", "NVIDIA-H100-80GB-HBM3", 80,
                  "nvlink", "H100-80GB", 2.9),
    "a100-80gb": ("nvidia", "A100-SXM4-80GB", "nvidia.com/gpu", "NVIDIA-A100-SXM4-80GB", 80,
                  "nvlink", "A100-80GB", 1.0),
    "a100-40gb": ("nvidia", "A100-SXM4-40GB", "nvidia.com/gpu", "NVIDIA-A100-SXM4-40GB", 40,
                  "nvlink", "A100-40GB", 0.9),
    "h200-141gb": ("nvidia", "H200-SXM5-141GB", "nvidia.com/gpu", "NVIDIA-H200", 141,
                   "nvlink", "H200-141GB", 3.4),
    "l40s-48gb": ("nvidia", "L40S", "nvidia.com/gpu", "NVIDIA-L40S", 48, "pcie", None, 0.75),
    "rtx4090-24gb": ("nvidia", "GeForce-RTX-4090", "nvidia.com/gpu", "NVIDIA-GeForce-RTX-4090",
                     24, "pcie", None, 0.45),
    "mi300x": ("amd", "MI300X", "amd.com/gpu", "AMD-Instinct-MI300X", 192, "xgmi", None, 2.2),
    "ascend-910b": ("huawei", "Ascend910B3", "huawei.com/Ascend910", "Ascend910B3", 64, "hccs",
                    None, 0.8),
    "mlu370-x8": ("cambricon", "MLU370-X8", "cambricon.com/mlu", "MLU370-X8", 48, "mlu-link",
                  None, 0.3),
}  # fmt: skip
# MIG layouts of one GPU on a seven-slice table, by profile kind (sizes come from the table).
LAYOUTS = ({"1g": 7}, {"2g": 3}, {"3g": 2}, {"3g": 1, "2g": 1, "1g": 1}, {"4g": 1, "3g": 1},
           {"7g": 1}, {"2g": 2, "1g": 3})  # fmt: skip
MEM = {  # profile kind -> memory GiB per table
    "H100-80GB": {"1g": 10, "2g": 20, "3g": 40, "4g": 40, "7g": 80},
    "A100-80GB": {"1g": 10, "2g": 20, "3g": 40, "4g": 40, "7g": 80},
    "A100-40GB": {"1g": 5, "2g": 10, "3g": 20, "4g": 20, "7g": 40},
    "H200-141GB": {"1g": 18, "2g": 35, "3g": 71, "4g": 71, "7g": 141},
}
FRAMEWORKS = ("job", "jobset", "pytorchjob", "volcano-job", "leaderworkerset", "deployment",
              "rayjob", "raycluster", "rayservice")  # fmt: skip
INTEGRATIONS = ("batch/job", "jobset.x-k8s.io/jobset", "kubeflow.org/pytorchjob", "deployment",
                "leaderworkerset.x-k8s.io/leaderworkerset", "ray.io/rayjob", "ray.io/raycluster",
                "ray.io/rayservice", "pod")  # fmt: skip
