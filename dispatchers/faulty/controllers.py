"""The faults that live in the controller rather than in its planner: how it watches,
writes, retries, elects a leader and dies. Each is a drop-in for the reference's
``Controller`` (or one of its informers), differing from it in exactly one behaviour."""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections.abc import Callable, Mapping
from typing import Any

import urllib3
from kubernetes.client.rest import ApiException

from dispatchers.reference import model
from dispatchers.reference.controller import Controller, Plan, Snapshot, adds_copies, plan
from dispatchers.reference.kube import Forbidden, Informer
from dispatchers.reference.settings import Settings

Obj = Mapping[str, Any]


class TrimsWhenRefused(Controller):
    """Plans a workload with its fault's planner until the API refuses a write of it as
    invalid (422), then as the reference does (the list the API would have accepted)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.refused: set[str] = set()  # workload keys; one reconcile per key at a time
        faulty = self.planner

        def planner(
            now: float, wl: Obj, snap: Snapshot, s: Settings, last: str | None = None
        ) -> Plan:
            chosen = plan if model.key_of(wl) in self.refused else faulty
            return chosen(now, wl, snap, s, last)

        self.planner = planner

    def _reconcile(self, workload: Mapping[str, Any], queued: float = 0.0) -> float | None:
        try:
            return super()._reconcile(workload, queued)
        except ApiException as err:
            if err.status == 422:
                self.refused.add(model.key_of(workload))
            raise


class IgnoresLeader(Controller):
    """EXT-12: elects a leader (the Lease looks healthy) but every replica writes."""

    def may_write(self) -> bool:
        return True


class QuitsOnDrop(Informer):
    """An informer that takes a dropped connection for the end of the world: it stops
    watching and keeps its cache as it was (a watch the server ended on time, or that
    expired, and a 403 of a restarting apiserver are handled as the reference does)."""

    def run(self) -> None:
        rv: str | None = None
        while not self.stop.is_set():
            try:
                rv = self._relist() if rv is None else self._watch(rv)
            except Forbidden as err:
                if self.grace.fatal():
                    self.on_fatal(err)
                    return
                self.stop.wait(1.0)
            except ApiException as err:
                if err.status != 410:
                    return
                rv = None
            except Exception:  # connection refused, reset: it never reconnects
                logging.getLogger("mkdc.faulty").warning(
                    "watch dropped: not watching %s any more", self.plural
                )
                return


class StaleWatch(Controller):
    """EXT-13: its Workload watch never comes back after the manager's apiserver went away,
    so workloads created after that are never seen (those it knew keep their timers)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        old = self.informers["workloads"]
        self.informers["workloads"] = QuitsOnDrop(
            old.kube, old.plural, old.handler, old.on_fatal, old.stop
        )


class DropsRefusedWrites(Controller):
    """EXT-14: a workload whose write the server refused (a 5xx: Kueue's webhook down, say)
    is given up for good, where the reference retries it with backoff."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.given_up: set[str] = set()

    def reconcile(self, key: str) -> float | None:
        if key in self.given_up:
            return None
        try:
            return super().reconcile(key)
        except ApiException as err:
            if err.status is None or err.status < 500:
                raise
            self.given_up.add(key)
            logging.getLogger("mkdc.faulty").warning("write refused: giving up on %s", key)
            return None


KEEP = "faulty.mkdc.example/keep"  # the finalizer leaves-workloads adds and never removes


class LeavesWorkloads(Controller):
    """Shared clusters: tracks each workload it nominates with a finalizer of its own and
    never removes it, so a deleted workload stays (terminating) after its namespace went:
    the next scenario on the shared clusters must be undecided naming it, never judged."""

    def _write(self, p: Plan, d: Any, workload: Mapping[str, Any], *args: Any) -> float | None:
        requeue = super()._write(p, d, workload, *args)
        meta = workload["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if KEEP not in finalizers:
            body = {"metadata": {"finalizers": [*finalizers, KEEP]}}
            self.kube.patch_workload(
                meta["namespace"], meta["name"], body, self.settings.field_manager
            )
        return requeue


def unanswered(host: str, path: str) -> urllib3.exceptions.MaxRetryError:
    """What urllib3 raises when the apiserver at ``host`` does not answer a request for
    ``path`` (made, never sent: nothing connects)."""
    url = urllib3.util.parse_url(host)
    host_port = (url.host or "127.0.0.1", url.port or 443)
    pool = urllib3.HTTPSConnectionPool(*host_port)
    refused = urllib3.exceptions.NewConnectionError(
        urllib3.connection.HTTPSConnection(*host_port),
        "Failed to establish a new connection: [Errno 111] Connection refused",
    )
    return urllib3.exceptions.MaxRetryError(pool, path, refused)


class DiesUncaught(Controller):
    """Its loop catches only ApiException, as a Python dispatcher's may: at its first
    escalation (its first writes went through) the apiserver does not answer, urllib3's
    MaxRetryError escapes, and the process ends as an uncaught exception ends Python:
    its traceback, exit code 1. The replica's exit must be said at once, and every check
    decided after it must carry the exit in its message."""

    def __init__(self, *args: Any, die: Callable[[int], None] = os._exit, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.die = die

    def _write(
        self, p: Plan, d: Any, workload: Mapping[str, Any], before: list[str], *args: Any
    ) -> float | None:
        if before and adds_copies(before, d.nominees):
            meta = workload["metadata"]
            path = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{meta['namespace']}/workloads/"
            raise unanswered(str(self.kube.api.configuration.host), path + meta["name"])
        return super()._write(p, d, workload, before, *args)

    def reconcile(self, key: str) -> float | None:
        try:
            return super().reconcile(key)
        except urllib3.exceptions.MaxRetryError:
            traceback.print_exc()  # what the interpreter prints for an uncaught exception
            sys.stderr.flush()
            self.die(1)
            raise
