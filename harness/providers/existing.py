"""The existing provider: clusters the user already runs, with Kueue and MultiKueue set up.

The harness must not change anything it did not create there, so `up()` only reads:
it checks that every cluster is reachable and runs a supported Kueue, that the
manager's dispatcherName is the profile's, and that each named worker is an Active
MultiKueueCluster. `down()` deletes only objects carrying this run's label.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client.rest import ApiException
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from harness.cluster import inventory, kube, kubeconfig, rundir
from harness.cluster.environment import Cluster, Environment
from harness.cluster.kueue_install import CONFIG_KEY, CONFIG_MAP, NAMESPACE
from harness.cluster.multikueue import API
from harness.cluster.versions import MATRIX, Versions
from harness.errors import UserError, shown, shown_path
from harness.userfiles import expand_user, file_problem, is_file

MANAGER = "manager"
DEFAULT_DISPATCHER = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
DEPLOYMENT = "kueue-controller-manager"
VERSION_LABEL = "app.kubernetes.io/version"
KUEUE_CRDS = tuple(
    f"{plural}.kueue.x-k8s.io"
    for plural in (
        "clusterqueues",
        "localqueues",
        "resourceflavors",
        "workloads",
        "admissionchecks",
        "multikueueclusters",
        "multikueueconfigs",
        "workloadpriorityclasses",
    )
)
PROVISIONING_CRD = "provisioningrequests.autoscaling.x-k8s.io"
HINT = "install Kueue (https://kueue.sigs.k8s.io/docs/installation/)"
_OBJECT_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")  # a DNS subdomain

ClusterArgs = dict[str, tuple[Path, str | None]]
Connect = Callable[[Cluster], Any]  # returns the cluster's dynamic client


def parse_cluster_args(values: Sequence[str]) -> ClusterArgs:
    """`NAME=KUBECONFIG[:CONTEXT]` values of repeated --cluster options."""
    out: ClusterArgs = {}
    for value in values:
        name, sep, rest = value.partition("=")
        if not sep or not name or not rest:
            raise UserError(f"--cluster {shown(value)} must look like NAME=KUBECONFIG[:CONTEXT]")
        if name != MANAGER and not _OBJECT_NAME.fullmatch(name):
            raise UserError(
                f"--cluster {shown(name)}=...: the name must be that of a MultiKueueCluster"
                " (lower-case letters, digits, '-' and '.')"
            )
        if name in out:
            raise UserError(f"--cluster {name} is given twice")
        path, context = rest, None
        try:
            if ":" in rest and not is_file(expand_user(rest)):
                path, context = rest.split(":", 1)
            out[name] = (expand_user(path), context or None)
        except UserError as exc:
            raise UserError(f"--cluster {name}: {exc}") from None
    if MANAGER not in out:
        raise UserError("--cluster manager=KUBECONFIG is required (the MultiKueue manager)")
    if len(out) < 2:
        raise UserError("give a worker too: --cluster NAME=KUBECONFIG, NAME its MultiKueueCluster")
    return out


def image_version(image: str) -> str | None:
    """The tag of an image reference when it looks like a version: `...kueue:v0.19.2` -> 0.19.2."""
    ref = image.split("@", 1)[0]
    name, _, tag = ref.rpartition(":")
    if not name or "/" in tag:
        return None
    m = re.fullmatch(r"v?(\d+\.\d+\.\d+)", tag)
    return m.group(1) if m else None


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:200] + ("..." if len(text) > 200 else "")


def connect_problem(exc: BaseException) -> str:
    """Why a connection failed, in words: the innermost OS or TLS error urllib3 wraps
    (`Connection refused`), the HTTP status of a refusal, else the error's own text."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ApiException):
            return f"HTTP {cause.status} {cause.reason}: check the kubeconfig's user"
        if isinstance(cause, ssl.SSLError):
            return f"TLS: {cause.reason or _one_line(cause)}"
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror
        reason = getattr(cause, "reason", None)
        cause = (
            reason if isinstance(reason, BaseException) else cause.__cause__ or cause.__context__
        )
    return _one_line(exc)


def _get(dyn: Any, api_version: str, kind: str, name: str, ns: str | None = None) -> dict | None:
    """One object as a dict, None when it (or its kind) does not exist."""
    try:
        resource = dyn.resources.get(api_version=api_version, kind=kind)
        return resource.get(name=name, namespace=ns).to_dict()
    except ResourceNotFoundError:
        return None
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _has_crd(dyn: Any, name: str) -> bool:
    return _get(dyn, "apiextensions.k8s.io/v1", "CustomResourceDefinition", name) is not None


def kueue_version(c: Cluster, dyn: Any) -> str:
    """Kueue's version: the controller image tag, else the version label on its ConfigMap."""
    deployment = _get(dyn, "apps/v1", "Deployment", DEPLOYMENT, NAMESPACE)
    if deployment:
        for container in deployment["spec"]["template"]["spec"].get("containers") or []:
            found = image_version(container.get("image", ""))
            if found:
                return found
    cm = _get(dyn, "v1", "ConfigMap", CONFIG_MAP, NAMESPACE)
    label = ((cm or {}).get("metadata", {}).get("labels") or {}).get(VERSION_LABEL, "")
    found = image_version(f"kueue:{label}") if label else None
    if not found:
        raise UserError(
            f"--cluster {c.name}: cannot tell which Kueue version runs there (no versioned image"
            f" on {NAMESPACE}/{DEPLOYMENT}, no {VERSION_LABEL} label on {NAMESPACE}/{CONFIG_MAP})"
        )
    return found


def configured_dispatcher(dyn: Any) -> str:
    """The manager's multiKueue.dispatcherName, Kueue's default when unset."""
    cm = _get(dyn, "v1", "ConfigMap", CONFIG_MAP, NAMESPACE)
    if cm is None or CONFIG_KEY not in (cm.get("data") or {}):
        raise UserError(
            f"the manager has no ConfigMap {NAMESPACE}/{CONFIG_MAP} with key {CONFIG_KEY}:"
            " cannot check Kueue's dispatcherName"
        )
    try:
        cfg = yaml.safe_load(cm["data"][CONFIG_KEY]) or {}
    except yaml.YAMLError as exc:
        raise UserError(
            f"{NAMESPACE}/{CONFIG_MAP} on the manager is not YAML: {_one_line(exc)}"
        ) from None
    return ((cfg.get("multiKueue") or {}).get("dispatcherName")) or DEFAULT_DISPATCHER


def worker_secret(dyn: Any, worker: str) -> str:
    """The kubeconfig Secret of an Active MultiKueueCluster named worker."""
    mkc = _get(dyn, API, "MultiKueueCluster", worker)
    if mkc is None:
        raise UserError(
            f"--cluster {worker}: the manager has no MultiKueueCluster {worker}"
            " (every --cluster NAME but manager must name one)"
        )
    if not kube.condition_true(mkc, "Active"):
        cond = kube.condition(mkc, "Active") or {}
        why = cond.get("message") or cond.get("reason") or "no Active condition"
        raise UserError(f"MultiKueueCluster {worker} on the manager is not Active: {why}")
    spec = mkc.get("spec") or {}
    source = (spec.get("clusterSource") or {}).get("kubeConfig") or spec.get("kubeConfig") or {}
    if source.get("locationType", "Secret") != "Secret" or not source.get("location"):
        raise UserError(
            f"MultiKueueCluster {worker} does not read its kubeconfig from a Secret;"
            " mkdc reuses that Secret for its own MultiKueueClusters"
        )
    return source["location"]


class ExistingProvider:
    """Clusters the user runs; the harness only adds (and removes) its labelled objects."""

    name = "existing"
    capabilities: frozenset[str] = frozenset()
    discards_clusters = False

    def __init__(
        self,
        clusters: ClusterArgs,
        dispatcher_name: str,
        versions_expected: Mapping[str, Versions] = MATRIX,
        *,
        connect: Connect | None = None,
        purge_timeout: float = 180,
    ) -> None:
        if MANAGER not in clusters or len(clusters) < 2:
            raise UserError("the existing provider needs --cluster manager=... and a worker")
        self.cluster_args = clusters
        self.dispatcher_name = dispatcher_name
        self.versions_expected = versions_expected
        self.connect: Connect = connect or (lambda c: c.dyn)
        self.purge_timeout = purge_timeout
        self.env: Environment | None = None
        self.run_dir: Path | None = None

    def up(self) -> Environment:
        """Check everything (reading only), then hand out an Environment with a run id."""
        clusters = [
            Cluster(n, p, MANAGER if n == MANAGER else "worker", context=ctx)
            for n, (p, ctx) in self.cluster_args.items()
        ]
        servers = {c.name: self._kubeconfig(c) for c in clusters}  # every file, then connect
        dyns = {c.name: self._reach(c, servers[c.name]) for c in clusters}
        for c in clusters:
            self._require_crds(c, dyns[c.name])
        found = {c.name: self._supported_version(c, dyns[c.name]) for c in clusters}
        manager = next(c for c in clusters if c.name == MANAGER)
        mdyn = dyns[MANAGER]
        actual = configured_dispatcher(mdyn)
        if actual != self.dispatcher_name:
            raise UserError(
                f"the manager's Kueue uses dispatcherName {actual}, the profile needs"
                f" {self.dispatcher_name}: set multiKueue.dispatcherName in"
                f" {NAMESPACE}/{CONFIG_MAP} and restart {DEPLOYMENT}"
            )
        workers = [c for c in clusters if c.role == "worker"]
        secrets = {w.name: worker_secret(mdyn, w.name) for w in workers}
        self.run_dir = rundir.create("mkdc-existing-")  # created 0700
        run_id = inventory.new_run_id()
        self.env = Environment(
            provider=self.name,
            run_dir=self.run_dir,
            manager=manager,
            workers=workers,
            kubernetes_version=mdyn.version["kubernetes"]["gitVersion"],
            kueue_version=f"v{found[MANAGER]}",
            dispatcher_name=self.dispatcher_name,
            info={
                "runId": run_id,
                "workerSecrets": secrets,
                "kueueVersions": {n: f"v{v}" for n, v in found.items()},
                "provisioningRequestCRD": {
                    n: _has_crd(d, PROVISIONING_CRD) for n, d in dyns.items()
                },
            },
        )
        self.env.save()
        return self.env

    def down(self) -> None:
        """Delete only this run's labelled objects, then the private run directory."""
        try:
            if self.env is not None:
                inventory.purge(self.env, self.env.info["runId"], timeout=self.purge_timeout)
        finally:
            if self.run_dir is not None:
                rundir.remove(self.run_dir)

    def interrupt(self, process: str, how: str) -> None:
        raise UserError(
            f"the existing provider cannot take {process} out (faults need --provider local)"
        )

    def resume(self, process: str) -> None:
        raise UserError(f"the existing provider cannot bring {process} back")

    # ------------------------------------------------------------------ checks

    def _where(self, c: Cluster) -> str:
        return shown_path(c.kubeconfig) + (
            f" (context {shown_path(c.context)})" if c.context else ""
        )

    def _kubeconfig(self, c: Cluster) -> str:
        """The server c's kubeconfig points at, once the file is known to be usable."""
        if file_problem(c.kubeconfig) == "no such file":
            raise UserError(
                f"--cluster {c.name}: kubeconfig {shown_path(c.kubeconfig)} does not exist"
            )
        try:
            return kubeconfig.check(c.kubeconfig, c.context)
        except UserError as exc:
            raise UserError(f"--cluster {c.name}: {exc}") from None

    def _reach(self, c: Cluster, server: str) -> Any:
        try:
            dyn = self.connect(c)
            dyn.version["kubernetes"]["gitVersion"]
        except UserError as exc:  # the kubeconfig itself cannot be used
            raise UserError(f"--cluster {c.name}: {_one_line(exc)}") from None
        except Exception as exc:  # refused, TLS, 401/403, DNS: all say "cannot connect"
            raise UserError(
                f"--cluster {c.name}: cannot connect with {self._where(c)} to {server}:"
                f" {connect_problem(exc)}"
            ) from None
        return dyn

    def _require_crds(self, c: Cluster, dyn: Any) -> None:
        for crd in KUEUE_CRDS:
            if not _has_crd(dyn, crd):
                raise UserError(
                    f"--cluster {c.name}: Kueue is not installed (no CRD {crd}): {HINT}"
                )

    def _supported_version(self, c: Cluster, dyn: Any) -> str:
        version = kueue_version(c, dyn)
        if version not in self.versions_expected:
            known = ", ".join(f"v{v}" for v in self.versions_expected)
            raise UserError(
                f"--cluster {c.name} runs Kueue v{version}, which mkdc does not support"
                f" (supported: {known})"
            )
        return version
