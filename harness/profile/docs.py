"""docs/profiles.md's field reference, written from the profile's JSON Schema.

The schema's descriptions are the contract's words, said once; the table between the
markers in docs/profiles.md is this module's output (`python -m harness.profile.docs`
writes it), and tests/test_profile_schema.py fails when the two differ.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.generated_docs import GeneratedSection
from harness.profile import schema

DOC = Path(__file__).resolve().parents[2] / "docs" / "profiles.md"
BEGIN = "<!-- field reference: generated from harness/profile/profile.schema.json -->"
END = "<!-- end of the generated field reference -->"
# what a shared definition is called in the table
_KINDS = {
    "text": "string",
    "optionalText": "string",
    "argv": "list of strings",
    "duration": "duration (10s, 5m, 1m30s, 500ms; a number is seconds)",
    "objectList": "list of manifests or paths",
    "ruleList": "list of strings",
    "namespaceRule": "PolicyRule",
    "clusterRule": "PolicyRule",
}


def fields(name: str = "profile") -> Iterator[tuple[str, dict[str, Any]]]:
    """(field path, its schema) for every field the schema names, in its order; a list
    of mappings as `path[]`."""
    root = schema.load(name)
    yield from _walk(root, (), root)


def _walk(node: dict[str, Any], path: tuple[str, ...], root: dict[str, Any]) -> Iterator[Any]:
    for key, sub in node.get("properties", {}).items():
        here = (*path, key)
        yield ".".join(here), sub
        target = _target(sub, root)
        if "properties" in target:
            yield from _walk(target, here, root)
        items = _target(target.get("items", {}), root)
        if "properties" in items:
            yield from _walk(items, (*path, f"{key}[]"), root)


def _target(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """`node`, or what its `$ref` (direct or through allOf) names."""
    refs = [node.get("$ref"), *(part.get("$ref") for part in node.get("allOf", []))]
    ref = next((r for r in refs if r), None)
    if ref is None:
        return node
    return {**root["definitions"][ref.rsplit("/", 1)[-1]], **node}


def kind(node: dict[str, Any]) -> str:
    """A field's type in words."""
    refs = [node.get("$ref"), *(part.get("$ref") for part in node.get("allOf", []))]
    ref = next((r for r in refs if r), None)
    if ref is not None:
        return _KINDS[ref.rsplit("/", 1)[-1]]
    if "const" in node:
        return f"`{node['const']}`"
    if "enum" in node:
        return " \\| ".join(f"`{v}`" for v in node["enum"] if v is not None)
    if "anyOf" in node:
        return " or ".join(kind(branch) for branch in node["anyOf"])
    types = node.get("type", "any")
    types = [types] if isinstance(types, str) else types
    words = {"object": "mapping", "null": ""}
    said = [words.get(t, t) for t in types if words.get(t, t)]
    if "array" in said:
        items = kind(node.get("items", {}))
        items = f"{items}s" if items.isalpha() else items
        said[said.index("array")] = f"list of {items}" if items != "anys" else "list"
    return " or ".join(said)


def table(name: str = "profile") -> str:
    """The reference as a Markdown table."""
    lines = ["| field | type | what |", "|---|---|---|"]
    for path, node in fields(name):
        text = str(node.get("description", "")).replace("|", "\\|")
        lines.append(f"| `{path}` | {kind(node)} | {text} |")
    return "\n".join(lines) + "\n"


SECTION = GeneratedSection(DOC, BEGIN, END, table, "the field reference")
rewritten = SECTION.rewritten  # docs/profiles.md's text with the table made anew

if __name__ == "__main__":
    sys.exit(SECTION.write())
