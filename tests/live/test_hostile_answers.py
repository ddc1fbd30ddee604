"""The live client against real local servers that answer badly (tests/drift/hostile.py): every
live command (drift, import, explain, explain workload) gives the same plain exit 4, never an
internal error, never a credential or a control character from the server on the terminal."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.drift.hostile import KIND_OF_PLURAL, empty_list, kubeconfig, send_json, serving

REPO = Path(__file__).resolve().parents[2]
POLICIES = str(REPO / "policies")
CLI = [sys.executable, "-c", "from hetgitops.cli.entry import main; main()"]
TOKEN = "s3cr3t-token-value"  # hostile.kubeconfig's user
EXPLAIN = ["explain", "--policy", POLICIES, "--now", "2026-12-01"]
COMMANDS: dict[str, Callable[[Path], list[str]]] = {
    "drift": lambda out: ["drift", POLICIES],
    "import": lambda out: ["import", "--output", str(out)],
    "explain": lambda out: [*EXPLAIN, "--team", "pretraining", "--gpus", "8"],
    "explain-workload": lambda out: [*EXPLAIN, "workload", "pretrain/job-1"],
}


def run(command: str, config: Path, tmp_path: Path, *extra: str) -> tuple[int, str, float]:
    env = {k: v for k, v in os.environ.items() if k != "HETGITOPS_DEBUG"}
    args = [*CLI, *COMMANDS[command](tmp_path / "out"), "--kubeconfig", str(config), *extra]
    start = time.monotonic()
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120, check=False)
    return done.returncode, done.stdout + done.stderr, time.monotonic() - start


def status(code: int, message: str, **headers: str) -> Callable[[BaseHTTPRequestHandler], None]:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        body = {"kind": "Status", "status": "Failure", "message": message, "code": code}
        data = __import__("json").dumps(body).encode()
        handler.send_response(code)
        for name, value in headers.items():
            handler.send_header(name.replace("_", "-"), value)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    return answer


def echo_header(code: int) -> Callable[[BaseHTTPRequestHandler], None]:
    """A proxy that echoes the request's Authorization header in its Status message."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        said = f"denied; you sent Authorization: {handler.headers.get('Authorization')}"
        status(code, said)(handler)

    return answer


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("code", [401, 403, 500])
def test_a_server_echoing_the_token_never_gets_it_printed(
    tmp_path: Path, command: str, code: int
) -> None:
    """Issue 33 item 6. Was: the 401/403 Status message verbatim, bearer token and all."""
    with serving(echo_header(code)) as server:
        exit_code, said, _ = run(command, kubeconfig(tmp_path / "kc", server.url), tmp_path)
    assert server.paths, said
    assert exit_code in (1, 4), said  # 403 of one kind may be a finding
    assert TOKEN not in said and "Authorization: ***" in said


def test_a_client_key_and_password_are_hidden_too(tmp_path: Path) -> None:
    import base64

    from hetgitops.live.said import Secrets, shown

    body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"
    key = tmp_path / "key.pem"
    key.write_text(f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n")
    secrets = Secrets()
    secrets.add_key_file(str(key))
    data = base64.b64encode(key.read_bytes()).decode()  # as kubeconfig client-key-data
    assert body not in shown(f"echo {body}", secrets)
    assert data not in shown(f"client-key-data: {data}", secrets)
    secrets.add("Basic " + __import__("base64").b64encode(b"admin:hunter22").decode())
    assert "hunter22" not in shown("bad login admin:hunter22", secrets)
    assert shown("token: Bearer abc.def-ghi") == "token: Bearer ***"


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("code", [400, 429, 500, 503])
def test_every_http_status_is_a_plain_exit_4(tmp_path: Path, command: str, code: int) -> None:
    """Issue 33 item 7. Was: 400, 429, 500 and 503 an internal error, exit 3."""
    with serving(status(code, "the server says no", Retry_After="0")) as server:
        exit_code, said, _ = run(command, kubeconfig(tmp_path / "kc", server.url), tmp_path)
    assert exit_code == 4, said
    assert "please report" not in said and "internal error" not in said
    assert f"HTTP {code}" in said and "the server says no" in said


@pytest.mark.parametrize("command", ["drift", "import"])
def test_a_huge_retry_after_is_capped_and_named(tmp_path: Path, command: str) -> None:
    """Issue 33 item 7. Was: a sleep until the deadline, then "--timeout" (drift's option) in
    every command."""
    with serving(status(429, "too many requests", Retry_After="999999")) as server:
        config = kubeconfig(tmp_path / "kc", server.url)
        exit_code, said, took = run(command, config, tmp_path)
    assert exit_code == 4, said
    assert took < 60, said
    assert "HTTP 429" in said and "throttling" in said and "Retry-After" in said
    assert "--timeout" not in said
    assert len(server.paths) == 4  # the first try and MAX_RETRIES more


def test_the_deadline_message_names_timeout_only_in_drift(tmp_path: Path) -> None:
    from hetgitops.live.client import Deadline

    assert "--timeout 5s" in str(Deadline.start(5, option="--timeout").expired("s"))
    assert "--timeout" not in str(Deadline.start(5).expired("s"))


def _cluster(tmp_path: Path, url: str) -> Any:
    from hetgitops.live import client

    return client.Cluster(kubeconfig(tmp_path / "kc", url))


NODES = ("", "v1", "nodes", "Node", False)


def test_a_response_body_is_bounded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 33 item 8. Was: the whole body read into memory (2 GB: 3.9 GB of RSS)."""
    from hetgitops.live import client

    def huge(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.end_headers()  # no Content-Length: read until the limit, not trusted
        for _ in range(64):
            handler.wfile.write(b" " * 65536)

    monkeypatch.setattr(client, "MAX_BODY", 1 << 20, raising=False)
    with serving(huge) as server:
        cluster = _cluster(tmp_path, server.url)
        with pytest.raises(client.ClusterError, match="larger than 1 MiB"):
            cluster.list(client.Resource(*NODES))
        cluster.close()


def test_the_items_of_one_list_are_bounded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 33 item 8. Was: 1,000 pages of 5,000 items all kept."""
    from hetgitops.live import client

    def pages(handler: BaseHTTPRequestHandler) -> None:
        items = [{"metadata": {"name": f"n{len(server.paths)}-{i}"}} for i in range(50)]
        page = {"kind": "NodeList", "metadata": {"continue": f"t{len(server.paths)}"}}
        send_json(handler, {**page, "items": items})

    monkeypatch.setattr(client, "MAX_ITEMS", 120, raising=False)
    with serving(pages) as server:
        cluster = _cluster(tmp_path, server.url)
        with pytest.raises(client.ClusterError, match="more than 120 nodes in one LIST"):
            cluster.list(client.Resource(*NODES))
        cluster.close()
    assert len(server.paths) == 3


BAD_CRD = {
    "metadata": {"name": "clusterqueues.kueue.x-k8s.io"},
    "spec": {
        "group": "kueue.x-k8s.io",
        "names": {"kind": "ClusterQueue"},
        "scope": "Cluster",
        "versions": [{"name": "v1beta2", "served": True}],
    },
}


KINDS = {**KIND_OF_PLURAL, "workloads": "Workload", "events": "Event", "podgroups": "PodGroup"}


def listing(handler: BaseHTTPRequestHandler, items: list[Any]) -> None:
    """A LIST answer of the kind asked for; CRDs none (every kind is a built-in or missing)."""
    plural = handler.path.split("?")[0].rsplit("/", 1)[-1]
    got = [] if plural == "customresourcedefinitions" else items
    send_json(handler, {"kind": f"{KINDS.get(plural, plural)}List", "items": got})


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_malformed_item_is_a_located_exit_4(tmp_path: Path, command: str) -> None:
    """Issue 33 item 9. Was: `"metadata": "x"` crashed every command (exit 3)."""
    items = [{"metadata": {"name": "fine", "namespace": "a"}}, {"metadata": "x"}]
    with serving(lambda h: listing(h, items)) as server:
        exit_code, said, _ = run(command, kubeconfig(tmp_path / "kc", server.url), tmp_path)
    assert exit_code == 4, said
    assert "item 2 of the " in said and "metadata is a string, not an object" in said
    assert "internal error" not in said


def test_a_crd_without_a_plural_is_a_located_exit_4(tmp_path: Path) -> None:
    """Issue 33 item 9. Was: KeyError 'plural', an internal error."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        crds = "customresourcedefinitions" in handler.path
        empty_list(handler, [BAD_CRD] if crds else None)

    with serving(answer) as server:
        exit_code, said, _ = run("drift", kubeconfig(tmp_path / "kc", server.url), tmp_path)
    assert exit_code == 4, said
    assert "item 1 ('clusterqueues.kueue.x-k8s.io')" in said and "spec.names.plural" in said


HOSTILE_TEXT = "no\x1b]0;pwned\x07\x1b[2J\u202eevil\nsecond line"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_control_characters_from_the_server_are_escaped(tmp_path: Path, command: str) -> None:
    """Issue 33 item 16. Was: an OSC title, a clear screen and U+202E sent to the terminal."""
    with serving(status(401, HOSTILE_TEXT)) as server:
        exit_code, said, _ = run(command, kubeconfig(tmp_path / "kc", server.url), tmp_path)
    assert exit_code == 4, said
    assert "\x1b" not in said and "\u202e" not in said and "\x07" not in said
    assert "no\\x1b]0;pwned\\x07\\x1b[2J\\u202eevil\\nsecond line" in said


def _plugin(tmp_path: Path, script: str) -> dict[str, object]:
    plugin = tmp_path / "plugin"
    plugin.write_text("#!/bin/sh\n" + script)
    plugin.chmod(0o755)
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin)}}


def test_a_plugin_with_non_utf8_stderr_is_its_message(tmp_path: Path) -> None:
    """Issue 33 item 19. Was: "'utf-8' codec can't decode byte 0xe9"."""
    user = _plugin(tmp_path, "printf 'jeton expir\\351\\n' >&2\nexit 1\n")
    with serving(empty_list) as server:
        config = kubeconfig(tmp_path / "kc", server.url, user=user)
        exit_code, said, _ = run("drift", config, tmp_path)
    assert exit_code == 4, said
    assert "failed (exit 1): jeton expir\ufffd" in said and "codec" not in said


CREDENTIAL = (
    '{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", '
    '"status": {"token": "plugin-token-value"}}'
)


def test_a_plugin_that_leaves_a_helper_holding_stdout_is_read(tmp_path: Path) -> None:
    """Issue 33 item 19. Was: "did not exit within 60s" (stdout read until EOF, which the
    plugin's background helper holds for as long as it runs)."""
    pid_file = tmp_path / "helper.pid"
    script = f"sleep 300 &\necho $! > {pid_file}\necho '{CREDENTIAL}'\nexit 0\n"
    user = _plugin(tmp_path, script)

    def answer(handler: BaseHTTPRequestHandler) -> None:
        said = str(handler.headers.get("Authorization"))
        empty_list(handler) if said == "Bearer plugin-token-value" else status(401, said)(handler)

    try:
        with serving(answer) as server:
            config = kubeconfig(tmp_path / "kc", server.url, user=user)
            exit_code, said, took = run("drift", config, tmp_path, "--timeout", "30s")
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), 9)
    assert exit_code == 1, said  # the bundled fleet's objects are not on this empty cluster
    assert "did not exit" not in said and took < 25 and len(server.paths) > 3
    assert "plugin-token-value" not in said


def test_a_cluster_fault_no_call_site_caught_is_exit_4_not_an_internal_error() -> None:
    """Issue 33 item 7: the CLI's last line of defence knows the live client's faults."""
    from hetgitops.cli.common import EXIT_ENVIRONMENT, guarded
    from hetgitops.live.client import RequestFailed

    def refused() -> int:
        raise RequestFailed(400, "bad request", "https://k8s/api/v1/nodes")

    assert guarded(refused) == EXIT_ENVIRONMENT


@pytest.mark.parametrize("answer", ["malformed", "status-500"])
def test_diff_kubeconfig_says_the_same_with_exit_4(tmp_path: Path, answer: str) -> None:
    """Issue 33 items 7 and 9 in `diff --kubeconfig` (the live blast radius of its hazards)."""
    from tests.checks.test_retiring import LIVE, _policy

    head = _policy(tmp_path, LIVE)
    items = [{"metadata": {"name": "fine", "namespace": "a"}}, {"metadata": "x"}]
    bad = (lambda h: listing(h, items)) if answer == "malformed" else status(500, "no")
    with serving(bad) as server:
        config = kubeconfig(tmp_path / "kc", server.url)
        args = ["--base-dir", POLICIES, "--head-dir", str(head), "--now", "2026-12-01"]
        done = subprocess.run(
            [*CLI, "diff", *args, "--kubeconfig", str(config)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    said = done.stdout + done.stderr
    assert server.paths and done.returncode == 4, said
    wanted = "metadata is a string" if answer == "malformed" else "HTTP 500 Internal Server Error"
    assert wanted in said and "internal error" not in said


def test_import_from_a_url_where_every_path_answers_404_reads_nothing_and_says_so(
    tmp_path: Path,
) -> None:
    """Issue 33 item 1 through a real server (the adopt test stubs the read): every LIST a
    404, so no kind is served; import says 0 objects were read, exit 4, and writes nothing."""
    with serving(status(404, "the server could not find the requested resource")) as server:
        exit_code, said, _ = run("import", kubeconfig(tmp_path / "kc", server.url), tmp_path)
    assert exit_code == 4, said
    assert f"0 objects read from {server.url}" in said
    assert not (tmp_path / "out").exists()
