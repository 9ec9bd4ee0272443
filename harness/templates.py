"""Names that depend on the environment, written in a profile as templates.

`{cluster}` is the worker's name; a filter after `|` derives another name from it by rule,
as vendors' dispatchers do (`{cluster|trimSuffix:-cluster}-kubeconfig` names the Secret of
worker `east-cluster` `east-kubeconfig`). Filters, applied left to right:

- `trimSuffix:TEXT`, `trimPrefix:TEXT`: drop TEXT from the end / start when it is there;
- `replace:OLD:NEW`: every OLD becomes NEW (NEW may be empty);
- `upper`, `lower`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping

# `{name}` or `{name|filter|...}`: a name first, so JSON or Go templates in a value stay text
_FIELD = re.compile(r"\{(\s*[A-Za-z_][A-Za-z0-9_]*\s*(?:\|[^{}]*)?)\}")

FILTERS: dict[str, tuple[int, Callable[..., str]]] = {
    "trimSuffix": (1, lambda value, text: value.removesuffix(text)),
    "trimPrefix": (1, lambda value, text: value.removeprefix(text)),
    "replace": (2, lambda value, old, new: value.replace(old, new)),
    "upper": (0, str.upper),
    "lower": (0, str.lower),
}


class TemplateError(ValueError):
    """What is wrong with a template, in words for the profile's author."""


def problem(template: str, known: Collection[str]) -> str | None:
    """Why `template` cannot be rendered with the names `known`, None when it can."""
    try:
        render(template, dict.fromkeys(known, "x"))
    except TemplateError as exc:
        return str(exc)
    return None


def names(template: str) -> set[str]:
    """The placeholder names a template uses."""
    return {field.split("|", 1)[0].strip() for field in _FIELD.findall(template)}


def render(template: str, values: Mapping[str, str]) -> str:
    """`template` with each `{name|filter...}` replaced; TemplateError naming the first
    unknown placeholder or filter."""

    def one(match: re.Match[str]) -> str:
        name, *filters = match.group(1).split("|")
        name = name.strip()
        if name not in values:
            known = ", ".join("{" + k + "}" for k in values) or "none"
            raise TemplateError(f"unknown placeholder {{{name}}} (known: {known})")
        value = values[name]
        for spec in filters:
            value = _apply(spec, value)
        return value

    return _FIELD.sub(one, template)


def _apply(spec: str, value: str) -> str:
    name, *args = spec.split(":")
    name = name.strip()
    if name not in FILTERS:
        raise TemplateError(f"unknown filter {name!r} (known: {', '.join(FILTERS)})")
    arity, function = FILTERS[name]
    if len(args) != arity:
        usage = ":".join([name, *["TEXT"] * arity])
        raise TemplateError(f"filter {name!r} takes {arity} argument(s): {usage}")
    return function(value, *args)
