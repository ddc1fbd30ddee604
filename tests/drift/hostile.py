"""A real HTTP(S) server on 127.0.0.1 that answers as a test tells it to: an API server that
answers wrongly (a login page, `{}`, endless pages, a byte at a time), for drift's fault cases.
Bounded and self-stopping: it shuts down when the test leaves it, or after `lifetime` seconds."""

from __future__ import annotations

import contextlib
import json
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from hetgitops.adopt.sources import RESOURCES
from hetgitops.live.kinds import BUILTIN

Answer = Callable[[BaseHTTPRequestHandler], None]
KIND_OF_PLURAL = {plural: kind for (_, kind), (plural, _) in BUILTIN.items()}
KIND_OF_PLURAL["customresourcedefinitions"] = "CustomResourceDefinition"
KIND_OF_PLURAL.update({r.plural: r.kind for r in RESOURCES})  # what `import` lists


def send_json(handler: BaseHTTPRequestHandler, body: Any, status: int = 200) -> None:
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def empty_list(handler: BaseHTTPRequestHandler, items: list[Any] | None = None) -> None:
    """What a real API server answers for a LIST of a kind with no objects (or `items`)."""
    plural = handler.path.split("?")[0].rstrip("/").rsplit("/", 1)[-1]
    kind = KIND_OF_PLURAL.get(plural, plural.capitalize())
    body = {"kind": f"{kind}List", "apiVersion": "v1", "metadata": {}, "items": items or []}
    send_json(handler, body)


class Server:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.paths: list[str] = []
        self.url = ""


@contextmanager
def serving(
    answer: Answer, *, tls: tuple[Path, Path] | None = None, lifetime: float = 120
) -> Iterator[Server]:
    """Serve `answer` for every request; `tls` = (certificate, key) for HTTPS."""
    server = Server(answer)

    class Handler(BaseHTTPRequestHandler):
        timeout = 30  # a client that stops reading does not keep a thread forever

        def do_GET(self) -> None:
            server.paths.append(self.path)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                server.answer(self)  # (a client that gave up, as it should, is no error)

        do_PATCH = do_GET

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    scheme = "http"
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(tls[0]), str(tls[1]))
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
        scheme = "https"
    server.url = f"{scheme}://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    stopper = threading.Timer(lifetime, httpd.shutdown)
    stopper.daemon = True
    stopper.start()
    try:
        yield server
    finally:
        stopper.cancel()
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)


def kubeconfig(path: Path, server: str, **cluster: Any) -> Path:
    """A kubeconfig for `server`; `user` overrides the token user (an exec plugin)."""
    user = cluster.pop("user", {"token": "s3cr3t-token-value"})
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, **cluster}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path.write_text(json.dumps(config))
    return path
