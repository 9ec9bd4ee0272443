"""Write bodies of the reference dispatcher, one per nomination write mode."""

from __future__ import annotations

import copy

import pytest

from dispatchers.reference import writes
from tests.test_reference_fixtures import cond, workload

MANAGED = [
    {
        "manager": "kueue-admission",
        "operation": "Apply",
        "subresource": "status",
        "fieldsV1": {
            "f:status": {
                "f:admission": {"f:clusterQueue": {}},
                "f:conditions": {'k:{"type":"QuotaReserved"}': {".": {}, "f:type": {}}},
                "f:futureField": {},  # a newer Kueue owning something we do not know
            }
        },
    },
    {"manager": "kueue", "operation": "Update", "subresource": "status", "fieldsV1": {}},
]


def rich_workload():
    wl = workload(
        requeueState={"count": 2, "requeueAt": "2026-01-01T00:00:00Z"},
        resourceRequests=[{"name": "main"}],  # superseded while admission is set
        accumulatedPastExecutionTimeSeconds=7,
        schedulingStats={"evictions": [{"reason": "Preempted", "count": 1}]},
        unhealthyNodes=[{"name": "n1"}],
        nominatedClusterNames=["w1"],
        futureField={"x": 1},
        somethingElse="not ours",
    )
    wl["status"]["conditions"] += [
        cond("Requeued", "True", "Backoff"),
        cond("Evicted", "False", "QuotaReserved"),
        cond("ForeignCondition"),
    ]
    wl["metadata"]["managedFields"] = MANAGED
    return wl


def test_admission_policy_is_a_minimal_forced_apply_with_resource_version() -> None:
    ctype, body, params = writes.status_write("admission-policy", workload(), ["w1", "w2"], "me")
    assert ctype == writes.APPLY and params == {"field_manager": "me", "force": True}
    assert body["metadata"] == {
        "name": "job-a",
        "namespace": "ns",
        "uid": "u-1",
        "resourceVersion": "10",
    }
    assert body["status"] == {"nominatedClusterNames": ["w1", "w2"]}
    assert body["apiVersion"] == "kueue.x-k8s.io/v1beta2" and body["kind"] == "Workload"


def test_merge_patch_is_guarded_and_clears_with_null() -> None:
    ctype, body, params = writes.status_write("merge-patch", workload(), [], "me")
    assert ctype == writes.MERGE and "force" not in params
    assert body == {
        "metadata": {"resourceVersion": "10"},
        "status": {"nominatedClusterNames": None},
    }


def test_kueue_admission_replays_every_owned_field() -> None:
    wl = rich_workload()
    before = copy.deepcopy(wl)
    ctype, body, params = writes.status_write("kueue-admission", wl, ["w1", "w2"], "me")
    assert wl == before  # the input is not modified
    assert ctype == writes.APPLY and params == {"field_manager": "kueue-admission", "force": True}
    status = body["status"]
    assert body["metadata"]["resourceVersion"] == "10"
    assert status["nominatedClusterNames"] == ["w1", "w2"]
    src = wl["status"]
    for name in (
        "admission",
        "requeueState",
        "accumulatedPastExecutionTimeSeconds",
        "schedulingStats",
        "unhealthyNodes",
        "admissionChecks",
        "futureField",  # owned according to managedFields
    ):
        assert status[name] == src[name], name
    assert "resourceRequests" not in status and "somethingElse" not in status
    types = [c["type"] for c in status["conditions"]]
    assert types == ["QuotaReserved", "Evicted", "Requeued", "PodsReady"]  # Kueue's order


def test_kueue_admission_keeps_owned_fields_for_any_nominees() -> None:
    wl = rich_workload()
    _, body, _ = writes.status_write("kueue-admission", wl, [], "me")
    assert "nominatedClusterNames" not in body["status"]  # omitted and owned: deleted
    assert body["status"]["admission"] == wl["status"]["admission"]


def test_kueue_admission_sends_resource_requests_only_without_admission() -> None:
    wl = workload(resourceRequests=[{"name": "main"}])
    del wl["status"]["admission"]
    status = writes.kueue_admission_status(wl, ["w1"])
    assert status["resourceRequests"] == [{"name": "main"}] and "admission" not in status


def test_kueue_admission_adds_owned_foreign_conditions() -> None:
    wl = rich_workload()
    wl["metadata"]["managedFields"][0]["fieldsV1"]["f:status"]["f:conditions"][
        'k:{"type":"ForeignCondition"}'
    ] = {}
    status = writes.kueue_admission_status(wl, ["w1"])
    assert "ForeignCondition" in [c["type"] for c in status["conditions"]]


def test_annotation_write_is_guarded() -> None:
    body = writes.annotation_write(workload(), "k/s", "{}")
    assert body == {"metadata": {"resourceVersion": "10", "annotations": {"k/s": "{}"}}}


def test_unknown_mode() -> None:
    with pytest.raises(ValueError):
        writes.status_write("update", workload(), [], "me")
