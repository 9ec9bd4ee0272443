"""A Kueue source tree as a contributor's checkout would be: a copy of the released
Kueue's source from Go's module cache, and one whose Incremental dispatcher is broken."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.cluster import toolchain, versions

INCREMENTAL = "pkg/controller/workloaddispatcher/incrementaldispatcher.go"
BATCH = "return workers[:batchSize], nil"  # the next round's nominees: stepSize of those left
# what the manager binary is built from, and the manifests rendered from config/
FOLDERS = ("apis", "client-go", "cmd", "config", "internal", "pkg")


def released_source(v: versions.Versions, where: Path) -> Path:
    """A copy of the released Kueue's source (from Go's module cache) in `where`, as a
    checkout would be, writable (the module cache's files are read-only)."""
    released = toolchain.module_dir("sigs.k8s.io/kueue", f"v{v.kueue}")
    for name in ("go.mod", "go.sum"):
        shutil.copyfile(released / name, where / name)
    for folder in FOLDERS:
        shutil.copytree(released / folder, where / folder, copy_function=shutil.copyfile)
    return where


def broken_incremental(v: versions.Versions, where: Path) -> Path:
    """The released Kueue's source, its Incremental dispatcher broken so that it
    nominates every worker in the first round."""
    source = released_source(v, where) / INCREMENTAL
    text = source.read_text()
    assert text.count(BATCH) == 1, f"{INCREMENTAL} of Kueue v{v.kueue} no longer has {BATCH!r}"
    source.write_text(text.replace(BATCH, "return workers, nil"))
    return where
