"""drift against real local servers that answer wrongly: never a wrong answer with exit 0 or 1,
never a hang, never a credential printed. Each server is a real HTTP(S) server on 127.0.0.1
(tests/drift/hostile.py); drift runs as a real process, bounded by a subprocess timeout."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from hetgitops.drift.report import FORMATS
from tests.drift.hostile import empty_list, kubeconfig, send_json, serving

REPO = Path(__file__).resolve().parents[2]
POLICIES = str(REPO / "policies")
CLI = [sys.executable, "-c", "from hetgitops.cli.entry import main; main()"]
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def drift(config: Path, *args: str, limit: float = 90) -> tuple[int, str, str, float]:
    env = {k: v for k, v in os.environ.items() if k != "HETGITOPS_DEBUG"}
    start = time.monotonic()
    done = subprocess.run(
        [*CLI, "drift", POLICIES, "--kubeconfig", str(config), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=limit,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr, time.monotonic() - start


def _html(handler: BaseHTTPRequestHandler) -> None:
    page = b"<!DOCTYPE html><html><body><form action=/login>Sign in</form></body></html>"
    handler.send_response(200)
    handler.send_header("Content-Type", "text/html")
    handler.send_header("Content-Length", str(len(page)))
    handler.end_headers()
    handler.wfile.write(page)


NOT_A_LIST = {
    "html-login-page": (_html, "an HTML page"),
    "empty-object": (lambda h: send_json(h, {}), "an object without a kind"),
    "json-array": (lambda h: send_json(h, []), "a JSON array"),
    "another-kind": (lambda h: send_json(h, {"kind": "Status", "items": []}), "kind 'Status'"),
}


@pytest.mark.parametrize("case", sorted(NOT_A_LIST))
def test_a_200_that_is_not_the_list_asked_for_is_exit_4_naming_the_url(
    tmp_path: Path, case: str
) -> None:
    """Was: every object "is not in the cluster", exit 1. First the CRD LIST is answered
    wrongly, then (CRDs fine) the built-in kinds' LISTs."""
    answer, said = NOT_A_LIST[case]
    with serving(answer) as server:
        code, out, err, _ = drift(kubeconfig(tmp_path / "kc", server.url))
    assert code == 4, out + err
    assert f"{server.url}{CRDS}: HTTP 200 with {said}" in err
    assert "not in the cluster" not in out

    def kinds_wrong(handler: BaseHTTPRequestHandler) -> None:
        empty_list(handler) if CRDS in handler.path else answer(handler)

    with serving(kinds_wrong) as server:
        code, out, err, _ = drift(kubeconfig(tmp_path / "kc", server.url))
    assert code == 4, out + err
    assert f"{server.url}/api" in err and said in err and "not in the cluster" not in out


def test_a_repeated_continue_token_is_refused(tmp_path: Path) -> None:
    """Was: ~175 LISTs a second, forever."""

    def endless(handler: BaseHTTPRequestHandler) -> None:
        page = {"kind": "CustomResourceDefinitionList", "items": []}
        send_json(handler, {**page, "metadata": {"continue": "again"}})

    with serving(endless) as server:
        code, out, err, _ = drift(kubeconfig(tmp_path / "kc", server.url))
    assert code == 4, out + err
    assert "same continue token twice" in err and server.url in err
    assert len(server.paths) == 2


def test_pages_are_bounded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A server that hands out a new token every page is stopped at MAX_PAGES."""
    from hetgitops.live import client

    def fresh(handler: BaseHTTPRequestHandler) -> None:
        token = f"t{len(server.paths)}"
        send_json(handler, {"kind": "NodeList", "metadata": {"continue": token}, "items": []})

    monkeypatch.setattr(client, "MAX_PAGES", 7)
    with serving(fresh) as server:
        cluster = client.Cluster(kubeconfig(tmp_path / "kc", server.url))
        with pytest.raises(client.ClusterError, match="more than 7 pages"):
            cluster.list(client.Resource("", "v1", "nodes", "Node", False))
        cluster.close()
    assert len(server.paths) == 7


def test_a_server_that_dribbles_is_stopped_by_the_timeout(tmp_path: Path) -> None:
    """Was: minutes per read (every byte resets the read timeout)."""

    def dribble(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", "100000")
        handler.end_headers()
        for _ in range(120):
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(0.5)

    with serving(dribble) as server:
        code, out, err, took = drift(kubeconfig(tmp_path / "kc", server.url), "--timeout", "4s")
    assert code == 4, out + err
    assert "did not answer within --timeout 4s" in err
    assert took < 40


def test_a_server_that_dribbles_its_headers_is_stopped_by_the_timeout(tmp_path: Path) -> None:
    """The status line and headers are read before drift sees the response: no per-read
    timeout and no body loop bounds them."""

    def dribble(handler: BaseHTTPRequestHandler) -> None:
        handler.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        for _ in range(120):
            handler.wfile.write(b"z")
            handler.wfile.flush()
            time.sleep(0.5)

    with serving(dribble) as server:
        code, out, err, took = drift(kubeconfig(tmp_path / "kc", server.url), "--timeout", "4s")
    assert code == 4, out + err
    assert "did not answer within --timeout 4s" in err
    assert took < 40


def test_the_timeout_has_a_documented_default() -> None:
    done = subprocess.run([*CLI, "drift", "--help"], capture_output=True, text=True, check=True)
    assert "--timeout DURATION" in done.stdout and "[default: 5m]" in done.stdout


def _plugin(tmp_path: Path, script: str) -> dict[str, object]:
    plugin = tmp_path / "plugin"
    plugin.write_text("#!/bin/sh\n" + script)
    plugin.chmod(0o755)
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin)}}


def test_a_credential_plugin_that_never_exits_is_stopped(tmp_path: Path) -> None:
    """Was: drift hung forever (the plugin waits for a browser login)."""
    pid_file = tmp_path / "sleep.pid"
    login = "echo 'open https://login.example to sign in' >&2\n"
    user = _plugin(tmp_path, f"{login}sleep 600 &\necho $! > {pid_file}\nwait\n")
    with serving(empty_list) as server:
        config = kubeconfig(tmp_path / "kc", server.url, user=user)
        code, out, err, took = drift(config, "--timeout", "3s")
    assert code == 4, out + err
    assert "getting credentials" in err and "did not exit within" in err
    assert took < 40 and server.paths == []
    # What the plugin started is stopped too: killed by then, gone once the kernel reaps it.
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 30
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(pid), Path(f"/proc/{pid}/status").read_text()


def _running(pid: int) -> bool:
    """Alive and not a zombie (killed children of a killed shell wait for a reaper)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def test_a_failing_credential_plugin_is_one_plain_message(tmp_path: Path) -> None:
    """Was: a raw `ERROR:root:exec: ...` line, then requests without credentials blamed on
    RBAC."""
    user = _plugin(tmp_path, "echo 'error: token expired; run login' >&2\nexit 1\n")
    with serving(empty_list) as server:
        code, out, err, _ = drift(kubeconfig(tmp_path / "kc", server.url, user=user))
    assert code == 4, out + err
    assert "ERROR:root" not in err and server.paths == []
    [line] = err.strip().splitlines()
    assert "getting credentials" in line and "failed (exit 1): error: token expired" in line


@pytest.mark.parametrize("output_format", sorted(FORMATS))
def test_a_password_in_the_server_url_is_redacted(tmp_path: Path, output_format: str) -> None:
    with serving(_html) as server:
        url = server.url.replace("http://", "http://admin:hunter2@")
        code, out, err, _ = drift(kubeconfig(tmp_path / "kc", url), "--format", output_format)
    assert code == 4, out + err
    assert "hunter2" not in out + err
    assert "http://admin:***@127.0.0.1" in err


def test_an_insecure_kubeconfig_is_one_plain_warning(tmp_path: Path) -> None:
    """Was urllib3's InsecureRequestWarning with a source path, once per request site."""
    from tests.harness.controlplane import pki

    certs = pki.generate(tmp_path / "pki", admin=("admin", "system:masters"), readonly_user="r")
    with serving(empty_list, tls=(certs.serving_cert, certs.serving_key)) as server:
        config = kubeconfig(tmp_path / "kc", server.url, **{"insecure-skip-tls-verify": True})
        code, out, err, _ = drift(config)
    assert code == 1, out + err  # nothing of the policy is on this empty cluster
    assert "InsecureRequestWarning" not in err and "urllib3" not in err
    warnings = [line for line in err.splitlines() if "warning" in line.lower()]
    assert warnings == [
        f"hetgitops: warning: the TLS certificate of {server.url} is not verified "
        "(insecure-skip-tls-verify in the kubeconfig): anyone in between could answer for "
        "the cluster"
    ]
    assert len(server.paths) > 3


def test_an_object_being_deleted_is_a_finding(tmp_path: Path) -> None:
    """Was: in sync, silently, until it is gone."""
    going = {
        "metadata": {
            "name": "dataproc",
            "deletionTimestamp": "2026-12-01T10:00:00Z",
            "finalizers": ["example.com/hold"],
            # Namespaces are listed whole now (an unlabelled one of a rendered name is
            # adopted): the fake server's object must carry both of the selector's labels.
            "labels": {
                "app.kubernetes.io/managed-by": "hetgitops",
                "hetgitops.io/fleet": "ai-centre-prod",
            },
        }
    }

    def answer(handler: BaseHTTPRequestHandler) -> None:
        empty_list(handler, [going] if "/api/v1/namespaces?" in handler.path else None)

    with serving(answer) as server:
        code, out, err, _ = drift(kubeconfig(tmp_path / "kc", server.url), "--format", "json")
    assert code == 1, out + err
    assert (
        "Namespace dataproc is being deleted (since 2026-12-01T10:00:00Z); held by "
        "example.com/hold" in out
    )
    assert "drift-terminating" in out


def test_import_from_an_insecure_kubeconfig_is_one_plain_warning(tmp_path: Path) -> None:
    """`hetgitops import` reads through the same client: the same one line."""
    from tests.harness.controlplane import pki

    certs = pki.generate(tmp_path / "pki", admin=("admin", "system:masters"), readonly_user="r")
    with serving(empty_list, tls=(certs.serving_cert, certs.serving_key)) as server:
        config = kubeconfig(tmp_path / "kc", server.url, **{"insecure-skip-tls-verify": True})
        done = subprocess.run(
            [*CLI, "import", "--output", str(tmp_path / "out"), "--kubeconfig", str(config)],
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
    assert "InsecureRequestWarning" not in done.stderr and "urllib3" not in done.stderr
    warnings = [line for line in done.stderr.splitlines() if "warning: the TLS" in line]
    assert len(warnings) == 1 and server.url in warnings[0], done.stderr
    assert len(server.paths) > 3
