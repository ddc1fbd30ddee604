"""`explain -f` reads a manifest as the API server would (issue 33 items 5 and 12): a value it
refuses, a wrong type anywhere, a hostile file are refused with `file:line:col: path: why`
and exit 2, never explained as admitted and never an internal error (exit 3)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from hetgitops.cli import main as cli

REPO = Path(__file__).resolve().parents[2]
BASE = ["explain", "--policy", str(REPO / "policies"), "--now", "2026-12-01"]

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: j
  namespace: pretrain
  labels: {{kueue.x-k8s.io/queue-name: pretraining}}
spec:
  parallelism: {parallelism}
  template:
    spec:
      nodeSelector: {{hetgitops.io/pool: a800-train}}
      containers:
      - name: c
        resources:
          requests: {{cpu: "{cpu_request}", memory: {memory}}}
          limits: {{cpu: "2", nvidia.com/gpu: {gpus}}}
"""


def job(**values: str) -> str:
    fields = {"parallelism": "1", "cpu_request": "2", "memory": "8Gi", "gpus": "8"}
    return JOB.format(**{**fields, **values})


def explain_text(text: str, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(text, "utf-8")
    result = CliRunner().invoke(cli.main, [*BASE, "-f", str(manifest), *args])
    return result.exit_code, result.stdout, result.stderr


def test_a_valid_job_is_admitted(tmp_path: Path) -> None:
    assert explain_text(job(), tmp_path)[0] == 0


# (line, column) of the value the API server refuses, in `job(...)`.
REFUSED = {
    "negative-gpus": ({"gpus": "-8"}, (16, 46)),
    "fractional-gpus": ({"gpus": '"1.5"'}, (16, 46)),
    "negative-parallelism": ({"parallelism": "-5"}, (8, 16)),
    "fractional-parallelism": ({"parallelism": "2.5"}, (8, 16)),
    "string-parallelism": ({"parallelism": '"2"'}, (8, 16)),
    "negative-memory": ({"memory": "-1Gi"}, (15, 40)),
    "cpu-request-above-limit": ({"cpu_request": "4"}, (15, 27)),
    "not-a-quantity": ({"memory": "lots"}, (15, 40)),
    "huge-quantity": ({"memory": "1e999999"}, (15, 40)),
    # Exponents past Decimal's context: 1e-999999999 GPUs was read as 0 (admitted), the other
    # an Overflow; Kubernetes keeps both exact (1n of a GPU is no whole number).
    "tiny-exponent-gpus": ({"gpus": '"1e-999999999"'}, (16, 46)),
    "huge-exponent-memory": ({"memory": "1e999999999"}, (15, 40)),
    "unbounded-exponent-cpu": ({"cpu_request": "1e99999999999999999999999"}, (15, 27)),
    "non-ascii-digit-gpus": ({"gpus": '"٨"'}, (16, 46)),
    # Hugepages as validateResourceRequirements reads them: whole pages of the size the name
    # carries (parsed as a quantity), a request equal to its limit.
    "hugepages-not-whole-pages": ({"gpus": "8, hugepages-2Mi: 3Mi"}, (16, 64)),
    "hugepages-fractional-page": ({"gpus": '8, hugepages-1Gi: "1.5Gi"'}, (16, 64)),
    "hugepages-size-not-a-quantity": ({"gpus": "8, hugepages-x: 1Gi"}, (16, 62)),
    "hugepages-request-without-limit": ({"memory": "8Gi, hugepages-2Mi: 2Mi"}, (15, 60)),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_manifest_the_api_server_refuses_is_refused_where_it_is_wrong(
    case: str, tmp_path: Path
) -> None:
    """Issue 33 item 5: these were explained as admitted (exit 0) before."""
    values, (line, column) = REFUSED[case]
    code, out, err = explain_text(job(**values), tmp_path, "--format", "json")
    assert (code, out) == (2, ""), err
    where = f"{tmp_path / 'job.yaml'}:{line}:{column}: spec."
    assert err.startswith(f"hetgitops explain: {where}"), err


def test_hugepages_need_cpu_or_memory_and_whole_pages_are_explained(tmp_path: Path) -> None:
    """HugePages require cpu or memory (validation.go:7886); whole pages with their limit
    are read, and Kueue then finds no quota for them (exit 1, not a refusal)."""
    text = job(gpus="8, hugepages-2Mi: 2Mi").replace('{cpu: "2", memory: 8Gi}', "{}")
    code, out, err = explain_text(text.replace('cpu: "2", ', ""), tmp_path)
    assert (code, out) == (2, ""), out
    assert "resources: HugePages require cpu or memory" in err
    both = job(gpus="8, hugepages-2Mi: 4Mi", memory="8Gi, hugepages-2Mi: 4Mi")
    code, out, err = explain_text(both, tmp_path)
    assert code == 1 and "resource hugepages-2Mi unavailable in ClusterQueue" in out, err


def test_an_extended_resource_request_must_equal_its_limit(tmp_path: Path) -> None:
    text = job().replace("memory: 8Gi}", "memory: 8Gi, nvidia.com/gpu: 4}")
    code, _, err = explain_text(text, tmp_path)
    assert code == 2 and ":15:61: spec." in err and "must equal its limit" in err


WRONG_TYPES = {
    "containers-a-string": ("      containers:\n", "      containers: oops\n      x:\n"),
    "template-a-list": ("  template:\n    spec:\n", "  template: [1]\n  x:\n    spec:\n"),
    "labels-a-list": ("labels: {kueue.x-k8s.io/queue-name: pretraining}", "labels: [a]"),
    "label-value-a-list": ("queue-name: pretraining}", "queue-name: [1]}"),
    "resources-a-number": ("        resources:\n", "        resources: 3\n        x:\n"),
    "node-selector-a-string": ("nodeSelector: {hetgitops.io/pool: a800-train}", "nodeSelector: x"),
    "metadata-a-string": ("metadata:\n  name: j\n", "metadata: j\nx:\n  name: j\n"),
}


@pytest.mark.parametrize("case", sorted(WRONG_TYPES))
def test_a_wrong_type_anywhere_is_a_located_refusal(case: str, tmp_path: Path) -> None:
    """Issue 33 item 12: an AttributeError escaped (exit 3) on such manifests."""
    old, new = WRONG_TYPES[case]
    text = job()
    assert old in text
    code, out, err = explain_text(text.replace(old, new, 1), tmp_path)
    assert (code, out) == (2, ""), err
    assert re.match(r"hetgitops explain: \S+job\.yaml:\d+:\d+: \S+: expected ", err), err


def test_a_volcano_min_member_that_is_not_a_number_is_refused(tmp_path: Path) -> None:
    text = job().replace(
        "  labels: {kueue.x-k8s.io/queue-name: pretraining}\n",
        "  annotations: {scheduling.k8s.io/group-min-member: x}\n",
    )
    text = text.replace("    spec:\n", "    spec:\n      schedulerName: volcano\n", 1)
    code, _, err = explain_text(text, tmp_path)
    assert code == 2 and ":6:53: metadata.annotations" in err, err


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "Written by hetgitops jobs --output: the whole directory is replaced.\n",
            "no apiVersion and kind",
        ),
        ("apiVersion: batch/v1\nmetadata: {name: j}\n", "no kind"),
        ("kind: Job\nmetadata: {name: j}\n", "no apiVersion"),
    ],
)
def test_a_document_without_apiversion_or_kind_says_which_is_missing(
    text: str, said: str, tmp_path: Path
) -> None:
    """`explain -f DIR/*` picks up jobs' `.hetgitops-output` marker, a mapping of one prose
    key: it once said "cannot explain  ; supported: ..." with both names blank."""
    code, _, err = explain_text(text, tmp_path)
    assert code == 2, err
    assert f"{said}: not a Kubernetes object; explain reads batch/Job" in err, err


@pytest.mark.parametrize("style", ["flow", "block"])
def test_deep_nesting_is_refused_by_the_bounded_reader(style: str, tmp_path: Path) -> None:
    depth = 50_000
    deep = "[" * depth + "]" * depth if style == "flow" else "- " * depth + "x"
    text = job() + f"extra: {deep}\n" if style == "flow" else deep + "\n"
    code, out, err = explain_text(text, tmp_path)
    assert (code, out) == (2, ""), err[:300]
    assert re.match(r"hetgitops explain: \S+job\.yaml:\d+:\d+: ", err), err[:300]


def test_a_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_bytes(b"kind: \xff\xfe\n")
    result = CliRunner().invoke(cli.main, [*BASE, "-f", str(manifest)])
    assert result.exit_code == 2 and "not UTF-8" in result.stderr
