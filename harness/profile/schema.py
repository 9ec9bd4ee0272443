"""The JSON Schemas of what a vendor writes (a profile, a --plan file), and the first thing
wrong with a document against one, as one line (harness.schema_errors words it).

The schema is the contract: editors complete and check a profile from it (the YAML
language server), and `jsonschema` checks structure, types, enums, patterns and required
fields here, as editors read them (an integer is an int, `$` ends the text).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jsonschema import Draft7Validator, validators
from jsonschema.exceptions import ValidationError, best_match

from harness.errors import shown
from harness.schema_errors import field, say

HERE = Path(__file__).resolve().parent


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
    return None if error is None else say(error)


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


def enum(name: str, path: str) -> tuple[str, ...]:
    """The values schema `name` allows at a dotted field path (`[]` for a list's items),
    null left out: the one list of features, orderings, ... the code reads."""
    node = load(name)
    for part in path.split("."):
        node = node["properties"][part.removesuffix("[]")]
        if part.endswith("[]"):
            node = node["items"]
    return tuple(v for v in node["enum"] if v is not None)
