"""The profile's JSON Schema is the contract: shipped profiles conform and point editors
at it, the loader reads exactly the fields it names, the docs' field reference is made
from it, and its errors are one line naming the field."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator

from harness.counts import MAX_COUNT
from harness.profile import PROFILES_DIR, docs, load, schema
from harness.profile.load import build
from tests.test_bad_profiles import FULL, with_value, without

SCHEMA_FILE = Path(schema.__file__).with_name("profile.schema.json")
EXAMPLE_GO = PROFILES_DIR.parent / "example-go"
HEADER = "# yaml-language-server: $schema="


def test_the_schema_is_a_valid_draft_7_schema() -> None:
    Draft7Validator.check_schema(schema.load("profile"))
    Draft7Validator.check_schema(schema.load("plan"))


@pytest.mark.parametrize("path", sorted(PROFILES_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_profile_conforms_and_points_editors_at_the_schema(path: Path) -> None:
    text = path.read_text()
    assert schema.problem(yaml.safe_load(text), "profile") is None
    first = text.splitlines()[0]
    assert first.startswith(HEADER), f"{path.name} does not start with {HEADER}..."
    assert (path.parent / first.removeprefix(HEADER)).resolve() == SCHEMA_FILE


# --- the code reads what the schema names, and nothing else ----------------------------


class Reading(dict[str, Any]):
    """A mapping that notes every field the loader looks at, by its path."""

    def __init__(self, data: dict[str, Any], path: str, seen: set[str]) -> None:
        super().__init__({k: wrap(v, f"{path}{k}", seen) for k, v in data.items()})
        self.path, self.seen = path, seen

    def __getitem__(self, key: str) -> Any:
        self.seen.add(self.path + key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.seen.add(self.path + key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self.seen.add(self.path + str(key))
        return super().__contains__(key)


def wrap(value: Any, path: str, seen: set[str]) -> Any:
    if isinstance(value, dict) and not path.endswith(FREE_FORM):
        return Reading(value, f"{path}." if path else "", seen)
    return value


# mappings whose keys are the vendor's (passed on whole), not fields of the contract
FREE_FORM = ("implementation", "multiKueue", "featureGates", "env")


def documents(tmp_path: Path) -> Iterator[tuple[dict[str, Any], Path]]:
    """Between them, every field of the contract set: a host command, an image, a deploy
    folder (the three ways to run are exclusive)."""
    yield FULL, tmp_path / "full.yaml"
    run: dict[str, Any] = {"image": "example.com/d:v1", "args": ["--x"], "goBuild": str(EXAMPLE_GO)}
    run["hostNetwork"] = False
    run["objects"] = {"manager": [], "workers": []}
    image = copy.deepcopy(FULL)
    image["spec"]["run"] = {**run, "replicas": 2}
    yield image, tmp_path / "image.yaml"
    deploy = copy.deepcopy(FULL)
    deploy["spec"]["run"] = {"manifests": str(EXAMPLE_GO / "deploy"), "goBuild": str(EXAMPLE_GO)}
    deploy["spec"]["run"]["replicas"] = 2
    yield deploy, tmp_path / "deploy.yaml"


def fields_read(tmp_path: Path) -> set[str]:
    seen: set[str] = set()
    for doc, path in documents(tmp_path):
        assert schema.problem(doc, "profile") is None
        build(wrap(doc, "", seen), path)
    return seen


def contract_fields() -> set[str]:
    """Every field the schema names, but the items of PolicyRule lists (granted as
    written), the constants (the document's type) and the fields that exist only to be
    refused."""
    named = docs.fields()
    return {p for p, node in named if "[]" not in p and not {"not", "const"} & set(node)}


def mismatch(read: set[str], named: set[str]) -> list[str]:
    return [f"read by the loader, not in the schema: {p}" for p in sorted(read - named)] + [
        f"in the schema, never read by the loader: {p}" for p in sorted(named - read)
    ]


def test_the_loader_reads_exactly_the_fields_the_schema_names(tmp_path: Path) -> None:
    assert mismatch(fields_read(tmp_path), contract_fields()) == []


def test_a_field_in_the_schema_the_code_ignores_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doctored = copy.deepcopy(schema.load("profile"))
    knobs = doctored["properties"]["spec"]["properties"]["knobs"]["properties"]
    knobs["clusterColorLabel"] = {"type": "string"}
    monkeypatch.setattr(schema, "load", lambda name: doctored)
    assert mismatch(fields_read(tmp_path), contract_fields()) == [
        "in the schema, never read by the loader: spec.knobs.clusterColorLabel"
    ]


def test_a_field_the_code_reads_that_the_schema_lacks_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    knobs = load._Rules.knobs

    def reads_more(self: Any, found: dict[str, Any]) -> Any:
        found.get("clusterColorLabel")
        return knobs(self, found)

    monkeypatch.setattr(load._Rules, "knobs", reads_more)
    assert mismatch(fields_read(tmp_path), contract_fields()) == [
        "read by the loader, not in the schema: spec.knobs.clusterColorLabel"
    ]


# --- the docs --------------------------------------------------------------------------


def test_the_docs_field_reference_is_the_schemas() -> None:
    text = docs.DOC.read_text()
    assert text == docs.rewritten(text), "run python -m harness.profile.docs"


def test_every_field_has_a_description() -> None:
    assert [p for p, node in docs.fields() if not node.get("description")] == []


# --- the one line ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "line"),
    [
        (without(["apiVersion"]), "apiVersion: required (apiVersion: mkdc/v1alpha1)"),
        (
            without(["metadata"]),
            "metadata.name: required (the profile's name: the report's folder and title)",
        ),
        (with_value("spec.claims", {1: "x"}), "spec.claims: keys must be strings, got 1"),
        (with_value("metadata.name", "vendor\n"), "metadata.name: must be letters"),
        (with_value("spec.run.env", {"A=B": "x"}), "spec.run.env.'A=B': not an environment"),
        (
            with_value("spec.environment.clusters", ["a", "b", "a"]),
            "spec.environment.clusters[2]: duplicate 'a'",
        ),
        (
            with_value("spec.claims.stepSize", 1.0),
            'spec.claims.stepSize: must be an integer >= 1 or "all", got 1.0',
        ),
        (with_value("spec.run.replicas", 0), "spec.run.replicas: must be at least 1, got 0"),
        (with_value("spec.knobs.tier", "x"), "spec.knobs.tier: unknown field (known: cluster"),
        (
            with_value("spec.run.image", "example.com/d:v1"),
            "spec.run.command: with spec.run.image the image's entrypoint runs",
        ),
        (
            with_value("spec.claims.features", ["HighAvailabilty"]),
            'features[0]: unknown feature "HighAvailabilty"; did you mean HighAvailability?',
        ),
        (with_value("spec.claims.ordering", "tier"), "got 'tier'; did you mean tiers?"),
        (with_value("spec.knob", {}), "spec.knob: unknown field; did you mean knobs? (known:"),
    ],
)
def test_an_error_is_one_line_naming_the_field(doc: dict[str, Any], line: str) -> None:
    problem = schema.problem(doc, "profile")
    assert problem is not None and line in problem and "\n" not in problem, problem


def test_the_plan_schema_allows_the_workers_the_command_line_does() -> None:
    workers = schema.load("plan")["items"]["properties"]["workers"]
    assert (workers["minimum"], workers["maximum"]) == (1, MAX_COUNT)
    assert str(MAX_COUNT) in workers["errorMessage"]
