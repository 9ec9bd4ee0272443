"""Thin helpers over the official kubernetes client: connect, apply, wait."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import urllib3
import yaml
from kubernetes import client, config, dynamic
from kubernetes.client.rest import ApiException
from kubernetes.dynamic.discovery import LazyDiscoverer
from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError
from tenacity import (
    RetryError,
    Retrying,
    retry,
    retry_if_exception,
    retry_if_exception_type,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential,
)

from harness.cluster import rundir
from harness.errors import UserError

FIELD_MANAGER = "mkdc"
T = TypeVar("T")

# The client logs every retry of a refused connection at WARNING; our waits expect them.
logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)

# The client keeps the key and certificate files it writes in a cache keyed by their
# content, and puts a file's name there before writing the file: another thread loading a
# kubeconfig with the same CA or key meanwhile got the name of an empty file, and its
# first request failed with "[SSL] PEM lib" (a run's clusters share one CA and one admin).
_LOADING = threading.Lock()


# what a cluster whose apiserver is restarting (an injected fault) raises for a while
UNREACHABLE = (urllib3.exceptions.HTTPError, OSError)


class NotYet(Exception):
    """Raised inside a wait to say: the condition does not hold yet, try again."""


def api_client(kubeconfig: Path | str, context: str | None = None) -> client.ApiClient:
    """A client for one kubeconfig; `context` None means its current-context. The client
    copies the kubeconfig's key and certificates to files: for a kubeconfig of a run,
    into that run's private temp directory."""
    run = rundir.containing(kubeconfig)
    files = str(rundir.temp_dir(run)) if run else None
    cfg = client.Configuration()
    try:
        with _LOADING:
            config.load_kube_config(
                str(kubeconfig), context, client_configuration=cfg, temp_file_path=files
            )
    except Exception as exc:  # the client raises several types for a bad file
        where = f"{kubeconfig} (context {context})" if context else str(kubeconfig)
        raise UserError(f"kubeconfig {where} cannot be used: {exc}") from exc
    cfg.retries = urllib3.Retry(total=0)
    return client.ApiClient(cfg)


def dynamic_client(api: client.ApiClient) -> dynamic.DynamicClient:
    return dynamic.DynamicClient(api, discoverer=InMemoryDiscovery)


class InMemoryDiscovery(LazyDiscoverer):
    """The dynamic client's API discovery, kept in memory only. By default the client
    caches it in /tmp/osrcp-<md5 of the server URL>.json: every run left a file per
    cluster behind, and a later run's server on the same port would start from another
    cluster's list of APIs."""

    def __init__(self, dyn: dynamic.DynamicClient, cache_file: str | None = None) -> None:
        super().__init__(dyn, _NOT_A_FILE)  # whatever file the client passes is not used

    def _write_cache(self) -> None:
        """Nothing is written; the discovered APIs live as long as the client."""


_NOT_A_FILE = os.path.join(os.devnull, "mkdc-discovery")  # never exists: never read


def wait_for(
    what: str,
    probe: Callable[[], T],
    *,
    timeout: float,
    retry_on: tuple[type[BaseException], ...] = (
        NotYet,
        ApiException,
        urllib3.exceptions.HTTPError,
        OSError,
    ),
    max_interval: float = 1.0,
) -> T:
    """Call probe until it returns without raising one of retry_on; UserError on timeout."""
    try:
        for attempt in Retrying(
            stop=stop_after_delay(timeout),
            wait=wait_exponential(multiplier=0.05, max=max_interval),
            retry=retry_if_exception_type(retry_on),
            reraise=False,
        ):
            with attempt:
                return probe()
    except RetryError as exc:
        last = exc.last_attempt.exception()
        raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}: {last}") from None
    raise AssertionError("unreachable")


# libyaml's loader when PyYAML has it: Kueue's CRDs (megabytes of YAML) parse several
# times faster
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.load_all(path.read_text(), Loader=_SAFE_LOADER) if d]


def resource(dyn: dynamic.DynamicClient, api_version: str, kind: str) -> Any:
    """The dynamic resource for a kind, waiting while discovery catches up.

    Right after CRDs are installed, discovery can list a group version whose resources
    are not served yet (404): drop the cached discovery and ask again.
    """

    def find() -> Any:
        try:
            return dyn.resources.get(api_version=api_version, kind=kind)
        except (ResourceNotFoundError, NotFoundError) as exc:
            dyn.resources.invalidate_cache()
            raise NotYet(f"{kind} {api_version} not served yet") from exc

    return wait_for(f"the API to serve {kind} {api_version}", find, timeout=30, retry_on=(NotYet,))


def served_versions(dyn: dynamic.DynamicClient, group: str) -> list[str]:
    """The versions of an API group the apiserver serves (discovery), preferred first."""
    found = client.ApisApi(dyn.client).get_api_versions().groups or []
    return [v.version for g in found if g.name == group for v in g.versions]


TRANSIENT = frozenset({429, 500, 502, 503, 504})  # throttled, or etcd/apiserver overloaded


def _transient(exc: BaseException) -> bool:
    return isinstance(exc, ApiException) and exc.status in TRANSIENT


@retry(
    retry=retry_if_exception(_transient),
    wait=wait_exponential(multiplier=0.5, max=8),
    stop=stop_after_attempt(6),
    reraise=True,
)
def apply(dyn: dynamic.DynamicClient, doc: dict[str, Any], *, manager: str = FIELD_MANAGER) -> Any:
    """Server-side apply one object (created or updated), forcing our field ownership.
    Retried when the server was only overloaded ("etcdserver: request timed out" while
    21 clusters install their CRDs at once): an apply is idempotent."""
    res = resource(dyn, doc["apiVersion"], doc["kind"])
    namespace = doc.get("metadata", {}).get("namespace")
    return res.server_side_apply(
        body=doc, namespace=namespace, field_manager=manager, force_conflicts=True
    )


def create_if_absent(dyn: dynamic.DynamicClient, doc: dict[str, Any]) -> bool:
    """Create the object unless one of that name exists (which is then left untouched)."""
    res = resource(dyn, doc["apiVersion"], doc["kind"])
    try:
        res.create(body=doc, namespace=doc.get("metadata", {}).get("namespace"))
    except ApiException as exc:
        if exc.status == 409:
            return False
        raise
    return True


def apply_all(dyn: dynamic.DynamicClient, docs: Iterable[dict[str, Any]]) -> None:
    for doc in docs:
        apply(dyn, doc)


def delete(
    dyn: dynamic.DynamicClient, api_version: str, kind: str, name: str, namespace: str | None = None
) -> None:
    try:
        resource(dyn, api_version, kind).delete(name=name, namespace=namespace)
    except ApiException as exc:
        if exc.status != 404:
            raise


def served_resources(crds: Iterable[dict[str, Any]]) -> dict[str, set[str]]:
    """What discovery lists once these CRDs are established: group/version -> plurals."""
    wanted: dict[str, set[str]] = {}
    for crd in crds:
        spec = crd["spec"]
        for version in spec["versions"]:
            if version.get("served", True):
                wanted.setdefault(f"{spec['group']}/{version['name']}", set()).add(
                    spec["names"]["plural"]
                )
    return wanted


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return cond
    return None


def condition_true(obj: dict[str, Any], kind: str) -> bool:
    cond = condition(obj, kind)
    return bool(cond and cond.get("status") == "True")
