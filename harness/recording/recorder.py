"""The timeline recorder: watches every cluster and turns changes into events.

One watch thread per (cluster, resource). Each keeps the last seen state of every
object and emits events for what changed (the pure functions of changes.py), re-lists
after a watch expires (410) and keeps retrying while an apiserver is down, synthesising
deletions for objects that vanished meanwhile. The manager's audit log is tailed, and
each entry read by audit_log.py: the writes a dispatcher made, including rejected or
no-op ones, its lists and watches of Workloads (when a restarted dispatcher is back),
and the requests authorization refused it (a privilege it lacks).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes.client.rest import ApiException

from harness.cluster import faults
from harness.cluster.environment import Cluster, Environment
from harness.cluster.multikueue import API
from harness.recording.audit_log import audit_events, parse_wall, per_pod_user
from harness.recording.changes import (
    MULTIKUEUE_CHECK_CONTROLLER,
    Change,
    cluster_changes,
    config_changes,
    job_changes,
    key_of,
    manager_workload_changes,
    preemptor_uid,
    provisioning_changes,
    worker_workload_changes,
)
from harness.recording.timeline import MANAGER, Event, Kind, Timeline

log = logging.getLogger(__name__)
PREBUILT_WORKLOAD = "kueue.x-k8s.io/prebuilt-workload-name"


# ------------------------------------------------------------------ the watcher


FAULT_LIST_ALLOWANCE = 60.0


def list_timeout(clusters: int, faults_injected: bool = False) -> float:
    """How long a recorder may take to list everything it watches: every cluster adds its
    lists to the same process, so 30 s plus 2 s per cluster; while faults are injected a
    watched apiserver may be restarting, which on a loaded machine takes longer than a
    list, so 60 s more."""
    return 30.0 + 2.0 * clusters + (FAULT_LIST_ALLOWANCE if faults_injected else 0.0)


@dataclass(frozen=True)
class Watched:
    """One resource to watch on one cluster and how to read its changes."""

    cluster: Cluster
    api_version: str
    kind: str
    derive: Callable[[dict[str, Any] | None, dict[str, Any] | None], list[Change]]
    workload_of: Callable[[dict[str, Any]], str]  # "" for environment objects
    on_object: Callable[[str, dict[str, Any] | None], None] | None = None


class Recorder:
    """Records one environment's timeline until stopped."""

    def __init__(
        self,
        env: Environment,
        *,
        dispatcher_users: Iterable[str] = (),
        audit_from: int = 0,
        pod_users: bool = False,
    ) -> None:
        self.env = env
        self.audit_from = audit_from  # the audit log before it is earlier runs'
        self.timeline = Timeline()
        self.dispatcher_users = set(dispatcher_users)
        self.pod_users = pod_users  # replicas share one account: per_pod_user tells them apart
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._synced: set[str] = set()
        self._copy_uids: dict[tuple[str, str], str] = {}  # (worker, uid) -> workload key
        self._mk_checks: set[str] = set()  # names of MultiKueue AdmissionChecks
        self._wall_offset = time.monotonic() - time.time()

    # the workload key of things on workers
    @staticmethod
    def _job_workload(obj: dict[str, Any]) -> str:
        meta = obj.get("metadata") or {}
        name = (meta.get("annotations") or {}).get(PREBUILT_WORKLOAD) or (
            meta.get("labels") or {}
        ).get(PREBUILT_WORKLOAD)
        return f"{meta.get('namespace', '')}/{name}" if name else ""

    @staticmethod
    def _owner_workload(obj: dict[str, Any]) -> str:
        meta = obj.get("metadata") or {}
        for ref in meta.get("ownerReferences") or []:
            if ref.get("kind") == "Workload":
                return f"{meta.get('namespace', '')}/{ref.get('name')}"
        return ""

    def _watches(self) -> list[Watched]:
        m = self.env.manager
        out = [
            Watched(
                m,
                API,
                "AdmissionCheck",
                lambda _o, _n: [],
                lambda _o: "",
                self._admission_check_seen,
            ),
            Watched(
                m,
                API,
                "Workload",
                lambda o, n: manager_workload_changes(o, n, self._mk_checks),
                key_of,
            ),
            Watched(m, API, "MultiKueueCluster", cluster_changes, lambda _o: ""),
            Watched(m, API, "MultiKueueConfig", config_changes, lambda _o: ""),
        ]
        for w in self.env.workers:
            out += [
                Watched(
                    w,
                    API,
                    "Workload",
                    worker_workload_changes,
                    key_of,
                    self._worker_workload_seen(w),
                ),
                Watched(w, "batch/v1", "Job", job_changes, self._job_workload),
                Watched(
                    w,
                    "autoscaling.x-k8s.io/v1",
                    "ProvisioningRequest",
                    provisioning_changes,
                    self._owner_workload,
                ),
            ]
        return out

    def _admission_check_seen(self, key: str, obj: dict[str, Any] | None) -> None:
        if obj and (obj.get("spec") or {}).get("controllerName") == MULTIKUEUE_CHECK_CONTROLLER:
            self._mk_checks.add(obj["metadata"]["name"])

    def _worker_workload_seen(
        self, worker: Cluster
    ) -> Callable[[str, dict[str, Any] | None], None]:
        def seen(key: str, obj: dict[str, Any] | None) -> None:
            if obj is None:
                return
            self._copy_uids[(worker.name, obj["metadata"].get("uid", ""))] = key
            uid = preemptor_uid(obj)
            preemptor = self._copy_uids.get((worker.name, uid or ""))
            if preemptor and not self._preemption_seen(worker.name, preemptor, key):
                self.emit(
                    Event(
                        time.monotonic(), worker.name, Kind.PREEMPTION, preemptor, {"victim": key}
                    )
                )

        return seen

    def _preemption_seen(self, worker: str, preemptor: str, victim: str) -> bool:
        return any(
            e.kind == Kind.PREEMPTION
            and e.cluster == worker
            and e.workload == preemptor
            and e.victim == victim
            for e in self.timeline
        )

    # ------------------------------------------------------------- lifecycle

    def start(self, timeout: float | None = None) -> Recorder:
        """Start every watch and wait until each has listed (default: list_timeout)."""
        if timeout is None:
            injected = (self.env.run_dir / faults.LOG_FILE).exists()
            timeout = list_timeout(len(self.env.clusters), faults_injected=injected)
        watches = self._watches()
        for w in watches:
            t = threading.Thread(
                target=self._watch_loop,
                args=(w,),
                name=f"rec-{w.cluster.name}-{w.kind}",
                daemon=True,
            )
            t.start()
            self._threads.append(t)
        tails = {"rec-faults": (self.env.run_dir / faults.LOG_FILE, self._fault_line, 0)}
        audit = self.env.info.get("auditLog")
        if audit:
            tails["rec-audit"] = (Path(audit), self._audit_line, self.audit_from)
        for name, (path, on_line, start) in tails.items():
            t = threading.Thread(
                target=self._tail, args=(path, on_line, start), name=name, daemon=True
            )
            t.start()
            self._threads.append(t)
        names = {f"{w.cluster.name}/{w.kind}" for w in watches}
        deadline = time.monotonic() + timeout
        while not names <= self._synced:
            if time.monotonic() > deadline:
                raise TimeoutError(f"recorder could not list {sorted(names - self._synced)}")
            time.sleep(0.05)
        return self

    def stop(self, wait: float = 1.0) -> None:
        """Stop every watch and tail; wait at most `wait` seconds in all for them. A watch
        ends at its next event or its 5 s server-side timeout; the threads are daemons,
        so one still reading when its process exits holds nothing up."""
        self._stop.set()
        deadline = time.monotonic() + wait
        for t in self._threads:
            t.join(timeout=max(deadline - time.monotonic(), 0.0))

    def emit(self, event: Event) -> None:
        with self._lock:
            self.timeline.append(event)

    def users(self) -> frozenset[str]:
        """The dispatcher users, with the per-Pod ones seen so far."""
        with self._lock:
            return frozenset(self.dispatcher_users)

    def mark(self, what: str, workload: str = "", **data: Any) -> Event:
        """Record something the harness did (an ACTION event) and return it."""
        event = Event(time.monotonic(), MANAGER, Kind.ACTION, workload, {"what": what, **data})
        self.emit(event)
        return event

    def now(self) -> float:
        return time.monotonic()

    def snapshot(self, namespace: str | None = None) -> Timeline:
        """A copy of the timeline, optionally only one namespace's workloads (+ environment)."""
        with self._lock:
            events = list(self.timeline)
        if namespace is None:
            return Timeline(events)
        prefix = f"{namespace}/"
        return Timeline(e for e in events if not e.workload or e.workload.startswith(prefix))

    # ------------------------------------------------------------ watching

    def _cluster_label(self, cluster: Cluster) -> str:
        return MANAGER if cluster.role == "manager" else cluster.name

    def _watch_loop(self, w: Watched) -> None:
        known: dict[str, dict[str, Any]] = {}
        label = self._cluster_label(w.cluster)
        backoff = 0.2
        while not self._stop.is_set():
            try:
                resource = w.cluster.resource(w.api_version, w.kind)
                listing = resource.get().to_dict()
                seen = {key_of(o): o for o in listing.get("items") or []}
                for key in list(known):  # vanished while we were not watching
                    if key not in seen:
                        self._observe(w, label, key, known.pop(key), None)
                for key, obj in seen.items():
                    self._observe(w, label, key, known.get(key), obj)
                    known[key] = obj
                self._synced.add(f"{w.cluster.name}/{w.kind}")
                backoff = 0.2
                rv = listing["metadata"].get("resourceVersion")
                while not self._stop.is_set():
                    for ev in resource.watch(resource_version=rv, timeout=5):
                        obj = ev["raw_object"]
                        if ev["type"] == "ERROR":
                            raise _Expired()
                        rv = obj["metadata"].get("resourceVersion", rv)
                        if ev["type"] == "BOOKMARK":
                            continue
                        key = key_of(obj)
                        new = None if ev["type"] == "DELETED" else obj
                        self._observe(w, label, key, known.get(key), new)
                        if new is None:
                            known.pop(key, None)
                        else:
                            known[key] = new
                        if self._stop.is_set():
                            return
            except _Expired:
                continue
            except TimeoutError:  # the kind is not served here (e.g. a CRD not installed)
                self._synced.add(f"{w.cluster.name}/{w.kind}")
                self._stop.wait(2)
            except ApiException as exc:
                if exc.status == 404:
                    self._synced.add(f"{w.cluster.name}/{w.kind}")
                    self._stop.wait(2)
                    continue
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 2.0)
            except Exception:  # connection refused while an apiserver is stopped, etc.
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 2.0)

    def _observe(
        self, w: Watched, label: str, key: str, old: dict | None, new: dict | None
    ) -> None:
        now = time.monotonic()
        if w.on_object is not None:
            w.on_object(key, new)
        changes = w.derive(old, new)
        if not changes:
            return
        workload = w.workload_of(new or old or {})
        for kind, data in changes:
            self.emit(Event(now, label, kind, workload, data))

    def _tail(self, path: Path, on_line: Callable[[str], None], position: int = 0) -> None:
        """Follow a file another process appends whole lines to (it may not exist yet),
        from byte `position` on."""
        while not self._stop.is_set():
            try:
                with path.open() as f:
                    f.seek(position)
                    for line in f:
                        if not line.endswith("\n"):
                            break
                        position += len(line.encode())
                        on_line(line)
            except FileNotFoundError:
                pass
            self._stop.wait(0.2)

    def _fault_line(self, line: str) -> None:
        """An injected environment fault began or ended: an ACTION on the cluster it hit."""
        r = faults.Record(**json.loads(line))
        data: dict[str, Any] = {"what": faults.ACTION, "fault": r.fault, "target": r.target}
        data |= {"phase": r.phase, "id": r.id, "says": r.says}
        cluster = r.target if any(c.name == r.target for c in self.env.workers) else MANAGER
        self.emit(Event(r.t, cluster, Kind.ACTION, "", data))

    def _audit_line(self, line: str) -> None:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            return
        stamp = entry.get("requestReceivedTimestamp") or entry.get("stageTimestamp")
        t = parse_wall(stamp) + self._wall_offset if stamp else time.monotonic()
        if self.pod_users:
            user = per_pod_user(entry, self.dispatcher_users)
            if user is not None:
                entry["user"] = {**entry["user"], "username": user}
                with self._lock:
                    self.dispatcher_users.add(user)
        for kind, key, data in audit_events(entry, self.dispatcher_users):
            self.emit(Event(t, MANAGER, kind, key, data))


class _Expired(Exception):
    """The watch's resourceVersion is too old: re-list."""
