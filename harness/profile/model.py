"""A validated profile as the run reads it, and how its command and environment render.

What a profile may say is harness/profile/profile.schema.json; `harness.profile.load`
turns a document into these frozen values.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness.cluster import builds, identity
from harness.errors import UserError, shown, shown_path
from harness.profile import schema
from harness.profile.deploy import DeployFolder
from harness.profile.objects import Objects
from harness.userfiles import display, file_problem, is_file

API_VERSION: str = schema.load("profile")["properties"]["apiVersion"]["const"]

DISPATCHER_ALL_AT_ONCE = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
DISPATCHER_INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"
BUILTIN_DISPATCHERS = (DISPATCHER_ALL_AT_ONCE, DISPATCHER_INCREMENTAL)

FEATURES = schema.enum("profile", "spec.claims.features[]")
NOMINATION_WRITE_MODES = schema.enum("profile", "spec.nominationWrites")
ORDERINGS = schema.enum("profile", "spec.claims.ordering")
CLUSTER_SCOPES = schema.enum("profile", "spec.environment.clusterScope")
PER_SCENARIO, SHARED = CLUSTER_SCOPES
PLACEHOLDERS = ("kubeconfig", "dispatcher_name", "namespace", "profile_dir", "binary")
# the ones that name a file on this machine: a Pod on a cluster has none of them
HOST_PLACEHOLDERS = ("kubeconfig", "profile_dir", "binary")
IMAGE_BINARY = "/dispatcher"  # where a goBuild binary sits in the image the harness makes
DEFAULT_NAMESPACE = "kueue-system"
DEFAULT_READY_TIMEOUT = 60.0

PROFILES_DIR = Path(__file__).resolve().parents[2] / "dispatchers" / "profiles"

PLACEHOLDER_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_PYTHON_NAMES = ("python", "python3")

StepSize = int | Literal["all"]


@dataclass(frozen=True)
class Rbac:
    """Privileges a dispatcher declares beyond the baseline role (Kubernetes PolicyRules)."""

    cluster_rules: tuple[dict[str, Any], ...] = ()
    namespace_rules: tuple[dict[str, Any], ...] = ()  # in Kueue's namespace on the manager

    def __bool__(self) -> bool:
        return bool(self.cluster_rules or self.namespace_rules)

    def described(self) -> list[str]:
        """Every rule in words, as the report's `privileges` and the plan say them."""
        return identity.describe_rules(self.cluster_rules, None) + identity.describe_rules(
            self.namespace_rules, DEFAULT_NAMESPACE
        )


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
    # made before the dispatcher starts, removed after (harness.profile.objects)
    objects: Objects = field(default_factory=Objects)
    # the vendor's deploy folder (spec.run.manifests), when the run comes from one
    deploy: DeployFolder | None = None
    # a deploy folder's init containers and sidecars left out where their image is not
    # available (kind, existing clusters): spec.run.withoutContainers
    without_containers: tuple[str, ...] = ()
    rbac: Rbac = field(default_factory=Rbac)
    # a Go main module the harness builds (cached per source) before the run: {binary}
    go_build: Path | None = None
    # the binary built from go_build for this run: the source may be edited while it runs
    built: Path | None = None
    # a container image to run instead of a host process; `command` then holds the
    # container's arguments (`spec.run.args` in the profile)
    image: str | None = None
    # why a deploy folder's container command cannot run on this machine (the local
    # provider runs it; kind and existing clusters run the folder's image), one line
    host_problem: str | None = None

    @property
    def account(self) -> str:
        """What the replicas' ServiceAccounts are named after (`<account>-<replica>`): the
        Deployment's ServiceAccount, else mkdc's own name."""
        return self.deploy.pod.service_account if self.deploy else identity.ROLE


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

    @property
    def takes_turns(self) -> bool:
        """Scenarios share ClusterQueues (the environment's clusters, or a fixed worker
        ClusterQueue): they run one at a time, each once the earlier left nothing."""
        return self.cluster_scope == SHARED or self.worker_cluster_queue is not None


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
                else str(self.run.built or builds.go_module_binary(self.run.go_build))
            )
        return values

    def shown_command(self) -> str:
        """run.command as a log line: the built {binary} filled in, the kubeconfig and
        other per-replica values left as their placeholders."""
        if self.run is None:
            return ""
        values = self.placeholders("{kubeconfig}", "{namespace}")
        values["dispatcher_name"] = "{dispatcher_name}"
        argv = " ".join(fill(arg, values) for arg in self.run.command)
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
        argv = [fill(arg, values) for arg in self.run.command]
        exe = find_executable(argv[0], self.path.parent)
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
        return {k: fill(v, values) for k, v in self.run.env.items()}


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


def fill(text: str, values: Mapping[str, str]) -> str:
    """Replace only the known {placeholders}; other braces (JSON args) stay as they are."""
    return PLACEHOLDER_RE.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def find_executable(exe: str, profile_dir: Path) -> str | None:
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
