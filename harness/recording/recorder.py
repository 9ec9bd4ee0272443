"""The timeline recorder: watches every cluster and turns changes into events.

One watch thread per (cluster, resource). Each keeps the last seen state of every
object and emits events for what changed (pure functions below, unit-tested),
re-lists after a watch expires (410) and keeps retrying while an apiserver is down,
synthesising deletions for objects that vanished meanwhile. The manager's audit
log is tailed for the writes a dispatcher made, including rejected or no-op ones,
for its lists and watches of Workloads (when a restarted dispatcher is back), and for
the requests authorization refused it (a privilege it lacks).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes.client.rest import ApiException

from harness.cluster import faults, kube
from harness.cluster.environment import Cluster, Environment
from harness.cluster.multikueue import API
from harness.recording.timeline import MANAGER, Event, Kind, Timeline

log = logging.getLogger(__name__)
MULTIKUEUE_CHECK_CONTROLLER = "kueue.x-k8s.io/multikueue"
PREBUILT_WORKLOAD = "kueue.x-k8s.io/prebuilt-workload-name"
_UID_IN_MESSAGE = re.compile(r"UID: ([0-9a-f-]{36})")

Change = tuple[Kind, dict[str, Any]]


# ------------------------------------------------------------ pure derivations


def key_of(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _cond(obj: dict[str, Any] | None, kind: str) -> bool:
    return bool(obj) and kube.condition_true(obj, kind)  # type: ignore[arg-type]


def _status(obj: dict[str, Any] | None) -> dict[str, Any]:
    return (obj or {}).get("status") or {}


def nomination_writer(obj: dict[str, Any]) -> str | None:
    """The field manager that owns .status.nominatedClusterNames, from managedFields."""
    for entry in (obj.get("metadata") or {}).get("managedFields") or []:
        status = (entry.get("fieldsV1") or {}).get("f:status") or {}
        if "f:nominatedClusterNames" in status:
            return entry.get("manager")
    return None


def multikueue_check_state(obj: dict[str, Any], mk_checks: Iterable[str]) -> str | None:
    """State of the workload's MultiKueue admission check (one of `mk_checks`)."""
    names = set(mk_checks)
    for check in _status(obj).get("admissionChecks") or []:
        if check.get("name") in names:
            return check.get("state")
    return None


def manager_workload_changes(
    old: dict[str, Any] | None, new: dict[str, Any] | None, mk_checks: Iterable[str] = ()
) -> list[Change]:
    """Events for one manager Workload going from `old` to `new` (None = absent)."""
    if new is None:
        return [(Kind.WORKLOAD_DELETED, {})] if old is not None else []
    out: list[Change] = []
    if old is None:
        out.append((Kind.WORKLOAD_CREATED, {"uid": new["metadata"].get("uid")}))
    before, after = _status(old), _status(new)
    names = list(after.get("nominatedClusterNames") or [])
    if names != list(before.get("nominatedClusterNames") or []):
        out.append(
            (Kind.NOMINATION, {"names": names, "writer": nomination_writer(new) if names else None})
        )
    if after.get("clusterName", "") != before.get("clusterName", ""):
        out.append((Kind.PLACEMENT, {"cluster": after.get("clusterName") or ""}))
    if _cond(new, "QuotaReserved") != _cond(old, "QuotaReserved"):
        out.append((Kind.QUOTA_RESERVED, {"reserved": _cond(new, "QuotaReserved")}))
    state = multikueue_check_state(new, mk_checks)
    if state != (multikueue_check_state(old, mk_checks) if old else None):
        out.append((Kind.CHECK_STATE, {"state": state}))
    if _cond(new, "Evicted") and not _cond(old, "Evicted"):
        out.append(
            (Kind.EVICTED, {"reason": (kube.condition(new, "Evicted") or {}).get("reason", "")})
        )
    if _cond(new, "Finished") and not _cond(old, "Finished"):
        out.append((Kind.FINISHED, {}))
    return out


def worker_workload_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[Change]:
    """Events for a workload on a worker (a MultiKueue copy or a local workload)."""
    if new is None:
        return [(Kind.COPY_DELETED, {})] if old is not None else []
    out: list[Change] = []
    if old is None:
        out.append((Kind.COPY_CREATED, {}))
    if _cond(new, "QuotaReserved") != _cond(old, "QuotaReserved"):
        out.append((Kind.COPY_RESERVED, {"reserved": _cond(new, "QuotaReserved")}))
    if _cond(new, "Admitted") and not _cond(old, "Admitted"):
        out.append((Kind.COPY_ADMITTED, {}))
    if _cond(new, "Evicted") and not _cond(old, "Evicted"):
        out.append(
            (
                Kind.COPY_EVICTED,
                {"reason": (kube.condition(new, "Evicted") or {}).get("reason", "")},
            )
        )
    return out


def preemptor_uid(obj: dict[str, Any]) -> str | None:
    """UID of the workload that preempted `obj`, read from its Preempted/Evicted message."""
    for kind in ("Preempted", "Evicted"):
        cond = kube.condition(obj, kind) or {}
        if cond.get("status") == "True" and (
            kind == "Preempted" or cond.get("reason") == "Preempted"
        ):
            m = _UID_IN_MESSAGE.search(cond.get("message") or "")
            if m:
                return m.group(1)
    return None


def job_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[Change]:
    if new is None:
        return [(Kind.JOB_DELETED, {})] if old is not None else []
    out: list[Change] = []
    if old is None:
        out.append((Kind.JOB_CREATED, {}))
    active, was = _status(new).get("active") or 0, _status(old).get("active") or 0
    if active and not was:
        out.append((Kind.JOB_RUNNING, {"active": active}))
    for kind in ("Complete", "Failed"):
        if _cond(new, kind) and not _cond(old, kind):
            out.append((Kind.JOB_FINISHED, {"condition": kind}))
    return out


def provisioning_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[Change]:
    name = ((new or old) or {}).get("metadata", {}).get("name", "")
    if new is None:
        return [(Kind.PROVREQ_DELETED, {"name": name})] if old is not None else []
    out: list[Change] = []
    if old is None:
        out.append((Kind.PROVREQ_CREATED, {"name": name}))
    for state in ("Provisioned", "Failed", "BookingExpired", "CapacityRevoked"):
        if _cond(new, state) and not _cond(old, state):
            out.append((Kind.PROVREQ_STATE, {"name": name, "state": state}))
    return out


def cluster_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[Change]:
    name = ((new or old) or {}).get("metadata", {}).get("name", "")
    active = _cond(new, "Active")
    if (old is None and new is not None) or active != _cond(old, "Active"):
        return [(Kind.CLUSTER_ACTIVE, {"cluster": name, "active": active})]
    return []


def config_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[Change]:
    name = ((new or old) or {}).get("metadata", {}).get("name", "")
    clusters = list(((new or {}).get("spec") or {}).get("clusters") or [])
    if old is None or clusters != list((old.get("spec") or {}).get("clusters") or []):
        return [(Kind.CONFIG_CHANGED, {"config": name, "clusters": clusters})]
    return []


def _username(entry: dict[str, Any]) -> str:
    return str((entry.get("user") or {}).get("username", ""))


POD_NAME_EXTRA = "authentication.kubernetes.io/pod-name"


def per_pod_user(entry: dict[str, Any], accounts: Collection[str]) -> str | None:
    """`<account> (pod <name>)` for a request of one of `accounts` made with a Pod's bound
    token (which names its Pod in the audit's user.extra), else None: the replicas of a
    vendor's Deployment share its ServiceAccount, and the checks tell them apart."""
    user = entry.get("user") or {}
    pods = (user.get("extra") or {}).get(POD_NAME_EXTRA) or []
    if user.get("username") not in accounts or not pods:
        return None
    return f"{user['username']} (pod {pods[0]})"


def pod_of(user: str) -> str | None:
    """The Pod a per-Pod user names (per_pod_user), else None."""
    head, sep, tail = user.rpartition(" (pod ")
    return tail.rstrip(")") if sep and head else None


# (verb, stage) of the reads recorded: a watch when its response starts (its completion
# comes when it ends)
READ_REQUESTS = (
    ("list", "ResponseComplete"),
    ("watch", "ResponseStarted"),
    ("get", "ResponseComplete"),
)


def audit_read(entry: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(workload key, READ data) for an audit entry that reads Workloads, else None: a list
    or a started watch of them (key ""), what a dispatcher back after a restart does; a
    GET of one (its key, its status too), what tells a dispatcher that re-reads after a
    refused write from one that retries from its cache."""
    ref = entry.get("objectRef") or {}
    verb, name = entry.get("verb"), ref.get("name")
    if ref.get("resource") != "workloads" or (verb, entry.get("stage")) not in READ_REQUESTS:
        return None
    if (verb == "get" and not name) or (verb != "get" and ref.get("subresource")):
        return None
    key = f"{ref.get('namespace', '')}/{name}" if verb == "get" else ""
    return key, {"user": _username(entry), "verb": verb}


WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")
AUTHZ_DECISION = "authorization.k8s.io/decision"


def audit_write(entry: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(workload key, WRITE data) for an audit entry that writes a Workload, else None.
    A refused write keeps the apiserver's (or Kueue's webhook's) message."""
    ref = entry.get("objectRef") or {}
    if ref.get("resource") != "workloads" or entry.get("stage") != "ResponseComplete":
        return None
    if entry.get("verb") not in WRITE_VERBS:  # reads are logged too (audit_read)
        return None
    key = f"{ref.get('namespace', '')}/{ref.get('name', '')}"
    status = entry.get("responseStatus") or {}
    data = {
        "user": _username(entry),
        "verb": entry.get("verb", ""),
        "subresource": ref.get("subresource", ""),
        "code": int(status.get("code") or 0),
    }
    if data["code"] >= 400 and status.get("message"):
        data["message"] = str(status["message"])[:500]
    request = entry.get("requestObject")
    status = request.get("status") if isinstance(request, dict) else None
    if isinstance(status, dict) and isinstance(status.get("nominatedClusterNames"), list):
        # what was asked for: a rejected write (e.g. too many names) leaves no other trace
        data["names"] = [str(n) for n in status["nominatedClusterNames"]]
    return key, data


def audit_forbidden(entry: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(workload key or "", FORBIDDEN data) for a request authorization refused, else None.
    A webhook's denial is also a 403, but it is not a missing privilege (see audit_write)."""
    annotations = entry.get("annotations") or {}
    code = int((entry.get("responseStatus") or {}).get("code") or 0)
    if code != 403 or annotations.get(AUTHZ_DECISION) != "forbid":
        return None
    if entry.get("stage") not in ("ResponseComplete", "ResponseStarted", "Panic"):
        return None
    ref = entry.get("objectRef") or {}
    group = ref.get("apiGroup") or "core"
    resource = "/".join(p for p in (group, ref.get("resource"), ref.get("subresource")) if p)
    namespace, name = ref.get("namespace", ""), ref.get("name", "")
    data = {
        "user": _username(entry),
        "verb": entry.get("verb", ""),
        "resource": resource,
        "namespace": namespace,
        "name": name,
    }
    workload = f"{namespace}/{name}" if ref.get("resource") == "workloads" and name else ""
    return workload, data


def audit_events(
    entry: dict[str, Any], dispatcher_users: set[str] | frozenset[str]
) -> list[tuple[Kind, str, dict[str, Any]]]:
    """(kind, workload key, data) of what one audit entry says about the dispatcher: a
    READ (a list or watch of Workloads; a GET of one is that workload's), a WRITE (refused
    ones too), a FORBIDDEN. Others' reads and refusals tell nothing
    about it; without known dispatcher users every write counts (a built-in dispatcher)."""
    out: list[tuple[Kind, str, dict[str, Any]]] = []
    forbidden = audit_forbidden(entry)
    if forbidden is not None and forbidden[1]["user"] in dispatcher_users:
        out.append((Kind.FORBIDDEN, *forbidden))
    read = audit_read(entry)
    if read is not None and read[1]["user"] in dispatcher_users:
        out.append((Kind.READ, *read))
    written = audit_write(entry)
    if written is not None and (not dispatcher_users or written[1]["user"] in dispatcher_users):
        out.append((Kind.WRITE, *written))
    return out


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
        t = _parse_wall(stamp) + self._wall_offset if stamp else time.monotonic()
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


def _parse_wall(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
