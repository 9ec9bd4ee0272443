"""The reference dispatcher as a process on a real manager, with its least-privilege
identity: it places a Job and says why, in an Event on the Workload that core/v1 readers
(``kubectl describe workload``) see."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from harness.cluster import identity, kube, kueue_install
from harness.cluster.procs import Supervisor
from harness.providers.local import LocalProvider, running
from harness.scenarios import workloads

NS = QUEUE = "mkdc"
NAME = "mkdc.example/reference"


@pytest.mark.e2e
def test_reference_nominates_and_explains_in_an_event(selected_versions, tmp_path: Path) -> None:
    provider = LocalProvider(
        selected_versions,
        workers=1,
        dispatcher_name=NAME,
        write_mode=kueue_install.ADMISSION_POLICY,
    )
    with running(provider) as env:
        [creds] = identity.create(env.manager, kueue_install.NAMESPACE, 1, tmp_path, {})
        kubeconfig = creds.kubeconfig
        supervisor = Supervisor(tmp_path)
        argv = [sys.executable, "-m", "dispatchers.reference", "--kubeconfig", str(kubeconfig)]
        argv += ["--dispatcher-name", NAME, "--write-mode", "admission-policy"]
        argv += ["--no-leader-elect", "--metrics-port", "0"]
        supervisor.start("dispatcher", argv, cwd=Path.cwd())
        try:
            workloads.submit(env.manager, workloads.job("explained", NS, QUEUE))
            workload = kube.wait_for(
                "the workload to be placed",
                lambda: _placed(workloads.workload_for_job(env.manager, NS, "explained")),
                timeout=90,
            )
            name = workload["metadata"]["name"]
            events = kube.wait_for(
                "the dispatcher's Event",
                lambda: _dispatcher_events(env.manager.api, name),
                timeout=30,
            )
        finally:
            supervisor.stop_all()
    assert events[0].reason == "Nominated"
    assert events[0].involved_object.kind == "Workload"
    assert events[0].involved_object.uid == workload["metadata"]["uid"]
    assert env.workers[0].name in (events[0].message or ""), events[0].message


def _placed(workload: dict[str, Any]) -> dict[str, Any]:
    if not (workload.get("status") or {}).get("clusterName"):
        raise kube.NotYet("not placed")
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
