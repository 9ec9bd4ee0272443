"""A small builder for hand-made timelines, so a test reads like the story it tells.

    story = Story().created(0).nominate(1, "w1").copy(2, "w1").place(5, "w1")
    verdict = check.evaluate(story.timeline(), bounds)

Every method appends one event (or a few, for `copy(..., until=)`) and returns the
builder. Manager events are on MANAGER; worker events on the named worker.
"""

from __future__ import annotations

from typing import Any

from harness.recording.timeline import MANAGER, Event, Kind, Timeline

WL = "ns/wl"


class Story:
    """Events of one workload (`workload`), plus environment events (workload "")."""

    def __init__(self, workload: str = WL) -> None:
        self.workload = workload
        self.events: list[Event] = []

    def add(
        self,
        t: float,
        kind: Kind,
        cluster: str = MANAGER,
        /,
        *,
        of: str | None = None,
        **data: Any,
    ) -> Story:
        """Append one event; `of` overrides the workload ("" for environment events)."""
        self.events.append(Event(t, cluster, kind, self.workload if of is None else of, data))
        return self

    def env(self, t: float, kind: Kind, **data: Any) -> Story:
        return self.add(t, kind, MANAGER, of="", **data)

    # manager workload
    def created(self, t: float) -> Story:
        return self.add(t, Kind.WORKLOAD_CREATED)

    def nominate(self, t: float, *names: str, writer: str | None = "mkdc") -> Story:
        return self.add(t, Kind.NOMINATION, names=list(names), writer=writer)

    def place(self, t: float, cluster: str) -> Story:
        return self.add(t, Kind.PLACEMENT, cluster=cluster)

    def evicted(self, t: float, reason: str = "Preempted") -> Story:
        return self.add(t, Kind.EVICTED, reason=reason)

    def finished(self, t: float) -> Story:
        return self.add(t, Kind.FINISHED)

    def write(
        self,
        t: float,
        user: str,
        verb: str = "patch",
        subresource: str = "status",
        code: int = 200,
        changed: bool = True,
        workload: str | None = None,
        names: list[str] | None = None,
    ) -> Story:
        extra = {} if names is None else {"names": names}
        return self.add(
            t,
            Kind.WRITE,
            of=workload,
            user=user,
            verb=verb,
            subresource=subresource,
            code=code,
            changed=changed,
            **extra,
        )

    # worker copies, jobs, autoscaling
    def copy(self, t: float, cluster: str, until: float | None = None) -> Story:
        self.add(t, Kind.COPY_CREATED, cluster)
        return self.delete_copy(until, cluster) if until is not None else self

    def delete_copy(self, t: float, cluster: str) -> Story:
        return self.add(t, Kind.COPY_DELETED, cluster)

    def quota_reserved(self, t: float) -> Story:
        """The manager's Kueue reserved the workload's quota (a dispatcher may act)."""
        return self.add(t, Kind.QUOTA_RESERVED, reserved=True)

    def released(self, t: float) -> Story:
        """The manager's quota reservation released (an eviction, a deactivation)."""
        return self.add(t, Kind.QUOTA_RESERVED, reserved=False)

    def check_state(self, t: float, state: str) -> Story:
        """The workload's MultiKueue admission check reached `state`."""
        return self.add(t, Kind.CHECK_STATE, state=state)

    def reserve(self, t: float, cluster: str, reserved: bool = True) -> Story:
        return self.add(t, Kind.COPY_RESERVED, cluster, reserved=reserved)

    def admitted(self, t: float, cluster: str) -> Story:
        """The worker's Kueue admitted the copy (it won; the manager records it later)."""
        return self.add(t, Kind.COPY_ADMITTED, cluster)

    def copy_evicted(self, t: float, cluster: str) -> Story:
        return self.add(t, Kind.COPY_EVICTED, cluster, reason="Preempted")

    def job(self, t: float, cluster: str, until: float | None = None) -> Story:
        self.add(t, Kind.JOB_CREATED, cluster)
        return self.add(until, Kind.JOB_DELETED, cluster) if until is not None else self

    def job_finished(self, t: float, cluster: str, condition: str = "Complete") -> Story:
        return self.add(t, Kind.JOB_FINISHED, cluster, condition=condition)

    def provreq(self, t: float, cluster: str, until: float | None = None) -> Story:
        name = f"pr-{cluster}"
        self.add(t, Kind.PROVREQ_CREATED, cluster, name=name)
        if until is not None:
            self.add(until, Kind.PROVREQ_DELETED, cluster, name=name)
        return self

    def provreq_state(self, t: float, cluster: str, state: str) -> Story:
        return self.add(t, Kind.PROVREQ_STATE, cluster, name=f"pr-{cluster}", state=state)

    def preempt(self, t: float, cluster: str, victim: str = "ns/local") -> Story:
        return self.add(t, Kind.PREEMPTION, cluster, victim=victim)

    # environment
    def active(self, t: float, cluster: str, active: bool) -> Story:
        return self.env(t, Kind.CLUSTER_ACTIVE, cluster=cluster, active=active)

    def config(self, t: float, *clusters: str) -> Story:
        return self.env(t, Kind.CONFIG_CHANGED, config="cfg", clusters=list(clusters))

    def read(self, t: float, user: str, verb: str = "list") -> Story:
        """A dispatcher's list or watch of Workloads (from the audit log)."""
        return self.env(t, Kind.READ, user=user, verb=verb)

    def action(self, t: float, what: str, **data: Any) -> Story:
        return self.env(t, Kind.ACTION, what=what, **data)

    def mark(self, t: float) -> Story:
        """An environment event that only extends the observation to t."""
        return self.action(t, "observe")

    def timeline(self) -> Timeline:
        return Timeline(self.events)
