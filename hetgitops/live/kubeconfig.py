"""Live stage: the kubeconfig as the kubernetes client reads it, with an exec credential plugin
bounded by the run's deadline (live.plugin), its failures said as ClusterError, the
credentials it holds collected so no message shows them, and TLS without verification said
once, plainly."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hetgitops.live.errors import ClusterError, Deadline, first_line
from hetgitops.live.plugin import bounded_exec
from hetgitops.live.said import Secrets


def credentials_of(configuration: Any) -> Secrets:
    """The kubeconfig's credentials as loaded: token, basic-auth password, client key (a
    plugin's token joins when a request carries it, see Cluster._send)."""
    secrets = Secrets()
    secrets.add(*(configuration.api_key or {}).values(), configuration.password)
    with contextlib.suppress(Exception):  # only present with a username and password
        secrets.add(configuration.get_basic_auth_token())
    secrets.add_key_file(configuration.key_file)
    return secrets


def insecure_warning(server: str) -> str:
    """The one line a command prints for a cluster read without TLS verification."""
    return (
        f"hetgitops: warning: the TLS certificate of {server} is not verified "
        "(insecure-skip-tls-verify in the kubeconfig): anyone in between could answer for the "
        "cluster"
    )


@contextlib.contextmanager
def quiet_insecure_warning() -> Iterator[None]:
    """urllib3 warns on every request to an unverified server (InsecureRequestWarning with a
    source path); the client says it once, plainly (`Cluster.insecure`)."""
    import warnings

    import urllib3

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
        yield


def kubeconfig_name(kubeconfig: Path | None) -> str:
    """The file(s) the kubernetes client reads, as it picks them: --kubeconfig, else
    $KUBECONFIG (a list of files), else ~/.kube/config. A path, never its contents."""
    if kubeconfig is not None:
        return str(kubeconfig)
    from kubernetes.config.kube_config import KUBE_CONFIG_DEFAULT_LOCATION

    return os.path.expanduser(os.environ.get("KUBECONFIG") or KUBE_CONFIG_DEFAULT_LOCATION)


def load_kubeconfig(
    kubeconfig: Path | None, context: str | None, configuration: Any, deadline: Deadline
) -> None:
    """The kubeconfig into `configuration`. An exec credential plugin runs bounded by
    EXEC_TIMEOUT, and its failure is a ClusterError: the kubernetes client would log a raw
    `ERROR:root:exec: ...` line and go on without credentials (every request then 401/403)."""
    import yaml
    from kubernetes import config
    from kubernetes.config import kube_config

    failures: list[str] = []
    capture = _Capture(failures)
    root = logging.getLogger()
    root.addHandler(capture)
    original = kube_config.ExecProvider  # type: ignore[attr-defined]
    kube_config.ExecProvider = bounded_exec(original, deadline)  # type: ignore[attr-defined]
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig) if kubeconfig else None,
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
    except config.ConfigException as exc:
        where = kubeconfig_name(kubeconfig)
        raise ClusterError(f"cannot use the kubeconfig {where}: {first_line(exc)}") from None
    except OSError as exc:
        where = kubeconfig_name(kubeconfig)
        raise ClusterError(f"cannot read the kubeconfig {where}: {exc.strerror}") from None
    except yaml.YAMLError as exc:  # the client parses the file itself, and lets this through
        where = kubeconfig_name(kubeconfig)
        raise ClusterError(f"the kubeconfig {where} is not valid YAML: {first_line(exc)}") from None
    finally:
        kube_config.ExecProvider = original  # type: ignore[attr-defined]
        root.removeHandler(capture)
    if failures:
        raise ClusterError(f"getting credentials: {failures[0]}")


class _Capture(logging.Handler):
    """The kubernetes client's logged errors while loading the kubeconfig, kept, not printed."""

    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.ERROR)
        self._into = into

    def emit(self, record: logging.LogRecord) -> None:
        self._into.append(first_line(Exception(record.getMessage())))
