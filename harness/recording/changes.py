"""What changed, in events: pure functions from an object's last seen and new state to
the timeline's events (a Workload's nominations, placement and admission on the manager,
its copies on workers, Jobs, ProvisioningRequests, MultiKueue objects). The recorder
feeds them what its watches see."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from harness.cluster import kube
from harness.recording.timeline import Kind

MULTIKUEUE_CHECK_CONTROLLER = "kueue.x-k8s.io/multikueue"


_UID_IN_MESSAGE = re.compile(r"UID: ([0-9a-f-]{36})")

Change = tuple[Kind, dict[str, Any]]


def key_of(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _cond(obj: dict[str, Any] | None, kind: str) -> bool:
    return bool(obj) and kube.condition_true(obj, kind)  # type: ignore[arg-type]


def _status(obj: dict[str, Any] | None) -> dict[str, Any]:
    return (obj or {}).get("status") or {}


def nomination_writer(obj: dict[str, Any]) -> str | None:
    """The field manager that owns .status.nominatedClusterNames, from managedFields."""
    for entry in (obj.get("metadata") or {}).get("managedFields") or []:
        status = (entry.get("fieldsV1") or {}).get("f:status") or {}
        if "f:nominatedClusterNames" in status:
            return entry.get("manager")
    return None


def multikueue_check_state(obj: dict[str, Any], mk_checks: Iterable[str]) -> str | None:
    """State of the workload's MultiKueue admission check (one of `mk_checks`)."""
    names = set(mk_checks)
    for check in _status(obj).get("admissionChecks") or []:
        if check.get("name") in names:
            return check.get("state")
    return None


def manager_workload_changes(
    old: dict[str, Any] | None, new: dict[str, Any] | None, mk_checks: Iterable[str] = ()
) -> list[Change]:
    """Events for one manager Workload going from `old` to `new` (None = absent)."""
    if new is None:
        return [(Kind.WORKLOAD_DELETED, {})] if old is not None else []
    out: list[Change] = []
    if old is None:
        out.append((Kind.WORKLOAD_CREATED, {"uid": new["metadata"].get("uid")}))
    before, after = _status(old), _status(new)
    names = list(after.get("nominatedClusterNames") or [])
    if names != list(before.get("nominatedClusterNames") or []):
        out.append(
            (Kind.NOMINATION, {"names": names, "writer": nomination_writer(new) if names else None})
        )
    if after.get("clusterName", "") != before.get("clusterName", ""):
        out.append((Kind.PLACEMENT, {"cluster": after.get("clusterName") or ""}))
    if _cond(new, "QuotaReserved") != _cond(old, "QuotaReserved"):
        out.append((Kind.QUOTA_RESERVED, {"reserved": _cond(new, "QuotaReserved")}))
    state = multikueue_check_state(new, mk_checks)
    if state != (multikueue_check_state(old, mk_checks) if old else None):
        out.append((Kind.CHECK_STATE, {"state": state}))
    if _cond(new, "Evicted") and not _cond(old, "Evicted"):
        out.append(
            (Kind.EVICTED, {"reason": (kube.condition(new, "Evicted") or {}).get("reason", "")})
        )
    if _cond(new, "Finished") and not _cond(old, "Finished"):
        out.append((Kind.FINISHED, {}))
    return out


def worker_workload_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[Change]:
    """Events for a workload on a worker (a MultiKueue copy or a local workload)."""
    if new is None:
        return [(Kind.COPY_DELETED, {})] if old is not None else []
    out: list[Change] = []
    if old is None:
        out.append((Kind.COPY_CREATED, {}))
    if _cond(new, "QuotaReserved") != _cond(old, "QuotaReserved"):
        out.append((Kind.COPY_RESERVED, {"reserved": _cond(new, "QuotaReserved")}))
    if _cond(new, "Admitted") and not _cond(old, "Admitted"):
        out.append((Kind.COPY_ADMITTED, {}))
    if _cond(new, "Evicted") and not _cond(old, "Evicted"):
        out.append(
            (
                Kind.COPY_EVICTED,
                {"reason": (kube.condition(new, "Evicted") or {}).get("reason", "")},
            )
        )
    return out


def preemptor_uid(obj: dict[str, Any]) -> str | None:
    """UID of the workload that preempted `obj`, read from its Preempted/Evicted message."""
    for kind in ("Preempted", "Evicted"):
        cond = kube.condition(obj, kind) or {}
        if cond.get("status") == "True" and (
            kind == "Preempted" or cond.get("reason") == "Preempted"
        ):
            m = _UID_IN_MESSAGE.search(cond.get("message") or "")
            if m:
                return m.group(1)
    return None


def job_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[Change]:
    if new is None:
        return [(Kind.JOB_DELETED, {})] if old is not None else []
    out: list[Change] = []
    if old is None:
        out.append((Kind.JOB_CREATED, {}))
    active, was = _status(new).get("active") or 0, _status(old).get("active") or 0
    if active and not was:
        out.append((Kind.JOB_RUNNING, {"active": active}))
    for kind in ("Complete", "Failed"):
        if _cond(new, kind) and not _cond(old, kind):
            out.append((Kind.JOB_FINISHED, {"condition": kind}))
    return out


def provisioning_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[Change]:
    name = ((new or old) or {}).get("metadata", {}).get("name", "")
    if new is None:
        return [(Kind.PROVREQ_DELETED, {"name": name})] if old is not None else []
    out: list[Change] = []
    if old is None:
        out.append((Kind.PROVREQ_CREATED, {"name": name}))
    for state in ("Provisioned", "Failed", "BookingExpired", "CapacityRevoked"):
        if _cond(new, state) and not _cond(old, state):
            out.append((Kind.PROVREQ_STATE, {"name": name, "state": state}))
    return out


def cluster_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[Change]:
    name = ((new or old) or {}).get("metadata", {}).get("name", "")
    active = _cond(new, "Active")
    if (old is None and new is not None) or active != _cond(old, "Active"):
        return [(Kind.CLUSTER_ACTIVE, {"cluster": name, "active": active})]
    return []


def config_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[Change]:
    name = ((new or old) or {}).get("metadata", {}).get("name", "")
    clusters = list(((new or {}).get("spec") or {}).get("clusters") or [])
    if old is None or clusters != list((old.get("spec") or {}).get("clusters") or []):
        return [(Kind.CONFIG_CHANGED, {"config": name, "clusters": clusters})]
    return []
