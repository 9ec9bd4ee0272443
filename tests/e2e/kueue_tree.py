"""A Kueue source tree as a contributor's checkout would be: a copy of the released
Kueue's source from Go's module cache, and one whose Incremental dispatcher is broken, as
Kueue's repository is (a git tree whose dependencies are vendored)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from harness.cluster import gomodules, versions

INCREMENTAL = "pkg/controller/workloaddispatcher/incrementaldispatcher.go"
BATCH = "return workers[:batchSize], nil"  # the next round's nominees: stepSize of those left
# what the manager binary is built from, and the manifests rendered from config/
FOLDERS = ("apis", "client-go", "cmd", "config", "internal", "pkg")


def released_source(v: versions.Versions, where: Path) -> Path:
    """A copy of the released Kueue's source (from Go's module cache) in `where`, as a
    checkout would be, writable (the module cache's files are read-only)."""
    released = gomodules.module_dir("sigs.k8s.io/kueue", f"v{v.kueue}")
    for name in ("go.mod", "go.sum"):
        shutil.copyfile(released / name, where / name)
    for folder in FOLDERS:
        shutil.copytree(released / folder, where / folder, copy_function=shutil.copyfile)
    return where


# A module no proxy serves, only the tree's vendor/ has (as a module version withdrawn
# from the proxy is, for Kueue's repository): the tree builds only as Go's defaults build it
VENDORED_ONLY = "mkdc.invalid/vendoredonly"


def broken_incremental(v: versions.Versions, where: Path) -> Path:
    """The released Kueue's source as a git tree with vendor/, its Incremental dispatcher
    broken so that it nominates every worker in the first round."""
    source = released_source(v, where) / INCREMENTAL
    text = source.read_text()
    assert text.count(BATCH) == 1, f"{INCREMENTAL} of Kueue v{v.kueue} no longer has {BATCH!r}"
    source.write_text(text.replace(BATCH, "return workers, nil"))
    _vendor(where)
    git = ["git", "-C", str(where), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "broken incremental"], check=True)
    return where


def _vendor(tree: Path) -> None:
    """`go mod vendor` from the module cache (the tests' files left out: their imports are
    in Kueue's test/ folder), then a dependency only vendor/ holds, imported by the
    manager."""
    for test in tree.rglob("*_test.go"):
        test.unlink()
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off"}
    subprocess.run(["go", "mod", "vendor"], cwd=tree, env=env, check=True, capture_output=True)
    package = tree / "vendor" / VENDORED_ONLY
    package.mkdir(parents=True)
    (package / "only.go").write_text("package vendoredonly\n")
    with (tree / "vendor" / "modules.txt").open("a") as listing:
        listing.write(f"# {VENDORED_ONLY} v0.0.1\n## explicit\n{VENDORED_ONLY}\n")
    with (tree / "go.mod").open("a") as gomod:
        gomod.write(f"\nrequire {VENDORED_ONLY} v0.0.1\n")
    (tree / "cmd" / "kueue" / "vendored.go").write_text(
        f'package main\n\nimport _ "{VENDORED_ONLY}"\n'
    )
