"""Load stage, YAML scalars: which tags a policy may use and what each plain value becomes."""

from __future__ import annotations

from typing import Any

import yaml

_T = "tag:yaml.org,2002:"
STR, MAP, SEQ, MERGE = _T + "str", _T + "map", _T + "seq", _T + "merge"
# Dates stay strings so JSON Schema `format: date` and the model see one type; `=` is text too.
_AS_TEXT = frozenset({STR, MERGE, _T + "timestamp", _T + "value"})
_CONSTRUCTORS = {
    _T + name: getattr(yaml.constructor.SafeConstructor, f"construct_yaml_{name}")
    for name in ("int", "float", "bool", "null")
}
_RESOLVER: Any = yaml.resolver.Resolver()
_CONSTRUCTOR = yaml.constructor.SafeConstructor()


class ScalarError(ValueError):
    """A scalar that cannot be read; the message is shown to the user as is."""


def shown_tag(tag: str) -> str:
    return "!!" + tag[len(_T) :] if tag.startswith(_T) else tag


def scalar_tag(event: yaml.ScalarEvent, *, key: bool = False) -> str:
    """The resolved tag (YAML 1.1 core schema, like PyYAML's SafeLoader); ScalarError if the
    tag is not plain data (`!!python/object`, `!!binary`, `!local`...). A key stays text as
    written, so only `<<` needs telling apart there (and resolving every key is a hot spot)."""
    tag = event.tag
    if tag is None and key:
        return MERGE if event.value == "<<" and event.implicit[0] else STR
    if tag is None:
        return str(_RESOLVER.resolve(yaml.ScalarNode, event.value, event.implicit))
    if tag == "!":  # the non-specific tag: "just a string"
        return STR
    if tag in _AS_TEXT or tag in _CONSTRUCTORS:
        return str(tag)
    raise ScalarError(f"the tag {shown_tag(tag)} is not allowed in a policy")


def collection_tag_allowed(tag: str | None, *, mapping: bool) -> bool:
    return tag in (None, "!", MAP if mapping else SEQ)


def scalar_value(text: str, tag: str) -> Any:
    if tag in _AS_TEXT:
        return text
    try:
        return _CONSTRUCTORS[tag](_CONSTRUCTOR, yaml.ScalarNode(tag, text))
    except (ValueError, TypeError, KeyError, OverflowError, yaml.YAMLError):
        raise ScalarError(f"cannot read {text[:40]!r} as {tag[len(_T) :]}") from None
