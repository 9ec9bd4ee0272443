"""The timeline: every observation about a workload, on every cluster, as one event.

Checks are pure functions over a Timeline, so they are unit-tested on hand-made
timelines and evaluated on recorded ones with the same code.
"""

from __future__ import annotations

import enum
import heapq
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

MANAGER = "manager"


class Kind(enum.StrEnum):
    """What was observed. Manager-side kinds have cluster == MANAGER."""

    # manager Workload
    WORKLOAD_CREATED = "WorkloadCreated"
    NOMINATION = "Nomination"  # data: names (list[str]), writer (field manager or None)
    PLACEMENT = "Placement"  # data: cluster (clusterName set; "" when cleared)
    QUOTA_RESERVED = "QuotaReserved"  # manager-side reservation (data: reserved bool)
    CHECK_STATE = "CheckState"  # data: state of the MultiKueue admission check
    EVICTED = "Evicted"  # manager workload evicted (data: reason)
    FINISHED = "Finished"
    WORKLOAD_DELETED = "WorkloadDeleted"
    # API requests seen in the manager's audit log
    WRITE = "Write"  # data: user, verb, subresource, code (int), changed (bool)
    READ = "Read"  # a dispatcher listed or watched Workloads (environment), or got one: user, verb
    # a dispatcher request that authorization refused (403; environment unless a Workload):
    # data: user, verb, resource (group/resource[/subresource]), namespace, name
    FORBIDDEN = "Forbidden"
    # worker copies
    COPY_CREATED = "CopyCreated"
    COPY_RESERVED = "CopyReserved"  # data: reserved (bool)
    COPY_ADMITTED = "CopyAdmitted"
    COPY_EVICTED = "CopyEvicted"  # data: reason
    COPY_DELETED = "CopyDeleted"
    # worker jobs and pods
    JOB_CREATED = "JobCreated"
    JOB_RUNNING = "JobRunning"  # data: active (int)
    JOB_FINISHED = "JobFinished"  # data: condition ("Complete" | "Failed")
    JOB_DELETED = "JobDeleted"
    # autoscaling
    PROVREQ_CREATED = "ProvisioningRequestCreated"  # data: name
    PROVREQ_STATE = "ProvisioningRequestState"  # data: name, state
    PROVREQ_DELETED = "ProvisioningRequestDeleted"  # data: name
    PREEMPTION = "Preemption"  # on a worker: data: victim (ns/name)
    # environment
    CLUSTER_ACTIVE = "ClusterActive"  # manager: data: cluster, active (bool)
    CONFIG_CHANGED = "ConfigChanged"  # manager: data: config, clusters (list[str])
    ACTION = "Action"  # what the harness did: data: what, plus details
    # a dispatcher replica exited by itself (not the harness's kill): data: process, code
    # (None when unknown), cause (the line of its log that says why), log
    DISPATCHER_EXITED = "DispatcherExited"


@dataclass(frozen=True)
class Event:
    """One observation. `t` is monotonic seconds; `workload` is the manager key ns/name."""

    t: float
    cluster: str
    kind: Kind
    workload: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    # Typed views of `data`; which kind carries what is listed on Kind. A kind that does
    # not carry a field reads as empty (None, "", 0, [] or False).

    @property
    def names(self) -> list[str]:
        """NOMINATION, and a WRITE of nominations: the cluster names written."""
        return list(self.data.get("names") or [])

    @property
    def writer(self) -> str | None:
        """NOMINATION: the field manager that wrote it, when known."""
        return self.data.get("writer")

    @property
    def user(self) -> str:
        """WRITE, READ, FORBIDDEN: who made the request (the audit log's user)."""
        return str(self.data.get("user") or "")

    @property
    def verb(self) -> str:
        """WRITE, READ, FORBIDDEN: the request's verb (create, patch, list, ...)."""
        return str(self.data.get("verb") or "")

    @property
    def code(self) -> int:
        """WRITE: the HTTP status the apiserver answered."""
        return int(self.data.get("code") or 0)

    @property
    def message(self) -> str:
        """WRITE: the apiserver's reason, for a refused write."""
        return str(self.data.get("message") or "")

    @property
    def subresource(self) -> str:
        """WRITE: "status" for a status write, "" for the object."""
        return str(self.data.get("subresource") or "")

    @property
    def about_cluster(self) -> str:
        """The cluster the event is about, not where it was seen (`cluster`): PLACEMENT,
        where the workload was placed ("" when cleared); CLUSTER_ACTIVE, which cluster."""
        return str(self.data.get("cluster") or "")

    @property
    def cluster_active(self) -> bool | None:
        """CLUSTER_ACTIVE: whether the MultiKueueCluster is active."""
        return self.data.get("active")

    @property
    def reserved(self) -> bool:
        """QUOTA_RESERVED, COPY_RESERVED: whether quota is reserved."""
        return bool(self.data.get("reserved"))

    @property
    def state(self) -> str | None:
        """CHECK_STATE, PROVREQ_STATE: the state reached."""
        return self.data.get("state")

    @property
    def clusters(self) -> list[str]:
        """CONFIG_CHANGED: the clusters the config lists now."""
        return list(self.data.get("clusters") or [])

    @property
    def config(self) -> str | None:
        """CONFIG_CHANGED: which MultiKueueConfig."""
        return self.data.get("config")

    @property
    def cause(self) -> str:
        """DISPATCHER_EXITED: why, quoted from its log."""
        return str(self.data.get("cause") or "")

    @property
    def what(self) -> str:
        """ACTION: what the harness did."""
        return str(self.data.get("what") or "")

    @property
    def request_name(self) -> str:
        """PROVREQ_*: the ProvisioningRequest's name."""
        return str(self.data.get("name") or "")

    @property
    def victim(self) -> str | None:
        """PREEMPTION: the preempted workload (ns/name)."""
        return self.data.get("victim")

    @property
    def condition(self) -> str | None:
        """JOB_FINISHED: "Complete" or "Failed"."""
        return self.data.get("condition")

    def to_dict(self) -> dict[str, Any]:
        return {
            "t": round(self.t, 3),
            "cluster": self.cluster,
            "kind": self.kind.value,
            "workload": self.workload,
            "data": dict(self.data),
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Event:
        return cls(
            t=float(raw["t"]),
            cluster=raw["cluster"],
            kind=Kind(raw["kind"]),
            workload=raw.get("workload", ""),
            data=dict(raw.get("data") or {}),
        )


class Timeline:
    """An append-only, time-ordered list of events with the queries checks need."""

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self._events: list[Event] = sorted(events, key=lambda e: e.t)
        # positions of each workload's events, built at the first ``of``: a check or a wait
        # that asks for each of 100 workloads in turn would otherwise scan every event 100
        # times (the burst scenario's wait polls that way twice a second)
        self._positions: dict[str, list[int]] | None = None

    def append(self, event: Event) -> None:
        self._positions = None
        if self._events and event.t < self._events[-1].t:
            self._events.append(event)
            self._events.sort(key=lambda e: e.t)
        else:
            self._events.append(event)

    def __iter__(self) -> Iterator[Event]:
        return iter(list(self._events))

    def __len__(self) -> int:
        return len(self._events)

    def of(self, workload: str) -> Timeline:
        """Events of one workload plus environment events (which have no workload)."""
        if self._positions is None:
            positions: dict[str, list[int]] = {}
            for i, e in enumerate(self._events):
                positions.setdefault(e.workload, []).append(i)
            self._positions = positions
        own = self._positions.get(workload, [])
        shared = self._positions.get("", []) if workload else []
        out = Timeline()
        out._events = [self._events[i] for i in heapq.merge(own, shared)]
        return out

    def where(self, *kinds: Kind, cluster: str | None = None) -> list[Event]:
        return [
            e for e in self._events if e.kind in kinds and (cluster is None or e.cluster == cluster)
        ]

    def where_placed(self) -> list[Event]:
        """PLACEMENT events that set a cluster (not the clearing ones)."""
        return [e for e in self.where(Kind.PLACEMENT) if e.about_cluster]

    def where_nominated(self) -> list[list[str]]:
        """The non-empty nomination lists, in order."""
        return [e.names for e in self.where(Kind.NOMINATION) if e.names]

    def stuck_eviction(self, now: float, grace: float) -> Event | None:
        """The manager EVICTED event whose quota Kueue has not released ``grace`` seconds
        later (no QUOTA_RESERVED reserved=False after it), if any. Kueue releases it within
        a second; one it keeps cannot be dispatched again by anyone."""
        for evicted in self.where(Kind.EVICTED):
            released = any(
                e.t >= evicted.t and not e.reserved for e in self.where(Kind.QUOTA_RESERVED)
            )
            if not released and now - evicted.t > grace:
                return evicted
        return None

    def action(self, what: str, after: float = -math.inf) -> Event | None:
        """The first ACTION ``what`` at or after ``after``."""
        return next((e for e in self.where(Kind.ACTION) if e.what == what and e.t >= after), None)

    def outages(self, process: str) -> list[tuple[float, float]]:
        """(down, back) of each time the harness took a manager ``process`` out (its
        ``<process>-down`` and ``<process>-back`` ACTIONs); back is inf while it stayed out."""
        out, after = [], -math.inf
        while (down := self.action(f"{process}-down", after)) is not None:
            back = self.action(f"{process}-back", down.t)
            out.append((down.t, back.t if back else math.inf))
            if back is None:
                break
            after = math.nextafter(back.t, math.inf)
        return out

    def where_writes(self) -> list[Event]:
        """API writes attributed to a user (from the audit log)."""
        return [e for e in self.where(Kind.WRITE) if e.user]

    def workloads(self) -> list[str]:
        seen: dict[str, None] = {}
        for e in self._events:
            if e.workload:
                seen.setdefault(e.workload)
        return list(seen)

    def to_list(self) -> list[dict[str, Any]]:
        return [e.to_dict() for e in self._events]

    @classmethod
    def from_list(cls, raw: list[dict[str, Any]]) -> Timeline:
        return cls(Event.from_dict(r) for r in raw)
