"""Malformed profiles, generated: `mkdc run --profile FILE` answers each with one line
naming the file and the field, exit 2, before anything is built or started."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness.errors import UserError
from harness.profile import (
    CLUSTER_SCOPES,
    FEATURES,
    NOMINATION_WRITE_MODES,
    ORDERINGS,
    PLACEHOLDERS,
    PROFILES_DIR,
    load_profile,
)
from tests.bad_input import ACCEPTED, budget, expect_one_line, forbid_side_effects, run_cli
from tests.bad_input import sandbox as make_sandbox
from tests.test_profile import VALID

# Every field of the contract, set to a valid value: test_profile's valid profile and the
# fields it leaves out.
FULL: dict[str, Any] = copy.deepcopy(VALID)
FULL["spec"]["run"].update(
    podEnvironment=True,
    rbac={
        "clusterRules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}],
        "namespaceRules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
    },
)
FULL["spec"]["environment"].update(
    flavor="gpu-flavor", clusters=["east", "west"], clusterScope="per-scenario"
)
FULL["spec"]["claims"]["features"] = [
    "BoundedFanOut",
    "Escalation",
    "Ordering",
    "PerClusterTimeout",
    "HighAvailability",
]
REAL = sorted(PROFILES_DIR.glob("*.yaml"))

# --- values ----------------------------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=20),
    st.dates(),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
not_str = values.filter(lambda v: not isinstance(v, str) and v is not None)
blank = st.sampled_from(["", " ", "\t", "\n"])
containers = st.one_of(st.lists(scalars, max_size=3), st.dictionaries(st.text(), scalars))
not_map = st.one_of(
    st.booleans(), st.integers(), st.floats(), st.text(min_size=1), st.lists(values)
)
not_list = st.one_of(
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(min_size=1),
    st.dictionaries(st.text(), scalars, min_size=1),
)
not_bool = values.filter(lambda v: not isinstance(v, bool))
nul_text = st.builds(lambda a, b: f"{a}\0{b}", st.text(max_size=5), st.text(max_size=5))

# Durations that are not: near misses of the grammar, and values of other types.
_units = st.sampled_from(["x", "sec", "min", "M", "S", "H", "us", "ns", "d", "mss", " s"])
bad_durations = st.one_of(
    st.builds(lambda n, u: f"{n}{u}", st.integers(0, 999), _units),
    st.builds(lambda n: f"-{n}s", st.integers(1, 99)),
    st.sampled_from(
        ["", "s", "ms", "1m30", "1.5.5s", "1h-1m", "10s junk", "5 m", "inf", "nan", "1_0s"]
    ),
    st.sampled_from(["１０s", "٣s", "1e400", "-0.5", "0", "0s", "0ms"]),
    st.integers(max_value=0),
    st.floats().filter(lambda f: not f > 0 or f != f or f == float("inf")),
    st.booleans(),
    containers,
)
identifier = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True)
unknown_placeholder = identifier.filter(lambda n: n not in (*PLACEHOLDERS, "cluster"))
# PATH is an empty folder in the sandbox; python and python3 mean the harness's own
executables_not_found = st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True).filter(
    lambda e: e not in ("python", "python3")
)
no_braces = st.text(alphabet=st.characters(blacklist_characters="{}\0"), max_size=8)

_NAME_CHARS = re.compile(r"[A-Za-z0-9._-]")
bad_names = st.text(min_size=1, max_size=20).filter(
    lambda t: (
        not t.strip()
        or any(not _NAME_CHARS.fullmatch(c) for c in t)
        or t[0] in "._-"
        or t[-1] in "._-"
    )
)
bad_labels = st.one_of(
    st.sampled_from(["manager", "UPPER", "-lead", "trail-", "a_b", "a.b", "x" * 64, ""]),
    st.text(min_size=1, max_size=10).filter(lambda t: not re.fullmatch(r"[a-z0-9-]+", t)),
)


def wrong(kind: str) -> st.SearchStrategy[Any]:
    """Values that are wrong for a field of `kind` (never None where None means unset)."""
    return {
        "const": values.filter(lambda v: v not in ("mkdc/v1alpha1", "DispatcherProfile")),
        "str": st.one_of(not_str, blank),
        "name": st.one_of(not_str, bad_names),
        "int": st.one_of(
            st.integers(max_value=0), st.booleans(), st.floats(), st.text(), containers
        ),
        "duration": bad_durations,
        "bool": not_bool,
        "choice": st.one_of(st.text().filter(lambda t: t not in _CHOICES), not_str),
        "map": not_map,
        "command": st.one_of(
            not_list,
            st.just([]),
            st.lists(st.one_of(not_str, blank), min_size=1, max_size=3),
            st.lists(nul_text, min_size=1, max_size=2),
            st.builds(lambda e: [e, "--flag"], executables_not_found),
        ),
        "envval": st.one_of(st.booleans(), containers, st.none(), nul_text),
        "rules": st.one_of(
            not_list,
            st.lists(not_map, min_size=1, max_size=2),
            st.just([{"apiGroups": [""], "resources": ["pods"]}]),  # no verbs
            st.just([{"verbs": ["get"]}]),  # neither resources nor URLs
            st.just([{"resources": ["pods"], "verbs": ["get"]}]),  # no apiGroups
            st.just([{"apiGroups": [""], "resources": [""], "verbs": ["get"]}]),
            st.just([{"apiGroups": [""], "resources": ["pods"], "verbs": "get"}]),
        ),
        "strlist": st.one_of(not_list, st.lists(st.one_of(not_str, blank), min_size=1)),
        "apiversion": st.one_of(
            not_str,
            st.sampled_from(["v0", "1", "v1gamma1", "V1", "v1beta0", "v1 ", "beta1", "v1\n"]),
        ),
        "clusters": st.one_of(
            not_list,
            st.just([]),
            st.lists(bad_labels, min_size=1, max_size=3),
            st.just(["east", "east"]),
        ),
        "step": st.one_of(
            st.text().filter(lambda t: t != "all"),
            st.integers(max_value=0),
            st.floats(),
            st.booleans(),
            containers,
        ),
        "features": st.one_of(
            not_list,
            st.lists(st.text().filter(lambda t: t not in FEATURES), min_size=1, max_size=2),
            st.just(["Escalation", "Escalation"]),
        ),
    }[kind]


_CHOICES = {*NOMINATION_WRITE_MODES, *ORDERINGS, *CLUSTER_SCOPES}
FIELDS: dict[str, str] = {
    "apiVersion": "const",
    "kind": "const",
    "metadata": "map",
    "metadata.name": "name",
    "spec": "map",
    "spec.dispatcherName": "str",
    "spec.implementation": "map",
    "spec.kueue": "map",
    "spec.kueue.multiKueue": "map",
    "spec.kueue.featureGates": "map",
    "spec.kueue.featureGates.X": "bool",
    "spec.nominationWrites": "choice",
    "spec.run": "map",
    "spec.run.command": "command",
    "spec.run.env": "map",
    "spec.run.env.NS": "envval",
    "spec.run.replicas": "int",
    "spec.run.readyTimeout": "duration",
    "spec.run.podEnvironment": "bool",
    "spec.run.rbac": "map",
    "spec.run.rbac.clusterRules": "rules",
    "spec.run.rbac.namespaceRules": "rules",
    "spec.environment": "map",
    "spec.environment.workerClusterQueue": "str",
    "spec.environment.resource": "str",
    "spec.environment.flavor": "str",
    "spec.environment.workerKubeconfigSecret": "str",
    "spec.environment.priorityClasses": "strlist",
    "spec.environment.apiVersion": "apiversion",
    "spec.environment.clusters": "clusters",
    "spec.environment.clusterScope": "choice",
    "spec.knobs": "map",
    "spec.knobs.clusterTimeoutAnnotation": "str",
    "spec.knobs.clusterTierLabel": "str",
    "spec.claims": "map",
    "spec.claims.stepSize": "step",
    "spec.claims.roundTimeout": "duration",
    "spec.claims.maxConcurrentProvisioning": "int",
    "spec.claims.ordering": "choice",
    "spec.claims.features": "features",
}
STRICT_MAPPINGS = {  # field path in messages -> path in FULL
    "(document)": "",
    "spec": "spec",
    "spec.kueue": "spec.kueue",
    "spec.run": "spec.run",
    "spec.run.rbac": "spec.run.rbac",
    "spec.environment": "spec.environment",
    "spec.knobs": "spec.knobs",
    "spec.claims": "spec.claims",
}
REQUIRED = {  # deleted path -> what the one line must name
    "apiVersion": "apiVersion",
    "kind": "kind",
    "metadata": "metadata.name",
    "metadata.name": "metadata.name",
    "spec": "spec",
    "spec.dispatcherName": "spec.dispatcherName",
    "spec.run.command": "spec.run.command",
    "spec.run": "HighAvailability needs spec.run.replicas",
    "spec.run.replicas": "HighAvailability needs spec.run.replicas",
    "spec.claims.roundTimeout": "Escalation needs spec.claims.roundTimeout",
    "spec.claims.stepSize": "BoundedFanOut needs",
    "spec.claims.ordering": "Ordering needs spec.claims.ordering",
    "spec.knobs.clusterTimeoutAnnotation": "PerClusterTimeout needs",
    "spec.knobs.clusterTierLabel": "spec.knobs.clusterTierLabel",
}


def with_value(path: str, value: Any, doc: dict[str, Any] | None = None) -> dict[str, Any]:
    """A deep copy of `doc` (FULL) with the dotted `path` set to `value`."""
    out = copy.deepcopy(FULL if doc is None else doc)
    *parents, last = path.split(".")
    node = out
    for key in parents:
        node = node[key]
    node[last] = value
    return out


def without(paths: list[str]) -> dict[str, Any]:
    out = copy.deepcopy(FULL)
    for path in paths:
        *parents, last = path.split(".")
        node: Any = out
        for key in parents:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(last, None)
    return out


def dump(doc: Any) -> str:
    """YAML text of `doc` (libyaml's dumper: the cases spend their time in mkdc, not here)."""
    return yaml.dump(doc, Dumper=yaml.CSafeDumper, allow_unicode=True, sort_keys=False)


# --- running ---------------------------------------------------------------------------


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    forbid_side_effects(monkeypatch)
    return tmp_path


def reject(world: Path, category: str, text: str | bytes, *mentions: str, **kw: Any) -> str:
    """`mkdc run --profile FILE` with this content: one line naming the profile."""
    with make_sandbox(world) as box:
        path = box.write("vendor.yaml", text)
        code, _out, err = run_cli(["run", "--profile", str(path)])
        return expect_one_line(category, code, err, "profile ", *mentions, **kw)


# --- the cases -------------------------------------------------------------------------


@settings(max_examples=budget(100))
@given(st.sampled_from(sorted(FIELDS)).flatmap(lambda p: st.tuples(st.just(p), wrong(FIELDS[p]))))
@example(("spec.run.env.NS", "a\0b"))  # no process can take a NUL
@example(("spec.run.command", ["python", "a\0b"]))
@example(("spec.claims.roundTimeout", "１０s"))  # float() reads these digits, Go does not
@example(("spec.run.readyTimeout", "1_0s"))
@example(("spec.nominationWrites", "x" * 100_000))  # quoted short, not 100 KB of it
@example(("metadata.name", "vendor\n"))  # `$` matched before the newline
@example(("spec.environment.clusters", ["east\n"]))
@example(("spec.environment.apiVersion", "v1\n"))
@example(("spec.claims.features", False))  # `or []` read false and 0 as no features
@example(("spec.claims.features", 0))
def test_a_wrong_value_at_any_field_names_that_field(world: Path, case: tuple[str, Any]) -> None:
    path, value = case
    reject(world, "profile: wrong type or value", dump(with_value(path, value)), path)


@settings(max_examples=budget(40))
@given(
    st.sampled_from(sorted(STRICT_MAPPINGS)),
    st.one_of(
        st.text(min_size=1, max_size=30), st.integers(), st.booleans(), st.none(), st.floats()
    ),
)
@example("spec", "dispatcher\nName")  # a key with a line break stayed two lines
@example("spec.claims", "x" * 5000)
@example("(document)", 12)
def test_an_unknown_or_non_string_key_is_named(world: Path, at: str, key: Any) -> None:
    known = set(FULL) | set(FULL["spec"]) | {"command", "multiKueue", "featureGates"}
    known |= set(FULL["spec"]["run"]) | set(FULL["spec"]["environment"])
    known |= set(FULL["spec"]["knobs"]) | set(FULL["spec"]["claims"]) | {"clusterRules"}
    if isinstance(key, str) and key in known | {"namespaceRules"}:
        key = key + "_"
    doc = copy.deepcopy(FULL)
    node: Any = doc
    for part in filter(None, STRICT_MAPPINGS[at].split(".")):
        node = node[part]
    node[key] = "x"
    named = () if at == "(document)" and isinstance(key, str) else (at,)  # a top-level key
    reject(world, "profile: unknown key", dump(doc), *named, any_of=("unknown field", "keys must"))


@settings(max_examples=budget(25))
@given(st.lists(st.sampled_from(sorted(REQUIRED)), min_size=1, max_size=3, unique=True))
def test_a_missing_required_field_is_named(world: Path, paths: list[str]) -> None:
    reject(
        world, "profile: missing field", dump(without(paths)), any_of=[REQUIRED[p] for p in paths]
    )


@settings(max_examples=budget(25))
@given(
    st.sampled_from(["spec.run.readyTimeout", "spec.claims.roundTimeout"]),
    bad_durations,
)
def test_an_invalid_duration_is_named(world: Path, path: str, value: Any) -> None:
    reject(world, "profile: bad duration", dump(with_value(path, value)), path)


@settings(max_examples=budget(30))
@given(
    st.sampled_from(["command", "env", "exe", "binary", "secret"]),
    unknown_placeholder,
    no_braces,
    no_braces,
)
def test_a_bad_placeholder_is_named(
    world: Path, where: str, name: str, before: str, after: str
) -> None:
    text = f"{before}{{{name}}}{after}"
    if where == "command":
        doc, at = with_value("spec.run.command", ["python", text]), "spec.run.command[1]"
    elif where == "env":
        doc, at = with_value("spec.run.env.NS", text), "spec.run.env.NS"
    elif where == "exe":  # known placeholders that cannot be in the executable
        doc = with_value("spec.run.command", ["{kubeconfig}" + before, "x"])
        at = "spec.run.command[0]"
    elif where == "binary":  # {binary} without a module to build it from
        doc, at = with_value("spec.run.command", [f"{before}{{binary}}"]), "spec.run.command[0]"
    else:
        doc = with_value("spec.environment.workerKubeconfigSecret", text)
        at = "spec.environment.workerKubeconfigSecret"
    reject(world, "profile: bad placeholder", dump(doc), at)


GO_BUILD_SHAPES = ["missing", "file", "empty-dir", "go.mod-dir", "absolute", "long", "nul", "blank"]


@settings(max_examples=budget(24))
@given(st.sampled_from(GO_BUILD_SHAPES), st.from_regex(r"[a-z][a-z0-9._-]{0,20}", fullmatch=True))
@example("long", "a")  # OSError: File name too long
def test_an_invalid_gobuild_folder_is_named(world: Path, shape: str, name: str) -> None:
    with make_sandbox(world) as box:
        folder: Any = name
        if shape == "file":
            box.write(name, "not a folder")
        elif shape == "empty-dir":
            (box.inputs / name).mkdir()
        elif shape == "go.mod-dir":
            (box.inputs / name / "go.mod").mkdir(parents=True)
        elif shape == "absolute":
            folder = str(box.inputs / "nowhere" / name)
        elif shape == "long":
            folder = name + "x" * 300  # longer than a file name may be
        elif shape == "nul":
            folder = name + "\0"
        elif shape == "blank":
            folder = " "
        doc = with_value("spec.run.command", ["{binary}"], with_value("spec.run.goBuild", folder))
        path = box.write("vendor.yaml", dump(doc))
        code, _out, err = run_cli(["run", "--profile", str(path)])
        expect_one_line("profile: bad goBuild", code, err, "spec.run.goBuild")


@settings(max_examples=budget(20))
@given(
    st.binary(max_size=200), st.integers(0, 400), st.sampled_from([b"\xff", b"\xc3", b"\xe2\x82"])
)
def test_non_utf8_bytes_are_named(world: Path, noise: bytes, at: int, bad: bytes) -> None:
    text = dump(FULL).encode()
    at = min(at, len(text))
    reject(world, "profile: not UTF-8", noise + text[:at] + bad + text[at:], "not UTF-8")


DEEP = ["flow-list", "flow-map", "block", "alias-bomb", "alias-loop", "big-file"]


@settings(max_examples=budget(10))
@given(st.sampled_from(DEEP), st.integers(33, 3000))
@example("flow-list", 3000)  # RecursionError in PyYAML
@example("flow-map", 33)
@example("alias-loop", 1)
@example("many-keys", 1)  # slow to parse, so once
@example("alias-bomb", 1)  # a million values from a few lines
def test_huge_or_deeply_nested_documents(world: Path, shape: str, n: int) -> None:
    head = dump(FULL)
    if shape == "flow-list":
        text = head.replace("organization: Example", "organization: " + "[" * n + "]" * n)
    elif shape == "flow-map":
        text = head.replace("organization: Example", "organization: " + "{a: " * n + "1" + "}" * n)
    elif shape == "block":
        deep = "".join(f"{'  ' * (i + 2)}k{i}:\n" for i in range(min(n, 200)))
        text = head.replace("  implementation:\n", f"  implementation:\n{deep}", 1)
        text = text.replace("    organization: Example", " " * (2 * min(n, 200) + 4) + "x: 1")
    elif shape == "alias-bomb":
        levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
        levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 6)]
        text = head.replace(
            "  implementation:\n",
            "  implementation:\n" + "".join(f"    {line}\n" for line in levels),
        )
    elif shape == "alias-loop":
        text = head.replace("organization: Example", "organization: &loop [x, *loop]")
    elif shape == "many-keys":
        text = head.replace(
            "  implementation:\n",
            "  implementation:\n" + "".join(f"    k{i}: {i}\n" for i in range(10_001)),
        )
    else:
        text = head + "# " + "x" * (1024 * 1024) + "\n"
    reject(
        world,
        "profile: huge or deep",
        text,
        any_of=("nested", "larger than", "YAML alias", "more than"),
    )


@settings(max_examples=budget(8))
@given(
    st.sampled_from(["", " ", "\n\n", "# only a comment\n", "---\n", "~\n", "null\n", "--- ~\n"])
)
def test_an_empty_file_says_so(world: Path, text: str) -> None:
    reject(world, "profile: empty", text, "is empty")


@settings(max_examples=budget(30))
@given(values.filter(lambda v: not isinstance(v, dict)))
def test_a_document_that_is_not_a_mapping(world: Path, doc: Any) -> None:
    text = dump(doc)
    if yaml.safe_load(text) is None:  # an empty document: said so instead
        return
    reject(world, "profile: not a mapping", text, "(document): must be a mapping")


@settings(max_examples=budget(30))
@given(st.dictionaries(st.text(max_size=10), values, max_size=6))
def test_a_random_mapping(world: Path, doc: dict[str, Any]) -> None:
    reject(world, "profile: random YAML", dump(doc))


RAW_YAML = [
    "? [a, b]\n: c\n",  # an unhashable key: PyYAML raised TypeError
    "? {a: 1}\n: c\n",
    "spec: 2020-13-45\n",  # a date that is not: ValueError
    "spec: !!bool maybe\n",  # KeyError
    "spec: " + "1" * 5000 + "\n",  # past Python's 4300-digit limit: ValueError
    "spec: !!int x\n",
    "spec: !!float x\n",
    "spec: !!python/object:os.system x\n",
    "a: 1\na: 2\n",
    "spec: {a: 1\n",
    "\0",
    "\ufeff\ufeffspec: 1\n",
    "spec: '\x85'\n",
    "--- 1\n--- 2\n",
    "spec: *nothing\n",
]


@settings(max_examples=len(RAW_YAML))
@given(st.sampled_from(RAW_YAML))
def test_yaml_that_pyyaml_chokes_on(world: Path, text: str) -> None:
    reject(world, "profile: broken YAML", text)


# --- mutations of the real profiles ----------------------------------------------------


def node_paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a document (mapping keys and list indexes)."""
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            found += node_paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += node_paths(value, (*prefix, i))
    return found


def mutate(doc: Any, path: tuple[Any, ...], op: str, garbage: Any) -> Any:
    out = copy.deepcopy(doc)
    parent = out
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    if op == "drop":
        del parent[last]
    elif op == "retype":
        old = parent[last]
        parent[last] = (
            ([old] if not isinstance(old, list) else {"x": old})
            if not isinstance(old, str)
            else len(old)
        )
    else:
        parent[last] = garbage
    return out


@st.composite
def mutations(draw: st.DrawFn) -> tuple[str, Any]:
    path = draw(st.sampled_from(REAL))
    doc = yaml.safe_load(path.read_text())
    where = draw(st.sampled_from(node_paths(doc)))
    op = draw(st.sampled_from(["drop", "retype", "garbage"]))
    return path.name, mutate(doc, where, op, draw(values))


@settings(max_examples=budget(120))
@given(mutations())
def test_mutations_of_the_real_profiles(world: Path, case: tuple[str, Any]) -> None:
    """Drop a key, change a type, put garbage in: rejected naming the profile, or still
    valid, and then stopped at the next check (no binaries built here), never further."""
    name, doc = case
    with make_sandbox(world) as box:
        path = box.write(name, dump(doc))
        code, _out, err = run_cli(["run", "--profile", str(path)])
        line = expect_one_line("profile: mutated real profile", code, err)
        if "profile " not in line:
            load_profile(path)  # it is valid: the error came after it
            assert "is not built: run `mkdc bins`" in line, line
            ACCEPTED[name] += 1


def test_the_real_profiles_load() -> None:
    """The mutations start from profiles that are valid as shipped."""
    for path in REAL:
        load_profile(path)


def test_a_profile_that_loads_can_be_started(tmp_path: Path) -> None:
    """What validation lets through reaches a process intact: no NUL, no '=' in a name."""
    for path in REAL:
        profile = load_profile(path)
        if profile.run is None or profile.run.go_build is not None:
            continue
        argv = profile.render_command(tmp_path / "kubeconfig")
        env = profile.render_env(tmp_path / "kubeconfig")
        assert all("\0" not in a for a in argv)
        assert all(k and "=" not in k and "\0" not in k + v for k, v in env.items())


def test_env_name_with_equals_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(dump(with_value("spec.run.env", {"A=B": "x"})))
    with pytest.raises(UserError, match=r"spec\.run\.env\.'A=B': not an environment variable"):
        load_profile(path)


def test_a_directory_is_not_a_profile(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").mkdir()
    with pytest.raises(UserError, match="is a directory, not a file"):
        load_profile(tmp_path / "p.yaml")


def test_a_long_profile_name_is_not_an_oserror() -> None:
    with pytest.raises(UserError, match="File name too long"):
        load_profile("x" * 300 + ".yaml")
