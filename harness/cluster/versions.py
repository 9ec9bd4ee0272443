"""The version matrix: which upstream versions build one environment.

Selected by `--kueue-version` / `--kubernetes-version` or MKDC_KUEUE_VERSION /
MKDC_KUBERNETES_VERSION. Each Kueue version has a default Kubernetes version.

`--kueue-source DIR` (MKDC_KUEUE_SOURCE) puts a Kueue source tree in place of the
released Kueue: its manager is built from the tree, its manifests rendered from the
tree's `config/`, Kubernetes of the minor version the tree's go.mod names (the matrix
point's patch when it has that minor: a patch changes no API, and a tree newer by a patch
than any release mkdc knows reuses the cached control plane). The rest of the environment
(etcd, KWOK, and the Kueue release whose module versions the control plane is built
against) is the matrix point the tree is driven as: the release its `git describe` names
when the matrix has that minor version, else `--kueue-version`, else the default.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path

from harness.errors import UserError, shown


@dataclass(frozen=True)
class KueueSource:
    """A Kueue source tree under test, named as the report names it."""

    path: str  # absolute
    tree: str  # a hash of what its manager binary is built from (the build's cache key)
    describe: str  # `git describe` of the tree, or "tree <hash>" outside git
    kubernetes: str  # the Kubernetes release its go.mod's k8s.io/api names, e.g. "1.36.2"

    @property
    def label(self) -> str:
        return f"source {self.describe} ({self.path})"


@dataclass(frozen=True)
class Versions:
    kubernetes: str  # without the leading "v", e.g. "1.36.3"
    kueue: str
    etcd: str
    kwok: str
    kind: str = "0.33.0"  # the kind provider's tool; node images are built for `kubernetes`
    coredns: str = "1.14.2"  # the cluster DNS of a node image built here (kubeadm 1.36's)
    source: KueueSource | None = None  # Kueue built from this tree instead of the release

    @property
    def kubernetes_minor(self) -> int:
        return int(self.kubernetes.split(".")[1])

    @property
    def kueue_minor(self) -> tuple[int, int]:
        major, minor = self.kueue.split(".")[:2]
        return int(major), int(minor)

    @property
    def kueue_label(self) -> str:
        """The Kueue under test as the report names it: a release, or a source tree."""
        return f"v{self.kueue}" if self.source is None else self.source.label

    def describe(self) -> str:
        kueue = f"kueue v{self.kueue}"
        if self.source is not None:
            kueue = f"kueue {self.source.label}, driven as v{self.kueue}"
        return f"kubernetes v{self.kubernetes}, {kueue}, etcd v{self.etcd}, kwok v{self.kwok}"


ETCD = "3.6.16"
KWOK = "0.8.0"

# Kueue version -> the environment it is tested on. v0.17.8 is not served by the
# module proxy here; v0.17.1 is the newest 0.17 patch that is, on Kubernetes 1.35.
# Kueue v0.19.2's Kubernetes is the patch whose staging modules (k8s.io/api v0.36.2, ...)
# Kueue requires: built against Kueue's versions, the packages both use compile once.
MATRIX: dict[str, Versions] = {
    "0.19.2": Versions(kubernetes="1.36.2", kueue="0.19.2", etcd=ETCD, kwok=KWOK),
    "0.17.1": Versions(kubernetes="1.35.4", kueue="0.17.1", etcd=ETCD, kwok=KWOK),
}
DEFAULT_KUEUE = "0.19.2"


def _strip_v(value: str) -> str:
    return value[1:] if value.startswith("v") else value


def source_given(source: str | None) -> str | None:
    """The Kueue source tree asked for: `source` (--kueue-source), else the environment's."""
    return source or os.environ.get("MKDC_KUEUE_SOURCE") or None


def select(
    kueue: str | None = None, kubernetes: str | None = None, source: str | None = None
) -> Versions:
    """The versions to use: explicit arguments, then environment, then the default."""
    source = source_given(source)
    tree = read_source(Path(source)) if source else None
    kueue = _strip_v(
        kueue
        or os.environ.get("MKDC_KUEUE_VERSION")
        or (tree and _release_of(tree.describe))
        or DEFAULT_KUEUE
    )
    kubernetes = kubernetes or os.environ.get("MKDC_KUBERNETES_VERSION")
    if kueue not in MATRIX:
        known = ", ".join(f"v{k}" for k in MATRIX)
        raise UserError(
            f"kueue version {shown('v' + kueue)} is not in the version matrix (known: {known})"
        )
    chosen = MATRIX[kueue]
    if tree is not None:
        chosen = replace(chosen, source=tree, kubernetes=_kubernetes_for(tree, chosen))
    if kubernetes:
        kubernetes = _strip_v(kubernetes)
        # digits only: the minor version is read as a number, the rest names a module
        if not re.fullmatch(r"[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}", kubernetes):
            raise UserError(
                f"kubernetes version {shown(kubernetes)} must be a full version such as 1.36.3"
            )
        chosen = replace(chosen, kubernetes=kubernetes)
    return chosen


KUEUE_MODULE = "sigs.k8s.io/kueue"
# What the manager binary is built from; a change anywhere else (docs, tests, site) keeps
# the cached build
_SKIPPED_DIRS = {".git", "node_modules", "site", "test", "hack", "docs", "keps", "bin", "charts"}


def read_source(path: Path) -> KueueSource:
    """A Kueue source tree, checked (a UserError says what is wrong) and hashed."""
    where = shown(str(path))
    gomod = path / "go.mod"
    if not gomod.is_file():
        raise UserError(f"--kueue-source {where} has no go.mod: give the root of a Kueue checkout")
    first = re.search(r"^module\s+(\S+)", gomod.read_text(errors="replace"), re.M)
    if first is None or first.group(1) != KUEUE_MODULE:
        found = first.group(1) if first else "none"
        raise UserError(
            f"--kueue-source {where} is module {shown(found)}, not {KUEUE_MODULE}:"
            " give the root of a Kueue checkout"
        )
    root = path.resolve()
    kubernetes = _kubernetes_of(root)  # said before anything runs: git, the hash
    tree = source_tree_hash(root)
    return KueueSource(str(root), tree, _git_describe(root) or f"tree {tree}", kubernetes)


def source_tree_hash(root: Path) -> str:
    """The source of a tree's manager binary, hashed: an edit there gives a new build, one
    in its docs or tests does not."""
    return go_sources_hash(root, skip=_SKIPPED_DIRS, tests=False)[:12]


def go_sources_hash(root: Path, *, skip: Collection[str] = (), tests: bool = True) -> str:
    """sha256 over the go.mod, go.sum, vendor/modules.txt and Go files below `root`, with
    their paths: what a Go build reads. `skip`: top-level folders no build reads (not
    walked); `tests`: the _test.go files too."""
    found = []
    for folder, dirs, files in os.walk(root):
        if folder == str(root):
            dirs[:] = [d for d in dirs if d not in skip]
        for name in files:
            go = name.endswith(".go") and (tests or not name.endswith("_test.go"))
            vendored = name == "modules.txt" and folder == str(root / "vendor")
            if go or vendored or name in ("go.mod", "go.sum"):
                found.append(Path(folder) / name)
    digest = hashlib.sha256()
    for path in sorted(found):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _git_describe(root: Path) -> str | None:
    """`git describe` of the tree when it is a git work tree's root (a tree copied into
    another repository's folder is not named after that repository)."""

    def git(*args: str) -> str | None:
        try:
            found = subprocess.run(
                ["git", "-C", str(root), *args],
                capture_output=True,
                text=True,
                check=False,
                timeout=30,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return (found.stdout.strip() or None) if found.returncode == 0 else None

    top = git("rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != root:
        return None
    return git("describe", "--tags", "--always", "--dirty")


def _release_of(describe: str) -> str | None:
    """The matrix release of the same minor version as a `git describe` (v0.19.2-5-gabc:
    0.19.2), None when the matrix has none."""
    m = re.match(r"v?(\d+)\.(\d+)\.", describe)
    if m is None:
        return None
    return next((k for k in MATRIX if k.split(".")[:2] == [m.group(1), m.group(2)]), None)


def _kubernetes_for(tree: KueueSource, driven_as: Versions) -> str:
    """The Kubernetes a tree runs on: the matrix point's when of the same minor version as
    the tree's k8s.io/api, else the tree's own."""
    same_minor = tree.kubernetes.split(".")[:2] == driven_as.kubernetes.split(".")[:2]
    return driven_as.kubernetes if same_minor else tree.kubernetes


def _kubernetes_of(root: Path) -> str:
    """The Kubernetes release a Kueue tree is built with: its k8s.io/api v0.X.Y is X.Y's."""
    try:
        api = required_version(root / "go.mod", "k8s.io/api")
    except UserError:
        api = ""
    m = re.fullmatch(r"v0\.(\d+)\.(\d+)", api)
    if m is None:
        raise UserError(
            f"--kueue-source {shown(str(root))}: its go.mod requires no k8s.io/api,"
            " so mkdc cannot tell which Kubernetes to run it on: give --kubernetes-version"
        )
    return f"1.{m.group(1)}.{m.group(2)}"


def required_version(gomod: Path, module: str) -> str:
    """The version of `module` a go.mod requires (a UserError when none)."""
    for line in gomod.read_text().splitlines():
        parts = line.split()
        if parts and parts[0] == module and len(parts) >= 2:
            return parts[1]
        if len(parts) >= 3 and parts[0] == "require" and parts[1] == module:
            return parts[2]
    raise UserError(f"{gomod} does not require {module}")
