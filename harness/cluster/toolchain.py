"""The catalogue of binaries an environment runs: which upstream Go module and version
each comes from, how it is built, and where it is cached.

Kubernetes and KWOK are built against Kueue's dependency versions
(`Component.built_against`): the packages they share with Kueue then compile once.
Results are cached per version and never rebuilt once present (`builds` builds them,
`gomodules` writes the modules they are built in).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.cluster.versions import Versions
from harness.errors import UserError

Progress = Callable[[str], None]

# Every Go build's flags: paths trimmed, so a dispatcher's build finds the packages it
# shares with the upstream builds in Go's build cache (the key includes these flags), and
# no DWARF from the compiler, which the linker's -w drops anyway (8 to 12 % less compile
# time; the machine code is the same).
COMPILE_FLAGS = ("-trimpath", "-gcflags=all=-dwarf=false")

# A source tree (Kueue's under test, a vendor's dispatcher) is built as its owner builds
# it, with Go's defaults: its vendor/ when it has one, else its go.mod and go.sum, read
# and never rewritten. GOFLAGS is set whole, so no -mod from the environment applies.
SOURCE_GOFLAGS = "-buildvcs=false"


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
    # A source tree's release: the packages both build at the same module version come
    # from the release's build in Go's build cache
    release: Component | None = None

    @property
    def goflags(self) -> str:
        return SOURCE_GOFLAGS if self.source is not None else "-mod=mod"

    @property
    def binaries(self) -> tuple[str, ...]:
        return tuple(binary_name(p) for p in self.packages)

    @property
    def key(self) -> str:
        own = f"{self.name}-{self.version}"
        return own if self.built_against is None else f"{own}+{self.built_against.key}"


def go_output_name(package: str) -> str:
    """The file name `go build -o DIR/` gives a main package (major suffix dropped)."""
    parts = package.rstrip("/").split("/")
    return parts[-2] if re.fullmatch(r"v\d+", parts[-1]) else parts[-1]


def binary_name(package: str) -> str:
    # etcd's main package is go.etcd.io/etcd/server/v3, which Go names "server"
    return "etcd" if package.startswith("go.etcd.io/etcd/server") else go_output_name(package)


def kueue_source_component(v: Versions) -> Component | None:
    """Kueue built from the source tree under test, cached by the tree's hash; None for a
    release."""
    if v.source is None:
        return None
    return Component(
        release=_kueue_release(v),
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


def _kueue_release(v: Versions) -> Component:
    return Component(
        name="kueue",
        module="sigs.k8s.io/kueue",
        version=f"v{v.kueue}",
        packages=("sigs.k8s.io/kueue/cmd/kueue",),
        ldflags=(f"-X sigs.k8s.io/kueue/pkg/version.GitVersion=v{v.kueue}",),
    )


def components(v: Versions) -> list[Component]:
    k8s_version_flags = (
        f"-X k8s.io/component-base/version.gitVersion=v{v.kubernetes}",
        "-X k8s.io/component-base/version.gitMajor=1",
        f"-X k8s.io/component-base/version.gitMinor={v.kubernetes_minor}",
        "-X k8s.io/component-base/version.gitTreeState=clean",
    )
    kueue = _kueue_release(v)
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
