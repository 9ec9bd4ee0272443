"""The JSON Schemas of what a vendor writes (a profile, a --plan file), and their errors as
one line each.

The schema is the contract: editors complete and check a profile from it (the YAML
language server), and `jsonschema` checks structure, types, enums, patterns and required
fields here. An error is one line: the field path (`spec.run.replicas`,
`spec.environment.clusters[1]`), then what is wrong and what is right, in the schema's
own words (`errorMessage`, `patternErrorMessage`, the editors' extension) where it has
them, so the console and the editor say the same.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast

from jsonschema import Draft7Validator, validators
from jsonschema.exceptions import ValidationError, best_match

from harness.errors import TYPE_WORDS, shown

HERE = Path(__file__).resolve().parent
ROOT = "(document)"  # the field path of the whole document in messages
_PLAIN_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]{0,63}")  # else quoted: '0', ' x'


def _integer(_checker: Any, value: Any) -> bool:
    """An integer is an int: 2.0 is not a replica count (JSON Schema would take it)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _pattern(validator: Any, pattern: str, value: Any, schema: dict[str, Any]) -> Iterator[Any]:
    """`pattern` as ECMA-262 reads it, as editors do: `$` ends the text, where Python's `$`
    would also match before a final newline (so "vendor\\n" would pass)."""
    if isinstance(value, str) and not re.search(pattern.replace("$", r"\Z"), value):
        yield ValidationError(f"{value!r} does not match {pattern!r}")


_Validator = validators.extend(
    Draft7Validator,
    {"pattern": _pattern},
    type_checker=Draft7Validator.TYPE_CHECKER.redefine("integer", _integer),
)


@functools.cache
def load(name: str) -> dict[str, Any]:
    """The schema `<name>.schema.json` shipped beside this module."""
    schema: dict[str, Any] = json.loads((HERE / f"{name}.schema.json").read_text())
    return schema


@functools.cache
def _validator(name: str) -> Any:
    """One validator per schema, checked and built once (profiles and plans are checked
    many times in a run of several profiles and in the tests)."""
    return _Validator(load(name))


def problem(doc: Any, name: str) -> str | None:
    """The first thing wrong with `doc` against schema `name`, as `field path: problem`;
    None when it conforms."""
    found = non_string_key(doc, ())
    if found:
        return found
    errors = list(_validator(name).iter_errors(doc))
    # a value that is wrong says more than a field that is missing beside it (an image of
    # the wrong type, rather than the command it would make required)
    error = best_match([e for e in errors if e.validator != "required"] or errors)
    return None if error is None else _say(error)


def non_string_key(node: Any, path: tuple[Any, ...]) -> str | None:
    """YAML allows keys JSON has not (12, null, true); a schema cannot say them."""
    if isinstance(node, dict):
        for key, value in node.items():
            if not isinstance(key, str):
                return f"{field(path)}: keys must be strings, got {shown(key)}"
            found = non_string_key(value, (*path, key))
            if found:
                return found
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found = non_string_key(value, (*path, i))
            if found:
                return found
    return None


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


def _say(error: ValidationError) -> str:
    """One jsonschema error as `field path: what is wrong, got what`."""
    path = list(error.absolute_path)
    schema: dict[str, Any] = error.schema if isinstance(error.schema, dict) else {}
    value: Any = error.instance
    kind, expected = error.validator, cast(Any, error.validator_value)
    worded = _worded(error)
    if "propertyNames" in error.absolute_schema_path:  # about a key: name it
        return f"{field([*path, value])}: {worded or 'not a valid key'}"
    if kind == "required":
        absent = next(k for k in expected if k not in value)
        if "errorMessage" in schema:  # a field required only with others: why
            return f"{field([*path, absent])}: {schema['errorMessage']}"
        return _required([*path, absent], schema.get("properties", {}).get(absent, {}))
    if kind == "dependencies":
        needed = next(k for k in expected if k not in value)
        return _required([*path, needed], schema["properties"].get(needed, {}))
    if kind == "additionalProperties":
        names = list(schema.get("properties", {}))
        extra = next(k for k in value if k not in names)
        known = f"(known: {', '.join(names)})"
        return f"{field([*path, extra])}: unknown field{_close(extra, names)} {known}"
    if kind == "uniqueItems":
        i = next(i for i, item in enumerate(value) if item in value[:i])
        return f"{field([*path, i])}: duplicate {shown(value[i])}"
    if worded and kind == "enum":
        known = ", ".join(str(o) for o in expected)
        return f"{field(path)}: {worded} {_quoted(value)}{_close(value, expected)} (known: {known})"
    if worded:
        return f"{field(path)}: {worded}, got {shown(value)}"
    if kind == "type":
        types = [expected] if isinstance(expected, str) else expected
        said = " or ".join(TYPE_WORDS.get(t, t) for t in types if t != "null")
        got = shown(value) if isinstance(value, bool) else _type(value)
        return f"{field(path)}: must be {said}, got {got}"
    if kind == "enum":
        options = ", ".join(str(o) for o in expected if o is not None)
        return (
            f"{field(path)}: must be one of {options}, got {shown(value)}{_close(value, expected)}"
        )
    if kind == "const":
        return f"{field(path)}: must be {expected}, got {shown(value)}"
    if kind == "minimum":
        return f"{field(path)}: must be >= {expected}, got {shown(value)}"
    if kind == "minItems":
        return f"{field(path)}: must not be empty"
    return f"{field(path)}: {error.message}"


def _worded(error: ValidationError) -> str | None:
    """The schema's words for this error: its errorMessage, or patternErrorMessage for a
    pattern; an anyOf's words over its branches' (a duration is a number or a text)."""
    for node in (error, *_parents(error)):
        if node.absolute_path != error.absolute_path:
            break
        words = node.schema.get("errorMessage") if isinstance(node.schema, dict) else None
        if node.validator == "pattern" and isinstance(node.schema, dict):
            words = node.schema.get("patternErrorMessage") or words
        if words:
            return str(words)
    return None


def enum(name: str, path: str) -> tuple[str, ...]:
    """The values schema `name` allows at a dotted field path (`[]` for a list's items),
    null left out: the one list of features, orderings, ... the code reads."""
    node = load(name)
    for part in path.split("."):
        node = node["properties"][part.removesuffix("[]")]
        if part.endswith("[]"):
            node = node["items"]
    return tuple(v for v in node["enum"] if v is not None)


def _parents(error: ValidationError) -> Iterator[ValidationError]:
    while error.parent is not None:
        error = cast(ValidationError, error.parent)
        yield error


def _required(path: list[Any], schema: dict[str, Any]) -> str:
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
    return f"{field(path)}: required" + (f" ({hint})" if hint else "")


def _close(value: Any, names: Sequence[Any]) -> str:
    """A "did you mean X?" for a near miss of a name (a typo), else nothing."""
    words = [n for n in names if isinstance(n, str)]
    close = difflib.get_close_matches(value, words, n=1) if isinstance(value, str) else []
    return f"; did you mean {close[0]}?" if close else ""


def _quoted(value: Any) -> str:
    """A name in double quotes when plain, else as repr (escaped, cut short)."""
    plain = isinstance(value, str) and _PLAIN_KEY_RE.fullmatch(value)
    return f'"{value}"' if plain else shown(value)


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__
