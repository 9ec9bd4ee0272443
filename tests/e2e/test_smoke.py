"""Smoke: a Job submitted to the manager runs on exactly one worker and completes.

Under each built-in dispatcher, then under the reference dispatcher as a process with its
least-privilege identity, one after the other on one small local environment (the
manager's Kueue restarted with the next dispatcherName, as between the runs of a plan).
The timeline recorder watches every cluster so that "exactly one worker" is seen while it
happens (MultiKueue removes the worker's Job once the workload finishes). The reference
also says why it nominated, in an Event on the Workload that core/v1 readers
(``kubectl describe workload``) see.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from harness.cluster import identity, kube, kueue_install, workloads
from harness.cluster.environment import Environment
from harness.cluster.procs import Supervisor
from harness.profile import DISPATCHER_ALL_AT_ONCE, DISPATCHER_INCREMENTAL
from harness.providers.local import LocalProvider, running
from harness.recording.recorder import Recorder
from harness.recording.timeline import Kind

NS = QUEUE = "mkdc"
REFERENCE = "mkdc.example/reference"


@pytest.mark.e2e
def test_a_job_runs_on_exactly_one_worker_under_each_dispatcher_in_turn(
    selected_versions, tmp_path: Path
) -> None:
    built_ins = [DISPATCHER_ALL_AT_ONCE, DISPATCHER_INCREMENTAL]
    provider = LocalProvider(
        selected_versions,
        workers=2,
        dispatcher_name=built_ins[0],
        write_mode=kueue_install.ADMISSION_POLICY,  # the one the reference is started with
    )
    with running(provider) as env:
        for i, dispatcher in enumerate(built_ins):
            _hand_over(provider, env, dispatcher)
            _job_runs_on_exactly_one_worker(env, f"smoke-{i}")
        _hand_over(provider, env, REFERENCE)
        [creds] = identity.create(env.manager, kueue_install.NAMESPACE, 1, tmp_path, {})
        argv = [
            sys.executable,
            "-m",
            "dispatchers.reference",
            "--kubeconfig",
            str(creds.kubeconfig),
        ]
        argv += ["--dispatcher-name", REFERENCE, "--write-mode", "admission-policy"]
        argv += ["--no-leader-elect", "--metrics-port", "0"]
        supervisor = Supervisor(tmp_path)
        supervisor.start("dispatcher", argv, cwd=Path.cwd())
        try:
            workload = _job_runs_on_exactly_one_worker(env, "explained")
            events = kube.wait_for(
                "the dispatcher's Event",
                lambda: _dispatcher_events(env.manager.api, workload["metadata"]["name"]),
                timeout=30,
            )
        finally:
            supervisor.stop_all()
    assert events[0].reason == "Nominated"
    assert events[0].involved_object.kind == "Workload"
    assert events[0].involved_object.uid == workload["metadata"]["uid"]
    assert workload["status"]["clusterName"] in (events[0].message or ""), events[0].message


def _hand_over(provider: LocalProvider, env: Environment, dispatcher: str) -> None:
    provider.hand_over(dispatcher, env)
    assert Environment.load(env.run_dir).dispatcher_name == dispatcher
    assert dispatcher in _configuration_kueue_loaded_last(env)


def _configuration_kueue_loaded_last(env: Environment) -> str:
    """What the manager's Kueue logged it loaded at its latest start (its own word that
    it serves the new dispatcherName, not ours)."""
    log = (env.run_dir / "logs" / "manager-kueue.log").read_text(errors="replace")
    return [line for line in log.splitlines() if "Configuration loaded" in line][-1]


def _job_runs_on_exactly_one_worker(env: Environment, job: str) -> dict[str, Any]:
    """The finished Job's Workload, once its whole timeline has been checked."""
    recorder = Recorder(env).start()
    try:
        workloads.submit(env.manager, workloads.job(job, NS, QUEUE))
        state = kube.wait_for(
            "the manager's Job to finish",
            lambda: workloads.job_finished(env.manager, NS, job) or _not_yet(),
            timeout=120,
        )
        workload = workloads.workload_for_job(env.manager, NS, job)
        key = f"{NS}/{workload['metadata']['name']}"
        kube.wait_for(
            "the workload's Finished event",
            lambda: recorder.snapshot().of(key).where(Kind.FINISHED) or _not_yet(),
            timeout=30,
        )
        # read again: the Job can finish before Kueue marks its Workload Finished
        workload = workloads.workload_for_job(env.manager, NS, job)
    finally:
        recorder.stop()
    assert state == "Complete"
    placed_on = workload["status"].get("clusterName")
    assert placed_on in {w.name for w in env.workers}
    assert kube.condition_true(workload, "Finished")
    timeline = recorder.snapshot().of(key)
    ran_on = {e.cluster for e in timeline.where(Kind.JOB_CREATED)}
    assert ran_on == {placed_on}, f"worker Jobs on {sorted(ran_on)}, placed on {placed_on}"
    finished = timeline.where(Kind.JOB_FINISHED)
    assert [(e.cluster, e.condition) for e in finished] == [(placed_on, "Complete")]
    assert any(e.names for e in timeline.where(Kind.NOMINATION)), "no nomination recorded"
    return workload


def _dispatcher_events(api: client.ApiClient, workload: str) -> list[client.CoreV1Event]:
    items = (
        client.CoreV1Api(api)
        .list_namespaced_event(NS, field_selector=f"involvedObject.name={workload}")
        .items
    )
    events = [e for e in items if e.reporting_component == "mkdc-reference-dispatcher"]
    if not events:
        raise kube.NotYet("no Event yet")
    return events


def _not_yet():
    raise kube.NotYet("not yet")
