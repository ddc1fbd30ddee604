"""Live stage: an API server's answer read as Kubernetes means it: a JSON object or a refusal
turned into the exception every command words alike (live.errors), a LIST's items checked for
the shape readers rely on (live.shape), and Retry-After read for the retry policy."""

from __future__ import annotations

import contextlib
import email.utils
import time
from collections.abc import Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from hetgitops.live import shape
from hetgitops.live.errors import ClusterError, Forbidden, NotServed, RequestFailed, phrase
from hetgitops.live.said import Secrets, shown

if TYPE_CHECKING:
    from hetgitops.live.client import Resource

# A 429 (API Priority and Fairness) or 503 is retried this many times, each wait its
# Retry-After capped at RETRY_AFTER_CAP seconds and never past the deadline: a server that asks
# for `Retry-After: 999999` is told no, not waited on until the run's time is gone.
MAX_RETRIES = 3
RETRY_AFTER_CAP = 10.0
RETRIED = (HTTPStatus.TOO_MANY_REQUESTS, HTTPStatus.SERVICE_UNAVAILABLE)


def retry_after_seconds(value: str) -> float:
    """Retry-After in seconds (a number or an HTTP date); 1 when absent or unreadable."""
    value = value.strip()
    if value.isdigit():
        return float(value)
    with contextlib.suppress(TypeError, ValueError):
        when = email.utils.parsedate_to_datetime(value)
        return max(when.timestamp() - time.time(), 0.0)
    return 1.0


def decode(
    status: int, data: bytes, what: str, url: str, *, secrets: Secrets, tries: int = 1
) -> dict[str, Any]:
    """The JSON object of a 2xx answer, or the exception for any other (see _refusal)."""
    import orjson  # 3-4x faster than json on a 10,000-object LIST, which dominates the read

    try:
        body = orjson.loads(data) if data else {}
    except orjson.JSONDecodeError:
        body = None
    if 200 <= status < 300:
        if not isinstance(body, dict):
            raise ClusterError(
                f"{url}: HTTP {status} with {_describe(data, body)}, not a Kubernetes object: "
                "is the server URL an API server's (not an auth proxy's login page)?"
            )
        return body
    said = mapping(body).get("message") or f"HTTP {status} {phrase(status)}"
    raise _refusal(status, shown(said, secrets), what, url, tries)


def _refusal(status: int, message: str, what: str, url: str, tries: int) -> Exception:
    """The exception for a non-2xx answer: one exit code and wording for every command."""
    if status == HTTPStatus.UNAUTHORIZED:
        return ClusterError(
            f"the API server rejected the credentials (401 Unauthorized): {message}"
        )
    if status == HTTPStatus.FORBIDDEN:
        return Forbidden(what, message)
    if status == HTTPStatus.NOT_FOUND:
        return NotServed(message)
    answered = f"{url}: HTTP {status} {phrase(status)}"
    if status in RETRIED:
        again = f"asked {tries} times" if tries > 1 else "asked once (no time left to wait)"
        why = "is throttling requests" if status == 429 else "is unavailable"
        return ClusterError(
            f"{answered}: the API server {why} ({message}); {again}, waiting its Retry-After "
            f"(at most {RETRY_AFTER_CAP:g}s each) in between: try again later"
        )
    if status >= 500:
        return ClusterError(f"{answered}: the API server failed ({message}), not hetgitops")
    if 400 <= status < 500:
        return RequestFailed(status, message, url)
    return ClusterError(f"{answered}: not an answer a Kubernetes API server gives ({message})")


def mapping(value: Any) -> Mapping[str, Any]:
    """`value` when it is a mapping, else an empty one (a field of an answer not to trust)."""
    return value if isinstance(value, Mapping) else {}


def list_items(
    page: Mapping[str, Any], resource: Resource, url: str, *, start: int, secrets: Secrets
) -> list[dict[str, Any]]:
    """The items of a LIST answer, or ClusterError when the answer is not a list of the
    kind asked for (`{}` or another kind's object read as an empty list would report every
    object of the policy as missing) or an item is not in the shape of one."""
    kind = page.get("kind")
    items = page.get("items")
    if kind != resource.list_of or not (items is None or isinstance(items, list)):
        got = f"kind {shown(kind, secrets)!r}" if kind else "an object without a kind"
        raise ClusterError(
            f"{url}: HTTP 200 with {got}, not a {resource.list_of}: is the server URL an "
            "API server's?"
        )
    for index, item in enumerate(items or []):
        found = shape.problem(
            item, namespaced=resource.namespaced, group=resource.group, plural=resource.plural
        )
        if found is not None:
            name = shape.name_of(item)
            named = f" ({shown(name, secrets)!r})" if name else ""
            raise ClusterError(
                f"{url}: item {start + index + 1}{named} of the {resource.list_of}: "
                f"{shown(found, secrets)}: not an object hetgitops can read"
            )
    return list(items or [])


def _describe(data: bytes, body: Any) -> str:
    """What a 2xx body that is not a JSON object is, in a few words."""
    if isinstance(body, list):
        return "a JSON array"
    if body is not None:
        return f"a JSON {type(body).__name__}"
    head = data[:512].lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html")) or b"<html" in head:
        return "an HTML page"
    return "an empty body" if not data.strip() else "a body that is not JSON"
