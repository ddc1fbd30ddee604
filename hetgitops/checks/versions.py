"""Check stage, versions family: the Fleet's Kubernetes, Kueue and Volcano versions against the
matrix the renders are tested on (docs/reference/versions.md lists it; a test holds the page to
`TESTED`)."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import warning_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.model.policy import Policy

Minor = tuple[int, int]
# Field of Fleet.spec.versions -> (oldest, newest) minor the renders are tested on, and how.
TESTED: dict[str, tuple[Minor, Minor, str]] = {
    "kubernetes": (
        (1, 29),
        (1, 37),
        "every render is schema-checked against kubernetes-validate's strict schemas of its "
        "minor; the e2e and simulated-cluster suites apply the bundled render to "
        "kube-apiserver 1.37.2",
    ),
    "kueue": (
        (0, 13),
        (0, 19),
        "kueue.x-k8s.io v1beta1 (before 0.15) and v1beta2 CRD schemas; the live suites run "
        "Kueue 0.19.2",
    ),
    "volcano": (
        (1, 14),
        (1, 15),
        "Volcano CRD schemas; the simulated cluster runs Volcano 1.14.1",
    ),
}


def _minor(version: tuple[int, ...] | None) -> Minor | None:
    if version is None or len(version) < 2:
        return None
    return (version[0], version[1])


def _shown(minor: Minor) -> str:
    return f"{minor[0]}.{minor[1]}"


@rule("version-untested", Severity.WARNING)
def version_untested(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Warn about a Kubernetes, Kueue or Volcano version outside the tested matrix.

    The renders follow what each system accepts at the versions hetgitops is tested on (API
    versions, defaults, webhook rules); outside them an object may be refused or mean
    something else. docs/reference/versions.md lists the matrix.
    Fails (warns): `versions: {kueue: "0.11.0"}`; `kubernetes: "1.38"`.
    Passes: `kubernetes: "1.33"`, `kueue: "0.19.2"`, `volcano: "1.15.1"`.
    Fix: pin a tested version, or accept the warning after trying the render on that version.
    """
    fleet = policy.fleet
    if fleet is None:
        return
    written = {"kubernetes": fleet.kubernetes, "kueue": fleet.kueue, "volcano": fleet.volcano}
    for field, (oldest, newest, _) in TESTED.items():
        minor = _minor(written[field])
        if minor is None or oldest <= minor <= newest:
            continue
        side = "older" if minor < oldest else "newer"
        yield warning_at(
            "version-untested",
            f"{field} {_shown(minor)} is {side} than the versions hetgitops renders are tested "
            f"on ({_shown(oldest)} to {_shown(newest)})",
            fleet.origin,
            "spec",
            "versions",
            field,
            hint="pin a tested version, or try the render on that version before relying on it "
            "(docs/reference/versions.md)",
        )
