"""Building the catalogue's components (and a dispatcher's Go module) unless cached:
two lanes side by side, modules resolved in the background, one line reporting them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from harness.cluster import gomodules
from harness.cluster.buildboard import BuildBoard
from harness.cluster.toolchain import (
    COMPILE_FLAGS,
    SOURCE_GOFLAGS,
    Component,
    Progress,
    bin_dir,
    binary_name,
    cache_dir,
    components,
    go_output_name,
    is_built,
    kueue_source_component,
    node_components,
)
from harness.cluster.versions import Versions, go_sources_hash
from harness.errors import UserError


def build(component: Component, progress: Progress) -> Path:
    """Build one component unless cached."""
    return build_many([[component]], progress)[component.key]


def build_many(
    lanes: list[list[Component]], progress: Progress, report_every: float = 15.0
) -> dict[str, Path]:
    """Build components unless cached; returns each component's key -> binary folder.

    The lanes compile side by side, each in its order: a later one in a lane reuses the
    packages an earlier one put in Go's build cache, and the lanes fill the time one build
    leaves a core idle (its module downloads, its links). Every module is resolved at
    once in the background, so downloads overlap compiling. One line reports them all.
    """
    everything = [c for lane in lanes for c in lane]
    board = BuildBoard([c.key for c in everything], progress)
    results: dict[str, Path] = {}
    to_build = [c for c in everything if not is_built(c)]
    for c in everything:
        if c not in to_build:
            board.say(c.key, f"cached in {bin_dir(c)}")
            results[c.key] = bin_dir(c)
    if not to_build:
        return results
    # a component built against another one built in this run compiles after it: both at
    # once would each compile the packages they share
    finished = {c.key: threading.Event() for c in to_build}
    with board.reporting(report_every):
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="resolve") as resolver:
            prepared = {c.key: resolver.submit(_resolve, c, board) for c in to_build}
            with ThreadPoolExecutor(max_workers=len(lanes), thread_name_prefix="lane") as pool:
                futures = [
                    pool.submit(
                        _build_lane, [c for c in lane if c in to_build], prepared, finished, board
                    )
                    for lane in lanes
                ]
                for future in futures:
                    results.update(future.result())
    return results


def _resolve(component: Component, board: BuildBoard) -> Path:
    """The component's build module and how many packages its build compiles at most."""
    board.say(component.key, "resolving modules")
    work = gomodules.prepare_module(component, lambda _msg: None)
    packages = _packages(component, work)
    # what it shares with the build it waits for, or with its release's, comes from Go's
    # build cache: a tree's own packages compile, and what it vendors at other versions
    for other in (component.built_against, component.release):
        if other is not None:
            packages -= _packages(other, gomodules.prepare_module(other, lambda _msg: None))
    board.resolved(component.key, len(packages))
    return work


# `go list -f`: a package and the module version it is built at, which decide (with its
# imports') whether two builds share it in Go's build cache
PACKAGE_AT_VERSION = "{{.ImportPath}} {{with .Module}}{{.Path}}@{{.Version}}{{end}}"


def _packages(component: Component, work: Path) -> set[str]:
    listing = gomodules.run_go(
        ["list", "-deps", "-f", PACKAGE_AT_VERSION, *component.packages],
        cwd=work,
        env={"GOFLAGS": component.goflags},
    )
    return set(listing.splitlines())


def _build_lane(
    lane: list[Component],
    prepared: dict[str, Future[Path]],
    finished: dict[str, threading.Event],
    board: BuildBoard,
) -> dict[str, Path]:
    built = {}
    try:
        for component in lane:
            work = prepared[component.key].result()
            other = component.built_against
            if other is not None and other.key in finished and not finished[other.key].is_set():
                board.say(component.key, f"waiting for {other.name}")
                finished[other.key].wait()
            started = time.monotonic()
            built[component.key] = _compile(component, work, board)
            board.say(component.key, f"built in {time.monotonic() - started:.0f}s")
            finished[component.key].set()
    finally:
        # a failed lane releases the others' waits; their build or its error follows
        for component in lane:
            finished[component.key].set()
    return built


def _compile(component: Component, work: Path, board: BuildBoard) -> Path:
    target = bin_dir(component)
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    args = ["build", "-v", *COMPILE_FLAGS, "-ldflags", " ".join(("-s", "-w", *component.ldflags))]
    args += ["-o", str(staging) + "/", *component.packages]
    board.compiling(component.key)
    _stream_build(
        args, work, component.key, lambda: board.compiled(component.key), component.goflags
    )
    for package in component.packages:
        built, wanted = staging / go_output_name(package), staging / binary_name(package)
        if built != wanted:
            built.rename(wanted)
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


def _stream_build(
    args: list[str],
    cwd: Path,
    key: str,
    on_package: Callable[[], None],
    goflags: str = "-mod=mod",
) -> None:
    """Run `go build -v`, calling `on_package` as each package compiles."""
    env = {**os.environ, "GOFLAGS": goflags}
    proc = subprocess.Popen(
        [gomodules.go_command(), *args],
        cwd=cwd,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stderr is not None
    errors = []
    for line in proc.stderr:
        line = line.rstrip()
        if line and not line.startswith(("#", " ")) and " " not in line:
            on_package()
        else:
            errors.append(line)
    if proc.wait() != 0:
        raise UserError(f"building {key} failed: {'; '.join(errors[-3:])}")


def build_kueue_source(v: Versions, progress: Progress) -> None:
    """Kueue's manager built from the source tree under test, unless cached (a release's
    binaries are `mkdc bins`'s work); a tree that does not build is a UserError."""
    component = kueue_source_component(v)
    if component is not None:
        build(component, progress)


def build_all(v: Versions, progress: Progress | None = None, node: bool = False) -> dict[str, Path]:
    """Build (or find cached) every binary, with a kind node's too when `node`; returns
    binary name -> path. Kueue first, then Kubernetes and its node binaries, each reusing
    the packages before it; beside them etcd, kind and CoreDNS, which share nothing with
    Kueue, while it compiles, then KWOK once Kueue is built."""
    report = progress or (lambda msg: print(msg, file=sys.stderr, flush=True))
    wanted = components(v) + (node_components(v) if node else [])
    by_name = {c.name: c for c in wanted}
    lanes = [
        ["kueue", "kubernetes", "kubernetes-node"],
        ["etcd", "kind", "coredns", "kwok"],
    ]
    folders = build_many([[by_name[n] for n in lane if n in by_name] for lane in lanes], report)
    return {name: folders[c.key] / name for c in wanted for name in c.binaries}


def go_module_binary(directory: Path) -> Path:
    """Where the binary of the Go main module in `directory` is cached: keyed by a hash of
    its go.mod, go.sum and Go files, so an edit gives a new build and nothing else does."""
    digest = go_sources_hash(directory)[:12]
    return cache_dir() / "bin" / f"{directory.name}-{digest}" / directory.name


def build_go_module(directory: Path, progress: Progress) -> Path:
    """Build a dispatcher's Go main module (its vendor/ or the module proxy) unless
    this version of its source is cached; COMPILE_FLAGS as for the upstream binaries, so
    the packages they share come from Go's build cache."""
    target = go_module_binary(directory)
    if target.is_file():
        progress(f"{directory.name}: cached in {target.parent}")
        return target
    started = time.monotonic()
    listing = gomodules.run_go(
        ["list", "-deps", "."], cwd=directory, env={"GOFLAGS": SOURCE_GOFLAGS}
    )
    # two runs may build the same source at once (a test run's parallel tests): each
    # links its own file, and the last rename wins with the same binary
    staging = target.with_name(f"{target.name}.partial-{os.getpid()}")
    staging.parent.mkdir(parents=True, exist_ok=True)
    args = ["build", "-v", *COMPILE_FLAGS, "-ldflags", "-s -w", "-o", str(staging), "."]
    board = BuildBoard([directory.name], progress)
    board.resolved(directory.name, len(listing.split()))
    board.compiling(directory.name)
    with board.reporting(10.0):
        _stream_build(
            args, directory, directory.name, lambda: board.compiled(directory.name), SOURCE_GOFLAGS
        )
    staging.replace(target)
    progress(f"{directory.name}: built into {target.parent} in {time.monotonic() - started:.0f}s")
    return target
