"""Reading the manager's audit log: every dispatcher request becomes a WRITE event."""

from __future__ import annotations

from harness.recorder import audit_write

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
