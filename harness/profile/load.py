"""Reading a profile: the schema first, then only what a schema cannot say.

A profile is the only input a vendor writes, so it is validated strictly and before any
cluster starts: every problem is one line naming the file and the field path, raised as
UserError (exit 2). `profile.schema.json` says the structure, types, enums, patterns
and required fields (unknown keys are errors, so a typo cannot silently turn a claim
off); the rules here are the files that must exist, the fields that depend on each
other, template placeholders and the names templates render to.
"""

from __future__ import annotations

import os
import re
from collections.abc import Hashable
from pathlib import Path
from typing import Any, NoReturn

import yaml

from harness import schema_errors, templates
from harness.durations import parse_duration
from harness.errors import UserError, one_line, shown
from harness.profile import deploy, objects, schema
from harness.profile.model import (
    API_VERSION,
    DEFAULT_NAMESPACE,
    DEFAULT_READY_TIMEOUT,
    PER_SCENARIO,
    PLACEHOLDER_RE,
    PLACEHOLDERS,
    Claims,
    EnvironmentSpec,
    Knobs,
    Profile,
    Rbac,
    RunSpec,
    StepSize,
    fill,
    find_executable,
    resolve_profile,
)
from harness.userfiles import SafeLoader, display, is_file, parse_yaml, read_text, shape_problem

# far beyond any real profile (a few KiB, a few levels, a few hundred nodes), far below
# what would make reading it slow or a YAML alias bomb expand into the report
MAX_PROFILE_BYTES = 1024 * 1024
MAX_DEPTH = 32
MAX_NODES = 10_000

_SECRET_NAME_RE = re.compile(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?")  # a DNS subdomain
_DURATION_WORDS = schema.load("profile")["definitions"]["duration"]["errorMessage"]


def load_profile(name_or_path: str | os.PathLike[str]) -> Profile:
    """Resolve, parse and validate a profile; any problem is one-line UserError."""
    path = resolve_profile(name_or_path)
    label = f"profile {display(path)}"
    doc = parse_yaml(read_text(path, label, MAX_PROFILE_BYTES), label, _StrictLoader)
    if doc is None:
        raise UserError(f"{label}: is empty; a profile starts with apiVersion: {API_VERSION}")
    problem = shape_problem(doc, MAX_DEPTH, MAX_NODES) or schema.problem(doc, "profile")
    if problem:
        raise UserError(one_line(f"{label}: {problem}"))
    return build(doc, path)


def build(doc: dict[str, Any], path: Path) -> Profile:
    """The Profile a schema-valid document describes, once the rules below hold."""
    return _Rules(path).profile(doc)


class _Rules:
    """What the schema cannot say; every error names the field path."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.base = path.parent

    def fail(self, where: str, problem: str) -> NoReturn:
        raise UserError(one_line(f"profile {display(self.path)}: {where}: {problem}"))

    def profile(self, doc: dict[str, Any]) -> Profile:
        spec = doc["spec"]
        dispatcher: str = spec["dispatcherName"]
        kueue = spec.get("kueue") or {}
        run = self.run(spec.get("run"), dispatcher)
        knobs = self.knobs(spec.get("knobs") or {})
        claims = self.claims(spec.get("claims") or {})
        self.consistency(claims, knobs, run)
        return Profile(
            name=doc["metadata"]["name"],
            dispatcher_name=dispatcher,
            path=self.path,
            implementation=dict(spec.get("implementation") or {}),
            kueue={
                "multiKueue": dict(kueue.get("multiKueue") or {}),
                "featureGates": dict(kueue.get("featureGates") or {}),
            },
            nomination_writes=spec.get("nominationWrites"),
            run=run,
            environment=self.environment(spec.get("environment") or {}),
            knobs=knobs,
            claims=claims,
        )

    def run(self, run: dict[str, Any] | None, dispatcher: str) -> RunSpec | None:
        if run is None:
            return None
        if "manifests" in run:
            return self.deploy_folder(run, dispatcher)
        image = run.get("image")  # the schema keeps command, image and manifests apart
        # `command` keeps the argv template either way: a host command, or an image's args
        argv_field = "spec.run.args" if image is not None else "spec.run.command"
        command = tuple(run.get("args" if image else "command") or ())
        for i, arg in enumerate(command):
            self.placeholders_known(arg, f"{argv_field}[{i}]")
        env = self.run_env(run.get("env") or {})
        go_build = self.go_module(run.get("goBuild"))
        uses_binary = [f"{argv_field}[{i}]" for i, a in enumerate(command) if "{binary}" in a]
        uses_binary += [
            f"spec.run.env.{schema_errors.key(k)}" for k, v in env.items() if "{binary}" in v
        ]
        if uses_binary and go_build is None:
            self.fail(uses_binary[0], "{binary} needs spec.run.goBuild (the Go module to build)")
        pod = run.get("podEnvironment", True)
        if image is not None:
            self.container_values(command, env)
        else:
            self.executable(command[0], dispatcher)
        return RunSpec(
            command=command,
            env=env,
            replicas=run.get("replicas", 1),
            ready_timeout=self.ready_timeout(run),
            pod_environment=pod,
            host_network=run.get("hostNetwork", False),
            objects=self.objects(run.get("objects") or {}),
            rbac=self.rbac(run.get("rbac") or {}),
            go_build=go_build,
            image=image,
        )

    def deploy_folder(self, run: dict[str, Any], dispatcher: str) -> RunSpec:
        """spec.run.manifests: the vendor's YAML says how the dispatcher runs; the profile
        may add goBuild (what the image's executable is built from), env, replicas, rbac
        and objects."""
        entries = run["manifests"]
        try:
            folder = deploy.read(
                [entries] if isinstance(entries, str) else entries, self.base, DEFAULT_NAMESPACE
            )
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
        host_problem = None  # kind and existing clusters run the image: a local run's only
        if go_build is None:
            try:
                self.executable(command[0], dispatcher, "spec.run.manifests")
            except UserError as exc:
                host_problem = str(exc)
        rbac = self.rbac(run.get("rbac") or {})
        return RunSpec(
            without_containers=self.without_containers(run, folder),
            command=tuple(command),
            env={**pod.env, **self.run_env(run.get("env") or {})},
            replicas=run.get("replicas", pod.replicas),
            ready_timeout=self.ready_timeout(run),
            host_network=run.get("hostNetwork", pod.host_network),
            objects=self.objects(run.get("objects") or {}),
            deploy=folder,
            rbac=Rbac(
                cluster_rules=(*folder.cluster_rules, *rbac.cluster_rules),
                namespace_rules=(*folder.namespace_rules, *rbac.namespace_rules),
            ),
            go_build=go_build,
            host_problem=host_problem,
        )

    def without_containers(
        self, run: dict[str, Any], folder: deploy.DeployFolder
    ) -> tuple[str, ...]:
        """spec.run.withoutContainers: names of the Deployment's init containers or
        sidecars, never the dispatcher's own container."""
        names = tuple(str(n) for n in run.get("withoutContainers") or ())
        sides = [name for _, name, _ in deploy.side_containers(folder.deployment)]
        for i, name in enumerate(names):
            if name == folder.pod.container:
                self.fail(
                    f"spec.run.withoutContainers[{i}]",
                    f"{name} is the dispatcher's own container: it cannot be left out",
                )
            if name not in sides:
                has = ", ".join(sides) or "none"
                self.fail(
                    f"spec.run.withoutContainers[{i}]",
                    f"Deployment {folder.pod.deployment} has no init container or sidecar"
                    f" {name} (it has: {has})",
                )
        return names

    def objects(self, found: dict[str, Any]) -> objects.Objects:
        """spec.run.objects: each entry a manifest or a path to YAML relative to the
        profile, with known placeholders only."""
        parsed: dict[str, tuple[dict[str, Any], ...]] = {}
        for place in objects.PLACES:
            docs: list[dict[str, Any]] = []
            for i, entry in enumerate(found.get(place) or []):
                try:
                    docs += objects.documents(entry, self.base)
                except ValueError as exc:
                    self.fail(f"spec.run.objects.{place}[{i}]", str(exc))
            parsed[place] = tuple(docs)
        return objects.Objects(manager=parsed["manager"], workers=parsed["workers"])

    def duration(self, value: str | float | None, where: str) -> float | None:
        """A duration whose form the schema checked; "0s" or "1e400" are still not ones."""
        try:
            seconds = parse_duration(value)
        except ValueError:
            seconds = 0
        if seconds is not None and seconds <= 0:
            self.fail(where, f"{_DURATION_WORDS}, got {shown(value)}")
        return seconds

    def ready_timeout(self, run: dict[str, Any]) -> float:
        return (
            self.duration(run.get("readyTimeout"), "spec.run.readyTimeout") or DEFAULT_READY_TIMEOUT
        )

    def run_env(self, found: dict[str, Any]) -> dict[str, str]:
        env = {key: str(value) for key, value in found.items()}
        for key, value in env.items():
            self.placeholders_known(value, f"spec.run.env.{schema_errors.key(key)}")
        return env

    def executable(
        self, exe_template: str, dispatcher: str, where: str = "spec.run.command[0]"
    ) -> None:
        """A host command's executable must exist now, not only once clusters are up;
        `where` names the field it came from (a deploy folder's container command)."""
        if "{kubeconfig}" in exe_template:
            self.fail(where, "the executable cannot depend on {kubeconfig}")
        values = {"dispatcher_name": dispatcher, "namespace": DEFAULT_NAMESPACE}
        exe = fill(exe_template, {**values, "profile_dir": str(self.base.resolve())})
        # {binary} is built just before the run, so it cannot be looked for yet
        if "{binary}" not in exe and find_executable(exe, self.base) is None:
            self.fail(where, f"executable {shown(exe)} not found on PATH or as a path")

    def container_values(self, command: tuple[str, ...], env: dict[str, str]) -> None:
        """In a container there is no host kubeconfig, and host paths mean nothing unless
        mounted: {kubeconfig} is refused, and {profile_dir}/... must name a file (which the
        harness mounts into the container and points the value at)."""
        values = {"profile_dir": str(self.base.resolve())}
        fields = [(f"spec.run.args[{i}]", a) for i, a in enumerate(command)]
        fields += [(f"spec.run.env.{schema_errors.key(k)}", v) for k, v in env.items()]
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
                if not is_file(Path(fill(text, values))):
                    self.fail(
                        where,
                        f"{shown(text)} must name a file next to the profile (it is mounted"
                        " into the container)",
                    )

    def go_module(self, text: str | None) -> Path | None:
        """spec.run.goBuild: a folder (relative to the profile) holding a Go main module."""
        if text is None:
            return None
        folder = Path(text) if Path(text).is_absolute() else self.base / text
        if not is_file(folder / "go.mod"):
            self.fail(
                "spec.run.goBuild", f"{shown(text)} is not a folder with a go.mod (a Go module)"
            )
        return folder.resolve()

    def rbac(self, rbac: dict[str, Any]) -> Rbac:
        return Rbac(
            cluster_rules=tuple(rbac.get("clusterRules") or ()),
            namespace_rules=tuple(rbac.get("namespaceRules") or ()),
        )

    def placeholders_known(self, text: str, where: str) -> None:
        for match in PLACEHOLDER_RE.finditer(text):
            if match.group(1) not in PLACEHOLDERS:
                known = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
                self.fail(where, f"unknown placeholder {match.group(0)} (known: {known})")

    def environment(self, env: dict[str, Any]) -> EnvironmentSpec:
        clusters = env.get("clusters")
        names = None if clusters is None else tuple(clusters)
        secret = env.get("workerKubeconfigSecret")
        if secret is not None:
            self.secret_pattern(secret, "spec.environment.workerKubeconfigSecret", names)
        classes = env.get("priorityClasses")
        return EnvironmentSpec(
            clusters=names,
            cluster_scope=env.get("clusterScope", PER_SCENARIO),
            worker_cluster_queue=env.get("workerClusterQueue"),
            resource=env.get("resource"),
            flavor=env.get("flavor"),
            worker_kubeconfig_secret=secret,
            priority_classes=None if classes is None else tuple(classes),
            api_version=env.get("apiVersion"),
        )

    def secret_pattern(self, pattern: str, where: str, clusters: tuple[str, ...] | None) -> None:
        """A template of Secret names: known placeholders and filters, and a valid name for
        every cluster named (or for a sample one)."""
        wrong = templates.problem(pattern, {"cluster"})
        if wrong is not None:
            self.fail(where, wrong)
        if "cluster" not in templates.names(pattern):
            self.fail(where, "must use {cluster}: each worker needs a Secret of its own")
        for cluster in clusters or ("worker-1",):
            name = templates.render(pattern, {"cluster": cluster})
            if not _SECRET_NAME_RE.fullmatch(name) or len(name) > 253:
                self.fail(
                    where,
                    f"gives {shown(name)} for cluster {shown(cluster)}: not a Secret name"
                    " (lower-case letters, digits, '-' and '.')",
                )

    def knobs(self, knobs: dict[str, Any]) -> Knobs:
        return Knobs(
            cluster_timeout_annotation=knobs.get("clusterTimeoutAnnotation"),
            cluster_tier_label=knobs.get("clusterTierLabel"),
        )

    def claims(self, claims: dict[str, Any]) -> Claims:
        step: StepSize = claims.get("stepSize", "all")
        return Claims(
            step_size=step,
            round_timeout=self.duration(claims.get("roundTimeout"), "spec.claims.roundTimeout"),
            max_concurrent_provisioning=claims.get("maxConcurrentProvisioning"),
            ordering=claims.get("ordering", "none"),
            features=tuple(claims.get("features") or ()),
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


class _StrictLoader(SafeLoader):
    """SafeLoader that rejects duplicate keys (the later one would silently win)."""


def _no_duplicates(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if not isinstance(key, Hashable):  # `? [a, b]`: PyYAML itself would raise TypeError
            raise yaml.constructor.ConstructorError(
                None, None, f"a {type(key).__name__} cannot be a key", key_node.start_mark
            )
        if isinstance(key, str) and key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {shown(key)}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)
