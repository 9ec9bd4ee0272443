"""Hand-made reports shaped like a real run's: every check of the catalogue, timelines,
a scorecard with per-scenario figures, findings and privileges, in the outcomes a report
must be valid in (passed, failed, errored, interrupted)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from harness.recording.timeline import MANAGER, Event, Kind, Timeline
from harness.report import CheckResult, Finding, Report, core_ids
from harness.results import DispatcherActions
from harness.suite import catalogue

CORE = core_ids(catalogue())  # the core checks' IDs, in catalogue order

WL = "ns-1/job-<b>&x"

ENVIRONMENT: dict[str, Any] = {
    "provider": "local",
    "kubernetesVersion": "v1.36.3",
    "kueueVersion": "v0.19.2",
    "workers": 4,
    "nominationWriteMode": "admission-policy",
    "workerNames": ["worker1", "worker2", "worker3", "worker4"],
    "dispatcherRun": "pod environment",
    "clusterScope": "per-scenario",
    "shape": {
        "resource": "cpu",
        "flavor": "default-flavor",
        "workerClusterQueue": "per scenario",
        "workerKubeconfigSecret": "{cluster}-kubeconfig",
        "priorityClasses": ["mkdc-low", "mkdc-high"],
    },
    "kueueApiVersion": "any served",
    "wallSeconds": 297.6,
}
IMPLEMENTATION = {
    "organization": "Example",
    "project": "example dispatcher",
    "version": "1.2.3",
    "url": "https://example.invalid/dispatcher",
}
CLAIMS: dict[str, Any] = {
    "stepSize": 1,
    "roundTimeout": 10.0,
    "maxConcurrentProvisioning": None,
    "ordering": "tiers",
    "features": ["BoundedFanOut", "Escalation", "Ordering", "PerClusterTimeout"],
}
TIMEOUTS = {
    "placement_slack": 60.0,
    "escalation_slack": 3.0,
    "early_tolerance": 1.0,
    "roundTimeout": 10.0,
}
SCENARIOS = (
    "bounded-duplicate-admission",
    "bounded-fan-out",
    "bounded-preemption",
    "burst-liveness",
    "config-change-honoured",
    "eventual-placement",
    "foreign-workloads-untouched",
    "inactive-clusters",
    "leader-failover",
    "no-nomination-after-placement",
    "no-simultaneous-autoscaling",
    "ordered-dispatch",
    "per-cluster-timeout",
    "provisioning-failover",
    "redispatch-after-eviction",
    "restart-resilience",
    "timeout-escalation",
)
FINDING = Finding(
    "nominated-outside-config",
    "Nominated clusters that are in no MultiKueueConfig of the workload",
    "nominated w9; the config had w2, w3",
    ("single-execution-1a2b",),
    ("CORE-05",),
)


def timeline() -> Timeline:
    """One workload's story on three workers: nominated, copied, preempting, placed."""
    return Timeline(
        [
            Event(0.0, MANAGER, Kind.CLUSTER_ACTIVE, "", {"cluster": "w4", "active": False}),
            Event(1.0, MANAGER, Kind.WORKLOAD_CREATED, WL),
            Event(1.5, MANAGER, Kind.NOMINATION, WL, {"names": ["w1", "w2"], "writer": "ref"}),
            Event(2.0, "w1", Kind.COPY_CREATED, WL),
            Event(2.1, "w1", Kind.PROVREQ_CREATED, WL, {"name": "pr"}),
            Event(3.0, "w1", Kind.PROVREQ_STATE, WL, {"name": "pr", "state": "Failed"}),
            Event(3.1, "w1", Kind.PROVREQ_DELETED, WL, {"name": "pr"}),
            Event(2.0, "w2", Kind.COPY_CREATED, WL),
            Event(11.0, MANAGER, Kind.ACTION, "", {"what": "restart dispatcher"}),
            Event(11.5, MANAGER, Kind.NOMINATION, WL, {"names": ["w1", "w2", "w3"]}),
            Event(12.0, "w3", Kind.COPY_CREATED, WL),
            Event(12.1, "w3", Kind.PREEMPTION, WL, {"victim": "ns-1/low"}),
            Event(12.2, "w3", Kind.COPY_RESERVED, WL, {"reserved": True}),
            Event(12.3, "w3", Kind.COPY_ADMITTED, WL),
            Event(12.5, MANAGER, Kind.PLACEMENT, WL, {"cluster": "w3"}),
            Event(12.6, "w1", Kind.COPY_DELETED, WL),
            Event(12.6, "w2", Kind.COPY_DELETED, WL),
            Event(13.0, "w3", Kind.JOB_CREATED, WL),
            Event(20.0, "w3", Kind.JOB_FINISHED, WL, {"condition": "Complete"}),
        ]
    )


def scenario_card(i: int) -> dict[str, Any]:
    """One scenario's scorecard as the run writes it (percentiles as {p50, p99})."""
    placed = i % 4 != 1
    return {
        "peakConcurrentCopies": 1 + i % 4,
        "peakConcurrentProvisioningRequests": i % 3,
        "peakConcurrentReservations": 1 + i % 2,
        "workersWithPreemptions": i % 2,
        "workloads": 1 + i,
        "placedWorkloads": 1 + i if placed else 0,
        "nominationWrites": 2 + 3 * i,
        "copiesCreated": 1 + 2 * i,
        "copiesDeleted": i,
        "timeToFirstNominationSeconds": {"p50": 0.0771 + i / 100, "p99": 0.0771 + i / 50},
        "timeToPlacementSeconds": (
            {"p50": 0.286 + i, "p99": 1.5 + i} if placed else {"p50": None, "p99": None}
        ),
        "nominationWritesPerPlacement": round((2 + 3 * i) / (1 + i), 3) if placed else None,
        "copiesCreatedPerPlacement": round((1 + 2 * i) / (1 + i), 3) if placed else None,
        "copiesDeletedPerPlacement": round(i / (1 + i), 3) if placed else None,
    }


def scorecard() -> dict[str, Any]:
    """The run's scorecard: the contract's figures, the totals, and one card per scenario."""
    return {
        "peakConcurrentCopies": 4,
        "peakConcurrentProvisioningRequests": 3,
        "peakConcurrentReservations": 3,
        "workersWithPreemptions": 1,
        "timeToFirstNominationSeconds": {"p50": 0.726, "p99": 1.631},
        "timeToPlacementSeconds": {"p50": 49.31, "p99": 61.536},
        "nominationWritesPerPlacement": 5.617,
        "workloads": 117,
        "placedWorkloads": 115,
        "nominationWrites": 646,
        "copiesCreated": 221,
        "copiesDeleted": 104,
        "scenarios": len(SCENARIOS),
        "copiesCreatedPerPlacement": 1.922,
        "copiesDeletedPerPlacement": 0.904,
        "perScenario": {name: scenario_card(i) for i, name in enumerate(SCENARIOS)},
    }


FAILED = {
    "CORE-05": "2 workers ran a Job of ns-1/job at once: w1 from t=3.0s, w3 from t=13.0s",
    "EXT-01": "4 copies at t=2.0s, claim allows 2",
}
UNDECIDED = {"CORE-07": "undecided: CORE-05 failed in this scenario: t=3.0s second Job"}


def checks(
    failed: dict[str, str] | None = None,
    undecided: dict[str, str] | None = None,
    not_run: tuple[str, ...] = (),
) -> list[CheckResult]:
    """Every check of the catalogue, each with a timeline: the given ones failed or
    undecided, EXT-12 not supported, those in `not_run` absent, the rest passed."""
    failed = FAILED if failed is None else failed
    undecided = UNDECIDED if undecided is None else undecided
    out = []
    for cid, (name, _feature, _bounds) in catalogue().items():
        if cid in not_run:
            continue
        if cid == "EXT-12":
            out.append(CheckResult(cid, name, "not-supported"))
            continue
        result, message = "passed", ""
        if cid in failed:
            result, message = "failed", failed[cid]
        elif cid in undecided:
            result, message = "undecided", undecided[cid]
        measured: dict[str, Any] = {"boundSeconds": 70.0}
        if cid == "CORE-09":
            measured["timeToPlacementSeconds"] = {"p50": 51.164, "p99": 61.536}
        out.append(CheckResult(cid, name, result, message, 11.6, timeline(), measured))
        if result == "failed":
            out[-1].dispatcher_actions = ACTIONS
    return out


ACTIONS = DispatcherActions(
    lines=(
        "after the workload was evicted from w1 at t=3.0s it wrote nothing for 150.0s "
        "(to t=153.0s); its last write, at t=2.1s, was [w1] (w1, the cluster that evicted it)",
        "in all, 1 write(s) to 1 workload(s) up to t=153.0s (1 of the nomination list: [w1])",
    ),
    summary="after the workload was evicted from w1 at t=3.0s it wrote nothing for 150.0s",
    writes=1,
    nomination_writes=1,
    workloads=(WL,),
    last_write=2.1,
    until=153.0,
)
EXIT = {
    "process": "dispatcher-0",
    "replica": 0,
    "code": 1,
    "cause": "urllib3.exceptions.MaxRetryError: HTTPSConnectionPool(host='127.0.0.1')",
    "atSeconds": 133.2,
    "log": "artifacts/logs/dispatcher-0.log",
}


def report(checks_: list[CheckResult] | None = None, **kw: Any) -> Report:
    """A report of a whole run (two failures, one undecided check, by default)."""
    fields: dict[str, Any] = {
        "implementation": dict(IMPLEMENTATION),
        "environment": dict(ENVIRONMENT),
        "claims": dict(CLAIMS),
        "timeouts": dict(TIMEOUTS),
        "scorecard": scorecard(),
        "findings": [FINDING],
        "privileges": ["get, list, watch secrets in kueue-system"],
        "date": dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC),
    }
    fields.update(kw)
    given = checks() if checks_ is None else checks_
    return Report("vendor", "example.com/vendor", given, **fields, catalogue=catalogue())


def outcomes() -> dict[str, Report]:
    """A report for every way a run ends: all passed, failed, the dispatcher could not be
    judged (error), and interrupted (checks undecided, core checks never run)."""
    error = "the dispatcher could not be judged: it exited with code 3 at start"
    return {
        "passed": report(checks({}, {})),
        "failed": report(dispatcher_exits=[EXIT]),
        "error": report([], error=error, timeouts={}, scorecard={}, findings=[]),
        "interrupted": report(checks({}, UNDECIDED, not_run=(*CORE[7:], "EXT-09"))),
    }
