"""Bad input, tried systematically: what every generated case must show, and the tally.

Each case runs `mkdc` in-process through `cli.main` in a sandbox: an empty cwd, cache
(so no binary is built: the local provider stops at "not built") and PATH, and a private
temporary directory, so anything the harness would leave in /tmp (mkdc-run-*,
mkdc-existing-*, the kubernetes client's certificate files) is seen, and nothing other
processes on the machine make is. Afterwards the three must still be empty and no child
process may be left. Builds, cluster bring-up, the suite and process starts are replaced
by a BaseException, so a case that got that far fails the test instead of starting them.
"""

from __future__ import annotations

import contextlib
import glob
import io
import logging
import shutil
import signal
import subprocess
import tempfile
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml
from hypothesis import settings
from kubernetes.config import kube_config

from harness import cli
from harness.cluster import builds, gomodules, upstream
from harness.orchestrate import suite_run
from harness.providers.existing import ExistingProvider
from harness.providers.kind import KindProvider
from harness.providers.local import LocalProvider

MAX_LINE = 500  # a line longer than this is not a clear message
TRIED: Counter[str] = Counter()  # category -> cases that showed one line and exit 2
ACCEPTED: Counter[str] = Counter()  # mutations that left a valid profile (then "not built")


def budget(examples: int) -> int:
    """A test's share of examples, scaled by the loaded hypothesis profile (the CI one
    has max_examples 100, so the numbers in the tests are what CI runs)."""
    loaded = settings.default.max_examples if settings.default else 100
    return max(1, examples * loaded // 100)


class Reached(BaseException):
    """Raised where bad input must never get: a build, a cluster, the suite, a process."""


def forbid_side_effects(mp: pytest.MonkeyPatch) -> None:
    """Replace everything past input checking with Reached."""

    def refuse(what: str) -> Any:
        def stop(*_args: Any, **_kwargs: Any) -> Any:
            raise Reached(what)

        return stop

    mp.setattr(LocalProvider, "_up", refuse("the local provider's bring-up"))
    mp.setattr(KindProvider, "_up", refuse("the kind provider's bring-up"))
    mp.setattr(ExistingProvider, "_require_crds", refuse("a connection to a real cluster"))
    for module, name in (
        (builds, "build_all"),
        (builds, "build_go_module"),
        (upstream, "manifests"),
        (gomodules, "run_go"),
    ):
        mp.setattr(module, name, refuse(f"{module.__name__}.{name}"))
    mp.setattr(suite_run, "pytest", refuse("the suite"))
    mp.setattr(subprocess.Popen, "__init__", refuse("a child process"))


@dataclass
class Sandbox:
    """Where a case writes its inputs (outside the cwd, which must stay empty)."""

    inputs: Path
    cwd: Path

    def write(self, name: str, content: bytes | str) -> Path:
        path = self.inputs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode("utf-8")
        path.write_bytes(content)
        return path

    def write_yaml(self, name: str, doc: Any) -> Path:
        return self.write(name, yaml.dump(doc, Dumper=yaml.CSafeDumper, allow_unicode=True))


@contextmanager
def sandbox(base: Path) -> Iterator[Sandbox]:
    """One case's world; on leaving, nothing may be left behind."""
    root = Path(tempfile.mkdtemp(dir=base))
    cwd, cache, bin_dir, inputs = (root / n for n in ("cwd", "cache", "bin", "in"))
    for d in (cwd, cache, bin_dir, inputs):
        d.mkdir()
    # a TMPDIR as short as a user's: under pytest's deep folders a run's control socket
    # would not fit, and that is said before the input each case is about
    tmp = Path(tempfile.mkdtemp(prefix="mkdc-bad-", dir=tempfile.gettempdir()))
    children = _children()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(cwd)
        mp.setattr(tempfile, "tempdir", str(tmp))
        mp.setenv("TMPDIR", str(tmp))
        mp.setenv("MKDC_CACHE_DIR", str(cache))
        mp.setenv("PATH", str(bin_dir))
        for name in ("MKDC_KUEUE_VERSION", "MKDC_KUBERNETES_VERSION", "KUBECONFIG"):
            mp.delenv(name, raising=False)
        yield Sandbox(inputs=inputs, cwd=cwd)
    # what the process's exit would do: the client removes its certificate files then
    kube_config._cleanup_temp_files()
    left = sorted(str(p) for d in (cwd, tmp, cache) for p in d.iterdir())
    new = sorted(_children() - children)
    shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(tmp, ignore_errors=True)
    assert not left, f"left behind: {left}"
    assert not new, f"processes left: {new}"


def run_cli(argv: Sequence[str]) -> tuple[int, str, str]:
    """`mkdc ARGV` in-process: exit status, stdout, stderr. Warnings and log records at
    WARNING or above count as stderr lines (the real command prints them there)."""
    out, err = io.StringIO(), io.StringIO()
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    records: list[logging.LogRecord] = []
    catcher = _ListHandler(records)
    logging.getLogger().addHandler(catcher)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with redirect_stdout(out), redirect_stderr(err):
                try:
                    code = cli.main(list(argv))
                except SystemExit as exc:  # argparse's way; main must not take it
                    code = exc.code if isinstance(exc.code, int) else -1
    finally:
        logging.getLogger().removeHandler(catcher)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    extra = [f"{w.category.__name__}: {w.message}" for w in caught if _printed(w.category)]
    extra += [f"log: {r.getMessage()}" for r in records]
    text = err.getvalue() + "".join(line + "\n" for line in extra)
    return code, out.getvalue(), text


def expect_one_line(
    category: str, code: int, err: str, *mentions: str, any_of: Sequence[str] = ()
) -> str:
    """The rule for bad input: exit 2, exactly one printable `mkdc: error:` line on
    stderr, short enough to read, naming what it is about. Counts the case."""
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1 and err.endswith("\n"), f"exit {code}, stderr {err!r}"
    line = lines[0]
    assert line.startswith("mkdc: error: ") and line.isprintable(), repr(line)
    assert len(line) <= MAX_LINE, f"{len(line)} characters: {line[:200]!r}..."
    for mention in mentions:
        assert mention in line, f"{mention!r} not in {line!r}"
    if any_of:
        assert any(m in line for m in any_of), f"none of {list(any_of)} in {line!r}"
    TRIED[category] += 1
    return line


def tally() -> dict[str, dict[str, int]]:
    """This process's counts, as plain data (a parallel worker sends them to its controller)."""
    return {"tried": dict(TRIED), "accepted": dict(ACCEPTED)}


def add_tally(counts: dict[str, dict[str, int]]) -> None:
    TRIED.update(counts.get("tried") or {})
    ACCEPTED.update(counts.get("accepted") or {})


def summary() -> list[str]:
    """What pytest prints at the end: how many bad inputs were tried, by category."""
    if not TRIED:
        return []
    lines = [f"bad input: {sum(TRIED.values())} generated cases tried, each exit 2 with one line"]
    groups: dict[str, list[str]] = {}
    for name, count in sorted(TRIED.items()):
        group, _, what = name.partition(": ")
        groups.setdefault(group, []).append(f"{what or group} {count}")
    for group, parts in groups.items():
        total = sum(TRIED[n] for n in TRIED if n.partition(": ")[0] == group)
        lines.append(f"  {group} {total}: {', '.join(parts)}")
    if ACCEPTED:
        lines.append(
            f"  ({sum(ACCEPTED.values())} profile mutations stayed valid: they stopped at the"
            " missing binaries, also exit 2 with one line)"
        )
    return lines


def _children() -> set[int]:
    """This process's children: from /proc/self/task/*/children (a read per thread), as
    psutil scans every process on the machine, which costs more than a case."""
    files = glob.glob("/proc/self/task/*/children")
    if not files:
        return {p.pid for p in psutil.Process().children()}
    pids: set[int] = set()
    for name in files:
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            pids.update(int(pid) for pid in Path(name).read_text().split())
    return pids


def _printed(category: type[Warning]) -> bool:
    """Whether Python's default filters would print this warning in the real command."""
    return not issubclass(
        category, DeprecationWarning | PendingDeprecationWarning | ResourceWarning
    )


class _ListHandler(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(logging.WARNING)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
