"""The request bodies that write nominations, one builder per write mode.

Pure: each builder takes the freshly read Workload and returns (content type, body, query
parameters) for a PATCH of ``/status``; the I/O layer sends it and re-reads on 409. Every
body carries the read resourceVersion, so a write based on a stale read is refused rather
than applied (notes §5).

* ``admission-policy``: SSA under our own field manager with a minimal body. Safe only when
  Kueue's clear-nominated-cluster-names MutatingAdmissionPolicy is installed (0.19 on 1.36):
  it clears our list when Kueue sets clusterName or Evicted.
* ``kueue-admission``: SSA as Kueue's own ``kueue-admission`` manager, replaying Kueue's
  admission status body with only nominatedClusterNames changed. Anything that manager owns
  and the body omits would be deleted, so the body holds the union of what Kueue sends
  (patching.go ``prepareWorkloadPatch``) and what managedFields say it owns.
* ``merge-patch``: RV-guarded JSON merge patch (Kueue's WorkloadRequestUseMergePatch gate).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from dispatchers.reference.model import GROUP, VERSION
from dispatchers.reference.settings import WRITE_MODES

KUEUE_ADMISSION = "kueue-admission"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
# Kueue's admissionManagedConditions (pkg/workload/patching/patching.go), in its order
ADMISSION_CONDITIONS = (
    "QuotaReserved",
    "BlockedOnPreemptionGates",
    "Evicted",
    "Admitted",
    "Preempted",
    "Requeued",
    "DeactivationTarget",
    "Finished",
    "PodsReady",
)

Obj = Mapping[str, Any]


def nominees_of(workload: Obj) -> list[str]:
    return list((workload.get("status") or {}).get("nominatedClusterNames") or [])


def status_write(
    mode: str, workload: Obj, nominees: Sequence[str], field_manager: str
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(content type, body, query params) writing ``nominees`` in ``mode``."""
    if mode == "admission-policy":
        body = _apply_base(workload)
        body["status"] = {"nominatedClusterNames": list(nominees)}
        return APPLY, body, {"field_manager": field_manager, "force": True}
    if mode == "kueue-admission":
        body = _apply_base(workload)
        body["status"] = kueue_admission_status(workload, nominees)
        return APPLY, body, {"field_manager": KUEUE_ADMISSION, "force": True}
    if mode == "merge-patch":
        meta = {"resourceVersion": workload["metadata"]["resourceVersion"]}
        status = {"nominatedClusterNames": list(nominees) or None}  # null deletes the list
        return MERGE, {"metadata": meta, "status": status}, {"field_manager": field_manager}
    raise ValueError(f"unknown write mode {mode!r} (one of {', '.join(WRITE_MODES)})")


def status_written_at(workload: Obj, field_manager: str) -> float | None:
    """When ``field_manager`` last changed ``.status.nominatedClusterNames``, from
    managedFields (whole seconds, epoch), or None: when the round that wrote them
    started, for a state the annotation does not hold (see ``controller.rounds_written``)."""
    for entry in (workload.get("metadata") or {}).get("managedFields") or []:
        if entry.get("manager") != field_manager or entry.get("subresource", "") != "status":
            continue
        status = (entry.get("fieldsV1") or {}).get("f:status") or {}
        if "f:nominatedClusterNames" not in status or not entry.get("time"):
            continue
        stamp = str(entry["time"]).replace("Z", "+00:00")
        try:
            return datetime.fromisoformat(stamp).timestamp()
        except ValueError:
            return None
    return None


def annotation_write(workload: Obj, key: str, value: str) -> dict[str, Any]:
    """RV-guarded merge patch of one annotation on the main resource (the dispatch state)."""
    meta = {"resourceVersion": workload["metadata"]["resourceVersion"], "annotations": {key: value}}
    return {"metadata": meta}


def _apply_base(workload: Obj) -> dict[str, Any]:
    meta = workload["metadata"]
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Workload",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"],
        },
    }


def kueue_admission_status(workload: Obj, nominees: Sequence[str]) -> dict[str, Any]:
    """Kueue's admission status body for ``workload`` with only the nominees replaced."""
    status = workload.get("status") or {}
    out: dict[str, Any] = {}
    if status.get("admission") is not None:
        out["admission"] = status["admission"]
    requeue = status.get("requeueState") or {}
    if requeue.get("count") is not None or requeue.get("requeueAt") is not None:
        out["requeueState"] = requeue
    if status.get("admission") is None and status.get("resourceRequests"):
        out["resourceRequests"] = status["resourceRequests"]
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    chosen = [conditions[t] for t in ADMISSION_CONDITIONS if t in conditions]
    if chosen:
        out["conditions"] = chosen
    for name in ("accumulatedPastExecutionTimeSeconds", "clusterName", "unhealthyNodes"):
        if status.get(name) is not None:
            out[name] = status[name]
    if status.get("schedulingStats") is not None:
        evictions = (status["schedulingStats"] or {}).get("evictions")
        out["schedulingStats"] = {"evictions": evictions} if evictions else {}
    if status.get("preemptionGates"):
        out["preemptionGates"] = status["preemptionGates"]
    if status.get("admissionChecks"):
        out["admissionChecks"] = status["admissionChecks"]
    _add_owned(out, status, owned_status_fields(workload, KUEUE_ADMISSION))
    if nominees:
        out["nominatedClusterNames"] = list(nominees)
    else:
        out.pop("nominatedClusterNames", None)  # omitted and owned: SSA deletes it
    return copy.deepcopy(out)


def owned_status_fields(workload: Obj, manager: str) -> dict[str, Any]:
    """The ``f:status`` field set ``manager`` owns through Apply on the status subresource."""
    owned: dict[str, Any] = {}
    for entry in (workload.get("metadata") or {}).get("managedFields") or []:
        if entry.get("manager") != manager or entry.get("operation") != "Apply":
            continue
        if entry.get("subresource", "") != "status":
            continue
        _merge_sets(owned, (entry.get("fieldsV1") or {}).get("f:status") or {})
    return owned


def _merge_sets(into: dict[str, Any], add: Mapping[str, Any]) -> None:
    for key, sub in add.items():
        _merge_sets(into.setdefault(key, {}), sub or {})


def _add_owned(out: dict[str, Any], status: Obj, owned: Mapping[str, Any]) -> None:
    """Add owned status fields missing from ``out`` (a newer Kueue may own more)."""
    for key, sub in owned.items():
        if not key.startswith("f:"):
            continue
        name = key[2:]
        if name not in status or name == "nominatedClusterNames":
            continue
        if name not in out:
            out[name] = status[name]
        elif name == "conditions":
            have = {c.get("type") for c in out[name]}
            for item in status[name]:
                if item.get("type") not in have and _owned_item(item, sub):
                    out[name].append(item)


def _owned_item(item: Obj, fields: Mapping[str, Any]) -> bool:
    for key in fields:
        if key.startswith("k:"):
            wanted = json.loads(key[2:])
            if all(item.get(k) == v for k, v in wanted.items()):
                return True
    return False
