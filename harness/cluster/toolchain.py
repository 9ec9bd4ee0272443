"""Binaries and upstream manifests for the local provider, built from Go modules.

Each component is built by a throw-away Go module generated in the cache
(`require` of the upstream module, a tools.go importing its main packages), so
the upstream's own dependency pins decide the build. Kubernetes needs one
`replace` per staging module (its go.mod points them at local folders); those
lines are derived from the upstream go.mod of the same version. Kubernetes and
KWOK are built against Kueue's dependency versions (`Component.built_against`):
the packages they share with Kueue then compile once. Results are cached per
version and never rebuilt once present.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from harness.cluster.versions import Versions, go_sources_hash, required_version
from harness.errors import UserError

Progress = Callable[[str], None]

# Every Go build's flags: paths trimmed, so a dispatcher's build finds the packages it
# shares with the upstream builds in Go's build cache (the key includes these flags), and
# no DWARF from the compiler, which the linker's -w drops anyway (8 to 12 % less compile
# time; the machine code is the same).
COMPILE_FLAGS = ("-trimpath", "-gcflags=all=-dwarf=false")


def cache_dir() -> Path:
    """Where binaries and build modules live: MKDC_CACHE_DIR or the user's cache dir."""
    explicit = os.environ.get("MKDC_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mkdc"


@dataclass(frozen=True)
class Component:
    """One upstream Go module and the main packages we build from it."""

    name: str
    module: str
    version: str  # with the leading "v"
    packages: tuple[str, ...]
    ldflags: tuple[str, ...] = ()
    staging_replaces: bool = False
    go_env: dict[str, str] = field(default_factory=dict)
    # Another component whose dependency versions this one is built with: its build
    # module requires every module of that build at that build's version, so Go selects
    # those (a version this module's own go.mod names higher stays). The packages they
    # share then come from Go's build cache, which keys a package by its module's
    # required version: a `replace` to the same code would compile it again. The build
    # waits for that component's when both are built in one run.
    built_against: Component | None = None
    # A source tree built as it is (its own go.mod, never rewritten) instead of a build
    # module requiring a released version
    source: Path | None = None

    @property
    def goflags(self) -> str:
        # a contributor's go.mod and go.sum are read, never rewritten
        return "-mod=readonly -buildvcs=false" if self.source is not None else "-mod=mod"

    @property
    def binaries(self) -> tuple[str, ...]:
        return tuple(_binary_name(p) for p in self.packages)

    @property
    def key(self) -> str:
        own = f"{self.name}-{self.version}"
        return own if self.built_against is None else f"{own}+{self.built_against.key}"


def _go_output_name(package: str) -> str:
    """The file name `go build -o DIR/` gives a main package (major suffix dropped)."""
    parts = package.rstrip("/").split("/")
    return parts[-2] if re.fullmatch(r"v\d+", parts[-1]) else parts[-1]


def _binary_name(package: str) -> str:
    # etcd's main package is go.etcd.io/etcd/server/v3, which Go names "server"
    return "etcd" if package.startswith("go.etcd.io/etcd/server") else _go_output_name(package)


def kueue_source_component(v: Versions) -> Component | None:
    """Kueue built from the source tree under test, cached by the tree's hash; None for a
    release."""
    if v.source is None:
        return None
    return Component(
        name="kueue",
        module="sigs.k8s.io/kueue",
        version=f"src-{v.source.tree}",
        packages=("sigs.k8s.io/kueue/cmd/kueue",),
        # the linker splits its flags at spaces: "tree <hash>" is one word there
        ldflags=(
            f"-X sigs.k8s.io/kueue/pkg/version.GitVersion={v.source.describe.replace(' ', '-')}",
        ),
        source=Path(v.source.path),
    )


def components(v: Versions) -> list[Component]:
    k8s_version_flags = (
        f"-X k8s.io/component-base/version.gitVersion=v{v.kubernetes}",
        "-X k8s.io/component-base/version.gitMajor=1",
        f"-X k8s.io/component-base/version.gitMinor={v.kubernetes_minor}",
        "-X k8s.io/component-base/version.gitTreeState=clean",
    )
    kueue = Component(
        name="kueue",
        module="sigs.k8s.io/kueue",
        version=f"v{v.kueue}",
        packages=("sigs.k8s.io/kueue/cmd/kueue",),
        ldflags=(f"-X sigs.k8s.io/kueue/pkg/version.GitVersion=v{v.kueue}",),
    )
    # Kueue v0.17's pins leave KWOK's OpenTelemetry imports unresolvable: there the others
    # keep their own. A source tree's Kueue replaces the release, but the control plane
    # stays built against the release it is driven as: cached once, whatever the tree.
    against_kueue = kueue if v.kueue_minor >= (0, 19) else None
    kueue = kueue_source_component(v) or kueue
    return [
        Component(
            name="etcd",
            module="go.etcd.io/etcd/server/v3",
            version=f"v{v.etcd}",
            packages=("go.etcd.io/etcd/server/v3",),
        ),
        kueue,
        # Kueue keeps its release's pins exactly: it is the part the dispatcher talks to.
        # The control plane is built from its own release's code and staging modules, its
        # other libraries raised to Kueue's versions (never lowered), so the client
        # libraries, API types and apiserver packages both use compile once
        # (docs/benchmarks.md has the figures).
        Component(
            name="kubernetes",
            module="k8s.io/kubernetes",
            version=f"v{v.kubernetes}",
            packages=(
                "k8s.io/kubernetes/cmd/kube-apiserver",
                "k8s.io/kubernetes/cmd/kube-controller-manager",
                "k8s.io/kubernetes/cmd/kube-scheduler",
            ),
            ldflags=k8s_version_flags,
            staging_replaces=True,
            built_against=against_kueue,
        ),
        # KWOK, the simulated kubelet: most of its packages are Kueue's too
        Component(
            name="kwok",
            module="sigs.k8s.io/kwok",
            version=f"v{v.kwok}",
            packages=("sigs.k8s.io/kwok/cmd/kwok",),
            ldflags=(f"-X sigs.k8s.io/kwok/pkg/consts.Version=v{v.kwok}",),
            built_against=against_kueue,
        ),
    ]


def node_components(v: Versions) -> list[Component]:
    """What a kind node image needs beyond `components`: the node agents, kubeadm, kind
    itself and the cluster DNS."""
    control_plane = next(c for c in components(v) if c.name == "kubernetes")
    return [
        Component(
            name="kubernetes-node",
            module=control_plane.module,
            version=control_plane.version,
            packages=tuple(
                f"k8s.io/kubernetes/cmd/{name}"
                for name in ("kubelet", "kubeadm", "kubectl", "kube-proxy")
            ),
            ldflags=control_plane.ldflags,
            staging_replaces=True,
            built_against=control_plane.built_against,
        ),
        Component(
            name="kind",
            module="sigs.k8s.io/kind",
            version=f"v{v.kind}",
            packages=("sigs.k8s.io/kind",),
        ),
        Component(
            name="coredns",
            module="github.com/coredns/coredns",
            version=f"v{v.coredns}",
            packages=("github.com/coredns/coredns",),
            go_env={"CGO_ENABLED": "0"},  # static, as its released image
        ),
    ]


def bin_dir(component: Component) -> Path:
    return cache_dir() / "bin" / component.key


def is_built(component: Component) -> bool:
    d = bin_dir(component)
    return all((d / b).is_file() and os.access(d / b, os.X_OK) for b in component.binaries)


def binary_path(v: Versions, binary: str) -> Path:
    """The cached path of one binary, or UserError saying how to build it."""
    for c in components(v):
        if binary in c.binaries:
            path = bin_dir(c) / binary
            if not path.is_file():
                raise UserError(
                    f"binary {binary} ({c.module} {c.version}) is not built: run `mkdc bins`"
                )
            return path
    raise KeyError(binary)


def _go() -> str:
    go = shutil.which("go")
    if not go:
        raise UserError("the go command is not on PATH: install Go 1.26 or newer")
    return go


def _run_go(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    full_env = {**os.environ, "GOFLAGS": "-mod=mod", **(env or {})}
    proc = subprocess.run(
        [_go(), *args], cwd=cwd, env=full_env, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        tail = "; ".join(proc.stderr.strip().splitlines()[-3:])
        raise UserError(f"`go {' '.join(args[:3])}` failed in {cwd}: {tail}")
    return proc.stdout


def module_dir(module: str, version: str, cwd: Path | None = None) -> Path:
    """Download a module through the module proxy (if needed) and return its folder."""
    where = cwd or cache_dir()
    where.mkdir(parents=True, exist_ok=True)
    out = _run_go(["mod", "download", "-json", f"{module}@{version}"], cwd=where)
    info = json.loads(out)
    if info.get("Error"):
        raise UserError(f"module {module}@{version} is not available: {info['Error']}")
    return Path(info["Dir"])


def staging_modules(kubernetes_dir: Path) -> list[str]:
    """The staging modules Kubernetes' go.mod points at local folders."""
    found = []
    for line in (kubernetes_dir / "go.mod").read_text().splitlines():
        m = re.match(r"\s*(k8s\.io/[\w.-]+)\s+=>\s+\./staging/", line)
        if m:
            found.append(m.group(1))
    return found


def staging_replaces(modules: list[str], version: str) -> list[str]:
    """`replace` lines mapping each staging module to its published v0.X.Y twin."""
    staging_version = "v0." + version.removeprefix("v").split(".", 1)[1]
    return [f"\t{m} => {m} {staging_version}" for m in modules]


def build_module_text(
    component: Component, replaces: Sequence[str], shared: Sequence[str] = ()
) -> tuple[str, str]:
    """The go.mod and tools.go of the throw-away build module; `shared` are require lines
    of another build's modules (`shared_requires`)."""
    gomod = [
        f"module mkdc.local/toolchain/{component.name}",
        "",
        "go 1.26.0",
        "",
        "require (",
        f"\t{component.module} {component.version}",
        *shared,
        ")",
    ]
    if replaces:
        gomod += ["", "replace (", *replaces, ")"]
    imports = "\n".join(f'\t_ "{p}"' for p in component.packages)
    tools = f"//go:build tools\n\npackage tools\n\nimport (\n{imports}\n)\n"
    return "\n".join(gomod) + "\n", tools


_preparing: dict[str, threading.Lock] = {}
_prepared: dict[str, Path] = {}


def _prepare_module(component: Component, progress: Progress) -> Path:
    """The component's build module, written and tidied (downloading what it needs), once
    per process: KWOK's resolution prepares Kueue's too, perhaps while Kueue's own runs."""
    if component.source is not None:
        return component.source
    where = str(cache_dir() / "build" / component.key)
    with _preparing.setdefault(where, threading.Lock()):
        if where not in _prepared:
            _prepared[where] = _write_module(component, progress)
        return _prepared[where]


def _write_module(component: Component, progress: Progress) -> Path:
    work = cache_dir() / "build" / component.key
    work.mkdir(parents=True, exist_ok=True)
    staging: list[str] = []
    if component.staging_replaces:
        staging = staging_modules(module_dir(component.module, component.version))
    shared: list[str] = []
    if component.built_against is not None:
        other = component.built_against
        progress(f"{component.key}: requiring the module versions of {other.key}")
        listing = _run_go(
            ["list", "-deps", "-f", MODULE_OF_EACH_PACKAGE, *other.packages],
            cwd=_prepare_module(other, progress),
        )
        # the staging modules are Kubernetes' own: its replace lines decide them
        shared = shared_requires(listing, skip=(component.module, other.module, *staging))
    replaces = staging_replaces(staging, component.version) if staging else []
    gomod, tools = build_module_text(component, replaces, shared)
    (work / "go.mod").write_text(gomod)
    (work / "tools.go").write_text(tools)
    progress(f"{component.key}: resolving modules")
    _run_go(["mod", "tidy"], cwd=work)
    return work


# `go list -f`: the module path and the version (after any replace) of each package
MODULE_OF_EACH_PACKAGE = (
    "{{with .Module}}{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}{{end}}"
)


def shared_requires(listing: str, skip: tuple[str, ...] = ()) -> list[str]:
    """`require` lines for each module of a MODULE_OF_EACH_PACKAGE listing at the version
    listed; modules in `skip` (the one being built, its own staging modules) are left out."""
    versions: dict[str, str] = {}
    for line in listing.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] not in skip:
            versions[parts[0]] = parts[1]
    return [f"\t{module} {version}" for module, version in sorted(versions.items())]


def build(component: Component, progress: Progress) -> Path:
    """Build one component unless cached."""
    return build_many([[component]], progress)[component.key]


class BuildBoard:
    """What each component of a concurrent build is doing, said in one line."""

    def __init__(self, keys: list[str], progress: Progress) -> None:
        self._progress = progress
        self._lock = threading.Lock()
        self._state = dict.fromkeys(keys, "queued")
        self._done = dict.fromkeys(self._state, 0)
        self._total: dict[str, int] = {}
        self._started = time.monotonic()
        self._compiling_since: float | None = None

    def say(self, key: str, state: str) -> None:
        with self._lock:
            self._state[key] = state
        if state.startswith(("cached", "built")):
            self._progress(f"{key}: {state}")

    def resolved(self, key: str, total: int) -> None:
        """`key` is ready to compile `total` packages (at most: some may be cached)."""
        with self._lock:
            self._total[key] = total
            self._state[key] = "resolved"

    def compiling(self, key: str) -> None:
        with self._lock:
            self._state[key] = "compiling"
            if self._compiling_since is None:
                self._compiling_since = time.monotonic()

    def compiled(self, key: str) -> None:
        with self._lock:
            self._done[key] += 1

    def line(self) -> str:
        """e.g. `kubernetes 40% · kueue resolving modules · etcd built · 2m10s, ~4 min left`"""
        with self._lock:
            parts = []
            for key, state in self._state.items():
                if state.startswith("cached"):
                    continue  # said once, at the start
                name = key.split("-v")[0]
                if state == "compiling":
                    pct = min(99, 100 * self._done[key] // max(self._total[key], 1))
                    state = f"{pct}%"
                parts.append(f"{name} {state.split(' in ')[0]}")
            elapsed = time.monotonic() - self._started
            line = f"bins: {' · '.join(parts)} · {elapsed // 60:.0f}m{elapsed % 60:02.0f}s"
            left = self._seconds_left()
        return line if left is None else f"{line}, ~{max(1, round(left / 60))} min left"

    def _seconds_left(self) -> float | None:
        """Packages still to compile over the rate so far; None until every component
        still to build knows its package count and a minute of compiling gives a rate."""
        pending = [k for k, s in self._state.items() if not s.startswith(("cached", "built"))]
        if any(k not in self._total for k in pending) or self._compiling_since is None:
            return None
        spent = time.monotonic() - self._compiling_since
        done = sum(self._done.values())
        if spent < 60 or done == 0:
            return None
        return sum(self._total[k] - self._done[k] for k in pending) * spent / done

    @contextlib.contextmanager
    def reporting(self, every: float) -> Iterator[None]:
        """Say `line()` every `every` seconds while the block runs."""
        stop = threading.Event()

        def report() -> None:
            while not stop.wait(every):
                self._progress(self.line())

        reporter = threading.Thread(target=report, daemon=True)
        reporter.start()
        try:
            yield
        finally:
            stop.set()
            reporter.join()


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
    work = _prepare_module(component, lambda _msg: None)
    packages = _packages(component, work)
    if component.built_against is not None:
        # what it shares with the build it waits for comes from Go's build cache
        other = component.built_against
        packages -= _packages(other, _prepare_module(other, lambda _msg: None))
    if component.source is not None:
        # its dependencies are the release's, in Go's build cache since `mkdc bins`: what
        # compiles is the tree's own packages (its main module's, listed with no version)
        packages = {p for p in packages if p.endswith(f" {component.module}@")}
    board.resolved(component.key, len(packages))
    return work


# `go list -f`: a package and the module version it is built at, which decide (with its
# imports') whether two builds share it in Go's build cache
PACKAGE_AT_VERSION = "{{.ImportPath}} {{with .Module}}{{.Path}}@{{.Version}}{{end}}"


def _packages(component: Component, work: Path) -> set[str]:
    listing = _run_go(
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
        built, wanted = staging / _go_output_name(package), staging / _binary_name(package)
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
        [_go(), *args],
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
    """Build a dispatcher's Go main module (dependencies through the module proxy) unless
    this version of its source is cached; COMPILE_FLAGS as for the upstream binaries, so
    the packages they share come from Go's build cache."""
    target = go_module_binary(directory)
    if target.is_file():
        progress(f"{directory.name}: cached in {target.parent}")
        return target
    started = time.monotonic()
    # readonly: a vendor's go.mod and go.sum are read, never rewritten
    goflags = "-mod=readonly -buildvcs=false"
    total = len(_run_go(["list", "-deps", "."], cwd=directory, env={"GOFLAGS": goflags}).split())
    # two runs may build the same source at once (a test run's parallel tests): each
    # links its own file, and the last rename wins with the same binary
    staging = target.with_name(f"{target.name}.partial-{os.getpid()}")
    staging.parent.mkdir(parents=True, exist_ok=True)
    args = ["build", "-v", *COMPILE_FLAGS, "-ldflags", "-s -w", "-o", str(staging), "."]
    board = BuildBoard([directory.name], progress)
    board.resolved(directory.name, total)
    board.compiling(directory.name)
    with board.reporting(10.0):
        _stream_build(
            args, directory, directory.name, lambda: board.compiled(directory.name), goflags
        )
    staging.replace(target)
    progress(f"{directory.name}: built into {target.parent} in {time.monotonic() - started:.0f}s")
    return target


@dataclass(frozen=True)
class Manifests:
    """Upstream YAML read from the module cache of the selected versions."""

    kueue_crds: Path  # folder of CRD YAMLs
    kueue_webhooks: Path  # webhook configurations
    kueue_dir: Path  # module root, for anything else (e.g. admission policies)
    provisioning_request_crd: Path
    kwok_stages: list[Path]


def kueue_dir(v: Versions) -> Path:
    """Where Kueue's manifests and go.mod are read: the release's module, or the source
    tree under test (checked to serve the API mkdc drives)."""
    if v.source is None:
        return module_dir("sigs.k8s.io/kueue", f"v{v.kueue}")
    _require_served_api(Path(v.source.path))
    return Path(v.source.path)


def manifests(v: Versions) -> Manifests:
    kueue = kueue_dir(v)
    autoscaler_version = required_version(
        kueue / "go.mod", "k8s.io/autoscaler/cluster-autoscaler/apis"
    )
    autoscaler = module_dir("k8s.io/autoscaler/cluster-autoscaler/apis", autoscaler_version)
    kwok = module_dir("sigs.k8s.io/kwok", f"v{v.kwok}")
    # "fast" stages make pods run at once; pod-complete comes from the "general" set,
    # which honours the per-pod delay annotation (how long a pod "runs").
    fast, general = kwok / "kustomize/stage/pod/fast", kwok / "kustomize/stage/pod/general"
    stages = [
        kwok / "kustomize/stage/node/fast/node-initialize.yaml",
        fast / "pod-ready.yaml",
        general / "pod-complete.yaml",
        fast / "pod-delete.yaml",
    ]
    found = Manifests(
        kueue_crds=kueue / "config/components/crd/bases",
        kueue_webhooks=kueue / "config/components/webhook/manifests.yaml",
        kueue_dir=kueue,
        provisioning_request_crd=autoscaler
        / "config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml",
        kwok_stages=stages,
    )
    for path in (found.kueue_crds, found.kueue_webhooks, found.provisioning_request_crd, *stages):
        if not path.exists():
            raise UserError(
                f"upstream manifest {path} is missing: run `go clean -modcache` and `mkdc bins`"
            )
    return found


# The Kueue API the harness and the recorder speak (harness.cluster.multikueue.API), which
# a source tree's Workload CRD must serve
KUEUE_API_GROUP, KUEUE_API_VERSION = "kueue.x-k8s.io", "v1beta2"


def _require_served_api(kueue: Path) -> None:
    """A source tree whose Workload CRD does not serve the API the harness speaks cannot
    be judged: said in one line."""
    crd = kueue / f"config/components/crd/bases/{KUEUE_API_GROUP}_workloads.yaml"
    try:
        doc = yaml.safe_load(crd.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise UserError(
            f"Kueue source {kueue}: cannot read its Workload CRD {crd}: {exc}"
        ) from None
    served = [v.get("name") for v in doc.get("spec", {}).get("versions", []) if v.get("served")]
    if KUEUE_API_VERSION not in served:
        raise UserError(
            f"Kueue source {kueue} serves Workloads as {', '.join(map(str, served)) or 'nothing'},"
            f" not {KUEUE_API_GROUP}/{KUEUE_API_VERSION}, the API mkdc drives: judge a tree"
            " of Kueue v0.15 or newer"
        )
