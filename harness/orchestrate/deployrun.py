"""A vendor's deploy folder (`spec.run.manifests`) on kind and existing clusters: its
documents applied to the manager as written (server-side apply), its Deployment's Pods
the dispatcher's replicas.

The local provider reads the folder and runs each replica as a process (deploy.py); a
cluster runs it as a vendor's users would: the vendor's ServiceAccount and RBAC, real
Pods, real probes, real restarts by the kubelet. Nothing is pulled: the dispatcher's
image is built from `spec.run.goBuild` under the name the Deployment gives it (or is the
local Docker engine's), and loaded into the kind node with every other image the pod
needs. An init container or sidecar whose image is not here is named in one line (exit
2), or left out where the profile says so (`spec.run.withoutContainers`).

A scenario's kill is a crash that stays down until its restart: the pod's containers
SIGKILLed on its node (`ctr task kill`), the Deployment scaled down by one with that pod
the one to go (its deletion cost), the pod deleted; a restart scales it back and the
ReplicaSet's new pod takes the replica's place. The pure parts (which images, the
documents as applied) are tested without a cluster.
"""

from __future__ import annotations

import contextlib
import copy
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kubernetes.client.rest import ApiException

from harness.cluster import identity, kube
from harness.cluster.environment import Environment
from harness.cluster.kueue_install import NAMESPACE
from harness.cluster.procs import Supervisor
from harness.errors import UserError, shown
from harness.orchestrate.container import FATAL_WAITING, ImageSource, kill_containers
from harness.orchestrate.dispatcher import DispatcherRunner, StartFailure
from harness.profile import HOST_PLACEHOLDERS, IMAGE_BINARY, Profile, RunSpec, fill
from harness.profile.deploy import DeployFolder, side_containers
from harness.providers import kind_images
from harness.recording.audit_log import pod_of

DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
KIND_LABEL = "io.x-k8s.kind.cluster"  # on every kind node's container
SETTLE_SECONDS = 3.0  # a pod whose containers have not restarted this long counts as started
Progress = Callable[[str], None]
HasImage = Callable[[str], bool]


@dataclass(frozen=True)
class Images:
    """What the Deployment's containers run from: `main` (the dispatcher's, built from
    goBuild into `archive`, or the local engine's), the other images of the local engine,
    and the containers left out for want of theirs."""

    main: str
    archive: Path | None
    from_docker: tuple[str, ...]
    left_out: tuple[str, ...]
    notes: tuple[str, ...]
    kind: str | None = None  # the kind cluster they are loaded into (None: pulled)


def main_image(folder: DeployFolder) -> str:
    image = folder.pod.image
    if not image:
        raise UserError(
            f"spec.run.manifests: container {folder.pod.container} of Deployment"
            f" {folder.pod.deployment} names no image"
        )
    return image


def binary_path(folder: DeployFolder) -> str:
    """Where the goBuild binary goes in the image: where the container's command runs it
    (an absolute path, or a name on PATH), else the entrypoint mkdc gives it."""
    command = folder.pod.command
    if not command:
        return IMAGE_BINARY
    return command[0] if command[0].startswith("/") else f"/usr/local/bin/{command[0]}"


def images(run: RunSpec, has: HasImage, archive: Path | None = None) -> Images:
    """Which images the Deployment's containers use, each checked before any cluster
    starts: the dispatcher's built from goBuild (`archive`) or in the local engine; every
    other container's in the local engine, else left out where withoutContainers names
    it. UserError, one line, names what is missing."""
    assert run.deploy is not None
    folder = run.deploy
    main = main_image(folder)
    if run.go_build is None and not has(main):
        raise UserError(
            f"spec.run.manifests: container {folder.pod.container}'s image {shown(main)} is"
            " not in the local Docker engine (nothing is pulled): build it or `docker load`"
            " it, or give spec.run.goBuild to have it built"
        )
    loaded: list[str] = []
    left: list[str] = []
    notes: list[str] = []
    missing: list[tuple[str, str, str]] = []
    for what, name, image in side_containers(folder.deployment):
        if image == main or (image and has(image)):
            if image != main:
                loaded.append(image)
        elif name in run.without_containers:
            left.append(name)
            notes.append(
                f"{what} {name}: left out (spec.run.withoutContainers): its image"
                f" {image or '(none)'} is not in the local Docker engine, and nothing is pulled"
            )
        else:
            missing.append((what, name, image))
    if missing:
        said = ", ".join(f"{what} {name} (image {shown(image)})" for what, name, image in missing)
        names = ", ".join(name for _, name, _ in missing)
        raise UserError(
            f"spec.run.manifests: {said}: not in the local Docker engine, and nothing is"
            f" pulled: `docker load` it, or leave it out with spec.run.withoutContainers:"
            f" [{names}]"
        )
    return Images(main, archive, tuple(dict.fromkeys(loaded)), tuple(left), tuple(notes))


def build_image(folder: DeployFolder, binary: Path, progress: Progress) -> ImageSource:
    """The dispatcher's image, named as the Deployment names it: the goBuild binary where
    the container's command runs it (cached per binary)."""
    from harness.providers import kind_images

    ref, path = main_image(folder), binary_path(folder)
    image = kind_images.binary_image(ref, {path: binary}, [path])
    progress(f"image {ref}: {binary.name} at {path} ({image.archive})")
    return ImageSource(ref, image.archive)


def on_cluster(run: RunSpec, env: Environment, built: ImageSource | None) -> Images:
    """The images of a deploy folder on existing clusters, once the manager is known: a
    kind cluster gets them loaded (each checked as on kind); any other must pull them."""
    archive = built.archive if built is not None else None
    kind = kind_cluster_of(env)
    if kind is not None:
        return replace(images(run, docker_has, archive), kind=kind)
    found = images(run, lambda _image: True, archive)
    wanted = ", ".join(dict.fromkeys([found.main, *found.from_docker]))
    note = (
        f"the manager is not a kind cluster: nothing is loaded into it, so {wanted} must be"
        " pullable by it"
    )
    return replace(found, archive=None, notes=(*found.notes, note))


def unapplied(run: RunSpec) -> list[str]:
    """What a folder applied as written does not get of the profile's own additions."""
    assert run.deploy is not None
    folder, rbac = run.deploy, run.rbac
    extra = len(rbac.cluster_rules) - len(folder.cluster_rules)
    extra += len(rbac.namespace_rules) - len(folder.namespace_rules)
    if not extra:
        return []
    return [f"spec.run.rbac: {extra} rule(s) not granted: the folder's RBAC is applied as written"]


def docker_has(image: str) -> bool:
    """Whether the local Docker engine has `image` (never pulled)."""
    if shutil.which("docker") is None:
        raise UserError("spec.run.manifests on kind needs Docker: docker is not on PATH")
    return kind_images.docker_has(image)


# ------------------------------------------------------------ the documents


def documents(
    run: RunSpec,
    left_out: Sequence[str],
    labels: dict[str, str],
    *,
    pull_never: bool,
    dispatcher_name: str,
) -> list[dict[str, Any]]:
    """The folder's documents as applied: as written, labelled with the run (so its
    inventory finds them); the Deployment in Kueue's namespace unless it names one, with
    the profile's replicas and env (`{namespace}` and `{dispatcher_name}` filled: the
    host's files the other placeholders name are not in a cluster's Pod, bad input
    here), without the containers left out, and with
    `imagePullPolicy: Never` where every image was loaded (kind). Any other namespaced
    kind without a namespace gets Kueue's as it is applied, where the cluster says which
    kinds are namespaced (a vendor's own CRD's too)."""
    assert run.deploy is not None
    out = []
    for written in run.deploy.documents:
        doc = copy.deepcopy(written)
        meta = doc.setdefault("metadata", {})
        meta["labels"] = {**(meta.get("labels") or {}), **labels}
        if doc["kind"] == "Deployment":  # the others get theirs as applied (`_apply`)
            meta["namespace"] = meta.get("namespace") or NAMESPACE
            values = {"namespace": meta["namespace"], "dispatcher_name": dispatcher_name}
            _deployment(doc, replace(run, env=_cluster_env(run.env, values)), left_out, pull_never)
        out.append(doc)
    return out


def _cluster_env(env: dict[str, str], values: dict[str, str]) -> dict[str, str]:
    """spec.run.env for a Pod on the cluster: the placeholders it can have filled, a host
    path's refused in one line."""
    for key, value in env.items():
        for name in HOST_PLACEHOLDERS:
            if "{" + name + "}" in value:
                raise UserError(
                    f"spec.run.env.{key}: {{{name}}} names a file on this machine, which a"
                    " deploy folder's Pod on the cluster cannot read: put the file in the"
                    " folder (a ConfigMap or Secret) and point the variable at its mount"
                )
    return {key: fill(value, values) for key, value in env.items()}


def _deployment(
    doc: dict[str, Any], run: RunSpec, left_out: Sequence[str], pull_never: bool
) -> None:
    spec = doc.setdefault("spec", {})
    spec["replicas"] = run.replicas
    pod = spec["template"]["spec"]
    for key in ("initContainers", "containers"):
        kept = [c for c in pod.get(key) or [] if c.get("name") not in left_out]
        if kept:
            pod[key] = kept
        else:
            pod.pop(key, None)
    main = pod["containers"][0]
    written = {e.get("name") for e in main.get("env") or []}
    added = [{"name": k, "value": v} for k, v in run.env.items() if k not in written]
    folder_env = run.deploy.pod.env if run.deploy else {}
    added = [e for e in added if folder_env.get(e["name"]) != e["value"]]
    if added:
        main["env"] = [*(main.get("env") or []), *added]
    if pull_never:
        for container in [*pod.get("initContainers", []), *pod["containers"]]:
            container["imagePullPolicy"] = "Never"


def selector(deployment: dict[str, Any]) -> str:
    """The Deployment's pods, as a label selector."""
    labels = ((deployment.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def service_account_user(deployment: dict[str, Any], account: str) -> str:
    return identity.service_account_user(
        deployment["metadata"].get("namespace") or NAMESPACE, account
    )


# ------------------------------------------------------------ the clusters


def kind_cluster_of(env: Environment) -> str | None:
    """The kind cluster the manager is (kind provider, or kind clusters passed as
    existing), from its nodes' containers; None for any other cluster."""
    known = env.info.get("kindClusters", {}).get("manager")
    if known:
        return str(known)
    docker = shutil.which("docker")
    if docker is None:
        return None
    from kubernetes import client

    nodes = client.CoreV1Api(env.manager.dyn.client).list_node().items
    names = set()
    template = f'{{{{index .Config.Labels "{KIND_LABEL}"}}}}'
    for node in nodes:
        probe = [docker, "inspect", "--format", template, str(node.metadata and node.metadata.name)]
        found = subprocess.run(probe, capture_output=True, text=True, check=False)
        names.add(found.stdout.strip() if found.returncode == 0 else "")
    return names.pop() if len(names) == 1 and "" not in names else None


class DeploymentRunner(DispatcherRunner):
    """The vendor's Deployment's Pods as the replicas: replica i is the i-th Pod (by name
    at start; a restart's new Pod takes the place of the one killed)."""

    def __init__(
        self,
        profile: Profile,
        supervisor: Supervisor,
        env: Environment,
        docs: list[dict[str, Any]],
        images: Images,
        progress: Progress,
    ) -> None:
        super().__init__(profile, supervisor, [])
        self.restarts_exited = False  # the cluster's kubelet restarts its Pods itself
        from kubernetes import client

        self.env = env
        self.docs = docs
        self.images = images
        self.progress = progress
        self.dyn = env.manager.dyn
        self.core = client.CoreV1Api(self.dyn.client)
        self.apps = client.AppsV1Api(self.dyn.client)
        self.deployment = next(d for d in docs if d["kind"] == "Deployment")
        self.name = self.deployment["metadata"]["name"]
        self.namespace = self.deployment["metadata"]["namespace"]
        self.selector = selector(self.deployment)
        self.applied: list[dict[str, Any]] = []
        self.slots: dict[int, str] = {}  # replica -> its Pod
        self.history: dict[int, list[str]] = {}  # replica -> every Pod it has been
        self.down: set[int] = set()
        self.logs: dict[tuple[str, str, str], str] = {}  # (pod, container, run) -> text

    # ---------------------------------------------------------------- start

    def start_all(self) -> None:
        self._load_images()
        for doc in self.docs:
            self._apply(doc)
        made = ", ".join(f"{d['kind']} {d['metadata']['name']}" for d in self.applied)
        self.progress(f"applied to the manager (server-side, as written): {made}")
        self.wait_started()

    def _load_images(self) -> None:
        if self.images.kind is None:
            return
        loads = []
        if self.images.archive is not None:
            loads.append(["kind", "load", "image-archive", str(self.images.archive)])
        else:
            loads.append(["kind", "load", "docker-image", self.images.main])
        loads += [["kind", "load", "docker-image", image] for image in self.images.from_docker]
        for argv in loads:
            kind_images.run_tool(
                [*argv, "--name", self.images.kind], f"loading {argv[-1]} into kind"
            )

    def _apply(self, doc: dict[str, Any]) -> None:
        """Server-side apply, refusing to take over an object this run did not make:
        what the run applied is deleted at its end, and nothing else (a Namespace that
        is there already is used, not applied)."""
        meta = doc["metadata"]
        res = kube.resource(self.dyn, doc["apiVersion"], doc["kind"])
        if res.namespaced and not meta.get("namespace"):  # as the cluster knows the kind
            meta["namespace"] = NAMESPACE
        try:
            there = res.get(name=meta["name"], namespace=meta.get("namespace")).to_dict()
        except ApiException as exc:
            if exc.status != 404:
                raise
            there = None
        if there is not None and doc["kind"] == "Namespace":
            return
        if there is not None and not _labelled(there, meta["labels"]):
            where = f" in {meta['namespace']}" if meta.get("namespace") else ""
            raise UserError(
                f"spec.run.manifests: {doc['kind']} {meta['name']}{where} is on the manager"
                " already, not made by this run: mkdc deletes what it applies, so it takes"
                " over nothing; delete it first, or use clusters without it"
            )
        self.applied.append(doc)
        kube.apply(self.dyn, doc)

    def wait_started(self) -> None:
        """Every replica's Pod Running, its containers started and ready (its probes say
        so), and not restarted a few seconds later; a container that cannot start fails
        the start at once, naming it."""
        deadline = time.monotonic() + self.run.ready_timeout
        while len(self._ready()) < self.run.replicas:
            self._check_pods()
            if time.monotonic() > deadline:
                self.save_logs()
                raise StartFailure(
                    f"the dispatcher was not ready within its readyTimeout"
                    f" ({self.run.ready_timeout:.0f}s): {len(self._ready())} of"
                    f" {self.run.replicas} Pod(s) of Deployment {self.name} Running and ready"
                    " (a slow start needs a longer spec.run.readyTimeout)",
                    self.process_name(0),
                )
            time.sleep(0.5)
        for replica, pod in enumerate(sorted(p.metadata.name for p in self._ready())):
            self.slots[replica] = pod
            self.history[replica] = [pod]
        time.sleep(min(SETTLE_SECONDS, self.run.ready_timeout))
        self._check_pods()
        pods = ", ".join(f"{self.process_name(r)}={p}" for r, p in sorted(self.slots.items()))
        self.progress(f"dispatcher Pods of Deployment {self.name} Running and ready: {pods}")

    def _pods(self) -> list[Any]:
        found = self.core.list_namespaced_pod(self.namespace, label_selector=self.selector)
        return list(found.items)

    def _ready(self) -> list[Any]:
        return [p for p in self._pods() if _ready(p)]

    def _check_pods(self) -> None:
        for pod in self._pods():
            statuses = [*(pod.status.init_container_statuses or [])]
            statuses += pod.status.container_statuses or []
            for status in statuses:
                waiting = status.state.waiting if status.state else None
                if waiting is not None and waiting.reason in FATAL_WAITING:
                    reason = f"{waiting.reason}: {waiting.message or ''}".strip(": ")
                elif status.restart_count:
                    reason = f"restarted {status.restart_count} time(s)"
                else:
                    continue
                self.save_logs([pod])
                replica = next((r for r, p in self.slots.items() if p == pod.metadata.name), 0)
                raise StartFailure(
                    f"the dispatcher ({self.process_name(replica)}) failed at start (pod"
                    f" {pod.metadata.name}, container {status.name}: {reason})",
                    self.process_name(replica),
                )

    def _check(self, replica: int) -> None:
        """While waiting for the first list/watch in the audit log (DispatcherRunner)."""
        self._check_pods()

    # ---------------------------------------------------------------- scenarios

    def kill(self, replica: int = 0) -> None:
        """A crash that stays down: the Pod's containers SIGKILLed on its node, the
        Deployment one replica less with that Pod the one to go, the Pod deleted."""
        name = self.slots.get(replica)
        pod = self._pod(name) if name else None
        self.save_logs()
        if pod is None:
            return
        with contextlib.suppress(ApiException):
            self.core.patch_namespaced_pod(
                pod.metadata.name,
                self.namespace,
                {"metadata": {"annotations": {DELETION_COST: "-2147483648"}}},
            )
        kill_containers(pod)
        self.down.add(replica)
        self._scale()
        with contextlib.suppress(ApiException):
            self.core.delete_namespaced_pod(
                pod.metadata.name, self.namespace, grace_period_seconds=0
            )

    def restart(self, replica: int = 0) -> None:
        """The Deployment scaled back; the ReplicaSet's new Pod is this replica once it is
        Running and ready (up to readyTimeout)."""
        self.down.discard(replica)
        self._scale()
        deadline = time.monotonic() + self.run.ready_timeout
        while time.monotonic() < deadline:
            taken = {p for r, p in self.slots.items() if r != replica}
            fresh = [p.metadata.name for p in self._ready() if p.metadata.name not in taken]
            fresh = [p for p in fresh if p not in self.history.get(replica, [])]
            if fresh:
                self.slots[replica] = fresh[0]
                self.history.setdefault(replica, []).append(fresh[0])
                return
            time.sleep(0.5)

    def _scale(self) -> None:
        self.apps.patch_namespaced_deployment_scale(
            self.name,
            self.namespace,
            {"spec": {"replicas": self.run.replicas - len(self.down)}},
            _content_type="application/merge-patch+json",
        )

    def _pod(self, name: str) -> Any | None:
        try:
            return self.core.read_namespaced_pod(name, self.namespace)
        except ApiException:
            return None

    def alive(self, replica: int = 0) -> bool:
        name = self.slots.get(replica)
        pod = self._pod(name) if name and replica not in self.down else None
        return pod is not None and _ready(pod)

    def replica_of(self, user: str) -> int:
        """The replica whose Pod made the request (the audit's per-Pod user)."""
        pod = pod_of(user)
        for replica, pods in self.history.items():
            if pod in pods:
                return replica
        raise ValueError(f"{user} is no Pod of Deployment {self.name} this run started")

    # ---------------------------------------------------------------- logs, stop

    def save_logs(self, pods: Sequence[Any] | None = None) -> None:
        """Every Pod's log, each container's, and the run before each restart, into its
        replica's log (a Pod that went keeps what was read before it went; one not yet a
        replica's goes to the first's)."""
        with contextlib.suppress(Exception):
            for pod in self._pods() if pods is None else pods:
                self._read_logs(pod)
        texts: dict[int, list[str]] = {}
        for (pod, container, run), text in sorted(self.logs.items()):
            owner = next((r for r, seen in self.history.items() if pod in seen), 0)
            texts.setdefault(owner, []).append(
                f"--- pod {pod} container {container} ({run})\n{text}"
            )
        for replica, parts in texts.items():
            self.supervisor.log_path(self.process_name(replica)).write_text("".join(parts))

    def _read_logs(self, pod: Any) -> None:
        name = pod.metadata.name
        statuses = [*(pod.status.init_container_statuses or [])]
        statuses += pod.status.container_statuses or []
        for status in statuses:
            runs = [("current", False)]
            if status.restart_count:  # the run the kubelet restarted last
                runs.append((f"before restart {status.restart_count}", True))
            for label, previous in runs:
                with contextlib.suppress(ApiException):
                    self.logs[(name, status.name, label)] = self.core.read_namespaced_pod_log(
                        name, self.namespace, container=status.name, previous=previous
                    )

    def stop_all(self) -> None:
        """The logs, then everything the run applied, deleted (last applied first)."""
        self.save_logs()
        for doc in reversed(self.applied):
            meta = doc["metadata"]
            with contextlib.suppress(Exception):
                kube.delete(
                    self.dyn, doc["apiVersion"], doc["kind"], meta["name"], meta.get("namespace")
                )
        self.applied.clear()


def _labelled(obj: dict[str, Any], labels: dict[str, str]) -> bool:
    found = (obj.get("metadata") or {}).get("labels") or {}
    return all(found.get(k) == v for k, v in labels.items())


def _ready(pod: Any) -> bool:
    if pod.metadata.deletion_timestamp or pod.status.phase != "Running":
        return False
    statuses = pod.status.container_statuses or []
    return bool(statuses) and all(s.ready and s.started for s in statuses)
