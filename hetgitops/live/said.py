"""Live stage: server text made fit for a message. An API server's (or a proxy's) words reach
the terminal and CI logs in every live command's errors; they are shown only through `shown`,
which hides the kubeconfig's credentials (a server that echoes the Authorization header would
otherwise print the bearer token), escapes control and bidi characters (an OSC title, a clear
screen, U+202E) the way the text report does, and bounds the length."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable

from hetgitops.diagnostics import escape_controls

MAX_SAID = 300  # characters of one server text in a message
HIDDEN = "***"
# Shorter values (a 3-letter password) would blank out ordinary words of every message.
_SHORTEST = 4
# Whatever follows an authorization scheme is a credential, known to us or not (a token a
# plugin refreshed after we looked, an auth proxy's own). Spelt as in a header and 8 characters
# or more, so that "bearer token expired" or "basic validation" keep their words.
_SCHEME = re.compile(r"\b(Bearer|Basic)(?:\s+|%20)[A-Za-z0-9._~+/=:-]{8,}")


class Secrets:
    """The credentials of one kubeconfig, as any text may contain them."""

    def __init__(self) -> None:
        self._values: set[str] = set()

    def add(self, *values: object) -> None:
        for value in values:
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            if not isinstance(value, str):
                continue
            for part in _forms(value.strip()):
                if len(part) >= _SHORTEST:
                    self._values.add(part)

    def add_key_file(self, path: object) -> None:
        """A client key (kubeconfig `client-key-data`, or an exec plugin's), as the PEM file
        the kubernetes client wrote and as the base64 the kubeconfig holds."""
        if not isinstance(path, str) or not path:
            return
        try:
            with open(path, "rb") as file:
                data = file.read(1 << 20)
        except OSError:
            return
        self.add(data, base64.b64encode(data))
        self.add(*(line for line in data.splitlines() if len(line) >= 16 and b"-----" not in line))

    def hide(self, text: str) -> str:
        for value in sorted(self._values, key=len, reverse=True):  # longest first: no leftovers
            text = text.replace(value, HIDDEN)
        return _SCHEME.sub(lambda m: f"{m.group(1)} {HIDDEN}", text)


def _forms(value: str) -> Iterable[str]:
    """The value, and the credential inside an Authorization header value."""
    yield value
    scheme, _, rest = value.partition(" ")
    if rest and scheme.lower() in ("bearer", "basic"):
        yield rest.strip()
        if scheme.lower() == "basic":  # user:password, the password alone too
            try:
                decoded = base64.b64decode(rest.strip(), validate=True).decode("utf-8")
            except ValueError:
                return
            yield decoded
            yield decoded.partition(":")[2]


def shown(text: object, secrets: Secrets | None = None) -> str:
    """`text` from a server, safe and short enough for a one-line message."""
    said = (secrets or Secrets()).hide(str(text))
    said = escape_controls(said).replace("\n", "\\n")
    return said if len(said) <= MAX_SAID else said[:MAX_SAID] + "..."
