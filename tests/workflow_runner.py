"""A GitHub Actions workflow's job run on this machine as a hosted runner runs it: each
`run:` step in order, as a non-root user with passwordless sudo, in a workspace of its
own, with the workflow's `env`, `GITHUB_PATH`, `RUNNER_TEMP` and `if: always()` honoured.

Only the steps that need the internet get a local equivalent, and the record says which:
`actions/checkout` copies a folder given by the caller; `actions/setup-go` and
`actions/setup-python` take this machine's Go and Python; `actions/cache` restores the
newest saved copy whose key matches (the key or one of `restore-keys` as a prefix) from a
local store, and saves the paths under the key at the end of a job that succeeded when it
was not an exact hit, as the action's post step does; `actions/upload-artifact` copies
the files to a folder."""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


@dataclass
class StepRecord:
    name: str
    how: str  # "run", or the local equivalent of a `uses:` step
    seconds: float
    returncode: int
    output: str = ""


@dataclass
class JobRecord:
    steps: list[StepRecord] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.returncode == 0 for s in self.steps)

    def failed(self) -> list[StepRecord]:
        return [s for s in self.steps if s.returncode != 0]

    def seconds(self) -> float:
        return sum(s.seconds for s in self.steps)


def read(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
    return doc


def the_job(doc: dict[str, Any]) -> dict[str, Any]:
    [job] = doc["jobs"].values()
    return job


def step_name(step: dict[str, Any]) -> str:
    return step.get("name") or step.get("uses") or step["run"].splitlines()[0]


@dataclass
class Runner:
    """One job's run as `user`, its folders under `root` (the user must exist)."""

    user: str
    root: Path
    cache_store: Path
    checkout: Callable[[Path], None]
    overrides: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.home = Path(os.path.expanduser(f"~{self.user}"))
        self.workspace = self.root / "workspace"
        self.temp = self.root / "temp"
        self.artifacts = self.root / "artifacts"
        self.github_path = self.temp / "github_path"
        self._saves: list[tuple[str, list[str]]] = []

    def run(self, workflow: Path) -> JobRecord:
        doc = read(workflow)
        job = the_job(doc)
        for folder in (self.workspace, self.temp, self.artifacts):
            folder.mkdir(parents=True, exist_ok=True)
        self.github_path.touch()
        self._command(["chown", "-R", self.user, str(self.root)], as_root=True)
        self.env = {str(k): str(v) for k, v in (doc.get("env") or {}).items()}
        self.env.update(self.overrides)
        record = JobRecord()
        for step in job["steps"]:
            if not record.ok and "always()" not in str(step.get("if", "")):
                continue
            started = time.monotonic()
            how, rc, out = self._step(step)
            record.steps.append(
                StepRecord(step_name(step), how, time.monotonic() - started, rc, out)
            )
        for key, paths in self._saves if record.ok else []:  # the cache action's post step
            started = time.monotonic()
            self._save(key, paths)
            record.steps.append(
                StepRecord(f"post: cache {key}", "local store", time.monotonic() - started, 0)
            )
        return record

    # ----------------------------------------------------------------- expressions

    def expand(self, text: str) -> str:
        def value(m: re.Match[str]) -> str:
            expr = m.group(1)
            if expr.startswith("env."):
                return self.env.get(expr[4:], "")
            if expr == "runner.os":
                return "Linux"
            if expr == "runner.temp":
                return str(self.temp)
            if expr == "github.workspace":
                return str(self.workspace)
            hashed = re.fullmatch(r"hashFiles\('([^']+)'\)", expr)
            if hashed:
                return self._hash_files(hashed.group(1))
            raise ValueError(f"expression not supported here: ${{{{ {expr} }}}}")

        return EXPRESSION.sub(value, text)

    def _hash_files(self, pattern: str) -> str:
        found = sorted(glob.glob(str(self.workspace / pattern), recursive=True))
        if not found:
            return ""
        digest = hashlib.sha256()
        for path in found:
            digest.update(hashlib.sha256(Path(path).read_bytes()).digest())
        return digest.hexdigest()

    # ----------------------------------------------------------------------- steps

    def _step(self, step: dict[str, Any]) -> tuple[str, int, str]:
        uses = step.get("uses")
        if uses is None:
            cwd = self.workspace / self.expand(step.get("working-directory", "."))
            proc = self._command(
                ["bash", "-e", "-o", "pipefail", "-c", self.expand(step["run"])], cwd=cwd
            )
            return "run", proc.returncode, proc.stdout + proc.stderr
        action = uses.split("@")[0]
        given = {k: self.expand(str(v)) for k, v in (step.get("with") or {}).items()}
        if action == "actions/checkout":
            self.checkout(self.workspace)
            self._command(["chown", "-R", self.user, str(self.workspace)], as_root=True)
            return "local: the repository copied into the workspace", 0, ""
        if action in ("actions/setup-go", "actions/setup-python"):
            tool = "go" if action.endswith("go") else "python3"
            proc = self._command([tool, "--version" if tool == "python3" else "version"])
            return f"local: this machine's {proc.stdout.strip()}", proc.returncode, proc.stderr
        if action == "actions/cache":
            return self._restore(given)
        if action == "actions/upload-artifact":
            return self._upload(given)
        raise ValueError(f"no local equivalent for {uses}")

    def _paths(self, text: str) -> list[str]:
        return [line.strip() for line in text.splitlines() if line.strip()]

    def _restore(self, given: dict[str, str]) -> tuple[str, int, str]:
        key, paths = given["key"], self._paths(given["path"])
        prefixes = self._paths(given.get("restore-keys", ""))
        found: Path | None = self.cache_store / key
        if found is not None and found.is_dir():
            hit = "exact hit"  # the post step saves nothing
        else:
            self._saves.append((key, paths))
            hit = "restore-key hit"
            saved = [d for d in self.cache_store.glob("*") if d.name.startswith(tuple(prefixes))]
            found = max(saved, key=lambda d: d.stat().st_mtime) if prefixes and saved else None
        if found is None:
            return f"local store: miss for {key}", 0, ""
        for i, path in enumerate(paths):
            if (found / str(i)).exists():
                target = self._home_path(path)
                target.parent.mkdir(parents=True, exist_ok=True)
                self._command(["cp", "-a", f"{found / str(i)}/.", str(target)], as_root=True)
        # what was restored, and the folders made on the way to it, are the user's
        self._command(["chown", "-R", self.user, str(self.home)], as_root=True)
        return f"local store: {hit} ({found.name})", 0, ""

    def _home_path(self, path: str) -> Path:
        return Path(str(self.home) + path[1:]) if path.startswith("~") else Path(path)

    def _save(self, key: str, paths: list[str]) -> None:
        target = self.cache_store / key
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for i, path in enumerate(paths):
            source = self._home_path(path)
            if source.exists():
                subprocess.run(["cp", "-a", str(source), str(target / str(i))], check=True)

    def _upload(self, given: dict[str, str]) -> tuple[str, int, str]:
        copied = 0
        for pattern in self._paths(given["path"]):
            for path in glob.glob(str(self.workspace / pattern)):
                dest = (
                    self.artifacts
                    / given.get("name", "artifact")
                    / Path(path).relative_to(self.workspace)
                )
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, dest)
                copied += 1
        return f"local: {copied} file(s) copied to {self.artifacts}", 0, ""

    # ------------------------------------------------------------------- processes

    def _user_env(self) -> dict[str, str]:
        added = [p for p in self.github_path.read_text().splitlines() if p.strip()]
        base = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
        return {
            **self.env,
            "HOME": str(self.home),
            "USER": self.user,
            "PATH": os.pathsep.join([*reversed(added), base]),
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_WORKSPACE": str(self.workspace),
            "GITHUB_PATH": str(self.github_path),
            "RUNNER_TEMP": str(self.temp),
            "RUNNER_OS": "Linux",
        }

    def _command(
        self, argv: list[str], cwd: Path | None = None, as_root: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """`argv` as the runner's user (with its environment), or as root for the
        runner's own bookkeeping (`as_root`: ownership, the cache's copies)."""
        if not as_root:
            env = [f"{k}={v}" for k, v in self._user_env().items()]
            argv = ["sudo", "-u", self.user, "-H", "env", "-i", *env, *argv]
        return subprocess.run(
            argv, cwd=cwd or self.workspace, capture_output=True, text=True, check=False
        )
