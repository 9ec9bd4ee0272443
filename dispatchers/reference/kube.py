"""The few Kubernetes API calls the dispatcher makes, and a list-then-watch informer.

Only the official client is used. A 403 anywhere becomes ``Forbidden`` naming the missing
permission (the CLI prints it and exits 2): least-privilege deployments should fail loudly
and once, not retry forever. Except for a while after the same request was allowed: a
restarted kube-apiserver answers 403 until its RBAC caches are filled (``ForbiddenGrace``).
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import urllib3
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from dispatchers.reference import model
from dispatchers.reference.model import GROUP, VERSION
from dispatchers.reference.workqueue import TokenBucket
from dispatchers.reference.writes import MERGE

log = logging.getLogger(__name__)
WATCH_SECONDS = 290  # server-side watch timeout; the informer resumes from the last RV


class Forbidden(Exception):
    """The dispatcher's identity lacks a permission; the message names it."""


class ForbiddenGrace:
    """When a 403 is fatal. At once while the requests it guards were never allowed (a
    missing permission, said at start); once they were, only after 403s have lasted
    `seconds` with nothing allowed in between. A kube-apiserver that has just restarted
    refuses everything with 403 until its authorizer's caches are synced, and a dispatcher
    that died of that would take the manager's restart down with it."""

    def __init__(self, seconds: float = 30.0, clock: Callable[[], float] = time.monotonic):
        self.seconds, self.clock = seconds, clock
        self._lock = threading.Lock()
        self._allowed = False
        self._since: float | None = None

    def allowed(self) -> None:
        """A request it guards was allowed."""
        with self._lock:
            self._allowed, self._since = True, None

    def fatal(self) -> bool:
        """A request it guards got a 403: whether to give up now."""
        with self._lock:
            if not self._allowed:
                return True
            now = self.clock()
            if self._since is None:
                self._since = now
            return now - self._since >= self.seconds


def forbidden(err: ApiException, verb: str, resource: str, namespace: str | None) -> Forbidden:
    where = f" in namespace {namespace}" if namespace else " (cluster-wide)"
    try:
        detail = str(json.loads(err.body or "{}").get("message") or err.reason)
    except (ValueError, AttributeError):
        detail = str(err.body or err.reason)
    detail = " ".join(detail.split())[:300]
    return Forbidden(f"missing permission: {verb} {resource}{where}; server said: {detail}")


def connect(kubeconfig: str | None, pool_size: int = 16) -> client.ApiClient:
    """A client whose connection pool holds every watch plus every concurrent request:
    a smaller pool silently opens (and TLS-handshakes) a new connection per request."""
    cfg = client.Configuration()
    if kubeconfig:
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    else:
        config.load_incluster_config(client_configuration=cfg)
    cfg.retries = urllib3.Retry(total=0)
    cfg.connection_pool_maxsize = pool_size
    return client.ApiClient(cfg)


class Kube:
    """Typed-enough wrappers over CustomObjectsApi / CoreV1Api for the calls we make."""

    def __init__(
        self,
        api: client.ApiClient,
        limiter: TokenBucket | None = None,
        event_limiter: TokenBucket | None = None,
    ) -> None:
        self.api = api
        self.custom = client.CustomObjectsApi(api)
        self.limiter = limiter  # bounds gets and writes; lists and watches are not counted
        # Events wait on their own bucket (in the event thread), so a burst of explanations
        # never delays a nomination; None: they share ``limiter``
        self.event_limiter = event_limiter
        self._spent = threading.local()  # this thread's [throttled s, request s, requests]

    def take_timings(self) -> dict[str, float]:
        """This thread's seconds waiting for the rate limiter and in requests, and its
        request count, since the last call (one reconcile's: is it throttled or slow?)."""
        spent = getattr(self._spent, "v", None) or [0.0, 0.0, 0]
        self._spent.v = [0.0, 0.0, 0]
        return {
            "throttled_s": round(spent[0], 4),
            "api_s": round(spent[1], 4),
            "requests": spent[2],
        }

    def _call(
        self,
        verb: str,
        resource: str,
        ns: str | None,
        fn: Callable[[], Any],
        limit: bool = True,
        limiter: TokenBucket | None = None,
    ) -> Any:
        spent = getattr(self._spent, "v", None)
        if spent is None:
            spent = self._spent.v = [0.0, 0.0, 0]
        started = time.perf_counter()
        bucket = limiter or self.limiter
        if limit and bucket is not None:
            bucket.take()
        sent = time.perf_counter()
        try:
            return fn()
        except ApiException as err:
            if err.status == 403:
                raise forbidden(err, verb, resource, ns) from None
            raise
        finally:
            spent[0] += sent - started
            spent[1] += time.perf_counter() - sent
            spent[2] += 1

    def list(self, plural: str) -> tuple[list[dict[str, Any]], str]:
        """All objects of a Kueue kind (every namespace) and the list's resourceVersion."""
        res = f"{plural}.{GROUP}"
        data = self._call(
            "list",
            res,
            None,
            lambda: self.custom.list_cluster_custom_object(GROUP, VERSION, plural),
            limit=False,
        )
        return list(data.get("items") or []), str(data["metadata"]["resourceVersion"])

    def watch(self, plural: str, resource_version: str) -> Iterator[dict[str, Any]]:
        """Raw watch events from ``resource_version``; ApiException(410) when it expired."""
        stream = watch.Watch().stream(
            self.custom.list_cluster_custom_object,
            GROUP,
            VERSION,
            plural,
            resource_version=resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=WATCH_SECONDS,
        )
        try:
            yield from stream
        except ApiException as err:
            if err.status == 403:
                raise forbidden(err, "watch", f"{plural}.{GROUP}", None) from None
            raise

    def get_workload(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self._call(
                "get",
                f"workloads.{GROUP}",
                namespace,
                lambda: self.custom.get_namespaced_custom_object(
                    GROUP, VERSION, namespace, "workloads", name
                ),
            )
        except ApiException as err:
            if err.status == 404:
                return None
            raise

    def patch_workload(
        self, namespace: str, name: str, body: Mapping[str, Any], field_manager: str
    ) -> dict[str, Any]:
        """Merge patch of the main resource (the dispatch state annotation)."""
        return self._call(
            "patch",
            f"workloads.{GROUP}",
            namespace,
            lambda: self.custom.patch_namespaced_custom_object(
                GROUP,
                VERSION,
                namespace,
                "workloads",
                name,
                dict(body),
                field_manager=field_manager,
                _content_type=MERGE,
            ),
        )

    def patch_workload_status(
        self,
        namespace: str,
        name: str,
        content_type: str,
        body: Mapping[str, Any],
        params: Mapping[str, Any],
    ) -> dict[str, Any]:
        return self._call(
            "patch",
            f"workloads.{GROUP}/status",
            namespace,
            lambda: self.custom.patch_namespaced_custom_object_status(
                GROUP,
                VERSION,
                namespace,
                "workloads",
                name,
                dict(body),
                _content_type=content_type,
                **params,
            ),
        )

    def event(self, workload: Mapping[str, Any], reason: str, message: str, component: str) -> None:
        """An events.k8s.io/v1 Event about the Workload (``kubectl describe workload``
        shows it). Not core/v1 through CoreV1Api: importing that class loads ~250 model
        modules, over a second of CPU at every (re)start."""
        meta = workload["metadata"]
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            # named as client-go names them; "name." is no valid generateName here
            "metadata": {
                "name": f"{meta['name']}.{time.time_ns():x}",
                "namespace": meta["namespace"],
            },
            "regarding": {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "Workload",
                "name": meta["name"],
                "namespace": meta["namespace"],
                "uid": meta["uid"],
                "resourceVersion": meta.get("resourceVersion"),
            },
            "reason": reason,
            "action": reason,
            "note": message[:1000],
            "type": "Normal",
            "eventTime": now,
            "reportingController": component,
            "reportingInstance": component,
        }
        self._call(
            "create",
            "events.events.k8s.io",
            meta["namespace"],
            lambda: self.custom.create_namespaced_custom_object(
                "events.k8s.io", "v1", meta["namespace"], "events", body
            ),
            limiter=self.event_limiter,
        )


Handler = Callable[[str, dict[str, Any]], None]  # (event type, object)


class Informer:
    """List, then watch from the list's resourceVersion; relist on 410; reconnect with
    jittered exponential backoff. Keeps a cache keyed by namespace/name and calls
    ``handler`` for every change (``SYNC`` for each object after a (re)list)."""

    def __init__(
        self,
        kube: Kube,
        plural: str,
        handler: Handler,
        on_fatal: Callable[[Exception], None],
        stop: threading.Event,
    ) -> None:
        self.kube, self.plural, self.handler = kube, plural, handler
        self.on_fatal, self.stop = on_fatal, stop
        self.grace = ForbiddenGrace()
        self.cache: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()
        self.synced = threading.Event()

    def snapshot(self) -> dict[str, dict[str, Any]]:
        with self.lock:
            return dict(self.cache)

    def get(self, key: str) -> dict[str, Any] | None:
        with self.lock:
            return self.cache.get(key)

    def run(self) -> None:
        backoff = 0.5
        rv: str | None = None
        while not self.stop.is_set():
            try:
                if rv is None:
                    rv = self._relist()
                rv = self._watch(rv)
                backoff = 0.5
            except Forbidden as err:
                if self.grace.fatal():
                    self.on_fatal(err)
                    return
                backoff = self._pause(backoff, err)
            except ApiException as err:
                if err.status == 410:
                    log.info("watch expired, relisting", extra={"kind": self.plural})
                    rv = None
                    continue
                backoff = self._pause(backoff, err)
            except Exception as err:  # connection refused, reset, timeouts
                backoff = self._pause(backoff, err)

    def _pause(self, backoff: float, err: Exception) -> float:
        log.warning(
            "watch failed, reconnecting",
            extra={"kind": self.plural, "error": str(err)[:200], "retry_in": round(backoff, 2)},
        )
        self.stop.wait(backoff * (0.8 + 0.4 * random.random()))
        return min(backoff * 2, 30.0)

    def _relist(self) -> str:
        items, rv = self.kube.list(self.plural)
        fresh = {model.key_of(obj): obj for obj in items}
        with self.lock:
            gone = [self.cache[k] for k in self.cache.keys() - fresh.keys()]
            self.cache = fresh
        for obj in gone:
            self.handler("DELETED", obj)
        for obj in items:
            self.handler("SYNC", obj)
        self.synced.set()
        self.grace.allowed()
        return rv

    def _watch(self, rv: str) -> str:
        for event in self.kube.watch(self.plural, rv):
            if self.stop.is_set():
                break
            kind, obj = event["type"], event["raw_object"]
            rv = model.resource_version(obj) or rv
            if kind == "BOOKMARK":
                continue
            with self.lock:
                if kind == "DELETED":
                    self.cache.pop(model.key_of(obj), None)
                else:
                    self.cache[model.key_of(obj)] = obj
            self.handler(kind, obj)
        return rv
