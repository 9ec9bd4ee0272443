"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it.

Why a Lease: two replicas must not both write nominations (they would fight over rounds).
Expiry is judged by the *local* clock from when this process last saw the lease record
change (client-go's observedTime), never by comparing renewTime with our wall clock, so
clock skew between replicas cannot make a live leader look expired. Optimistic
concurrency (resourceVersion on replace) makes takeover a compare-and-swap: of two
candidates only one wins. The API calls go through a small adapter so the logic is
unit-tested with a fake clock and a fake store.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kubernetes.client import V1Lease, V1LeaseSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeaseRecord:
    holder: str
    duration: int  # seconds
    transitions: int = 0
    acquire_time: str = ""
    renew_time: str = ""
    resource_version: str = ""


class Conflict(Exception):
    """The lease changed (or appeared) since it was read."""


class LeaseStore(Protocol):
    def get(self) -> LeaseRecord | None: ...
    def create(self, record: LeaseRecord) -> LeaseRecord: ...
    def update(self, record: LeaseRecord) -> LeaseRecord: ...


def micro_time(epoch: float) -> str:
    """RFC 3339 with exactly six fractional digits, as MicroTime requires."""
    stamp = dt.datetime.fromtimestamp(epoch, dt.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Call ``tick`` every ``retry_period``; ``is_leader`` says whether writes are allowed."""

    def __init__(
        self,
        store: LeaseStore,
        identity: str,
        duration: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        renew_deadline: float | None = None,
    ) -> None:
        self.store, self.identity = store, identity
        self.duration = max(int(round(duration)), 1)
        self.renew_deadline = renew_deadline if renew_deadline is not None else duration * 2 / 3
        self.retry_period = max(self.duration / 5, 0.5)
        self._clock, self._wall = clock, wall
        self._observed: LeaseRecord | None = None
        self._observed_at = 0.0
        self._renewed_at: float | None = None  # local time of our last successful renew

    @property
    def is_leader(self) -> bool:
        """Leader only while our last renewal is younger than the renew deadline."""
        if self._renewed_at is None:
            return False
        return self._clock() - self._renewed_at < self.renew_deadline

    def tick(self) -> bool:
        """One acquire-or-renew attempt; returns ``is_leader`` afterwards."""
        try:
            self._try()
        except Conflict:
            log.info("lease changed under us; will re-read", extra={"lease": self.identity})
        return self.is_leader

    def _try(self) -> None:
        now, wall = self._clock(), self._wall()
        current = self.store.get()
        if current is None:
            record = LeaseRecord(
                self.identity, self.duration, 0, micro_time(wall), micro_time(wall)
            )
            self._won(self.store.create(record), now)
            return
        if self._observed is None or _changed(current, self._observed):
            self._observed, self._observed_at = current, now
        ours = current.holder == self.identity
        expired = now - self._observed_at >= current.duration
        if not ours and current.holder and not expired:
            self._renewed_at = None
            return
        record = LeaseRecord(
            self.identity,
            self.duration,
            current.transitions if ours else current.transitions + 1,
            current.acquire_time if ours else micro_time(wall),
            micro_time(wall),
            current.resource_version,
        )
        self._won(self.store.update(record), now)

    def _won(self, record: LeaseRecord, now: float) -> None:
        if not self.is_leader:
            log.info("became leader", extra={"identity": self.identity})
        self._observed, self._observed_at, self._renewed_at = record, now, now

    def release(self) -> None:
        """Give the lease up on a clean exit so a standby takes over without waiting."""
        if not self.is_leader or self._observed is None:
            return
        try:
            record = self._observed
            wall = micro_time(self._wall())
            released = LeaseRecord("", 1, record.transitions, "", wall, record.resource_version)
            self.store.update(released)
        except Exception as err:  # best effort: the lease expires anyway
            log.info("could not release lease: %s", err)
        self._renewed_at = None


def _changed(a: LeaseRecord, b: LeaseRecord) -> bool:
    return (a.holder, a.renew_time, a.transitions, a.resource_version) != (
        b.holder,
        b.renew_time,
        b.transitions,
        b.resource_version,
    )


class KubeLeaseStore:
    """LeaseStore over CoordinationV1Api; 409 (and 422 on create race) become Conflict."""

    def __init__(self, api: Any, name: str, namespace: str) -> None:
        from kubernetes import client

        self.api = client.CoordinationV1Api(api)
        self.name, self.namespace = name, namespace

    def get(self) -> LeaseRecord | None:
        from kubernetes.client.rest import ApiException

        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        spec = _spec(lease)
        return LeaseRecord(
            spec.holder_identity or "",
            spec.lease_duration_seconds or 1,
            spec.lease_transitions or 0,
            micro_time(spec.acquire_time.timestamp()) if spec.acquire_time else "",
            micro_time(spec.renew_time.timestamp()) if spec.renew_time else "",
            _resource_version(lease),
        )

    def create(self, record: LeaseRecord) -> LeaseRecord:
        return self._write(record, create=True)

    def update(self, record: LeaseRecord) -> LeaseRecord:
        return self._write(record, create=False)

    def _write(self, record: LeaseRecord, create: bool) -> LeaseRecord:
        from kubernetes.client.rest import ApiException

        spec: dict[str, Any] = {
            "holderIdentity": record.holder or None,
            "leaseDurationSeconds": record.duration,
            "leaseTransitions": record.transitions,
            "renewTime": record.renew_time or None,
            "acquireTime": record.acquire_time or None,
        }
        meta: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if record.resource_version:
            meta["resourceVersion"] = record.resource_version
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta}
        body["spec"] = spec
        try:
            # The client validates a plain dict into a V1Lease; its hints only say V1Lease.
            if create:
                lease = self.api.create_namespaced_lease(self.namespace, body)  # type: ignore[arg-type]
            else:
                lease = self.api.replace_namespaced_lease(self.name, self.namespace, body)  # type: ignore[arg-type]
        except ApiException as err:
            if err.status in (409, 422) or (create and err.status == 409):
                raise Conflict(str(err.reason)) from None
            raise
        return LeaseRecord(
            record.holder,
            record.duration,
            record.transitions,
            record.acquire_time,
            record.renew_time,
            _resource_version(lease),
        )


def _spec(lease: V1Lease) -> V1LeaseSpec:
    """The lease's spec, which the apiserver always returns (it is not optional in Go)."""
    if lease.spec is None:
        raise ValueError("the apiserver returned a Lease without a spec")
    return lease.spec


def _resource_version(lease: V1Lease) -> str:
    """metadata.resourceVersion, which the apiserver sets on every object it returns."""
    if lease.metadata is None:
        raise ValueError("the apiserver returned a Lease without metadata")
    return lease.metadata.resource_version or ""
