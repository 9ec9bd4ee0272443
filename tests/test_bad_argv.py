"""Bad command lines, generated, run in-process: unknown flags, bad numbers, paths that
are not there, unknown check IDs, bad slacks, a report directory that must not be
emptied. Each gets one line and exit 2; only subcommands and paths that stop before a
cluster are generated (and the sandbox stops any that would not)."""

from __future__ import annotations

import argparse
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness.cli import build_parser
from harness.cluster.versions import MATRIX
from harness.profile import available_profiles
from harness.suite import load as load_suite
from suites.checks import DEFAULT_SLACKS
from tests.bad_input import Sandbox, budget, expect_one_line, forbid_side_effects, run_cli
from tests.bad_input import sandbox as make_sandbox

CHECK_IDS = sorted(load_suite().catalogue)


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    """The parser of each subcommand, to read the options it has."""
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("mkdc has no subcommands")


OPTIONS = {name: sorted(sub._option_string_actions) for name, sub in _subcommands().items()}
ALL_OPTIONS = sorted({o for opts in OPTIONS.values() for o in opts})


def _not_help(token: str) -> bool:
    """`-h`, `--he` (an abbreviation) and friends print the help and exit 0: not bad input."""
    return not (token.startswith("-") and token.lstrip("-").startswith("h"))


def _unknown(token: str) -> bool:
    """A flag no subcommand has, nor abbreviates to (argparse takes unique prefixes)."""
    flag = token.split("=", 1)[0]
    return _not_help(token) and not any(o.startswith(flag) for o in ALL_OPTIONS)


tokens = st.one_of(
    st.sampled_from(ALL_OPTIONS),
    st.text(max_size=12),
    st.sampled_from(["--", "-", "=", "reference", "all-at-once", "1", "-1", "CORE-01"]),
).filter(_not_help)
unknown_flags = st.builds(
    lambda dashes, name: dashes + name,
    st.sampled_from(["--", "-"]),
    st.text(min_size=1, max_size=12).filter(lambda t: not t.startswith("-")),
).filter(_unknown)
commands = st.sampled_from([*sorted(OPTIONS), "report verify"])


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    forbid_side_effects(monkeypatch)
    return tmp_path


def bad(world: Path, category: str, argv: list[str], *mentions: str, **kw: Any) -> str:
    with make_sandbox(world):
        code, out, err = run_cli(argv)
        assert out == "", out
        return expect_one_line(category, code, err, *mentions, **kw)


@settings(max_examples=budget(80))
@given(commands, st.lists(tokens, max_size=6), unknown_flags, st.integers(0, 6))
@example("run", [], "--frobnicate", 0)
@example("run", ["--profile"], "--x\ny", 1)  # an argument with a line break
def test_an_unknown_flag_anywhere(
    world: Path, command: str, rest: list[str], flag: str, at: int
) -> None:
    argv = [*command.split(), *rest]
    argv.insert(min(at, len(argv)), flag)
    bad(world, "argv: unknown flag", argv)


bad_counts = st.one_of(
    st.integers(max_value=0).map(str),
    st.integers(min_value=65).map(str),
    st.sampled_from(["", " ", "many", "1.5", "1e3", "1_0", "٣", "0x10", "+", "--", "4 "]),
    st.text(max_size=8).filter(lambda t: not t.isascii() or not t.strip().isdigit()),
)


@settings(max_examples=budget(30))
@given(st.sampled_from(["up --workers", "run --workers", "run -n"]), bad_counts)
@example("up --workers", "1" * 5000)  # past Python's int() digit limit
@example("up --workers", str(10**12))  # the local provider would list 10**12 names
def test_a_bad_number(world: Path, option: str, value: str) -> None:
    command, flag = option.split()
    argv = [command, flag, value] + (["--profile", "all-at-once"] if command == "run" else [])
    bad(world, "argv: bad number", argv, flag)


versions = st.text(max_size=12).filter(lambda v: v.removeprefix("v") not in MATRIX)
k8s_versions = st.one_of(
    st.text(max_size=12).filter(
        lambda v: not re.fullmatch(r"v?[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}", v)
    ),
    st.sampled_from(["1.36", "a.b.c", "1.36.x", "v1.2.3.4", "１.36.3"]),
).filter(lambda v: v != "")


@settings(max_examples=budget(30))
@given(st.sampled_from(["bins", "doctor", "up", "run"]), st.booleans(), versions, k8s_versions)
def test_a_bad_version(world: Path, command: str, kueue: bool, v: str, k8s: str) -> None:
    """Never a valid pair, so `bins` cannot start building."""
    argv = [command, "--kueue-version", v] if kueue else [command, "--kubernetes-version", k8s]
    if command == "run":
        argv += ["--profile", "all-at-once"]
    if kueue and v == "":  # empty means the default: give an invalid Kubernetes one too
        argv += ["--kubernetes-version", k8s]
    bad(world, "argv: bad version", argv, "version")


@settings(max_examples=budget(20))
@given(
    st.lists(st.sampled_from(CHECK_IDS), max_size=3),
    st.lists(
        st.text(min_size=1, max_size=12).filter(lambda t: t.strip() and "," not in t),
        min_size=1,
        max_size=2,
    ).filter(lambda ids: any(i.strip() not in CHECK_IDS for i in ids)),
    st.sampled_from(["--checks", "--skip-checks"]),
)
def test_unknown_check_ids(world: Path, known: list[str], unknown: list[str], flag: str) -> None:
    ids = ",".join([*known, *unknown])
    bad(world, "argv: unknown check ID", ["run", "--profile", "reference", flag, ids], "check id")


bad_slacks = st.one_of(
    st.text(max_size=20).filter(lambda t: "=" not in t),
    st.builds(lambda d: f"={d}", st.text(max_size=5)),
    st.builds(lambda n: f"{n}=", st.sampled_from(sorted(DEFAULT_SLACKS))),
    st.builds(
        lambda n, d: f"{n}={d}",
        st.text(min_size=1, max_size=300).filter(
            lambda n: "=" not in n and n not in DEFAULT_SLACKS
        ),
        st.sampled_from(["5s", "1m"]),
    ),
    st.builds(
        lambda n, d: f"{n}={d}",
        st.sampled_from(sorted(DEFAULT_SLACKS)),
        st.sampled_from(["five", "-1s", "5 s", "1_0s", "inf", "١s"]),
    ),
)


@settings(max_examples=budget(30))
@given(bad_slacks)
@example("poll")  # dict() of "poll".split("=") raised ValueError
@example("x" * 1000 + "=5s")  # the unknown name, quoted in full
def test_a_bad_slack(world: Path, slack: str) -> None:
    bad(world, "argv: bad slack", ["run", "--profile", "reference", "--slack", slack], "--slack")


REPORT_DIRS = ["file", "user-files", "nul", "long", "parent-is-file", "cwd", "empty-string"]


@settings(max_examples=budget(21))
@given(st.sampled_from(REPORT_DIRS), st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True))
@example("cwd", "x")  # `--report-dir .` emptied the current directory
def test_a_report_dir_that_must_not_be_emptied(world: Path, shape: str, name: str) -> None:
    with make_sandbox(world) as box:
        target = str(box.inputs / name)
        if shape == "file":
            box.write(name, "mine")
        elif shape == "user-files":
            box.write(f"{name}/notes.txt", "mine")
        elif shape == "nul":
            target += "\0"
        elif shape == "long":
            target += "x" * 300
        elif shape == "parent-is-file":
            box.write(name, "mine")
            target = f"{target}/report"
        elif shape in ("cwd", "empty-string"):  # both mean the current directory
            target = "." if shape == "cwd" else ""
            (box.cwd / "keep.txt").write_text("mine")  # which the run must not remove
        argv = ["run", "--profile", "all-at-once", "--report-dir", target]
        code, _out, err = run_cli(argv)
        try:
            expect_one_line("argv: bad --report-dir", code, err, "--report-dir")
        finally:
            if shape in ("cwd", "empty-string"):
                assert (box.cwd / "keep.txt").read_text() == "mine"
                (box.cwd / "keep.txt").unlink()
        for f in box.inputs.rglob("*"):
            if f.is_file():
                assert f.read_text() == "mine", f


PROFILES = st.one_of(
    st.text(max_size=20).filter(lambda t: "/" not in t and t not in available_profiles()),
    st.builds(lambda t: f"/nonexistent/{t}.yaml", st.text(max_size=10)),
    st.builds(lambda t: f"{t}.yml", st.text(max_size=300)),
    st.sampled_from(["", ".", "..", "/", "/dev/null", "/proc/self/mem", "~", "reference\n"]),
)


@settings(max_examples=budget(30))
@given(PROFILES)
@example("x" * 300 + ".yml")  # OSError: File name too long
def test_a_profile_that_is_not_there(world: Path, profile: str) -> None:
    bad(world, "argv: no such profile", ["run", "--profile", profile], "profile")


@settings(max_examples=budget(10))
@given(
    st.sampled_from(["missing", "directory", "fifo", "nul", "unreadable"]),
    st.from_regex(r"[a-z]{1,8}", fullmatch=True),
)
@example("fifo", "a")  # read_text waited for a writer, for ever
@example("unreadable", "a")  # exit 1, as if the report had been read and rejected
def test_report_verify_of_nothing(world: Path, shape: str, name: str) -> None:
    with make_sandbox(world) as box:
        target = str(box.inputs / name)
        if shape == "directory":
            (box.inputs / name).mkdir()
        elif shape == "fifo":
            os.mkfifo(target)
        elif shape == "nul":
            target += "\0"
        elif shape == "unreadable":
            target = "/proc/self/mem"
        code, _out, err = run_cli(["report", "verify", target])
        expect_one_line("argv: report verify of nothing", code, err, "report ")


GARBAGE = st.one_of(
    st.binary(max_size=40).map(lambda b: b"\xff" + b),
    st.sampled_from([b"", b"[", b"a: 2020-13-45", b"[" * 5000, b"? [a]\n: b", b"- 1\n- 2"]),
    st.text(max_size=40).map(str.encode),
)


@settings(max_examples=budget(20))
@given(GARBAGE)
@example(b"\xff\xfe")  # UnicodeDecodeError
@example(b"a: 2020-13-45")  # ValueError from PyYAML
def test_report_verify_of_garbage_is_a_verdict(world: Path, content: bytes) -> None:
    """A file that is read but is no report is rejected (exit 1, on stdout), not a crash."""
    with make_sandbox(world) as box:
        path = box.write("report.yaml", content)
        code, out, err = run_cli(["report", "verify", str(path)])
        assert code == 1 and err == "", (code, err)
        assert out and all(line.startswith(f"{path}: ") for line in out.splitlines()), out


USAGE = [
    [],
    ["run"],
    ["report"],
    ["report", "verify"],
    ["report", "verify", "a", "b"],
    ["nonsense"],
    ["down", "extra"],
    ["checks", "extra"],
    ["bins", "extra"],
    ["run", "--profile"],
    ["run"],  # neither --profile nor --plan
    ["run", "--profile", "reference", "--plan", "plan.yaml"],
    ["run", "--provider", "cloud", "--profile", "reference"],
    ["up", "--provider", "kind"],
    ["run", "--profile", "reference", "--cluster", "manager=x"],  # for existing only
    ["run", "--profile", "reference", "--provider", "existing"],  # no --cluster
]


@settings(max_examples=len(USAGE))
@given(st.sampled_from(USAGE))
def test_usage_errors(world: Path, argv: list[str]) -> None:
    bad(world, "argv: usage", argv)


MISSING = [  # sound arguments, but this machine lacks what they need
    (["up"], "is not built: run `mkdc bins`"),
    (["up", "--workers", "1", "--dispatcher-name", "x/y"], "is not built"),
    (["run", "--profile", "reference"], "is not built"),
    (["run", "--profile", "all-at-once", "--workers", "2", "-n", "1", "--full"], "is not built"),
    (["run", "--profile", "incremental", "--provider", "kind"], "docker is not on PATH"),
]


@settings(max_examples=len(MISSING))
@given(st.sampled_from(MISSING))
def test_a_missing_binary(world: Path, case: tuple[list[str], str]) -> None:
    argv, says = case
    bad(world, "argv: missing binary", argv, says)


def test_the_sandbox_sees_what_a_run_would_leave(world: Path) -> None:
    """A sanity check of the checker: a file left in the cwd fails the case."""
    with pytest.raises(AssertionError, match="left behind"), make_sandbox(world) as box:
        assert isinstance(box, Sandbox)
        (box.cwd / "reports").mkdir()


@pytest.mark.parametrize(
    ("tree", "says"),
    [
        (None, "has no go.mod"),
        (
            "module example.com/not-kueue\n",
            "not sigs.k8s.io/kueue",
        ),
        ("module sigs.k8s.io/kueue\n", "requires no k8s.io/api"),
    ],
)
@pytest.mark.parametrize("command", ["run", "bins", "up"])
def test_a_kueue_source_that_is_not_a_kueue_tree(
    world: Path, command: str, tree: str | None, says: str
) -> None:
    source = world / "source"
    source.mkdir()
    if tree is not None:
        (source / "go.mod").write_text(tree)
    argv = [command, "--kueue-source", str(source)]
    bad(
        world,
        "argv: kueue source",
        [*argv, *(["--profile", "reference"] * (command == "run"))],
        says,
    )


def test_a_kueue_source_on_existing_clusters(world: Path) -> None:
    source = world / "source"
    source.mkdir()
    (source / "go.mod").write_text("module sigs.k8s.io/kueue\n\nrequire k8s.io/api v0.36.2\n")
    argv = [
        "run",
        "--profile",
        "reference",
        "--provider",
        "existing",
        "--kueue-source",
        str(source),
    ]
    bad(
        world,
        "argv: kueue source",
        [*argv, "--cluster", "manager=/nonexistent"],
        "existing clusters run their own",
    )


def test_a_tmpdir_too_long_for_the_runs_control_socket(world: Path) -> None:
    """Said before anything starts: else the run crashed with `AF_UNIX path too long` once
    its environment was up."""
    deep = world / ("t" * 60) / ("m" * 30)
    deep.mkdir(parents=True)
    with make_sandbox(world), pytest.MonkeyPatch.context() as mp:
        mp.setattr(tempfile, "tempdir", str(deep))  # undone before the sandbox's own
        code, out, err = run_cli(["run", "--profile", "reference"])
    expect_one_line("argv: long TMPDIR", code, err, "too long for the run's control socket")
