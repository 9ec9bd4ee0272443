"""A GitHub Actions workflow's job run on this machine as a hosted runner runs it: each
`run:` step in order, as a non-root user with passwordless sudo, in a workspace of its
own, with the workflow's and each step's `env`, `GITHUB_PATH`, `GITHUB_OUTPUT`
(`steps.ID.outputs`), `GITHUB_STEP_SUMMARY`, `RUNNER_TEMP` and `if:` conditions honoured.
A composite action (`uses: ./`, or mkdc's own action by its repository name) runs as
GitHub runs one: its inputs with their defaults, its steps in order with
`GITHUB_ACTION_PATH` set to a copy of the action's checkout.

Only the steps that need the internet get a local equivalent, and the record says which:
`actions/checkout` copies a folder given by the caller; `actions/setup-go` and
`actions/setup-python` take this machine's Go and Python; `actions/cache` restores the
newest saved copy whose key matches (the key or one of `restore-keys` as a prefix) from a
local store, and saves the paths under the key at the end of a job that succeeded when it
was not an exact hit, as the action's post step does (`actions/cache/restore` and
`actions/cache/save` do each half when asked); `actions/upload-artifact` copies the files
to a folder."""

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

from tests import workflow_expressions as expressions

# an `if:` that names none of these runs only while every step before it succeeded
STATUS = re.compile(r"\b(always|success|failure|cancelled)\(")
# `uses:` names of mkdc's own action: the checkout it is run from
OWN_ACTION = re.compile(r"^(\./?|[\w.-]+/mkdc@.+)$")


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
class Scope:
    """What a step's expressions see: the job's, or a composite action's own."""

    steps: dict[str, dict[str, str]] = field(default_factory=dict)
    inputs: dict[str, str] = field(default_factory=dict)
    action_path: Path | None = None


@dataclass
class Runner:
    """One job's run as `user`, its folders under `root` (the user must exist); `action`
    is the checkout mkdc's own action is run from, `wrap` what each of the user's
    commands runs under (a runner that refuses user namespaces: tests/refusing_runner)."""

    user: str
    root: Path
    cache_store: Path
    checkout: Callable[[Path], None]
    overrides: dict[str, str] = field(default_factory=dict)
    action: Path | None = None
    wrap: Callable[[list[str]], list[str]] | None = None

    def __post_init__(self) -> None:
        self.home = Path(os.path.expanduser(f"~{self.user}"))
        self.workspace = self.root / "workspace"
        self.temp = self.root / "temp"
        self.artifacts = self.root / "artifacts"
        self.github_path = self.temp / "github_path"
        self.summary = self.temp / "step_summary.md"
        self._saves: list[tuple[str, list[str]]] = []
        self._failed = False

    def run(self, workflow: Path) -> JobRecord:
        doc = read(workflow)
        [(self.job_id, job)] = doc["jobs"].items()
        for folder in (self.workspace, self.temp, self.artifacts):
            folder.mkdir(parents=True, exist_ok=True)
        self.github_path.touch()
        self.summary.touch()
        self._command(["chown", "-R", self.user, str(self.root)], as_root=True)
        self.env = {str(k): str(v) for k, v in (doc.get("env") or {}).items()}
        self.env.update(self.overrides)
        record = JobRecord()
        self._steps(job["steps"], Scope(), record, "")
        for key, paths in self._saves if record.ok else []:  # the cache action's post step
            started = time.monotonic()
            self._save(key, paths)
            record.steps.append(
                StepRecord(f"post: cache {key}", "local store", time.monotonic() - started, 0)
            )
        return record

    def _steps(
        self, steps: list[dict[str, Any]], scope: Scope, record: JobRecord, in_: str
    ) -> None:
        for step in steps:
            condition = str(step.get("if", "success()")).strip()
            inner = expressions.TEMPLATE.fullmatch(condition)
            condition = inner.group(1) if inner else condition
            if not STATUS.search(condition):  # GitHub's rule: success() && unless it says
                condition = f"success() && ({condition})"
            if not expressions.truthy(self._evaluate(condition, scope)):
                continue
            started = time.monotonic()
            how, rc, out = self._step(step, scope, record)
            if how == "composite":
                continue  # its steps are recorded one by one
            self._failed |= rc != 0
            record.steps.append(
                StepRecord(in_ + step_name(step), how, time.monotonic() - started, rc, out)
            )

    # ----------------------------------------------------------------- expressions

    def _functions(self) -> dict[str, Callable[..., Any]]:
        return {
            "always": lambda: True,
            "success": lambda: not self._failed,
            "failure": lambda: self._failed,
            "cancelled": lambda: False,
            "hashFiles": self._hash_files,
        }

    def _lookup(self, scope: Scope) -> Callable[[str], Any]:
        fixed = {
            "runner.os": "Linux",
            "runner.arch": "X64" if os.uname().machine == "x86_64" else "ARM64",
            "runner.temp": str(self.temp),
            "github.workspace": str(self.workspace),
            "github.job": self.job_id,
            "github.event_name": "push",  # a push to main: the run that saves the cache
            "github.action_path": str(scope.action_path or ""),
        }

        def value(name: str) -> Any:
            if name in fixed:
                return fixed[name]
            head, _, rest = name.partition(".")
            if head == "env":
                return self.env.get(rest, "")
            if head == "inputs":
                if rest not in scope.inputs:
                    raise ValueError(f"no input {rest}")
                return scope.inputs[rest]
            if head == "steps":
                step_id, _, output = rest.partition(".outputs.")
                return scope.steps.get(step_id, {}).get(output, "")
            raise ValueError(f"expression value not supported here: {name}")

        return value

    def _evaluate(self, expr: str, scope: Scope) -> Any:
        return expressions.evaluate(expr, self._lookup(scope), self._functions())

    def expand(self, text: str, scope: Scope | None = None) -> str:
        return expressions.expand(text, self._lookup(scope or Scope()), self._functions())

    def _hash_files(self, pattern: str) -> str:
        found = sorted(glob.glob(str(self.workspace / pattern), recursive=True))
        if not found:
            return ""
        digest = hashlib.sha256()
        for path in found:
            digest.update(hashlib.sha256(Path(path).read_bytes()).digest())
        return digest.hexdigest()

    # ----------------------------------------------------------------------- steps

    def _step(self, step: dict[str, Any], scope: Scope, record: JobRecord) -> tuple[str, int, str]:
        uses = step.get("uses")
        env = {str(k): self.expand(str(v), scope) for k, v in (step.get("env") or {}).items()}
        if uses is None:
            cwd = self.workspace / self.expand(step.get("working-directory", "."), scope)
            output = self.temp / f"output-{len(record.steps)}"
            output.write_text("")
            extra = {**env, "GITHUB_OUTPUT": str(output)}
            if scope.action_path is not None:
                extra["GITHUB_ACTION_PATH"] = str(scope.action_path)
            script = self.expand(step["run"], scope)
            self._command(["chown", self.user, str(output)], as_root=True)
            proc = self._command(["bash", "-e", "-o", "pipefail", "-c", script], cwd=cwd, env=extra)
            if "id" in step:
                scope.steps[step["id"]] = _outputs(output.read_text())
            return "run", proc.returncode, proc.stdout + proc.stderr
        given = {k: self.expand(str(v), scope) for k, v in (step.get("with") or {}).items()}
        if OWN_ACTION.match(uses):
            return self._composite(step, given, record)
        action = uses.split("@")[0]
        if action == "actions/checkout":
            self.checkout(self.workspace)
            self._command(["chown", "-R", self.user, str(self.workspace)], as_root=True)
            return "local: the repository copied into the workspace", 0, ""
        if action in ("actions/setup-go", "actions/setup-python"):
            tool = "go" if action.endswith("go") else "python3"
            proc = self._command([tool, "--version" if tool == "python3" else "version"])
            return f"local: this machine's {proc.stdout.strip()}", proc.returncode, proc.stderr
        if action in ("actions/cache", "actions/cache/restore"):
            how, hit = self._restore(given, save_after=action == "actions/cache")
            if "id" in step:
                scope.steps[step["id"]] = {"cache-hit": expressions.text(hit == "exact hit")}
            return how, 0, ""
        if action == "actions/cache/save":
            self._save(given["key"], self._paths(given["path"]))
            return f"local store: saved {given['key']}", 0, ""
        if action == "actions/upload-artifact":
            how, folder = self._upload(given)
            if "id" in step:
                scope.steps[step["id"]] = {"artifact-url": folder.as_uri()}
            return how, 0, ""
        raise ValueError(f"no local equivalent for {uses}")

    def _composite(
        self, step: dict[str, Any], given: dict[str, str], record: JobRecord
    ) -> tuple[str, int, str]:
        """mkdc's own action, from a copy of its checkout the runner's user can read."""
        if self.action is None:
            raise ValueError(f"{step['uses']}: no checkout of the action given")
        path = self.root / "action"
        if not path.exists():
            ignore = shutil.ignore_patterns(".git", ".venv", "*.egg-info", "__pycache__", "build")
            shutil.copytree(self.action, path, ignore=ignore)
            self._command(["chown", "-R", self.user, str(path)], as_root=True)
        doc = yaml.safe_load((path / "action.yml").read_text())
        if doc["runs"]["using"] != "composite":
            raise ValueError(f"{step['uses']}: not a composite action")
        declared = doc.get("inputs") or {}
        unknown = set(given) - set(declared)
        if unknown:
            raise ValueError(f"{step['uses']}: unknown inputs {sorted(unknown)}")
        inputs = {k: given.get(k, str(v.get("default", ""))) for k, v in declared.items()}
        missing = [k for k, v in declared.items() if v.get("required") and not inputs[k]]
        if missing:
            raise ValueError(f"{step['uses']}: required inputs missing: {missing}")
        scope = Scope(inputs=inputs, action_path=path)
        self._steps(doc["runs"]["steps"], scope, record, f"{step_name(step)} / ")
        return "composite", 0, ""

    def _paths(self, text: str) -> list[str]:
        return [line.strip() for line in text.splitlines() if line.strip()]

    def _restore(self, given: dict[str, str], save_after: bool) -> tuple[str, str]:
        key, paths = given["key"], self._paths(given["path"])
        prefixes = self._paths(given.get("restore-keys", ""))
        found: Path | None = self.cache_store / key
        if found is not None and found.is_dir():
            hit = "exact hit"  # the post step saves nothing
        else:
            if save_after:
                self._saves.append((key, paths))
            hit = "restore-key hit"
            saved = [d for d in self.cache_store.glob("*") if d.name.startswith(tuple(prefixes))]
            found = max(saved, key=lambda d: d.stat().st_mtime) if prefixes and saved else None
        if found is None:
            return f"local store: miss for {key}", "miss"
        for i, path in enumerate(paths):
            if (found / str(i)).exists():
                target = self._home_path(path)
                target.parent.mkdir(parents=True, exist_ok=True)
                self._command(["cp", "-a", f"{found / str(i)}/.", str(target)], as_root=True)
        # what was restored, and the folders made on the way to it, are the user's
        self._command(["chown", "-R", self.user, str(self.home)], as_root=True)
        return f"local store: {hit} ({found.name})", hit

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

    def _upload(self, given: dict[str, str]) -> tuple[str, Path]:
        copied = 0
        folder = self.artifacts / given.get("name", "artifact")
        for pattern in self._paths(given["path"]):
            for path in glob.glob(str(self.workspace / pattern), recursive=True):
                dest = folder / Path(path).relative_to(self.workspace)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, dest)
                copied += 1
        return f"local: {copied} file(s) copied to {folder}", folder

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
            "GITHUB_JOB": self.job_id,
            "GITHUB_WORKSPACE": str(self.workspace),
            "GITHUB_PATH": str(self.github_path),
            "GITHUB_STEP_SUMMARY": str(self.summary),
            "RUNNER_TEMP": str(self.temp),
            "RUNNER_OS": "Linux",
            "RUNNER_ARCH": "X64" if os.uname().machine == "x86_64" else "ARM64",
        }

    def _command(
        self,
        argv: list[str],
        cwd: Path | None = None,
        as_root: bool = False,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """`argv` as the runner's user (with its environment and a step's `env`), or as
        root for the runner's own bookkeeping (`as_root`: ownership, the cache's copies)."""
        if not as_root:
            pairs = [f"{k}={v}" for k, v in {**self._user_env(), **(env or {})}.items()]
            argv = ["sudo", "-u", self.user, "-H", "env", "-i", *pairs, *argv]
            if self.wrap is not None:
                argv = self.wrap(argv)
        return subprocess.run(
            argv, cwd=cwd or self.workspace, capture_output=True, text=True, check=False
        )


def _outputs(text: str) -> dict[str, str]:
    """A step's `GITHUB_OUTPUT` file: `name=value` lines."""
    pairs = (line.partition("=") for line in text.splitlines())
    return {name: value for name, sep, value in pairs if sep}
