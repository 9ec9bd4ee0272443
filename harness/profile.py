"""Dispatcher profiles: what a dispatcher is, how to run it, and what it claims.

A profile is the only input a vendor writes, so it is validated strictly and before
any cluster starts: every problem is one line naming the file and the field path,
raised as UserError (exit 2). Unknown keys are errors, so a typo cannot silently
turn a claim off.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import sys
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NoReturn

import yaml

from harness import deploy, objects, templates
from harness.cluster import toolchain
from harness.deploy import DeployFolder
from harness.durations import parse_duration
from harness.errors import UserError, one_line, shown, shown_path
from harness.objects import Objects
from harness.userfiles import (
    SafeLoader,
    display,
    file_problem,
    is_file,
    parse_yaml,
    read_text,
    shape_problem,
)

API_VERSION = "mkdc/v1alpha1"
KIND = "DispatcherProfile"

DISPATCHER_ALL_AT_ONCE = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
DISPATCHER_INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"
BUILTIN_DISPATCHERS = (DISPATCHER_ALL_AT_ONCE, DISPATCHER_INCREMENTAL)

FEATURES = (
    "BoundedFanOut",
    "Escalation",
    "Ordering",
    "PerClusterTimeout",
    "ProvisioningFailover",
    "InactiveAware",
    "RestartSafe",
    "HighAvailability",
)
NOMINATION_WRITE_MODES = ("admission-policy", "merge-patch", "kueue-admission")
ORDERINGS = ("config", "alphabetical", "tiers", "none")
PER_SCENARIO, SHARED = "per-scenario", "shared"
CLUSTER_SCOPES = (PER_SCENARIO, SHARED)
PLACEHOLDERS = ("kubeconfig", "dispatcher_name", "namespace", "profile_dir", "binary")
IMAGE_BINARY = "/dispatcher"  # where a goBuild binary sits in the image the harness makes
DEFAULT_NAMESPACE = "kueue-system"
DEFAULT_READY_TIMEOUT = 60.0
# far beyond any real profile (a few KiB, a few levels, a few hundred nodes), far below
# what would make reading it slow or a YAML alias bomb expand into the report
MAX_PROFILE_BYTES = 1024 * 1024
MAX_DEPTH = 32
MAX_NODES = 10_000

ROOT = "(document)"  # the field path of the whole document in messages

PROFILES_DIR = Path(__file__).resolve().parent.parent / "dispatchers" / "profiles"

_SPEC_KEYS = (
    "dispatcherName",
    "implementation",
    "kueue",
    "nominationWrites",
    "run",
    "environment",
    "knobs",
    "claims",
)
_PLACEHOLDER_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
# fullmatch only: `$` also matches before a final newline, so "vendor\n" would pass
_NAME_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")
_PLAIN_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]{0,63}")  # else quoted: '0', ' x'
_DNS_LABEL_RE = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
_API_VERSION_RE = re.compile(r"v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?")
_SECRET_NAME_RE = re.compile(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?")  # a DNS subdomain
_PYTHON_NAMES = ("python", "python3")
# a reference as `docker image inspect` takes it: [registry/]path[:tag][@digest], no spaces
_IMAGE_RE = re.compile(
    r"[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*"
    r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?"
)

StepSize = int | Literal["all"]


@dataclass(frozen=True)
class Rbac:
    """Privileges a dispatcher declares beyond the baseline role (Kubernetes PolicyRules)."""

    cluster_rules: tuple[dict[str, Any], ...] = ()
    namespace_rules: tuple[dict[str, Any], ...] = ()  # in Kueue's namespace on the manager

    def __bool__(self) -> bool:
        return bool(self.cluster_rules or self.namespace_rules)


@dataclass(frozen=True)
class RunSpec:
    """How to start an external dispatcher. `command` holds the unrendered template."""

    command: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    replicas: int = 1
    ready_timeout: float = DEFAULT_READY_TIMEOUT
    # run as in a Pod: service-account files, KUBERNETES_SERVICE_HOST/PORT, POD_* variables
    pod_environment: bool = True
    # as a Pod's hostNetwork: replicas listen on the host's network, not each on its own
    host_network: bool = False
    # made before the dispatcher starts, removed after (harness.objects)
    objects: Objects = field(default_factory=Objects)
    # the vendor's deploy folder (spec.run.manifests), when the run comes from one
    deploy: DeployFolder | None = None
    rbac: Rbac = field(default_factory=Rbac)
    # a Go main module the harness builds (cached per source) before the run: {binary}
    go_build: Path | None = None
    # the binary built from go_build for this run: the source may be edited while it runs
    built: Path | None = None
    # a container image to run instead of a host process; `command` then holds the
    # container's arguments (`spec.run.args` in the profile)
    image: str | None = None


@dataclass(frozen=True)
class EnvironmentSpec:
    """The environment shape a dispatcher assumes; None means the harness's default."""

    worker_cluster_queue: str | None = None
    resource: str | None = None
    flavor: str | None = None
    worker_kubeconfig_secret: str | None = None
    priority_classes: tuple[str, ...] | None = None
    api_version: str | None = None
    clusters: tuple[str, ...] | None = None  # the workers' names, in this order
    # per-scenario: each scenario builds its own MultiKueueClusters and config; shared:
    # scenarios use the environment's clusters and one config made before the dispatcher
    # starts (for dispatchers that discover clusters once, at start)
    cluster_scope: str = PER_SCENARIO


@dataclass(frozen=True)
class Knobs:
    """Where the harness writes intents (timeouts, tiers) so this dispatcher sees them."""

    cluster_timeout_annotation: str | None = None
    cluster_tier_label: str | None = None


@dataclass(frozen=True)
class Claims:
    """What the dispatcher promises; checks derive their bounds from these."""

    step_size: StepSize = "all"
    round_timeout: float | None = None
    max_concurrent_provisioning: int | None = None
    ordering: str = "none"
    features: tuple[str, ...] = ()

    def claims(self, feature: str) -> bool:
        """True when the profile claims `feature` (so its extended checks run)."""
        return feature in self.features

    def to_dict(self) -> dict[str, Any]:
        """The claims in profile spelling (durations in seconds), for the report."""
        return {
            "stepSize": self.step_size,
            "roundTimeout": self.round_timeout,
            "maxConcurrentProvisioning": self.max_concurrent_provisioning,
            "ordering": self.ordering,
            "features": list(self.features),
        }


@dataclass(frozen=True)
class Profile:
    """A validated DispatcherProfile. Treat the dict fields as read-only."""

    name: str
    dispatcher_name: str
    path: Path
    implementation: dict[str, Any] = field(default_factory=dict)
    kueue: dict[str, Any] = field(default_factory=dict)
    nomination_writes: str | None = None
    run: RunSpec | None = None
    environment: EnvironmentSpec = field(default_factory=EnvironmentSpec)
    knobs: Knobs = field(default_factory=Knobs)
    claims: Claims = field(default_factory=Claims)

    @property
    def is_builtin(self) -> bool:
        """True for Kueue's own dispatchers, which the harness never starts."""
        return self.dispatcher_name in BUILTIN_DISPATCHERS

    def placeholders(self, kubeconfig: str | os.PathLike[str], namespace: str) -> dict[str, str]:
        values = {
            "kubeconfig": os.fspath(kubeconfig),
            "dispatcher_name": self.dispatcher_name,
            "namespace": namespace,
            "profile_dir": str(self.path.parent.resolve()),
        }
        if self.run is not None and self.run.go_build is not None:
            values["binary"] = (
                IMAGE_BINARY
                if self.run.image is not None
                else str(self.run.built or toolchain.go_module_binary(self.run.go_build))
            )
        return values

    def shown_command(self) -> str:
        """run.command as a log line: the built {binary} filled in, the kubeconfig and
        other per-replica values left as their placeholders."""
        if self.run is None:
            return ""
        values = self.placeholders("{kubeconfig}", "{namespace}")
        values["dispatcher_name"] = "{dispatcher_name}"
        argv = " ".join(_fill(arg, values) for arg in self.run.command)
        if self.run.image is not None:
            return f"image {self.run.image}" + (f" args {argv}" if argv else "")
        return argv

    def render_command(
        self, kubeconfig: str | os.PathLike[str], namespace: str = DEFAULT_NAMESPACE
    ) -> list[str]:
        """run.command with placeholders filled and the executable made absolute.

        The executable is resolved here (not by the caller's cwd) so the process can be
        started from any directory; `python`/`python3` mean the harness's interpreter.
        """
        if self.run is None:
            raise UserError(f"profile {self.name}: has no spec.run; nothing to start")
        values = self.placeholders(kubeconfig, namespace)
        argv = [_fill(arg, values) for arg in self.run.command]
        exe = _find_executable(argv[0], self.path.parent)
        if exe is None:
            raise UserError(
                f"profile {display(self.path)}: spec.run.command[0]: "
                f"executable {shown(argv[0])} not found on PATH or as a path"
            )
        return [exe, *argv[1:]]

    def render_env(
        self, kubeconfig: str | os.PathLike[str], namespace: str = DEFAULT_NAMESPACE
    ) -> dict[str, str]:
        """run.env with placeholders filled (to be merged over the harness's environ)."""
        if self.run is None:
            return {}
        values = self.placeholders(kubeconfig, namespace)
        return {k: _fill(v, values) for k, v in self.run.env.items()}


def resolve_profile(name_or_path: str | os.PathLike[str]) -> Path:
    """A built-in profile name (dispatchers/profiles/<name>.yaml) or a path to a file."""
    text = os.fspath(name_or_path)
    as_path = Path(text)
    looks_like_path = (
        os.sep in text or "/" in text or as_path.suffix in (".yaml", ".yml") or is_file(as_path)
    )
    if looks_like_path:
        problem = file_problem(as_path)
        if problem:
            raise UserError(f"profile {shown_path(text)}: {problem}")
        return as_path
    candidate = PROFILES_DIR / f"{text}.yaml"
    if is_file(candidate):
        return candidate
    names = available_profiles()
    close = difflib.get_close_matches(text, names, n=3)
    hint = f"did you mean {', '.join(close)}?" if close else f"built-in: {_some(names)}"
    raise UserError(f"profile {shown(text)}: not a file and not a built-in profile ({hint})")


def _some(names: list[str]) -> str:
    """The built-in profiles in short: the faulty dispatchers (the suite's own tests) counted."""
    faulty = [n for n in names if n.startswith("faulty-")]
    shown_names = [n for n in names if n not in faulty]
    return ", ".join(shown_names) + (f" and {len(faulty)} faulty-*" if faulty else "") or "none"


def available_profiles() -> list[str]:
    """Names of the built-in profiles."""
    if not PROFILES_DIR.is_dir():
        return []
    return sorted(p.stem for p in PROFILES_DIR.glob("*.yaml"))


def load_profile(name_or_path: str | os.PathLike[str]) -> Profile:
    """Resolve, parse and validate a profile; any problem is one-line UserError."""
    path = resolve_profile(name_or_path)
    label = f"profile {display(path)}"
    doc = parse_yaml(read_text(path, label, MAX_PROFILE_BYTES), label, _StrictLoader)
    if doc is None:
        raise UserError(f"{label}: is empty; a profile starts with apiVersion: {API_VERSION}")
    problem = shape_problem(doc, MAX_DEPTH, MAX_NODES)
    if problem:
        raise UserError(f"{label}: {problem}")
    return _Validator(display(path), path).profile(doc)


# --- validation ------------------------------------------------------------------------


class _Validator:
    """Walks the document; every error names the field path relative to the root."""

    def __init__(self, shown: str, path: Path) -> None:
        self.shown = shown
        self.path = path

    def fail(self, where: str, problem: str) -> NoReturn:
        raise UserError(one_line(f"profile {self.shown}: {where}: {problem}"))

    def mapping(self, value: Any, where: str, allowed: tuple[str, ...] | None) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(where, f"must be a mapping, got {_type(value)}")
        for key in value:
            if not isinstance(key, str):
                self.fail(where, f"keys must be strings, got {shown(key)}")
            if allowed is not None and key not in allowed:
                at = _key(key) if where == ROOT else f"{where}.{_key(key)}"
                self.fail(at, f"unknown field (known: {', '.join(allowed)})")
        return value

    def string(self, value: Any, where: str, *, required: bool = False) -> str | None:
        if value is None:
            if required:
                self.fail(where, "required")
            return None
        if not isinstance(value, str):
            self.fail(where, f"must be a non-empty string, got {_type(value)}")
        if not value.strip():
            self.fail(where, f"must not be blank, got {shown(value)}")
        return value

    def integer(self, value: Any, where: str, minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(where, f"must be an integer, got {_type(value)}")
        if value < minimum:
            self.fail(where, f"must be >= {minimum}, got {value}")
        return value

    def duration(self, value: Any, where: str) -> float | None:
        if isinstance(value, bool):
            self.fail(where, f"not a duration: {shown(value)}")
        try:
            seconds = parse_duration(value)
        except (ValueError, TypeError):
            self.fail(
                where,
                f"not a duration: {shown(value)}; use e.g. 10s, 5m, 1m30s, 500ms (a plain"
                " number is seconds)",
            )
        if seconds is not None and seconds <= 0:
            self.fail(where, f"must be positive, got {shown(value)}")
        return seconds

    def choice(self, value: Any, where: str, options: tuple[str, ...]) -> str:
        if value not in options:
            self.fail(where, f"must be one of {', '.join(options)}, got {shown(value)}")
        return value

    def string_list(self, value: Any, where: str) -> tuple[str, ...]:
        if not isinstance(value, list):
            self.fail(where, f"must be a list, got {_type(value)}")
        for i, item in enumerate(value):
            self.string(item, f"{where}[{i}]", required=True)
        return tuple(value)

    def profile(self, doc: Any) -> Profile:
        root = self.mapping(doc, ROOT, ("apiVersion", "kind", "metadata", "spec"))
        for key, value in (("apiVersion", API_VERSION), ("kind", KIND)):
            if key not in root:
                self.fail(key, f"required ({key}: {value})")
        if root.get("apiVersion") != API_VERSION:
            self.fail("apiVersion", f"must be {API_VERSION}, got {shown(root.get('apiVersion'))}")
        if root.get("kind") != KIND:
            self.fail("kind", f"must be {KIND}, got {shown(root.get('kind'))}")
        meta = self.mapping(root.get("metadata"), "metadata", None)
        name = self.string(meta.get("name"), "metadata.name", required=True)
        assert name is not None
        if not _NAME_RE.fullmatch(name):
            self.fail("metadata.name", f"{shown(name)} must be letters, digits, '.', '_' or '-'")
        if "spec" not in root:
            self.fail("spec", "required")
        spec = self.mapping(root["spec"], "spec", _SPEC_KEYS)
        dispatcher = self.string(spec.get("dispatcherName"), "spec.dispatcherName", required=True)
        assert dispatcher is not None
        implementation = self.mapping(spec.get("implementation"), "spec.implementation", None)
        kueue = self.kueue(spec.get("kueue"))
        writes = spec.get("nominationWrites")
        if writes is not None:
            self.choice(writes, "spec.nominationWrites", NOMINATION_WRITE_MODES)
        run = self.run(spec.get("run"), dispatcher)
        environment = self.environment(spec.get("environment"))
        knobs = self.knobs(spec.get("knobs"))
        claims = self.claims(spec.get("claims"))
        self.consistency(claims, knobs, run)
        return Profile(
            name=name,
            dispatcher_name=dispatcher,
            path=self.path,
            implementation=dict(implementation),
            kueue=kueue,
            nomination_writes=writes,
            run=run,
            environment=environment,
            knobs=knobs,
            claims=claims,
        )

    def kueue(self, value: Any) -> dict[str, Any]:
        kueue = self.mapping(value, "spec.kueue", ("multiKueue", "featureGates"))
        multi = self.mapping(kueue.get("multiKueue"), "spec.kueue.multiKueue", None)
        if "dispatcherName" in multi:
            self.fail("spec.kueue.multiKueue.dispatcherName", "set spec.dispatcherName instead")
        gates = self.mapping(kueue.get("featureGates"), "spec.kueue.featureGates", None)
        for gate, on in gates.items():
            if not isinstance(on, bool):
                self.fail(
                    f"spec.kueue.featureGates.{_key(gate)}",
                    f"must be true or false, got {shown(on)}",
                )
        return {"multiKueue": dict(multi), "featureGates": dict(gates)}

    def run(self, value: Any, dispatcher: str) -> RunSpec | None:
        if value is None:
            return None
        run = self.mapping(
            value,
            "spec.run",
            (
                "command",
                "image",
                "args",
                "env",
                "replicas",
                "readyTimeout",
                "podEnvironment",
                "hostNetwork",
                "objects",
                "manifests",
                "rbac",
                "goBuild",
            ),
        )
        if "manifests" in run:
            return self.deploy_folder(run, dispatcher)
        image = self.image(run.get("image"))
        if image is not None and "command" in run:
            self.fail(
                "spec.run.command",
                "with spec.run.image the image's entrypoint runs: give its arguments as"
                " spec.run.args",
            )
        if image is None and "args" in run:
            self.fail(
                "spec.run.args",
                "goes with spec.run.image (a container's arguments); a host process takes"
                " spec.run.command",
            )
        if "command" not in run and image is None:
            self.fail("spec.run.command", "required when spec.run is set (or spec.run.image)")
        # `command` keeps the argv template either way: a host command, or an image's args
        argv_field = "spec.run.args" if image is not None else "spec.run.command"
        command = self.string_list(run.get("args" if image else "command", []), argv_field)
        if not command and image is None:
            self.fail("spec.run.command", "must not be empty")
        for i, arg in enumerate(command):
            self.no_nul(arg, f"{argv_field}[{i}]")
            self.placeholders_known(arg, f"{argv_field}[{i}]")
        env = self.run_env(run.get("env"))
        replicas = self.integer(run.get("replicas", 1), "spec.run.replicas", 1)
        go_build = self.go_module(run.get("goBuild"))
        uses_binary = [f"{argv_field}[{i}]" for i, a in enumerate(command) if "{binary}" in a]
        uses_binary += [f"spec.run.env.{k}" for k, v in env.items() if "{binary}" in v]
        if uses_binary and go_build is None:
            self.fail(uses_binary[0], "{binary} needs spec.run.goBuild (the Go module to build)")
        pod = self.flag(run, "podEnvironment", True)
        if image is not None:
            self.container_values(command, env, pod)
        else:
            self.executable(command[0], dispatcher)
        return RunSpec(
            command=command,
            env=env,
            replicas=replicas,
            ready_timeout=self.ready_timeout(run),
            pod_environment=pod,
            host_network=self.flag(run, "hostNetwork", False),
            objects=self.objects(run.get("objects")),
            rbac=self.rbac(run.get("rbac")),
            go_build=go_build,
            image=image,
        )

    def deploy_folder(self, run: dict[str, Any], dispatcher: str) -> RunSpec:
        """spec.run.manifests: the vendor's YAML says how the dispatcher runs; the profile
        may add goBuild (what the image's executable is built from), env, replicas, rbac
        and objects."""
        for key in ("command", "args", "image", "podEnvironment"):
            if key in run:
                self.fail(
                    f"spec.run.{key}",
                    "the Deployment in spec.run.manifests says how the dispatcher runs; drop it",
                )
        entries = run["manifests"]
        entries = [entries] if isinstance(entries, str) else entries
        entries = self.string_list(entries, "spec.run.manifests")
        if not entries:
            self.fail("spec.run.manifests", "must name a folder or files")
        try:
            folder = deploy.read(list(entries), self.path.parent, DEFAULT_NAMESPACE)
        except ValueError as exc:
            self.fail("spec.run.manifests", str(exc))
        pod = folder.pod
        go_build = self.go_module(run.get("goBuild"))
        if pod.command:
            command = ["{binary}" if go_build else pod.command[0], *pod.command[1:], *pod.args]
        elif go_build is not None:
            command = ["{binary}", *pod.args]
        else:
            self.fail(
                "spec.run.manifests",
                f"container {pod.container} gives no command (its image's entrypoint runs):"
                " give spec.run.goBuild, the Go module its image is built from",
            )
        if go_build is None:
            self.executable(command[0], dispatcher)
        env = {**pod.env, **self.run_env(run.get("env"))}
        replicas = self.integer(run.get("replicas", pod.replicas), "spec.run.replicas", 1)
        rbac = self.rbac(run.get("rbac"))
        return RunSpec(
            command=tuple(command),
            env=env,
            replicas=replicas,
            ready_timeout=self.ready_timeout(run),
            host_network=self.flag(run, "hostNetwork", pod.host_network),
            objects=self.objects(run.get("objects")),
            deploy=folder,
            rbac=Rbac(
                cluster_rules=(*folder.cluster_rules, *rbac.cluster_rules),
                namespace_rules=(*folder.namespace_rules, *rbac.namespace_rules),
            ),
            go_build=go_build,
        )

    def objects(self, value: Any) -> Objects:
        """spec.run.objects: {manager: [...], workers: [...]}, each entry a manifest or a
        path to YAML relative to the profile."""
        found = self.mapping(value, "spec.run.objects", objects.PLACES)
        parsed: dict[str, tuple[dict[str, Any], ...]] = {}
        for place in objects.PLACES:
            entries = found.get(place) or []
            if not isinstance(entries, list):
                self.fail(f"spec.run.objects.{place}", f"must be a list, got {_type(entries)}")
            docs: list[dict[str, Any]] = []
            for i, entry in enumerate(entries):
                try:
                    docs += objects.documents(entry, self.path.parent)
                except ValueError as exc:
                    self.fail(f"spec.run.objects.{place}[{i}]", str(exc))
            parsed[place] = tuple(docs)
        return Objects(manager=parsed["manager"], workers=parsed["workers"])

    def flag(self, run: dict[str, Any], key: str, default: bool) -> bool:
        """spec.run.KEY: true or false, `default` when absent."""
        value = run.get(key, default)
        if not isinstance(value, bool):
            self.fail(f"spec.run.{key}", f"must be true or false, got {shown(value)}")
        return value

    def ready_timeout(self, run: dict[str, Any]) -> float:
        ready = run.get("readyTimeout")
        if ready is None:
            return DEFAULT_READY_TIMEOUT
        return self.duration(ready, "spec.run.readyTimeout") or DEFAULT_READY_TIMEOUT

    def run_env(self, value: Any) -> dict[str, str]:
        env_raw = self.mapping(value, "spec.run.env", None)
        env: dict[str, str] = {}
        for key, val in env_raw.items():
            at = f"spec.run.env.{_key(key)}"
            if not key or "=" in key or "\0" in key:
                self.fail(
                    at, "not an environment variable name (empty, or holds '=' or a NUL byte)"
                )
            if isinstance(val, bool) or not isinstance(val, str | int | float):
                self.fail(at, f"must be a string, got {_type(val)}")
            env[key] = str(val)
            self.no_nul(env[key], at)
            self.placeholders_known(env[key], at)
        return env

    def image(self, value: Any) -> str | None:
        """spec.run.image: a reference the local Docker engine knows (or the harness builds)."""
        ref = self.string(value, "spec.run.image")
        if ref is not None and not _IMAGE_RE.fullmatch(ref):
            self.fail(
                "spec.run.image",
                f"not an image reference like example.com/dispatcher:v1: {shown(ref)}",
            )
        return ref

    def executable(self, exe_template: str, dispatcher: str) -> None:
        """A host command's executable must exist now, not only once clusters are up."""
        if "{kubeconfig}" in exe_template:
            self.fail("spec.run.command[0]", "the executable cannot depend on {kubeconfig}")
        exe = _fill(
            exe_template,
            {
                "dispatcher_name": dispatcher,
                "namespace": DEFAULT_NAMESPACE,
                "kubeconfig": "",
                "profile_dir": str(self.path.parent.resolve()),
            },
        )
        # {binary} is built just before the run, so it cannot be looked for yet
        if "{binary}" not in exe and _find_executable(exe, self.path.parent) is None:
            self.fail(
                "spec.run.command[0]", f"executable {shown(exe)} not found on PATH or as a path"
            )

    def container_values(self, command: tuple[str, ...], env: dict[str, str], pod: bool) -> None:
        """In a container there is no host kubeconfig, and host paths mean nothing unless
        mounted: {kubeconfig} is refused, and {profile_dir}/... must name a file (which the
        harness mounts into the container and points the value at)."""
        if not pod:
            self.fail("spec.run.podEnvironment", "an image always runs as in a Pod; drop it")
        values = {"profile_dir": str(self.path.parent.resolve())}
        fields = [(f"spec.run.args[{i}]", a) for i, a in enumerate(command)]
        fields += [(f"spec.run.env.{_key(k)}", v) for k, v in env.items()]
        for where, text in fields:
            if "{kubeconfig}" in text:
                self.fail(
                    where,
                    "{kubeconfig} has no meaning in a container: an image reads the in-cluster"
                    " config (its service-account files), as in a Pod",
                )
            if "{profile_dir}" in text:
                if not text.startswith("{profile_dir}") or text.count("{profile_dir}") > 1:
                    self.fail(where, "{profile_dir} must start the value (a file to mount)")
                if not is_file(Path(_fill(text, values))):
                    self.fail(
                        where,
                        f"{shown(text)} must name a file next to the profile (it is mounted"
                        " into the container)",
                    )

    def go_module(self, value: Any) -> Path | None:
        """spec.run.goBuild: a folder (relative to the profile) holding a Go main module."""
        text = self.string(value, "spec.run.goBuild")
        if text is None:
            return None
        folder = Path(text) if Path(text).is_absolute() else self.path.parent / text
        if not is_file(folder / "go.mod"):
            self.fail(
                "spec.run.goBuild", f"{shown(text)} is not a folder with a go.mod (a Go module)"
            )
        return folder.resolve()

    def rbac(self, value: Any) -> Rbac:
        where = "spec.run.rbac"
        rbac = self.mapping(value, where, ("clusterRules", "namespaceRules"))
        return Rbac(
            cluster_rules=self.policy_rules(rbac.get("clusterRules"), f"{where}.clusterRules"),
            namespace_rules=self.policy_rules(
                rbac.get("namespaceRules"), f"{where}.namespaceRules", namespaced=True
            ),
        )

    def policy_rules(
        self, value: Any, where: str, *, namespaced: bool = False
    ) -> tuple[dict[str, Any], ...]:
        """Kubernetes PolicyRules, checked here so the apiserver never rejects them mid-run."""
        if value is None:
            return ()
        if not isinstance(value, list):
            self.fail(where, f"must be a list of PolicyRules, got {_type(value)}")
        keys: tuple[str, ...] = ("apiGroups", "resources", "resourceNames", "verbs")
        keys += () if namespaced else ("nonResourceURLs",)
        rules = []
        for i, raw in enumerate(value):
            at = f"{where}[{i}]"
            rule = self.mapping(raw, at, keys)
            lists = {k: self.rule_list(v, f"{at}.{k}", k == "apiGroups") for k, v in rule.items()}
            if not lists.get("verbs"):
                self.fail(f"{at}.verbs", "required: at least one verb (get, list, watch, ...)")
            if not lists.get("resources") and not lists.get("nonResourceURLs"):
                self.fail(at, "needs resources (with apiGroups) or nonResourceURLs")
            if lists.get("resources") and "apiGroups" not in lists:
                self.fail(f"{at}.apiGroups", 'required with resources ("" is the core group)')
            rules.append(lists)
        return tuple(rules)

    def no_nul(self, text: str, where: str) -> None:
        """A NUL byte cannot be passed to a process, so would fail only at the start."""
        if "\0" in text:
            self.fail(where, "holds a NUL byte, which no process argument or variable can")

    def placeholders_known(self, text: str, where: str) -> None:
        for match in _PLACEHOLDER_RE.finditer(text):
            if match.group(1) not in PLACEHOLDERS:
                known = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
                self.fail(where, f"unknown placeholder {match.group(0)} (known: {known})")

    def environment(self, value: Any) -> EnvironmentSpec:
        where = "spec.environment"
        env = self.mapping(
            value,
            where,
            (
                "workerClusterQueue",
                "resource",
                "flavor",
                "workerKubeconfigSecret",
                "priorityClasses",
                "apiVersion",
                "clusters",
                "clusterScope",
            ),
        )
        secret = self.string(env.get("workerKubeconfigSecret"), f"{where}.workerKubeconfigSecret")
        clusters = env.get("clusters")
        names = None if clusters is None else self.cluster_names(clusters, f"{where}.clusters")
        if secret is not None:
            self.secret_pattern(secret, f"{where}.workerKubeconfigSecret", names)
        classes = env.get("priorityClasses")
        priority_classes = (
            None if classes is None else self.string_list(classes, f"{where}.priorityClasses")
        )
        api_version = self.string(env.get("apiVersion"), f"{where}.apiVersion")
        if api_version is not None and not _API_VERSION_RE.fullmatch(api_version):
            self.fail(
                f"{where}.apiVersion", f"not an API version like v1beta1: {shown(api_version)}"
            )
        scope = self.choice(
            env.get("clusterScope", PER_SCENARIO), f"{where}.clusterScope", CLUSTER_SCOPES
        )
        return EnvironmentSpec(
            clusters=names,
            cluster_scope=scope,
            worker_cluster_queue=self.string(
                env.get("workerClusterQueue"), f"{where}.workerClusterQueue"
            ),
            resource=self.string(env.get("resource"), f"{where}.resource"),
            flavor=self.string(env.get("flavor"), f"{where}.flavor"),
            worker_kubeconfig_secret=secret,
            priority_classes=priority_classes,
            api_version=api_version,
        )

    def secret_pattern(self, pattern: str, where: str, clusters: tuple[str, ...] | None) -> None:
        """A template of Secret names: known placeholders and filters, and a valid name for
        every cluster named (or for a sample one)."""
        wrong = templates.problem(pattern, {"cluster"})
        if wrong is not None:
            self.fail(where, wrong)
        if "cluster" not in templates.names(pattern):
            self.fail(where, "must use {cluster}: each worker needs a Secret of its own")
        samples = clusters or ("worker-1",)
        for cluster in samples:
            name = templates.render(pattern, {"cluster": str(cluster)})
            if not _SECRET_NAME_RE.fullmatch(name) or len(name) > 253:
                self.fail(
                    where,
                    f"gives {shown(name)} for cluster {shown(cluster)}: not a Secret name"
                    " (lower-case letters, digits, '-' and '.')",
                )

    def rule_list(self, value: Any, where: str, empty_ok: bool) -> list[str]:
        """A PolicyRule list field; in apiGroups "" is the core group."""
        if not isinstance(value, list):
            self.fail(where, f"must be a list, got {_type(value)}")
        for i, item in enumerate(value):
            if not isinstance(item, str) or (not item.strip() and not empty_ok):
                self.fail(f"{where}[{i}]", f"must be a non-empty string, got {_type(item)}")
        return list(value)

    def cluster_names(self, value: Any, where: str) -> tuple[str, ...]:
        """Worker names become MultiKueueCluster and Secret names: DNS labels, distinct."""
        names = self.string_list(value, where)
        if not names:
            self.fail(where, "must name at least one worker cluster")
        for i, name in enumerate(names):
            if not _DNS_LABEL_RE.fullmatch(name) or name == "manager":
                self.fail(
                    f"{where}[{i}]",
                    f"{shown(name)} must be a DNS label (lower-case letters, digits, '-'; at most "
                    "63) and not 'manager'",
                )
            if name in names[:i]:
                self.fail(f"{where}[{i}]", f"duplicate cluster name {shown(name)}")
        return names

    def knobs(self, value: Any) -> Knobs:
        knobs = self.mapping(value, "spec.knobs", ("clusterTimeoutAnnotation", "clusterTierLabel"))
        return Knobs(
            cluster_timeout_annotation=self.string(
                knobs.get("clusterTimeoutAnnotation"), "spec.knobs.clusterTimeoutAnnotation"
            ),
            cluster_tier_label=self.string(
                knobs.get("clusterTierLabel"), "spec.knobs.clusterTierLabel"
            ),
        )

    def claims(self, value: Any) -> Claims:
        where = "spec.claims"
        claims = self.mapping(
            value,
            where,
            ("stepSize", "roundTimeout", "maxConcurrentProvisioning", "ordering", "features"),
        )
        step: StepSize = "all"
        if "stepSize" in claims:
            raw = claims["stepSize"]
            if isinstance(raw, str) and raw != "all":
                self.fail(f"{where}.stepSize", f'must be an integer or "all", got {shown(raw)}')
            step = "all" if raw == "all" else self.integer(raw, f"{where}.stepSize", 1)
        round_timeout = self.duration(claims.get("roundTimeout"), f"{where}.roundTimeout")
        max_prov = claims.get("maxConcurrentProvisioning")
        if max_prov is not None:
            max_prov = self.integer(max_prov, f"{where}.maxConcurrentProvisioning", 1)
        ordering = self.choice(claims.get("ordering", "none"), f"{where}.ordering", ORDERINGS)
        raw_features = claims.get("features")  # null is unset; false or 0 is not a list
        features = (
            () if raw_features is None else self.string_list(raw_features, f"{where}.features")
        )
        seen: set[str] = set()
        for i, feature in enumerate(features):
            if feature not in FEATURES:
                self.fail(
                    f"{where}.features[{i}]",
                    f"unknown feature {_quoted(feature)} (known: {', '.join(FEATURES)})",
                )
            if feature in seen:
                self.fail(f"{where}.features[{i}]", f"duplicate feature {shown(feature)}")
            seen.add(feature)
        return Claims(
            step_size=step,
            round_timeout=round_timeout,
            max_concurrent_provisioning=max_prov,
            ordering=ordering,
            features=features,
        )

    def consistency(self, claims: Claims, knobs: Knobs, run: RunSpec | None) -> None:
        """Claims whose checks could not even be set up are errors, not silent skips."""
        feats = claims.features

        def at(feature: str) -> str:
            return f"spec.claims.features[{feats.index(feature)}]"

        if "BoundedFanOut" in feats and claims.step_size == "all":
            self.fail(at("BoundedFanOut"), "BoundedFanOut needs an integer spec.claims.stepSize")
        if "Escalation" in feats and claims.round_timeout is None:
            self.fail(at("Escalation"), "Escalation needs spec.claims.roundTimeout")
        if "Ordering" in feats and claims.ordering == "none":
            self.fail(at("Ordering"), "Ordering needs spec.claims.ordering other than none")
        if "PerClusterTimeout" in feats and knobs.cluster_timeout_annotation is None:
            self.fail(
                at("PerClusterTimeout"),
                "PerClusterTimeout needs spec.knobs.clusterTimeoutAnnotation",
            )
        if "HighAvailability" in feats and (run is None or run.replicas < 2):
            self.fail(at("HighAvailability"), "HighAvailability needs spec.run.replicas >= 2")
        if claims.ordering == "tiers" and knobs.cluster_tier_label is None:
            self.fail("spec.claims.ordering", "tiers needs spec.knobs.clusterTierLabel")


# --- helpers ---------------------------------------------------------------------------


class _StrictLoader(SafeLoader):
    """SafeLoader that rejects duplicate keys (the later one would silently win)."""


def _no_duplicates(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if not isinstance(key, Hashable):  # `? [a, b]`: PyYAML itself would raise TypeError
            raise yaml.constructor.ConstructorError(
                None, None, f"a {_type(key)} cannot be a key", key_node.start_mark
            )
        if isinstance(key, str) and key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {shown(key)}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


def fill(text: str, values: Mapping[str, str]) -> str:
    """Replace only the known {placeholders}; other braces (JSON args) stay as they are."""
    return _PLACEHOLDER_RE.sub(lambda m: values.get(m.group(1), m.group(0)), text)


_fill = fill


def _find_executable(exe: str, profile_dir: Path) -> str | None:
    """Absolute path of `exe`: a bare name via PATH, a relative path via cwd then profile dir."""
    if exe in _PYTHON_NAMES and sys.executable:
        return sys.executable
    if os.sep not in exe and "/" not in exe:
        return shutil.which(exe)
    candidates = [Path(exe)] if Path(exe).is_absolute() else [Path(exe), profile_dir / exe]
    for candidate in candidates:
        if is_file(candidate) and os.access(candidate, os.X_OK):
            # absolute but not resolved: a virtualenv's bin/python is a symlink whose target
            # would start without the virtualenv's packages
            return os.path.abspath(candidate)
    return None


def _quoted(name: str) -> str:
    """A name in double quotes when plain, else as repr (escaped, cut short)."""
    return f'"{name}"' if _PLAIN_KEY_RE.fullmatch(name) else shown(name)


def _key(key: str) -> str:
    """A mapping key as part of a field path: as written when plain, else quoted and cut."""
    return key if _PLAIN_KEY_RE.fullmatch(key) else shown(key)


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__
