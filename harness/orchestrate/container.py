"""Dispatchers as container images (`spec.run.image`): the image made ready, and its
replicas run as a Deployment each (kind) or as a Docker container each (local).

A vendor ships a dispatcher as an image, so that is what gets judged: the same bytes,
the same in-cluster config from the service-account files, no host paths. The specs
(Deployment, ConfigMap, container options) are pure functions, tested without Docker;
the runners keep the host-process runner's interface (start, kill, restart, alive), so
the checks that crash and restart the dispatcher work unchanged.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.cluster import builds, exitcause, identity, kube, rundir
from harness.cluster.environment import Environment
from harness.cluster.identity import Credentials
from harness.cluster.kueue_install import NAMESPACE
from harness.cluster.procs import Supervisor
from harness.errors import UserError, shown
from harness.orchestrate.dispatcher import (
    SERVICEACCOUNT_DIR,
    DispatcherRunner,
    StartFailure,
    pod_variables,
)
from harness.profile import IMAGE_BINARY, Profile, fill
from harness.providers import kind_images

MOUNT_DIR = "/etc/mkdc/files"  # where the profile's files are mounted in the container
FILES_CONFIGMAP = "mkdc-dispatcher-files"
REPLICA_LABEL = "mkdc.x-k8s.io/dispatcher-replica"
# container states that will not get better by waiting
FATAL_WAITING = (
    "ErrImageNeverPull",
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
    "CrashLoopBackOff",
    "RunContainerError",
)
GRACE_SECONDS = 10  # an orderly stop at the end of the run
Progress = Callable[[str], None]


@dataclass(frozen=True)
class ContainerPlan:
    """What every replica's container gets: args and env rendered, files to mount."""

    image: str
    args: tuple[str, ...]
    env: dict[str, str]
    files: dict[str, Path] = field(default_factory=dict)  # name in MOUNT_DIR -> host file


def plan(profile: Profile, namespace: str) -> ContainerPlan:
    """The profile's run as a container: `{profile_dir}/...` values become the file
    mounted at MOUNT_DIR/<name> (validation made sure they name files)."""
    run = profile.run
    assert run is not None and run.image is not None
    values = profile.placeholders("", namespace)
    files: dict[str, Path] = {}

    def render(text: str) -> str:
        if "{profile_dir}" not in text:
            return fill(text, values)
        host = Path(fill(text, values)).resolve()
        for name, known in files.items():
            if known == host:
                return f"{MOUNT_DIR}/{name}"
        name = _file_key(host.name, files)
        files[name] = host
        return f"{MOUNT_DIR}/{name}"

    args = tuple(render(a) for a in run.command)
    env = {k: render(v) for k, v in run.env.items()}
    return ContainerPlan(run.image, args, env, files)


def _file_key(name: str, taken: dict[str, Path]) -> str:
    """A ConfigMap key (and file name) for `name`, distinct from the ones taken."""
    base = re.sub(r"[^-._a-zA-Z0-9]", "_", name)[:200] or "file"
    key, i = base, 1
    while key in taken:
        i += 1
        key = f"{i}-{base}"
    return key


def deployment_name(replica: int) -> str:
    return f"mkdc-dispatcher-{replica}"


def configmap(cp: ContainerPlan, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    """The profile's files (settings, say) as one ConfigMap every replica mounts."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": FILES_CONFIGMAP, "namespace": namespace, "labels": dict(labels)},
        "data": {name: path.read_text() for name, path in cp.files.items()},
    }


def deployment(
    cp: ContainerPlan, replica: int, namespace: str, labels: dict[str, str], replicas: int = 1
) -> dict[str, Any]:
    """One replica as its own Deployment with its own ServiceAccount (so the audit trail
    and a kill name one replica). The image is never pulled: it was loaded into the node."""
    selector = {REPLICA_LABEL: str(replica)}
    env: list[dict[str, Any]] = [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "MKDC_REPLICA", "value": str(replica)},
    ]
    given = set(cp.env)
    env = [e for e in env if e["name"] not in given]
    env += [{"name": k, "value": v} for k, v in cp.env.items()]
    container: dict[str, Any] = {
        "name": "dispatcher",
        "image": cp.image,
        "imagePullPolicy": "Never",
        "env": env,
    }
    if cp.args:
        container["args"] = list(cp.args)
    pod: dict[str, Any] = {
        "serviceAccountName": identity.account_name(replica),
        "automountServiceAccountToken": True,
        "terminationGracePeriodSeconds": GRACE_SECONDS,
        "containers": [container],
    }
    if cp.files:
        container["volumeMounts"] = [{"name": "files", "mountPath": MOUNT_DIR, "readOnly": True}]
        pod["volumes"] = [{"name": "files", "configMap": {"name": FILES_CONFIGMAP}}]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": deployment_name(replica),
            "namespace": namespace,
            "labels": {**labels, **selector},
        },
        "spec": {
            "replicas": replicas,
            "strategy": {"type": "Recreate"},  # never two pods of one replica at once
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": {**labels, **selector}}, "spec": pod},
        },
    }


def container_options(
    cp: ContainerPlan, creds: Credentials, replica: int, name: str, labels: dict[str, str]
) -> dict[str, Any]:
    """`docker run` options for one replica on the local provider: host network (the
    apiserver listens on 127.0.0.1), the replica's service-account files read-only where
    a Pod has them, the variables a kubelet sets, the profile's files."""
    env = {**pod_variables(creds, name), "MKDC_REPLICA": str(replica), **cp.env}
    volumes = [(str(creds.serviceaccount_dir.resolve()), SERVICEACCOUNT_DIR, "ro")]
    volumes += [(str(path), f"{MOUNT_DIR}/{key}", "ro") for key, path in cp.files.items()]
    return {
        "image": cp.image,
        "command": list(cp.args) or None,
        "env": env,
        "name": name,
        "volumes": volumes,
        "network_mode": "host",
        "labels": dict(labels),
    }


# ------------------------------------------------------------ the image


@dataclass(frozen=True)
class ImageSource:
    """The image a run uses: built here (an archive to load) or already in Docker."""

    ref: str
    archive: Path | None = None


def prepare(profile: Profile, provider: str, progress: Progress) -> ImageSource:
    """Before any cluster starts: build the image around the goBuild binary, or make sure
    the local Docker engine has the named one (else one line saying how to get it)."""
    run = profile.run
    assert run is not None and run.image is not None
    if provider not in ("local", "kind"):
        raise UserError(f"profile spec.run.image: runs on --provider local or kind, not {provider}")
    docker = shutil.which("docker")
    if docker is None:
        raise UserError("profile spec.run.image needs Docker: docker is not on PATH")
    if run.go_build is not None:
        binary = builds.build_go_module(run.go_build, progress)
        image = kind_images.binary_image(run.image, {IMAGE_BINARY: binary}, [IMAGE_BINARY])
        progress(f"image {run.image}: {binary.name} at {IMAGE_BINARY} ({image.archive})")
        if provider == "local":
            _docker([docker, "load", "-i", str(image.archive)], f"docker load {run.image}")
        return ImageSource(run.image, image.archive)
    if not kind_images.docker_has(run.image):
        raise UserError(
            f"profile spec.run.image: {shown(run.image)} is not in the local Docker engine"
            " (images are never pulled): build it or `docker load` it, or set"
            " spec.run.goBuild to have it built"
        )
    return ImageSource(run.image)


_docker = kind_images.run_tool  # one name here, so the tests can stand in for Docker


def kill_containers(pod: Any) -> None:
    """A crash of `pod`: each of its containers' tasks SIGKILLed on its kind node (`ctr
    task kill`), where a pod deletion alone would send SIGTERM first."""
    node = pod.spec.node_name
    for status in pod.status.container_statuses or []:
        if node and status.container_id:
            cid = status.container_id.split("://", 1)[-1]
            kill = ["ctr", "-n", "k8s.io", "task", "kill", "-s", "SIGKILL", cid]
            with contextlib.suppress(UserError):
                _docker(["docker", "exec", node, *kill], "ctr task kill")


# ------------------------------------------------------------ local: containers


class ContainerRunner(DispatcherRunner):
    """Replicas as Docker containers (testcontainers) beside the local clusters. Ready as
    for processes: the manager's audit log shows the first list/watch."""

    def __init__(
        self,
        profile: Profile,
        supervisor: Supervisor,
        credentials: list[Credentials],
        labels: dict[str, str],
        prefix: str,
    ) -> None:
        super().__init__(profile, supervisor, credentials)
        from testcontainers.core.config import testcontainers_config

        # its reaper is an image from a registry; these containers are removed here (and
        # by the run directory's cleanup commands when the run is killed)
        testcontainers_config.ryuk_disabled = True
        self.plan = plan(profile, NAMESPACE)
        self.labels = labels
        self.prefix = prefix
        self.containers: dict[int, Any] = {}
        self.names: dict[int, str] = {}
        self.docker = shutil.which("docker") or "docker"

    def container_name(self, replica: int) -> str:
        return f"{self.prefix}-{self.process_name(replica)}"

    def start(self, replica: int) -> None:
        existing = self.containers.get(replica)
        if existing is not None:  # after a kill: the same container again, as a kubelet would
            existing.get_wrapped_container().start()
            return
        from testcontainers.core.container import DockerContainer

        opts = container_options(
            self.plan,
            self.credentials[replica],
            replica,
            self.container_name(replica),
            self.labels,
        )
        image, command, env = opts.pop("image"), opts.pop("command"), opts.pop("env")
        name, volumes = opts.pop("name"), opts.pop("volumes")
        rundir.add_cleanup(self.supervisor.run_dir, [self.docker, "rm", "-f", name])
        box = DockerContainer(image, command=command, env=env, name=name, volumes=volumes)
        # network given (as None): testcontainers then picks no network of its own, which
        # host networking would refuse
        box.with_kwargs(network=None, **opts)
        self.containers[replica], self.names[replica] = box, name
        box.start()

    def _check(self, replica: int) -> None:
        box = self.containers.get(replica)
        if box is None:
            return
        state = _state(box)
        if state.get("Status") not in ("running", "created"):
            self.save_logs()
            raise StartFailure(
                f"the dispatcher ({self.process_name(replica)}) exited with code"
                f" {state.get('ExitCode')} at start: {exitcause.cause_in(self._log(replica))}",
                self.process_name(replica),
            )

    def kill(self, replica: int = 0) -> None:
        """`docker kill` (SIGKILL), as a crash would."""
        box = self.containers.get(replica)
        if box is not None:
            with contextlib.suppress(Exception):
                box.get_wrapped_container().kill()

    def restart(self, replica: int = 0) -> None:
        self.start(replica)

    def alive(self, replica: int = 0) -> bool:
        box = self.containers.get(replica)
        return box is not None and _state(box).get("Status") == "running"

    def _log(self, replica: int) -> Path:
        return self.supervisor.log_path(self.process_name(replica))

    def save_logs(self) -> None:
        """Each container's output (every start of it) as the process's log would be."""
        for replica, box in self.containers.items():
            with contextlib.suppress(Exception):
                out = box.get_wrapped_container().logs(stdout=True, stderr=True)
                self._log(replica).write_bytes(out)

    def stop_all(self) -> None:
        self.save_logs()
        for replica, box in self.containers.items():
            name = self.names[replica]
            with contextlib.suppress(Exception):
                box.stop()
                rundir.drop_cleanup(self.supervisor.run_dir, [self.docker, "rm", "-f", name])
        self.containers.clear()


def _state(box: Any) -> dict[str, Any]:
    try:
        wrapped = box.get_wrapped_container()
        wrapped.reload()
        return dict(wrapped.attrs.get("State", {}))
    except Exception:  # removed meanwhile
        return {"Status": "removed"}


# ------------------------------------------------------------ kind: Deployments


class PodRunner(DispatcherRunner):
    """Replicas as Deployments in the manager cluster. Started = every replica's pod
    Running with its container started and ready (no probe: started), still so a few
    seconds later; then, where the manager keeps an audit log, ready as for processes."""

    def __init__(
        self,
        profile: Profile,
        supervisor: Supervisor,
        credentials: list[Credentials],
        env: Environment,
        source: ImageSource,
        labels: dict[str, str],
        progress: Progress,
    ) -> None:
        super().__init__(profile, supervisor, credentials)
        from kubernetes import client

        self.namespace = NAMESPACE
        self.plan = plan(profile, self.namespace)
        self.env = env
        self.source = source
        self.labels = labels
        self.progress = progress
        self.dyn = env.manager.dyn
        self.core = client.CoreV1Api(self.dyn.client)
        self.apps = client.AppsV1Api(self.dyn.client)
        self.saved: set[str] = set()  # pods whose log is in the replica's log file

    def start_all(self) -> None:
        kind_name = self.env.info.get("kindClusters", {}).get("manager", "")
        if self.source.archive is not None:
            argv = ["kind", "load", "image-archive", str(self.source.archive)]
        else:
            argv = ["kind", "load", "docker-image", self.source.ref]
        _docker([*argv, "--name", kind_name], f"loading image {self.source.ref} into kind")
        if self.plan.files:
            kube.apply(self.dyn, configmap(self.plan, self.namespace, self.labels))
        for replica in range(self.run.replicas):
            self.start(replica)
        self.wait_started()

    def start(self, replica: int) -> None:
        kube.apply(self.dyn, deployment(self.plan, replica, self.namespace, self.labels))

    def wait_started(self) -> None:
        deadline = time.monotonic() + self.run.ready_timeout
        while not all(self.alive(r) for r in range(self.run.replicas)):
            for replica in range(self.run.replicas):
                self._check(replica)
            if time.monotonic() > deadline:
                self.save_logs()
                raise StartFailure(
                    f"the dispatcher was not ready within its readyTimeout "
                    f"({self.run.ready_timeout:.0f}s): no Running pod with its container"
                    " started (a slow start needs a longer spec.run.readyTimeout)",
                    self.process_name(0),
                )
            time.sleep(0.5)
        time.sleep(min(3.0, self.run.ready_timeout))
        for replica in range(self.run.replicas):
            self._check(replica)
        self.progress(
            "dispatcher started: every replica's pod Running, its container started and"
            " not restarted"
        )

    def _pods(self, replica: int) -> list[Any]:
        selector = f"{REPLICA_LABEL}={replica}"
        return list(self.core.list_namespaced_pod(self.namespace, label_selector=selector).items)

    def _check(self, replica: int) -> None:
        for pod in self._pods(replica):
            for status in pod.status.container_statuses or []:
                waiting = status.state.waiting if status.state else None
                if waiting is not None and waiting.reason in FATAL_WAITING:
                    reason = f"{waiting.reason}: {waiting.message or ''}".strip(": ")
                elif status.restart_count:
                    reason = f"restarted {status.restart_count} time(s)"
                else:
                    continue
                self.save_logs()
                raise StartFailure(
                    f"the dispatcher ({self.process_name(replica)}) failed at start"
                    f" (pod {pod.metadata.name}: {reason})",
                    self.process_name(replica),
                )

    def kill(self, replica: int = 0) -> None:
        """A crash: the container's task SIGKILLed on its node (`ctr task kill`; a pod
        deletion alone would send SIGTERM first), then the Deployment scaled to 0 and the
        pod deleted at once (grace 0) so it stays down; restart scales it back to 1 and
        the Deployment makes a new pod."""
        pods = self._pods(replica)
        self.save_logs()
        for pod in pods:
            kill_containers(pod)
        self._scale(replica, 0)
        for pod in pods:
            with contextlib.suppress(Exception):
                self.core.delete_namespaced_pod(
                    pod.metadata.name, self.namespace, grace_period_seconds=0
                )

    def restart(self, replica: int = 0) -> None:
        """Scale back to 1 and wait (up to readyTimeout) for the new pod's container to
        run (where no audit log says when it is back, the check's "back" is this)."""
        self._scale(replica, 1)
        deadline = time.monotonic() + self.run.ready_timeout
        while not self.alive(replica) and time.monotonic() < deadline:
            time.sleep(0.5)

    def _scale(self, replica: int, replicas: int) -> None:
        self.apps.patch_namespaced_deployment_scale(
            deployment_name(replica),
            self.namespace,
            {"spec": {"replicas": replicas}},
            _content_type="application/merge-patch+json",
        )

    def alive(self, replica: int = 0) -> bool:
        for pod in self._pods(replica):
            if pod.metadata.deletion_timestamp or pod.status.phase != "Running":
                continue
            statuses = pod.status.container_statuses or []
            if statuses and all(s.ready and s.started for s in statuses):
                return True
        return False

    def save_logs(self) -> None:
        """Each replica's pods' logs, appended once per pod (a deleted pod's log goes
        with it, so a kill saves it first)."""
        for replica in range(self.run.replicas):
            with contextlib.suppress(Exception):
                for pod in self._pods(replica):
                    if pod.metadata.name in self.saved:
                        continue
                    text = self.core.read_namespaced_pod_log(pod.metadata.name, self.namespace)
                    log = self.supervisor.log_path(self.process_name(replica))
                    with log.open("a") as out:
                        out.write(f"--- pod {pod.metadata.name}\n{text}")
                    self.saved.add(pod.metadata.name)

    def stop_all(self) -> None:
        self.save_logs()
        for replica in range(self.run.replicas):
            with contextlib.suppress(Exception):
                kube.delete(
                    self.dyn, "apps/v1", "Deployment", deployment_name(replica), self.namespace
                )
        with contextlib.suppress(Exception):
            kube.delete(self.dyn, "v1", "ConfigMap", FILES_CONFIGMAP, self.namespace)
