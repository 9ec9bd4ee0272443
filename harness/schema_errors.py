"""A JSON Schema's errors in words, one line each, for every document a user hands in or
checks (a profile, a --plan file, a report): the field path (`spec.run.replicas`,
`checks[3] (CORE-04).message`), then what is wrong and what is right, in the schema's own
words where it has them (`errorMessage`, `patternErrorMessage`, the editors' extension, or
its `description` of a pattern or format), so the console and the editor say the same."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

from jsonschema.exceptions import ValidationError

from harness.errors import TYPE_WORDS, shown

ROOT = "(document)"  # the field path of the whole document in messages
_PLAIN_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]{0,63}")  # else quoted: '0', ' x'
# validators whose failure the schema's description of the value says best
_DESCRIBED = ("pattern", "anyOf", "oneOf", "format")

Where = Callable[[Sequence[Any]], str]  # a field path in words


def field(path: Sequence[Any]) -> str:
    """A field path as messages and the docs write it: spec.run.command[0]."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{key(part)}" if text else key(part)
    return text or ROOT


def key(name: str) -> str:
    """A mapping key as part of a field path: as written when plain, else quoted and cut."""
    return name if _PLAIN_KEY_RE.fullmatch(name) else shown(name)


def say(error: ValidationError, where: Where = field) -> str:
    """One jsonschema error as `field path: what is wrong, got what`; `where` words the
    path (a report names each check by its id)."""
    path = list(error.absolute_path)
    schema: dict[str, Any] = error.schema if isinstance(error.schema, dict) else {}
    value: Any = error.instance
    kind, expected = error.validator, cast(Any, error.validator_value)
    worded = _worded(error)
    if "propertyNames" in error.absolute_schema_path:  # about a key: name it
        return f"{where([*path, value])}: {worded or 'not a valid key'}"
    if kind == "required":
        absent = next(k for k in expected if k not in value)
        if "errorMessage" in schema:  # a field required only with others: why
            return f"{where([*path, absent])}: {schema['errorMessage']}"
        return _required([*path, absent], schema.get("properties", {}).get(absent, {}), where)
    if kind == "dependencies":
        needed = next(k for k in expected if k not in value)
        return _required([*path, needed], schema["properties"].get(needed, {}), where)
    if kind == "additionalProperties":
        names = list(schema.get("properties", {}))
        extra = next(k for k in value if k not in names)
        known = f"(known: {', '.join(names)})"
        return f"{where([*path, extra])}: unknown field{_close(extra, names)} {known}"
    if kind == "uniqueItems":
        i = next(i for i, item in enumerate(value) if item in value[:i])
        return f"{where([*path, i])}: duplicate {shown(value[i])}"
    if worded and kind == "enum":
        known = ", ".join(str(o) for o in expected)
        return f"{where(path)}: {worded} {_quoted(value)}{_close(value, expected)} (known: {known})"
    if worded:
        return f"{where(path)}: {worded}, got {_got(value)}"
    if kind == "type":
        types = [expected] if isinstance(expected, str) else expected
        said = " or ".join(TYPE_WORDS.get(t, t) for t in types)
        return f"{where(path)}: must be {said}, got {_got(value)}"
    if kind == "enum":
        options = ", ".join(str(o) for o in expected if o is not None)
        return (
            f"{where(path)}: must be one of {options}, got {shown(value)}{_close(value, expected)}"
        )
    if kind == "const":
        return f"{where(path)}: must be {expected}, got {shown(value)}"
    if kind == "minimum":
        return f"{where(path)}: must be at least {expected}, got {shown(value)}"
    if kind in ("minItems", "minLength"):
        return f"{where(path)}: must not be empty"
    return f"{where(path)}: {error.message}"


def _worded(error: ValidationError) -> str | None:
    """The schema's words for this error: its errorMessage, or patternErrorMessage for a
    pattern; an anyOf's words over its branches' (a duration is a number or a text); else
    its description of a value a pattern or format decides."""
    for node in (error, *_parents(error)):
        if node.absolute_path != error.absolute_path:
            break
        words = node.schema.get("errorMessage") if isinstance(node.schema, dict) else None
        if node.validator == "pattern" and isinstance(node.schema, dict):
            words = node.schema.get("patternErrorMessage") or words
        if words:
            return str(words)
    described = error.schema.get("description") if isinstance(error.schema, dict) else None
    return f"must be {described}" if error.validator in _DESCRIBED and described else None


def _parents(error: ValidationError) -> Iterator[ValidationError]:
    while error.parent is not None:
        error = cast(ValidationError, error.parent)
        yield error


def _required(path: list[Any], schema: dict[str, Any], where: Where) -> str:
    """`path: required`, naming the first field it must hold (metadata.name) and a hint:
    the value it must have, or what it is."""
    while schema.get("required"):
        first = schema["required"][0]
        path, schema = [*path, first], schema.get("properties", {}).get(first, {})
    if "const" in schema:
        hint = f"{path[-1]}: {schema['const']}"
    else:
        hint = str(schema.get("description", "")).split(". ")[0]
        hint = hint[:-1] if hint.endswith(".") and not hint.endswith("...") else hint
        hint = hint[:1].lower() + hint[1:] if hint[1:2].islower() else hint
    return f"{where(path)}: required" + (f" ({hint})" if hint else "")


def _close(value: Any, names: Sequence[Any]) -> str:
    """A "did you mean X?" for a near miss of a name (a typo), else nothing."""
    words = [n for n in names if isinstance(n, str)]
    close = difflib.get_close_matches(value, words, n=1) if isinstance(value, str) else []
    return f"; did you mean {close[0]}?" if close else ""


def _quoted(value: Any) -> str:
    """A name in double quotes when plain, else as repr (escaped, cut short)."""
    plain = isinstance(value, str) and _PLAIN_KEY_RE.fullmatch(value)
    return f'"{value}"' if plain else shown(value)


def _got(value: Any) -> str:
    """What was written instead: the value itself (cut short), or the kind of a list or
    mapping, which would not fit on the line."""
    if isinstance(value, list | dict):
        return "a list" if isinstance(value, list) else "a mapping"
    return shown(value)
