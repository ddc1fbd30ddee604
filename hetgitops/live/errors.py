"""Live stage: the three ways a cluster read fails (ClusterError, exit 4; Forbidden; NotServed;
RequestFailed), the run's Deadline, and the few helpers that word a failure without leaking
anything a header or a URL could carry."""

from __future__ import annotations

import time
import urllib.parse
from dataclasses import dataclass
from http import HTTPStatus


class ClusterError(Exception):
    """The cluster cannot answer at all: unreachable, bad credentials, an answer that is not
    Kubernetes', out of time (exit 4)."""


@dataclass(frozen=True)
class Deadline:
    """The moment (time.monotonic) a whole run must be done by, the budget it came from and
    the option that set it (`--timeout` of drift), if any: a message names only what the
    command has."""

    at: float
    seconds: float
    option: str = ""

    @classmethod
    def start(cls, seconds: float, *, option: str = "") -> Deadline:
        return cls(time.monotonic() + seconds, seconds, option)

    def left(self) -> float:
        return self.at - time.monotonic()

    def expired(self, server: str) -> ClusterError:
        limit = f"{self.option} {self.seconds:g}s" if self.option else f"{self.seconds:g}s"
        return ClusterError(
            f"the API server {server} did not answer within {limit} "
            "(every request of the run together)"
        )


def redacted(url: str) -> str:
    """`url` with a password in it hidden as kubectl does (`https://admin:***@host`)."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


class Forbidden(Exception):
    """The credentials may not do this one request (a finding, or exit 4 when it is global)."""

    def __init__(self, what: str, message: str) -> None:
        super().__init__(f"{what}: {message}")
        self.what = what
        self.message = message


class NotServed(Exception):
    """The API server does not serve this resource (a CRD is not installed)."""


class RequestFailed(ClusterError):
    """Any other refusal of one request (400, 409, 422, ...), with the server's message: a
    finding where the caller expects it (an apply the server would refuse), else a ClusterError
    like any answer the read cannot go on from (exit 4)."""

    def __init__(self, status: int, message: str, url: str = "") -> None:
        where = f"{url}: " if url else ""
        super().__init__(
            f"{where}the API server refused the request (HTTP {status} {phrase(status)}): {message}"
        )
        self.status = status
        self.message = message


def phrase(status: int) -> str:
    """HTTP's reason phrase for `status` ("" for a code HTTP does not define)."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def first_line(exc: BaseException) -> str:
    """The first line of what `exc` says, at most 200 characters."""
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]


def connection_reason(exc: BaseException) -> str:
    """Why a connection failed, without anything a header could leak (only the exception
    type and its first line, which urllib3 builds from the host and the OS error)."""
    reason = getattr(exc, "reason", None)
    return first_line(reason if isinstance(reason, BaseException) else exc)
