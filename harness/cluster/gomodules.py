"""Go commands and the throw-away build modules the upstream components are built in.

Each released component is built by a module generated in the cache (`require` of the
upstream module, a tools.go importing its main packages), so the upstream's own
dependency pins decide the build. Kubernetes needs one `replace` per staging module (its
go.mod points them at local folders); those lines are derived from the upstream go.mod of
the same version.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

from harness.cluster.toolchain import Component, Progress, cache_dir
from harness.errors import UserError


def go_command() -> str:
    go = shutil.which("go")
    if not go:
        raise UserError("the go command is not on PATH: install Go 1.26 or newer")
    return go


def run_go(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    full_env = {**os.environ, "GOFLAGS": "-mod=mod", **(env or {})}
    proc = subprocess.run(
        [go_command(), *args], cwd=cwd, env=full_env, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        tail = "; ".join(proc.stderr.strip().splitlines()[-3:])
        raise UserError(f"`go {' '.join(args[:3])}` failed in {cwd}: {tail}")
    return proc.stdout


def module_dir(module: str, version: str, cwd: Path | None = None) -> Path:
    """Download a module through the module proxy (if needed) and return its folder."""
    where = cwd or cache_dir()
    where.mkdir(parents=True, exist_ok=True)
    out = run_go(["mod", "download", "-json", f"{module}@{version}"], cwd=where)
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


def prepare_module(component: Component, progress: Progress) -> Path:
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
        listing = run_go(
            ["list", "-deps", "-f", MODULE_OF_EACH_PACKAGE, *other.packages],
            cwd=prepare_module(other, progress),
        )
        # the staging modules are Kubernetes' own: its replace lines decide them
        shared = shared_requires(listing, skip=(component.module, other.module, *staging))
    replaces = staging_replaces(staging, component.version) if staging else []
    gomod, tools = build_module_text(component, replaces, shared)
    (work / "go.mod").write_text(gomod)
    (work / "tools.go").write_text(tools)
    progress(f"{component.key}: resolving modules")
    run_go(["mod", "tidy"], cwd=work)
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
