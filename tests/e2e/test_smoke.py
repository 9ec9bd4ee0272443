"""Smoke: a Job submitted to the manager runs on exactly one worker and completes.

Runs once per built-in dispatcher, one after the other on one small local environment
(the manager's Kueue restarted with the next dispatcherName, as between the runs of a
plan), with the timeline recorder watching every cluster so that "exactly one worker" is
seen while it happens (MultiKueue removes the worker's Job once the workload finishes).
"""

from __future__ import annotations

import pytest

from harness.cluster import kube
from harness.cluster.environment import Environment
from harness.profile import DISPATCHER_ALL_AT_ONCE, DISPATCHER_INCREMENTAL
from harness.providers.local import LocalProvider, running
from harness.recording.recorder import Recorder
from harness.recording.timeline import Kind
from harness.scenarios import workloads

NS = QUEUE = "mkdc"


@pytest.mark.e2e
def test_job_runs_on_exactly_one_worker_under_each_built_in_dispatcher(selected_versions) -> None:
    dispatchers = [DISPATCHER_ALL_AT_ONCE, DISPATCHER_INCREMENTAL]
    provider = LocalProvider(selected_versions, workers=2, dispatcher_name=dispatchers[0])
    with running(provider) as env:
        for i, dispatcher in enumerate(dispatchers):
            provider.hand_over(dispatcher, env)
            assert Environment.load(env.run_dir).dispatcher_name == dispatcher
            assert dispatcher in _configuration_kueue_loaded_last(env)
            _job_runs_on_exactly_one_worker(env, f"smoke-{i}")


def _configuration_kueue_loaded_last(env: Environment) -> str:
    """What the manager's Kueue logged it loaded at its latest start (its own word that
    it serves the new dispatcherName, not ours)."""
    log = (env.run_dir / "logs" / "manager-kueue.log").read_text(errors="replace")
    return [line for line in log.splitlines() if "Configuration loaded" in line][-1]


def _job_runs_on_exactly_one_worker(env: Environment, job: str) -> None:
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


def _not_yet():
    raise kube.NotYet("not yet")
