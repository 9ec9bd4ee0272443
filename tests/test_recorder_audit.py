"""Reading the manager's audit log: dispatcher writes become WRITE events, its lists and
watches of Workloads environment READ events, its GETs of one that workload's READ."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.cluster.audit import POLICY as AUDIT_POLICY
from harness.orchestrate.dispatcher import _reads_since
from harness.recording.audit_log import (
    audit_events,
    audit_forbidden,
    audit_read,
    audit_write,
)
from harness.recording.timeline import Kind

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


def written(entry: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """audit_write's event for an entry that must be a write."""
    event = audit_write(entry)
    assert event is not None
    return event


def test_a_rejected_status_write_keeps_the_names_it_asked_for() -> None:
    key, data = written(ENTRY)
    assert key == "ns/wl"
    assert data["code"] == 422 and data["subresource"] == "status" and len(data["names"]) == 21


def test_writes_without_a_list_and_other_stages_or_resources() -> None:
    _, data = written({**ENTRY, "requestObject": {"metadata": {"annotations": {}}}})
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
    assert audit_read(LIST) == ("", {"user": "mkdc-dispatcher-0", "verb": "list"})
    assert audit_write(LIST) is None
    watch = {**LIST, "verb": "watch", "stage": "ResponseStarted"}
    assert audit_read(watch) == ("", {"user": "mkdc-dispatcher-0", "verb": "watch"})
    # a watch's completion is when it ends, not when the dispatcher came back
    assert audit_read({**watch, "stage": "ResponseComplete"}) is None
    assert audit_read(ENTRY) is None
    assert audit_read({**LIST, "objectRef": {"resource": "jobs"}}) is None


ME = "system:serviceaccount:kueue-system:mkdc-dispatcher-0"
SECRETS = {
    "stage": "ResponseComplete",
    "verb": "list",
    "user": {"username": ME},
    "objectRef": {"resource": "secrets", "namespace": "kueue-system", "apiVersion": "v1"},
    "responseStatus": {"code": 403, "reason": "Forbidden", "message": "secrets is forbidden"},
    "annotations": {"authorization.k8s.io/decision": "forbid"},
}


def test_a_request_authorization_refused_is_forbidden_with_resource_and_verb() -> None:
    assert audit_events(SECRETS, {ME}) == [
        (
            Kind.FORBIDDEN,
            "",
            {
                "user": ME,
                "verb": "list",
                "resource": "core/secrets",
                "namespace": "kueue-system",
                "name": "",
            },
        )
    ]
    assert audit_events(SECRETS, {"someone-else"}) == []
    allowed = {**SECRETS, "annotations": {"authorization.k8s.io/decision": "allow"}}
    assert audit_forbidden(allowed) is None  # e.g. a webhook's denial: not a privilege


def test_a_refused_workload_write_is_a_write_and_forbidden_keeping_the_message() -> None:
    denied = {
        **ENTRY,
        "user": {"username": ME},
        "responseStatus": {"code": 403, "message": "workloads.kueue.x-k8s.io is forbidden"},
        "annotations": {"authorization.k8s.io/decision": "forbid"},
    }
    kinds = {kind: (key, data) for kind, key, data in audit_events(denied, {ME})}
    assert set(kinds) == {Kind.FORBIDDEN, Kind.WRITE}
    assert kinds[Kind.FORBIDDEN] == (
        "ns/wl",
        {
            "user": ME,
            "verb": "patch",
            "resource": "core/workloads/status",
            "namespace": "ns",
            "name": "wl",
        },
    )
    assert kinds[Kind.WRITE][1]["message"] == "workloads.kueue.x-k8s.io is forbidden"


def test_a_get_of_a_workload_is_not_a_write() -> None:
    # the audit policy logs every request of a dispatcher identity now, reads included
    assert audit_write({**ENTRY, "verb": "get"}) is None
    assert "message" not in written(ENTRY)[1]


def test_a_get_of_a_workload_is_that_workloads_read_when_the_dispatcher_made_it() -> None:
    get = {
        **ENTRY,
        "verb": "get",
        "objectRef": {"resource": "workloads", "namespace": "ns", "name": "wl"},
    }
    assert audit_read(get) == ("ns/wl", {"user": ME, "verb": "get"})
    assert audit_read({**get, "stage": "ResponseStarted"}) is None
    assert audit_read({**get, "objectRef": {"resource": "workloads"}}) is None  # names none
    assert audit_read(ENTRY) is None  # a write
    assert audit_events(get, {ME}) == [(Kind.READ, "ns/wl", {"user": ME, "verb": "get"})]
    assert audit_events(get, {"someone-else"}) == []


def test_only_a_list_or_watch_says_a_restarted_dispatcher_is_back(tmp_path: Path) -> None:
    """A GET of one Workload is not its informers' list or watch after a restart."""
    get = {**ENTRY, "verb": "get", "objectRef": {"resource": "workloads", "name": "wl"}}
    log = tmp_path / "audit.log"
    log.write_text(json.dumps(get) + "\n")
    assert _reads_since(log, 0, {ME}) == (log.stat().st_size, False)
    log.write_text(json.dumps({**LIST, "user": {"username": ME}}) + "\n")
    assert _reads_since(log, 0, {ME}) == (log.stat().st_size, True)


def test_the_audit_policy_logs_workload_reads_by_anyone() -> None:
    """A dispatcher outside Kueue's namespace too: its lists and watches say when it is
    back after a restart, its GETs whether it re-read a Workload after a 409."""
    (reads,) = [r for r in AUDIT_POLICY["rules"] if "list" in r.get("verbs", [])]
    assert reads["verbs"] == ["list", "watch", "get"] and "userGroups" not in reads
    assert reads["resources"] == [{"group": "kueue.x-k8s.io", "resources": ["workloads"]}]


def test_the_audit_policy_logs_every_request_of_a_dispatcher_identity() -> None:
    rules = AUDIT_POLICY["rules"]
    mine = [r for r in rules if "system:serviceaccounts:kueue-system" in r.get("userGroups", [])]
    assert mine == [{"level": "Metadata", "userGroups": ["system:serviceaccounts:kueue-system"]}]
    assert rules.index(mine[0]) == len(rules) - 2  # after the workload rules, before None
