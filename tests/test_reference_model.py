"""The reference dispatcher's reading rules: routes, the pending predicate, failures."""

from __future__ import annotations

import copy

import pytest

from dispatchers.reference import model
from tests.test_reference_fixtures import cond, snapshot, workload

SNAP = snapshot()


def route(wl):
    return model.route_of(wl, SNAP["localqueues"], SNAP["clusterqueues"], SNAP["admissionchecks"])


def test_route_from_admission_or_local_queue() -> None:
    assert route(workload()) == model.Route("mkdc", "mk", "cfg")
    wl = workload()
    del wl["status"]["admission"]  # not reserved yet: via spec.queueName -> LocalQueue
    assert route(wl) == model.Route("mkdc", "mk", "cfg")
    plain = workload(admission={"clusterQueue": "plain"})
    assert route(plain) is None


def test_other_controllers_checks_are_not_multikueue() -> None:
    check = {"spec": {"controllerName": "kueue.x-k8s.io/provisioning-request"}}
    assert model.multikueue_config_of(check) is None


def test_pending_multikueue_work() -> None:
    wl = workload()
    assert model.not_pending_because(wl, route(wl)) is None


def _mutations():
    def placed(wl):
        wl["status"]["clusterName"] = "w1"

    def finished(wl):
        wl["status"]["conditions"].append(cond("Finished"))

    def evicted(wl):
        wl["status"]["conditions"].append(cond("Evicted", reason="AdmissionCheck"))

    def no_quota(wl):
        wl["status"]["conditions"][0]["status"] = "False"

    def deleting(wl):
        wl["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"

    def check_ready(wl):
        wl["status"]["admissionChecks"][0]["state"] = "Ready"

    def no_check_state(wl):
        wl["status"]["admissionChecks"] = []

    return {
        "placed": (placed, "placed on w1"),
        "finished": (finished, "finished"),
        "evicted": (evicted, "evicted"),
        "no quota": (no_quota, "no quota"),
        "deleting": (deleting, "deleted"),
        "check ready": (check_ready, "is Ready"),
        "no check state": (no_check_state, "no state"),
    }


@pytest.mark.parametrize("name", list(_mutations()))
def test_everything_else_is_left_alone(name: str) -> None:
    mutate, why = _mutations()[name]
    wl = workload()
    mutate(wl)
    assert why in (model.not_pending_because(wl, route(wl)) or "")


def test_foreign_queue_is_left_alone() -> None:
    wl = workload(admission={"clusterQueue": "plain"})
    assert "no MultiKueue" in (model.not_pending_because(wl, route(wl)) or "")


EVICTED = (
    'Evicted due to AdmissionCheck in Retry state: mk: Workload evicted on worker cluster: "w1", '
    'resetting for re-admission. Previously: "Ready"'
)


def test_eviction_seen_after_re_reservation_names_the_cluster() -> None:
    previously = cond("Evicted", "False", "QuotaReserved", f"Previously: {EVICTED}", at="T2")
    wl = workload()
    wl["status"]["conditions"].append(previously)
    failure = model.failure_of(wl)
    assert failure is not None and failure.cluster == "w1" and failure.mark == "Evicted@T2"


def test_eviction_while_evicted_has_the_same_shape() -> None:
    wl = workload()
    wl["status"]["conditions"].append(cond("Evicted", "True", "AdmissionCheck", EVICTED, at="T1"))
    assert model.failure_of(wl) == model.Failure("w1", "Evicted@T1", f"evicted from w1: {EVICTED}")


@pytest.mark.parametrize(
    "message",
    [
        "Previously: Evicted due to AdmissionCheck in Retry state: mk: Admitting remote lost",
        "Previously: At least one admission check is false",  # Kueue v0.17
    ],
)
def test_messages_naming_no_worker_use_the_placement_seen_before(message: str) -> None:
    wl = workload()
    wl["status"]["conditions"].append(cond("Evicted", "False", "QuotaReserved", message))
    assert model.failure_of(wl) is None
    failure = model.failure_of(wl, last_cluster="w2")
    assert failure is not None and failure.cluster == "w2"


def test_manager_side_preemption_is_no_worker_failure() -> None:
    wl = workload()
    preempted = cond("Evicted", "False", "QuotaReserved", "Previously: Preempted to accommodate")
    wl["status"]["conditions"].append(preempted)
    assert model.failure_of(copy.deepcopy(wl), last_cluster="w1") is None
