"""Malformed kubeconfigs, generated, for the existing provider's `--cluster NAME=FILE`:
one line naming the cluster and what is wrong with its file, exit 2, before any
connection (and for a sound file pointing at nothing, the refused connection itself)."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.bad_input import Sandbox, budget, expect_one_line, forbid_side_effects, run_cli
from tests.bad_input import sandbox as make_sandbox

CLOSED = "https://127.0.0.1:1"  # nothing listens on port 1: refused at once, no DNS


def kubeconfig(server: str = CLOSED, context: str = "ctx") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": context, "context": {"cluster": "c", "user": "u"}}],
        "current-context": context,
    }


def edit(path: str, value: Any) -> dict[str, Any]:
    """kubeconfig() with the dotted `path` (list items by index) set, or deleted for DROP."""
    doc = kubeconfig()
    *parents, last = path.split(".")
    node: Any = doc
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is DROP:
        del node[int(last) if isinstance(node, list) else last]
    else:
        node[int(last) if isinstance(node, list) else last] = value
    return doc


DROP = object()
STRUCTURE: dict[str, tuple[Any, str]] = {  # an edit -> what the line must say
    "drop contexts": (("contexts", DROP), "no context 'ctx'"),
    "drop clusters": (("clusters", DROP), "names cluster 'c', which is not in the file"),
    "drop users": (("users", DROP), "names user 'u', which is not in the file"),
    "drop current-context": (("current-context", DROP), "has no current-context"),
    "missing context": (("current-context", "elsewhere"), "no context 'elsewhere'"),
    "missing cluster": (("contexts.0.context.cluster", "gone"), "names cluster 'gone'"),
    "missing user": (("contexts.0.context.user", "nobody"), "names user 'nobody'"),
    "context names no cluster": (("contexts.0.context.cluster", DROP), "names no cluster"),
    "contexts not a list": (("contexts", "ctx"), "contexts must be a list"),
    "clusters a mapping": (("clusters", {"c": {}}), "clusters must be a list"),
    "entry without name": (("clusters.0.name", DROP), "clusters[0] must be a mapping"),
    "entry a scalar": (("users.0", "u"), "users[0] must be a mapping"),
    "context body a list": (("contexts.0.context", ["c"]), "context 'ctx' has no context"),
    "cluster body missing": (("clusters.0.cluster", DROP), "cluster 'c' has no cluster"),
    "current-context a number": (("current-context", 7), "current-context must be"),
    "no server": (("clusters.0.cluster.server", DROP), "is not a URL"),
    "missing CA file": (
        ("clusters.0.cluster.certificate-authority", "/nonexistent/ca.crt"),
        "certificate-authority /nonexistent/ca.crt: no such file",
    ),
    "CA data not base64": (
        ("clusters.0.cluster.certificate-authority-data", "!!not base64!!"),
        "certificate-authority-data is not base64",
    ),
    "missing client key": (("users.0.user.client-key", "key.pem"), "client-key key.pem"),
    "missing token file": (("users.0.user.tokenFile", "/nonexistent/t"), "tokenFile"),
    "exec plugin not installed": (
        ("users.0.user.exec", {"command": "no-such-plugin", "apiVersion": "v1"}),
        "exec command 'no-such-plugin' not found on PATH",
    ),
    "exec without command": (("users.0.user.exec", {"apiVersion": "v1"}), "exec needs a command"),
}
BAD_SERVERS = [
    "127.0.0.1:1",  # no scheme: urllib3 warned (a second line) and guessed http
    "ftp://127.0.0.1:1",
    "https://127.0.0.1:99999",
    "https://127.0.0.1:0",
    "https://127.0.0.1:port",
    "https://[::1",
    "https://",
    "https://:443",
    "",
    "https://127.0.0.1:1/ a b",
    "https://127.0.0.1:1\n",
    "https://127.0.0.1\x00:1",
]
texts = st.text(max_size=30)
urlish = st.one_of(
    st.sampled_from(BAD_SERVERS),
    texts.filter(lambda t: "://" not in t),  # never a host name: no DNS in a test
    st.builds(lambda p: f"https://127.0.0.1:{p}", st.integers(65536, 10**9)),
    st.builds(lambda s: f"{s}://127.0.0.1:1", st.from_regex(r"[a-z]{1,8}", fullmatch=True)).filter(
        lambda u: not u.startswith(("http://", "https://"))
    ),
    st.integers(),
    st.booleans(),
    st.lists(texts, max_size=2),
)


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    forbid_side_effects(monkeypatch)
    return tmp_path


def run_existing(
    box: Sandbox, bad: str, bad_spec: str, worker: str = "w1", manager_first: bool = True
) -> tuple[int, str]:
    """`mkdc run --provider existing` with `bad_spec` (FILE[:CONTEXT]) for cluster `bad`
    and a sound kubeconfig to a closed port for the other."""
    sound = box.write_yaml("sound.kubeconfig", kubeconfig())
    specs = {"manager": str(sound), worker: str(sound), bad: bad_spec}
    order = ["manager", worker] if manager_first else [worker, "manager"]
    argv = ["run", "--profile", "all-at-once", "--provider", "existing"]
    for name in order:
        argv += ["--cluster", f"{name}={specs[name]}"]
    code, _out, err = run_cli(argv)
    return code, err


clusters = st.sampled_from(["manager", "w1"])
orders = st.booleans()


@settings(max_examples=budget(44))
@given(st.sampled_from(sorted(STRUCTURE)), clusters, orders)
def test_a_broken_structure_is_named(world: Path, case: str, bad: str, first: bool) -> None:
    (path, value), says = STRUCTURE[case]
    with make_sandbox(world) as box:
        kc = box.write_yaml(f"{bad}.kubeconfig", edit(path, value))
        code, err = run_existing(box, bad, str(kc), manager_first=first)
        expect_one_line("kubeconfig: structure", code, err, f"--cluster {bad}: kubeconfig", says)


@settings(max_examples=budget(30))
@given(urlish, clusters)
@example("127.0.0.1:1", "manager")
def test_a_wrong_server_url_is_named(world: Path, server: Any, bad: str) -> None:
    with make_sandbox(world) as box:
        kc = box.write_yaml("k", edit("clusters.0.cluster.server", server))
        code, err = run_existing(box, bad, str(kc))
        expect_one_line("kubeconfig: server URL", code, err, f"--cluster {bad}:", "is not a URL")


NOT_KUBECONFIG = st.one_of(
    st.binary(max_size=64).map(lambda b: b + b"\xff"),  # never UTF-8
    st.text(max_size=40).map(lambda t: "{" + t),  # an unclosed flow mapping
    st.sampled_from(["", "[1, 2]", "just text", "42", "2020-13-45", "? [a]\n: b\n", "- a\n"]),
    st.sampled_from(["a: [" * 400, "!!python/object:os.system x", "a: 1\n" + "\t b: 2"]),
)


@settings(max_examples=budget(30))
@given(NOT_KUBECONFIG, clusters)
@example(b"[1, 2]", "w1")  # the client said: list indices must be integers or slices
def test_a_file_that_is_not_a_kubeconfig(world: Path, content: bytes | str, bad: str) -> None:
    with make_sandbox(world) as box:
        kc = box.write("k", content)
        code, err = run_existing(box, bad, str(kc))
        expect_one_line(
            "kubeconfig: not a kubeconfig",
            code,
            err,
            f"--cluster {bad}: kubeconfig",
            any_of=("not UTF-8", "not valid YAML", "not a kubeconfig", "nested too deeply"),
        )


PATHS = ["missing", "directory", "unreadable", "fifo", "long", "nul", "no-such-user", "context"]


@settings(max_examples=budget(24))
@given(st.sampled_from(PATHS), clusters, st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True))
def test_a_kubeconfig_path_that_cannot_be_read(
    world: Path, shape: str, bad: str, name: str
) -> None:
    with make_sandbox(world) as box:
        spec = str(box.inputs / name)
        says = "does not exist"
        if shape == "directory":
            (box.inputs / name).mkdir()
            says = "is a directory"
        elif shape == "unreadable":
            spec, says = "/proc/self/mem", "cannot read"  # EIO on read, even for root
        elif shape == "fifo":
            os.mkfifo(box.inputs / name)
            says = "not a regular file"  # never opened: reading it would block
        elif shape == "long":
            spec, says = spec + "x" * 300, "File name too long"
        elif shape == "nul":
            spec, says = spec + "\0", "NUL"
        elif shape == "no-such-user":
            spec, says = f"~no-such-user-{name}/kubeconfig", "no user"
        elif shape == "context":  # a sound file, a context it does not have
            spec = f"{box.write_yaml(name, kubeconfig())}:{name}-missing"
            says = f"has no context '{name}-missing'"
        code, err = run_existing(box, bad, spec)
        expect_one_line("kubeconfig: unreadable path", code, err, says)


@settings(max_examples=budget(4))
@given(clusters, orders)
def test_a_sound_kubeconfig_to_nothing_says_connection_refused(
    world: Path, bad: str, first: bool
) -> None:
    """The file is fine; the connection is what fails, and the line says why."""
    with make_sandbox(world) as box:
        code, err = run_existing(box, bad, str(box.inputs / "sound.kubeconfig"), "w2", first)
        line = expect_one_line("kubeconfig: refused", code, err, "Connection refused")
        assert f"to {CLOSED}: Connection refused" in line


@settings(max_examples=budget(21))
@given(
    st.sampled_from(["noeq", "bad name", "UPPER", "dup", "no manager", "no worker", "empty"]),
    st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True),
)
def test_bad_cluster_arguments(world: Path, shape: str, name: str) -> None:
    with make_sandbox(world) as box:
        kc = str(box.write_yaml("k", kubeconfig()))
        values = {
            "noeq": [f"manager={kc}", name],
            "bad name": [f"manager={kc}", f"{name} x={kc}"],
            "UPPER": [f"manager={kc}", f"{name.upper()}X={kc}"],
            "dup": [f"manager={kc}", f"{name}={kc}", f"{name}={kc}"],
            "no manager": [f"{name}={kc}"],
            "no worker": [f"manager={kc}"],
            "empty": [f"manager={kc}", f"{name}="],
        }[shape]
        argv = ["run", "--profile", "all-at-once", "--provider", "existing"]
        for value in values:
            argv += ["--cluster", value]
        code, _out, err = run_cli(argv)
        expect_one_line("kubeconfig: --cluster argument", code, err, "--cluster")


def test_structure_edits_start_from_a_sound_file() -> None:
    """Each STRUCTURE case differs from kubeconfig() only in its edit."""
    for (path, value), _says in STRUCTURE.values():
        assert edit(path, value) != kubeconfig() or value is DROP
    assert yaml.safe_load(yaml.safe_dump(kubeconfig())) == copy.deepcopy(kubeconfig())
