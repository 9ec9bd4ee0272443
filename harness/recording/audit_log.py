"""What the manager's audit log says about the dispatcher: its writes of Workloads
(refused and no-op ones too), its lists, watches and reads of them, and the requests
authorization refused it, each entry read into the timeline's events. Pure: the
recorder tails the log and hands each entry here."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from harness.recording.timeline import Kind


def _username(entry: dict[str, Any]) -> str:
    return str((entry.get("user") or {}).get("username", ""))


POD_NAME_EXTRA = "authentication.kubernetes.io/pod-name"


def per_pod_user(entry: dict[str, Any], accounts: Collection[str]) -> str | None:
    """`<account> (pod <name>)` for a request of one of `accounts` made with a Pod's bound
    token (which names its Pod in the audit's user.extra), else None: the replicas of a
    vendor's Deployment share its ServiceAccount, and the checks tell them apart."""
    user = entry.get("user") or {}
    pods = (user.get("extra") or {}).get(POD_NAME_EXTRA) or []
    if user.get("username") not in accounts or not pods:
        return None
    return f"{user['username']} (pod {pods[0]})"


def pod_of(user: str) -> str | None:
    """The Pod a per-Pod user names (per_pod_user), else None."""
    head, sep, tail = user.rpartition(" (pod ")
    return tail.rstrip(")") if sep and head else None


# (verb, stage) of the reads recorded: a watch when its response starts (its completion
# comes when it ends)
READ_REQUESTS = (
    ("list", "ResponseComplete"),
    ("watch", "ResponseStarted"),
    ("get", "ResponseComplete"),
)


def audit_read(entry: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(workload key, READ data) for an audit entry that reads Workloads, else None: a list
    or a started watch of them (key ""), what a dispatcher back after a restart does; a
    GET of one (its key, its status too), what tells a dispatcher that re-reads after a
    refused write from one that retries from its cache."""
    ref = entry.get("objectRef") or {}
    verb, name = entry.get("verb"), ref.get("name")
    if ref.get("resource") != "workloads" or (verb, entry.get("stage")) not in READ_REQUESTS:
        return None
    if (verb == "get" and not name) or (verb != "get" and ref.get("subresource")):
        return None
    key = f"{ref.get('namespace', '')}/{name}" if verb == "get" else ""
    return key, {"user": _username(entry), "verb": verb}


WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")
AUTHZ_DECISION = "authorization.k8s.io/decision"


def audit_write(entry: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(workload key, WRITE data) for an audit entry that writes a Workload, else None.
    A refused write keeps the apiserver's (or Kueue's webhook's) message."""
    ref = entry.get("objectRef") or {}
    if ref.get("resource") != "workloads" or entry.get("stage") != "ResponseComplete":
        return None
    if entry.get("verb") not in WRITE_VERBS:  # reads are logged too (audit_read)
        return None
    key = f"{ref.get('namespace', '')}/{ref.get('name', '')}"
    status = entry.get("responseStatus") or {}
    data = {
        "user": _username(entry),
        "verb": entry.get("verb", ""),
        "subresource": ref.get("subresource", ""),
        "code": int(status.get("code") or 0),
    }
    if data["code"] >= 400 and status.get("message"):
        data["message"] = str(status["message"])[:500]
    request = entry.get("requestObject")
    status = request.get("status") if isinstance(request, dict) else None
    if isinstance(status, dict) and isinstance(status.get("nominatedClusterNames"), list):
        # what was asked for: a rejected write (e.g. too many names) leaves no other trace
        data["names"] = [str(n) for n in status["nominatedClusterNames"]]
    return key, data


def audit_forbidden(entry: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(workload key or "", FORBIDDEN data) for a request authorization refused, else None.
    A webhook's denial is also a 403, but it is not a missing privilege (see audit_write)."""
    annotations = entry.get("annotations") or {}
    code = int((entry.get("responseStatus") or {}).get("code") or 0)
    if code != 403 or annotations.get(AUTHZ_DECISION) != "forbid":
        return None
    if entry.get("stage") not in ("ResponseComplete", "ResponseStarted", "Panic"):
        return None
    ref = entry.get("objectRef") or {}
    group = ref.get("apiGroup") or "core"
    resource = "/".join(p for p in (group, ref.get("resource"), ref.get("subresource")) if p)
    namespace, name = ref.get("namespace", ""), ref.get("name", "")
    data = {
        "user": _username(entry),
        "verb": entry.get("verb", ""),
        "resource": resource,
        "namespace": namespace,
        "name": name,
    }
    workload = f"{namespace}/{name}" if ref.get("resource") == "workloads" and name else ""
    return workload, data


def audit_events(
    entry: dict[str, Any], dispatcher_users: set[str] | frozenset[str]
) -> list[tuple[Kind, str, dict[str, Any]]]:
    """(kind, workload key, data) of what one audit entry says about the dispatcher: a
    READ (a list or watch of Workloads; a GET of one is that workload's), a WRITE (refused
    ones too), a FORBIDDEN. Others' reads and refusals tell nothing
    about it; without known dispatcher users every write counts (a built-in dispatcher)."""
    out: list[tuple[Kind, str, dict[str, Any]]] = []
    forbidden = audit_forbidden(entry)
    if forbidden is not None and forbidden[1]["user"] in dispatcher_users:
        out.append((Kind.FORBIDDEN, *forbidden))
    read = audit_read(entry)
    if read is not None and read[1]["user"] in dispatcher_users:
        out.append((Kind.READ, *read))
    written = audit_write(entry)
    if written is not None and (not dispatcher_users or written[1]["user"] in dispatcher_users):
        out.append((Kind.WRITE, *written))
    return out


def parse_wall(stamp: str) -> float:
    """An audit entry's time (RFC 3339, as the apiserver writes it) in seconds of the epoch."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
