"""Write stage: which strings must be quoted so that every YAML reader takes them as strings.

PyYAML's emitter quotes what PyYAML's own (YAML 1.1) resolver would misread, but kubectl, Argo CD
and Flux read YAML with Go's sigs.k8s.io/yaml (go-yaml v2 resolution), and other tools with YAML
1.2 core resolvers. Plain `y`, `n`, `1e3`, `0o17` or `08` are strings to PyYAML and booleans or
numbers to Go, so a Namespace named `y` or a label value `1e3` would change meaning on the way
to the cluster. `ambiguous()` is the union of those resolvers; quoting a string that did not
need it costs two bytes, missing one changes what is applied.
"""

from __future__ import annotations

import re

import yaml

# Booleans and nulls of YAML 1.1 (y/n/yes/no/on/off in three cases), YAML 1.2 core and go-yaml,
# plus the 1.1 merge and value keys, which go-yaml and PyYAML resolve as special tags.
_WORDS = frozenset(
    word
    for base in ("y", "yes", "n", "no", "on", "off", "true", "false", "null")
    for word in (base, base.capitalize(), base.upper())
) | {"", "~", "<<", "="}

# Numbers, checked on the text and on the text without underscores (go-yaml removes them all
# before strconv.ParseInt(s, 0, 64), so `1_0`, `0x_1F`, `0o17` and `08` are numbers to it):
_NUMBER = re.compile(
    r"""[-+]?(?:
        0[bB][01]+ | 0[oO][0-7]+ | 0[xX][0-9a-fA-F]+        # prefixed integers (1.1, 1.2, Go)
      | [0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?             # decimal integers and floats
      | \.[0-9]+(?:[eE][-+]?[0-9]+)?                        # .5, .5e3
      | [0-9]+(?::[0-5]?[0-9])+(?:\.[0-9]*)?                # sexagesimal (YAML 1.1): 1:20
      | \.(?:inf|Inf|INF|nan|NaN|NAN)                       # infinities and NaN
    )""",
    re.VERBOSE,
)
# Dates and timestamps (YAML 1.1 and go-yaml, which accepts one-digit months and days).
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt \t].*)?", re.DOTALL)
_RESOLVER = yaml.resolver.Resolver()
# Only these first characters can start a number, a timestamp, or one of the words.
_FIRST = frozenset("0123456789+-.~<=yYnNoOtTfF")


def ambiguous(text: str) -> bool:
    """True when some YAML 1.1 or 1.2 resolver (PyYAML, go-yaml v2/v3, the specs' regular
    expressions) could read the plain scalar `text` as anything but this string."""
    if not text or text in _WORDS:
        return True
    if text[0] not in _FIRST:
        return False
    if _NUMBER.fullmatch(text) or _TIMESTAMP.fullmatch(text) or _pyyaml_reads_other(text):
        return True
    return "_" in text and _NUMBER.fullmatch(text.replace("_", "")) is not None


def _pyyaml_reads_other(text: str) -> bool:
    """PyYAML's own resolver, so that this is always a superset of what its emitter quotes
    (its YAML 1.1 regexes take `0b_` or `0x_` for numbers)."""
    tag = _RESOLVER.resolve(yaml.ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
    return bool(tag != "tag:yaml.org,2002:str")
