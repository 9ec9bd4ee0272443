"""The dispatcher benchmark's figures from hand-made audit entries, and its arguments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.errors import command_exit
from harness.tools import audit_figures, bench_dispatcher

USER = "system:serviceaccount:kueue-system:mkdc-dispatcher-0"
KUEUE = "system:admin"


def entry(
    at: float,
    verb: str,
    name: str = "",
    *,
    user: str = KUEUE,
    sub: str = "",
    resource: str = "workloads",
    code: int = 200,
    status: dict[str, Any] | None = None,
    stage: str = "ResponseComplete",
    took: float = 0.0,
) -> dict[str, Any]:
    ref = {"resource": resource, "namespace": "mkdc", "name": name}
    if sub:
        ref["subresource"] = sub
    out: dict[str, Any] = {
        "stage": stage,
        "verb": verb,
        "user": {"username": user},
        "objectRef": ref,
        "responseStatus": {"code": code},
        "requestReceivedTimestamp": f"2026-12-02T01:00:{at - took:09.6f}Z",
        "stageTimestamp": f"2026-12-02T01:00:{at:09.6f}Z",
    }
    if status is not None:
        out["requestObject"] = {"status": status}
    return out


QUOTA = {"conditions": [{"type": "QuotaReserved", "status": "True"}]}


def story(user: str) -> list[dict[str, Any]]:
    """Two workloads: a created 1.0, quota 1.5, nominated 2.0 (sent at 1.75); b created 3.0,
    quota 3.2, a refused nomination at 3.4, nominated 4.0 (sent at 3.5); plus a second,
    later nomination of a."""

    def nominate(at: float, name: str, clusters: list[str], **kw: Any) -> dict[str, Any]:
        status = {"nominatedClusterNames": clusters}
        return entry(at, "patch", name, user=user, sub="status", status=status, **kw)

    return [
        entry(1.0, "create", "a", code=201),
        entry(1.5, "patch", "a", sub="status", status=QUOTA),
        entry(1.8, "get", "a", user=user),
        entry(1.9, "patch", "a", user=user),  # the dispatch state annotation
        nominate(2.0, "a", ["w1"], took=0.25),
        entry(3.0, "create", "b", code=201),
        entry(3.2, "patch", "b", sub="status", status=QUOTA),
        nominate(3.4, "b", ["w1"], code=409),
        nominate(4.0, "b", ["w1"], took=0.5),
        entry(5.0, "watch", user=user, stage="ResponseStarted"),
        nominate(6.0, "a", ["w1", "w2"]),
    ]


def test_latencies_and_requests_of_an_external_dispatcher() -> None:
    summary = audit_figures.summarize(story(USER), "mkdc", frozenset({USER}))
    out = bench_dispatcher.audit_result(summary, external=True)
    assert out["created"] == 2 and out["nominated"] == 2
    assert out["timeToFirstNominationSeconds"] == {"p50": 1.0, "p99": 1.0, "max": 1.0}
    assert out["quotaReservedToFirstNominationSeconds"]["max"] == 0.8
    # a's request arrived 0.25 s after quota at 1.5 and took 0.25 s; b's 0.3 s and 0.5 s
    assert out["quotaReservedToNominationRequestSeconds"]["max"] == 0.3
    assert out["firstNominationWriteSeconds"] == {"p50": 0.25, "p99": 0.5, "max": 0.5}
    assert out["requestsByKind"] == {
        "get workloads": 1,
        "patch workloads": 1,
        "patch workloads/status": 4,
        "watch workloads": 1,
    }
    assert out["apiRequests"] == 7 and out["apiRequestsPerFirstNomination"] == 3.5
    assert out["nominationWrites"] == 4  # the refused one was sent too


def test_a_built_in_is_counted_by_its_nomination_writes_only() -> None:
    summary = audit_figures.summarize(story(KUEUE), "mkdc", frozenset())
    out = bench_dispatcher.audit_result(summary, external=False)
    assert out["nominated"] == 2 and out["apiRequests"] == 4
    assert "cached" in out["counted"] and out["requestsByKind"] == {}


def test_read_skips_torn_lines_and_earlier_entries(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    lines = [json.dumps(e) for e in story(USER)]
    log.write_text("\n".join(lines[:3]) + "\n{torn\n" + "\n".join(lines[3:]) + "\n")
    since = audit_figures._stamp(story(USER)[5])
    assert since is not None
    assert len(audit_figures.read(str(log), since)) == 6


def test_profiles_and_profile_both_work() -> None:
    assert bench_dispatcher.parse_args([]).names == ["reference"]
    assert bench_dispatcher.parse_args(["--profile", "incremental"]).names == ["incremental"]
    args = bench_dispatcher.parse_args(["--profiles", "reference,incremental,all-at-once"])
    assert args.names == ["reference", "incremental", "all-at-once"]


class _BusyManager:
    """A manager whose apiserver answers every list with a timeout (seen at 1+20)."""

    def resource(self, api: str, kind: str) -> Any:
        return self

    def get(self, **_: Any) -> Any:
        raise TimeoutError("Timeout: request did not complete within the allotted timeout")


def test_counts_a_busy_apiserver_cannot_give_say_why_instead_of_losing_the_run() -> None:
    got = bench_dispatcher._counts_or_why(_BusyManager())  # type: ignore[arg-type]
    assert got == {
        "error": "TimeoutError: Timeout: request did not complete within the allotted timeout"
    }


def test_a_profile_that_does_not_load_is_one_line_and_exit_2(capsys) -> None:
    code = command_exit("bench_dispatcher", lambda: bench_dispatcher.main(["--profile", "no-such"]))
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("bench_dispatcher: error: profile 'no-such'")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_an_interrupted_tool_says_so_and_exits_130(capsys) -> None:
    def interrupted() -> int:
        raise KeyboardInterrupt

    assert command_exit("bench_up", interrupted) == 130
    assert capsys.readouterr().err == "bench_up: interrupted\n"
