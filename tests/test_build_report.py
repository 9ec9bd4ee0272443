"""Folding result records into the report: the worst result per check (undecided between
failed and passed) and the findings across scenarios."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from harness.cluster.environment import Environment
from harness.cluster.probes import Target
from harness.orchestrate.kubelet import Kubelet, Usage
from harness.orchestrate.options import Options
from harness.orchestrate.outcome import Dispatched, Outcome
from harness.orchestrate.report_builder import build_report, replica_entries
from harness.profile import load_profile
from suites.checks import Bounds
from tests.timelines import Story

ENV = cast(  # what build_report reads of the environment
    Environment,
    SimpleNamespace(
        provider="local",
        kubernetes_version="v1.36.3",
        kueue_version="v0.19.2",
        workers=[SimpleNamespace(name=f"w{i}") for i in range(4)],
        nomination_write_mode="admission-policy",
        info={},
    ),
)
RAN = Outcome(started=0.0, ended=1.0)  # a run of one second, nothing more to say


def write(
    results: Path, n: int, check: str, scenario: str, result: str, story: Story, **extra: Any
) -> None:
    record: dict[str, Any] = {
        "check": check,
        "scenario": scenario,
        "result": result,
        "message": "" if result == "passed" else f"{result}: why",
        "timeline": story.timeline().to_list(),
        "origin": 100.0,
        "observedUntil": 50.0,
        "config": [f"{scenario}-w2", f"{scenario}-w3"],
        "dispatcherUsers": ["me"],
        **extra,
    }
    (results / f"{n}.json").write_text(json.dumps(record))


def test_undecided_folds_between_failed_and_passed_and_findings_come_along(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results"
    results.mkdir()
    blind = Story("a/wl").created(0).nominate(1, "worker1")
    write(results, 1, "CORE-01", "a", "failed", blind)
    write(results, 2, "CORE-03", "a", "undecided", blind)
    write(results, 3, "CORE-03", "b", "passed", Story("b/wl").created(0))
    run = Options("reference", checks=("CORE-01", "CORE-03"))
    report = build_report(load_profile("reference"), ENV, tmp_path, run, RAN)
    results_by_id = {c.id: c.result for c in report.checks}
    assert results_by_id == {"CORE-01": "failed", "CORE-03": "undecided"}
    assert [f.id for f in report.findings] == ["nominated-outside-config"]
    assert report.findings[0].checks == ("CORE-01", "CORE-03")
    assert report.summary()["undecided"] == 1


def test_timeouts_and_shape_do_not_depend_on_which_record_sorts_first(tmp_path: Path) -> None:
    """Not-supported records carry no timeouts or shape, and their files sort first (in a
    run "collection-..." before the scenarios' "test_..."); the report still has the run's."""
    results = tmp_path / "results"
    results.mkdir()
    (results / "1.json").write_text(
        json.dumps(
            {
                "check": "EXT-05",
                "scenario": "collection",
                "result": "not-supported",
                "message": "the profile does not claim escalation",
            }
        )
    )
    profile = load_profile("all-at-once")
    opts = Options("all-at-once", slacks={"placement_slack": "90s"})
    timeouts = {**Bounds.derive({}, (), opts.slacks).slacks(), "roundTimeout": None}
    shape = {
        "resource": "cpu",
        "flavor": "default-flavor",
        "workerClusterQueue": "per scenario",
        "workerKubeconfigSecret": "{cluster}-kubeconfig",
        "priorityClasses": ["mkdc-low", "mkdc-high"],
    }
    story = Story("b/wl").created(0)
    write(results, 2, "CORE-07", "b", "passed", story, timeouts=timeouts, shape=shape)
    report = build_report(profile, ENV, tmp_path, opts, RAN)
    assert report.timeouts == timeouts
    assert report.timeouts["placement_slack"] == 90.0 and report.timeouts["burst_slack"] == 60.0
    assert report.environment["shape"] == shape


def test_invalid_slacks_leave_the_timeouts_empty_instead_of_losing_the_report(
    tmp_path: Path,
) -> None:
    (tmp_path / "results").mkdir()
    opts = Options("reference", slacks={"no_such_slack": "1s"})
    report = build_report(load_profile("reference"), ENV, tmp_path, opts, RAN)
    assert report.timeouts == {}


def test_a_check_no_scenario_recorded_is_undecided_not_absent(tmp_path: Path) -> None:
    """A scenario whose marker was lost records nothing: the report must not drop the
    check silently, whether core or extended, while unclaimed and filtered ones stay out."""
    results = tmp_path / "results"
    results.mkdir()
    write(results, 1, "CORE-01", "a", "passed", Story("a/wl").created(0))
    run = Options("reference", checks=("CORE-01", "CORE-04", "EXT-05", "EXT-12"))
    report = build_report(load_profile("reference"), ENV, tmp_path, run, RAN)
    by_id = {c.id: c for c in report.checks}
    assert {i: c.result for i, c in by_id.items()} == {
        "CORE-01": "passed",
        "CORE-04": "undecided",
        "EXT-05": "undecided",  # claimed (Escalation): it should have been decided
    }  # EXT-12: HighAvailability not claimed by this profile; the rest filtered out
    assert "no scenario of this run recorded a result" in by_id["EXT-05"].message


def test_after_an_interrupt_the_checks_not_decided_say_so(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    write(results, 1, "CORE-01", "a", "passed", Story("a/wl").created(0))
    run = Options("reference", checks=("CORE-01", "CORE-03"))
    report = build_report(
        load_profile("reference"), ENV, tmp_path, run, Outcome(0.0, 1.0, interrupted="SIGINT")
    )
    by_id = {c.id: c for c in report.checks}
    assert by_id["CORE-01"].result == "passed" and by_id["CORE-03"].result == "undecided"
    assert by_id["CORE-03"].message == (
        "undecided: the run was interrupted (SIGINT) before a scenario decided it"
    )


def idle(replicas: int) -> Kubelet:
    """A kubelet with nothing running to probe or sample."""
    return Kubelet(None, replicas, lambda r: None, lambda r, w: None, lambda r: Target(None))


def test_each_replica_on_this_host_is_reported_with_its_identity_restarts_and_peaks() -> None:
    kubelet = idle(2)
    kubelet.usage = {0: Usage(memory=2**20, cpu=0.5, samples=3), 1: Usage(samples=1)}
    runner = SimpleNamespace(
        kubelet=kubelet,
        users={0: (65534, 65534), 1: None},
        run=SimpleNamespace(account="vendor"),
        profile=SimpleNamespace(run=object()),
        process_name=lambda r: f"dispatcher-{r}",
    )
    unsampled = SimpleNamespace(kubelet=idle(1))
    watch = SimpleNamespace(restarts={1: 2})
    entries = replica_entries(
        [Dispatched(runner, watch), Dispatched(unsampled), Dispatched()]  # type: ignore[arg-type]
    )
    assert entries == [
        {
            "process": "dispatcher-0",
            "environment": 1,
            "identity": "system:serviceaccount:kueue-system:vendor-0",
            "user": 65534,
            "restarts": 0,
            "peakMemoryBytes": 2**20,
            "peakCpuCores": 0.5,
        },
        {
            "process": "dispatcher-1",
            "environment": 1,
            "identity": "system:serviceaccount:kueue-system:vendor-1",
            "user": None,
            "restarts": 2,
            "peakMemoryBytes": 0,
            "peakCpuCores": 0.0,
        },
    ]  # a runner whose replicas were never sampled (Pods on a cluster) has no rows


def test_the_report_says_what_the_outcome_says_and_only_that(tmp_path: Path) -> None:
    """Built once from the run's outcome: its environments, the faults injected (timed from
    the run's start) and those that could not be, the replicas' network, the exits."""
    from harness.cluster.faults import Window

    (tmp_path / "results").mkdir()
    profile, opts = load_profile("reference"), Options("reference", checks=("CORE-01",))
    plain = build_report(profile, ENV, tmp_path, opts, RAN).environment
    assert not {"environments", "injectedFaults", "replicaNetwork", "replicas"} & set(plain)
    exit_event = {"process": "dispatcher-0", "replica": 0, "code": 2, "elapsedSeconds": 4.0}
    outcome = Outcome(
        started=100.0,
        ended=130.0,
        dispatched=(Dispatched(replica_network="the host's (why)"), Dispatched()),
        injected=(Window("kueue-crash", "manager", "Kueue crashed", 110.0, 115.5),),
        faults_not_injected=("worker-etcd: not here",),
        exits=(exit_event,),
    )
    report = build_report(profile, ENV, tmp_path, opts, outcome)
    environment = report.environment
    assert environment["environments"] == 2 and environment["wallSeconds"] == 30.0
    assert environment["replicaNetwork"] == "the host's (why)"
    assert environment["injectedFaults"] == [
        {
            "fault": "kueue-crash",
            "target": "manager",
            "what": "Kueue crashed",
            "startSeconds": 10.0,
            "endSeconds": 15.5,
        }
    ]
    assert environment["faultsNotInjected"] == ["worker-etcd: not here"]
    assert [(e["process"], e["code"], e["atSeconds"]) for e in report.dispatcher_exits] == [
        ("dispatcher-0", 2, 4.0)
    ]
