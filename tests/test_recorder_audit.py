"""Reading the manager's audit log: dispatcher writes become WRITE events, its lists and
watches of Workloads READ events."""

from __future__ import annotations

from harness.recorder import audit_read, audit_write

ENTRY = {
    "stage": "ResponseComplete",
    "verb": "patch",
    "user": {"username": "system:serviceaccount:kueue-system:mkdc-dispatcher-0"},
    "objectRef": {
        "resource": "workloads",
        "namespace": "ns",
        "name": "wl",
        "subresource": "status",
    },
    "responseStatus": {"code": 422},
    "requestObject": {"status": {"nominatedClusterNames": [f"w{i}" for i in range(21)]}},
}


def test_a_rejected_status_write_keeps_the_names_it_asked_for() -> None:
    key, data = audit_write(ENTRY)
    assert key == "ns/wl"
    assert data["code"] == 422 and data["subresource"] == "status" and len(data["names"]) == 21


def test_writes_without_a_list_and_other_stages_or_resources() -> None:
    _, data = audit_write({**ENTRY, "requestObject": {"metadata": {"annotations": {}}}})
    assert "names" not in data
    assert audit_write({**ENTRY, "stage": "RequestReceived"}) is None
    assert audit_write({**ENTRY, "objectRef": {"resource": "jobs"}}) is None


LIST = {
    "stage": "ResponseComplete",
    "verb": "list",
    "user": {"username": "mkdc-dispatcher-0"},
    "objectRef": {"resource": "workloads", "apiGroup": "kueue.x-k8s.io"},
}


def test_a_list_or_a_started_watch_is_a_read_not_a_write() -> None:
    assert audit_read(LIST) == {"user": "mkdc-dispatcher-0", "verb": "list"}
    assert audit_write(LIST) is None
    watch = {**LIST, "verb": "watch", "stage": "ResponseStarted"}
    assert audit_read(watch) == {"user": "mkdc-dispatcher-0", "verb": "watch"}
    # a watch's completion is when it ends, not when the dispatcher came back
    assert audit_read({**watch, "stage": "ResponseComplete"}) is None
    assert audit_read(ENTRY) is None
    assert audit_read({**LIST, "objectRef": {"resource": "jobs"}}) is None
