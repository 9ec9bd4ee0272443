"""Figures a dispatcher benchmark reads from the manager apiserver's audit log.

Why the audit log: its timestamps are the apiserver's own, so latencies do not include a
watcher's lag (the benchmark's recorder shares a process with the submitting threads),
and it is the one place that sees every request a dispatcher makes. What it holds is set
by ``POLICY`` in ``harness/cluster/audit.py``: every Workload write (with its
body) of every user, and every request of a dispatcher's own identity.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")


def _stamp(entry: Mapping[str, Any]) -> float | None:
    """When the stage was reached (for ResponseComplete: when the response was sent)."""
    return _time(entry.get("stageTimestamp") or entry.get("requestReceivedTimestamp"))


def _received(entry: Mapping[str, Any]) -> float | None:
    """When the apiserver received the request."""
    return _time(entry.get("requestReceivedTimestamp"))


def _time(value: object) -> float | None:
    if not value:
        return None
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def _code(entry: Mapping[str, Any]) -> int:
    return int((entry.get("responseStatus") or {}).get("code") or 0)


def _request_status(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    request = entry.get("requestObject")
    status = request.get("status") if isinstance(request, dict) else None
    return status if isinstance(status, dict) else {}


def nominates(entry: Mapping[str, Any]) -> bool:
    """A successful Workload status write that asks for a non-empty nomination list."""
    names = _request_status(entry).get("nominatedClusterNames")
    return (
        _is_workload_write(entry) and _code(entry) < 300 and isinstance(names, list) and bool(names)
    )


def reserves_quota(entry: Mapping[str, Any]) -> bool:
    """A successful Workload status write that sets QuotaReserved=True (Kueue's)."""
    conditions = _request_status(entry).get("conditions") or []
    return (
        _is_workload_write(entry)
        and _code(entry) < 300
        and any(
            isinstance(c, dict) and c.get("type") == "QuotaReserved" and c.get("status") == "True"
            for c in conditions
        )
    )


def _is_workload_write(entry: Mapping[str, Any]) -> bool:
    ref = entry.get("objectRef") or {}
    return (
        ref.get("resource") == "workloads"
        and entry.get("stage") == "ResponseComplete"
        and entry.get("verb") in WRITE_VERBS
    )


def _key(entry: Mapping[str, Any]) -> str:
    ref = entry.get("objectRef") or {}
    return f"{ref.get('namespace', '')}/{ref.get('name', '')}"


def _user(entry: Mapping[str, Any]) -> str:
    return str((entry.get("user") or {}).get("username", ""))


def summarize(
    entries: Iterable[Mapping[str, Any]], namespace: str, dispatcher_users: frozenset[str]
) -> dict[str, Any]:
    """Per-workload times (created, quota reserved, first nominated, and when that first
    nominating request arrived) of ``namespace``'s Workloads, and the requests counted for
    the dispatcher. The arrival splits reservation-to-nomination into the dispatcher's
    reaction (watch delivery, its queue, its decision) and the apiserver's write.

    Counted: with ``dispatcher_users`` (an external dispatcher), each completed request of
    those users (a watch counts once, when its response starts); without (a built-in, which
    reads from Kueue's informer cache), only the Workload writes that set nominations.
    """
    created: dict[str, float] = {}
    reserved: dict[str, float] = {}
    nominated: dict[str, float] = {}
    nomination_received: dict[str, float] = {}
    requests: Counter[str] = Counter()
    nomination_writes = 0
    for entry in entries:
        ref = entry.get("objectRef") or {}
        t = _stamp(entry)
        if t is None:
            continue
        in_ns = ref.get("resource") == "workloads" and ref.get("namespace") == namespace
        if (
            in_ns
            and entry.get("verb") == "create"
            and _code(entry) == 201
            and not ref.get("subresource")
        ):
            created.setdefault(_key(entry), t)
        if in_ns and reserves_quota(entry):
            reserved.setdefault(_key(entry), t)
        if in_ns and nominates(entry) and (key := _key(entry)) not in nominated:
            nominated[key] = t
            nomination_received[key] = _received(entry) or t  # unstamped: all reaction
        if _is_workload_write(entry) and "nominatedClusterNames" in _request_status(entry):
            if not dispatcher_users or _user(entry) in dispatcher_users:
                nomination_writes += 1
        if dispatcher_users and _user(entry) in dispatcher_users:
            stage = entry.get("stage")
            watch_start = entry.get("verb") == "watch" and stage == "ResponseStarted"
            if (stage == "ResponseComplete" and entry.get("verb") != "watch") or watch_start:
                what = "/".join(p for p in (ref.get("resource"), ref.get("subresource")) if p)
                requests[f"{entry.get('verb')} {what}"] += 1
    return {
        "created": created,
        "reserved": reserved,
        "nominated": nominated,
        "nominationReceived": nomination_received,
        "nominationWrites": nomination_writes,
        "requests": dict(requests),
    }


def read(path: str, since: float = 0.0) -> list[dict[str, Any]]:
    """The audit entries from ``since`` (epoch seconds) on; torn or bad lines are skipped."""
    out = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            t = _stamp(entry)
            if t is not None and t >= since:
                out.append(entry)
    return out
