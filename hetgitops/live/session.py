"""One read of a live cluster for a report that can also run without one (`diff --kubeconfig`,
`capacity --without ... --kubeconfig`): the cluster opened, read and closed, and every way the
read can fail turned into one `Unavailable` whose text says what to fix (the CLI: exit 4)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hetgitops.live.client import Cluster


class Unavailable(Exception):
    """The cluster could not be read (unreachable, forbidden, a bad kubeconfig): exit 4."""


@contextmanager
def reading(kubeconfig: Path | None, context: str | None) -> Iterator[Cluster]:
    """The open cluster for the `with` block; closed after it, whatever happens. Imported
    lazily: the client (and `kubernetes`) is loaded only by a run that reads a cluster."""
    from hetgitops.live.client import Cluster, ClusterError, Forbidden, NotServed, RequestFailed

    try:
        cluster = Cluster(kubeconfig, context)
    except ClusterError as exc:
        raise Unavailable(str(exc)) from None
    try:
        yield cluster
    except Forbidden as exc:
        raise Unavailable(f"the kubeconfig may not list {exc.what}: {exc.message}") from None
    except (ClusterError, RequestFailed, NotServed) as exc:
        raise Unavailable(f"cannot read the cluster at {cluster.server}: {exc}") from None
    finally:
        cluster.close()
