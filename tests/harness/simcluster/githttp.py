"""Serve the Git repositories under a folder over smart HTTP on loopback, read-only.

Flux's source-controller clones with go-git, which speaks only the smart HTTP protocol (and SSH),
so a static file server will not do: each request is handed to `git http-backend`, Git's own CGI
program, exactly as a web server in front of a Git host would. Pushes are refused (no
`http.receivepack`): the harness commits into the bare repository on disk.

  python githttp.py ROOT PORT     serves ROOT/<name>.git at http://127.0.0.1:PORT/<name>.git
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit


class _Handler(BaseHTTPRequestHandler):
    root: Path
    git: str

    def do_GET(self) -> None:
        self._backend()

    def do_POST(self) -> None:
        self._backend()

    def _backend(self) -> None:
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        env = {
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": url.path,
            "QUERY_STRING": url.query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": self.client_address[0],
            # http-backend reads a gzip-encoded request body itself when told so.
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
        }
        result = subprocess.run(
            [self.git, "http-backend"], input=body, env=env, capture_output=True, check=False
        )
        head, _, payload = result.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = result.stdout.partition(b"\n\n")
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        if result.returncode != 0 and not head:
            status = 500
            self.log_message("git http-backend failed: %s", result.stderr.decode(errors="replace"))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def main(argv: list[str]) -> int:
    root, port = Path(argv[0]).resolve(), int(argv[1])
    git = shutil.which("git")
    if git is None:
        print("githttp: git is not on PATH", file=sys.stderr)
        return 2
    _Handler.root, _Handler.git = root, git
    server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    print(f"githttp: serving {root} on http://127.0.0.1:{port}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
