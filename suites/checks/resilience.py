"""InactiveAware, RestartSafe and HighAvailability, decided by
suites/conformance/test_resilience.py: inactive clusters, a dispatcher restart, the
manager's apiserver or Kueue restarting, and a leader failover cost no round and lose
no workload."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from harness.check_terms import Bound
from harness.recording.timeline import Event, Kind, Timeline
from suites.checks.catalogue import after_action, check
from suites.checks.queries import (
    INF,
    RoundReview,
    configured,
    created_at,
    dispatchable_at,
    end_of,
    first_nomination,
    first_placement,
    inactive_at,
    inactive_spans,
    names,
    review_rounds,
    rounds,
)
from suites.checks.verdict import Bounds, Verdict, at, joined, not_judged


@check(
    "EXT-10",
    "SkipsInactiveClusters",
    feature="InactiveAware",
    summary="Clusters that are not Active are not nominated, nor cost a round.",
    bounds=(
        Bound(
            "mkdc",
            "inactive clusters neither nominated nor costing a round",
            "Kueue's own dispatchers skip inactive clusters; the KEP does not say",
        ),
    ),
)
def skips_inactive_clusters(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-10: (a) no NOMINATION adds (relative to the previous list) a cluster that has
    been inactive for observation_skew or more; (b) when a configured cluster is inactive
    at creation, the first nomination naming an active cluster comes within
    escalation_slack of the quota reservation (of creation if none was seen), when a
    dispatcher can first act (nominating the inactive one first, even inside the skew of
    (a), still costs a round); (c) rounds escalate on time (EXT-05's rule), so skipping
    does not cost a round."""
    spans = [s for s in inactive_spans(tl) if s.key in configured(tl, b)]
    if not spans:
        return Verdict.unclear("no configured cluster was inactive")
    problems, previous = [], set()
    for e in tl.where(Kind.NOMINATION):
        for cluster in [n for n in names(e) if n not in previous]:
            if inactive_at(spans, cluster, e.t, since=b.observation_skew):
                problems.append(f"{cluster} nominated at {at(e.t)} while inactive")
        previous = set(names(e))
    t0 = created_at(tl)
    if any(inactive_at(spans, c, t0) for c in b.clusters):
        limit = dispatchable_at(tl) + b.escalation_slack
        first = next(
            (
                e
                for e in tl.where(Kind.NOMINATION)
                if any(not inactive_at(spans, n, e.t) for n in names(e))
            ),
            None,
        )
        placed = first_placement(tl)
        if (first is None or first.t > limit) and not (placed and placed.t <= limit):
            when = f"at {at(first.t)}" if first else "never"
            problems.append(
                f"first nomination {when} of an active cluster, due by {at(limit)} "
                "(inactive cost a round)"
            )
    problems += [r.late for r in review_rounds(tl, b) if r.late]
    return Verdict.fail(problems) if problems else Verdict.ok()


@check(
    "EXT-11",
    "RestartResilience",
    feature="RestartSafe",
    summary="Killing and restarting the dispatcher mid-round neither resets nor jumps the round, "
    "and loses no workload.",
    decided_by_wait=after_action("dispatcher-restarted"),
    bounds=(
        Bound(
            "mkdc",
            "a round neither reset nor jumped by a restart, within the downtime plus "
            "escalation_slack",
            "the KEP says nothing of restarts: the RestartSafe claim",
        ),
    ),
)
def restart_resilience(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-11: with ACTION what="dispatcher-killed" at tk and "dispatcher-restarted" at tr,
    the dispatcher is back at tb: its first READ (list or watch of Workloads) after tk, else
    tr (no audit log). With downtime d = tb - tk, the round running at tk escalates no
    earlier than start + timeout - early_tolerance (no jump) and no later than start +
    timeout + d + escalation_slack (no reset: a reset shows as tb + timeout, only
    distinguishable when the kill is more than escalation_slack into the round); and the
    workload is placed within placement_bound(expected_cluster) + d of creation. Timing
    from tb, not tr, keeps a process slow to start (a loaded machine) from looking like
    a reset."""
    kill = tl.action("dispatcher-killed")
    restart = tl.action("dispatcher-restarted", after=kill.t if kill else INF)
    if kill is None or restart is None:
        return Verdict.unclear("no dispatcher-killed/dispatcher-restarted actions")
    back = next((e for e in tl.where(Kind.READ) if e.t > kill.t), restart)
    measured: dict[str, Any] = {"downtimeSeconds": back.t - kill.t}
    if back is not restart:
        measured["startupSeconds"] = back.t - restart.t
    verdict = _round_survives(tl, b, kill.t, back.t, "dispatcher", measured)
    if back is restart and not (verdict.passed or verdict.inconclusive):
        verdict.message += (
            "; back taken as its relaunch: no audit log here shows its first list of Workloads,"
            " so its start-up was not allowed for (on a local environment it is)"
        )
    return verdict


@check(
    "EXT-13",
    "ManagerApiserverRestart",
    feature="RestartSafe",
    summary="The manager's kube-apiserver restarting mid-round neither resets nor jumps the "
    "round, and workloads created once it is back are dispatched (watches re-established).",
    decided_by_wait=after_action("manager-apiserver-back"),
    bounds=(
        Bound(
            "mkdc",
            "rounds kept across the manager apiserver's restart; new workloads dispatched",
            "the RestartSafe claim, judged as mkdc reads it",
        ),
    ),
)
def manager_apiserver_restart(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-13: around ACTIONs "manager-apiserver-down" (td) and "manager-apiserver-back"
    (tb), see `_survives_outage`."""
    return _survives_outage(tl, b, "manager-apiserver")


@check(
    "EXT-14",
    "KueueRestart",
    feature="RestartSafe",
    summary="The manager's Kueue crashing mid-round (its webhooks refusing every Workload "
    "write until it is back) neither resets nor loses the round.",
    decided_by_wait=after_action("manager-kueue-back"),
    bounds=(
        Bound(
            "mkdc",
            "rounds kept across Kueue's crash; a refused write retried",
            "the RestartSafe claim, judged as mkdc reads it",
        ),
    ),
)
def kueue_restart(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-14: around ACTIONs "manager-kueue-down" (td) and "manager-kueue-back" (tb), see
    `_survives_outage`. While Kueue is down its Workload webhook (failurePolicy Fail)
    refuses every write, so an escalation due then is made only by a dispatcher that
    retries a refused write."""
    return _survives_outage(tl, b, "manager-kueue")


def _survives_outage(tl: Timeline, b: Bounds, process: str) -> Verdict:
    """A manager process was out from td to tb (outage o = tb - td). A workload created
    before td and unplaced then: the round running at td escalates on its original
    schedule (EXT-11's window with the outage as downtime: no jump, no reset), and it is
    placed within placement_bound(expected_cluster) + o of creation. A workload created
    after tb: its first nomination comes within handover_slack of creation (the time a
    dispatcher gets to recover, as a standby to take over: a dispatcher whose watch
    never came back never sees it), and it is placed within placement_bound +
    handover_slack."""
    down = tl.action(f"{process}-down")
    back = tl.action(f"{process}-back", after=down.t if down else INF)
    if down is None or back is None:
        return Verdict.unclear(f"no {process}-down/{process}-back actions")
    measured: dict[str, Any] = {"outageSeconds": back.t - down.t}
    created = created_at(tl)
    if created < back.t:
        return _round_survives(tl, b, down.t, back.t, process, measured)
    problems, due = [], created + b.handover_slack
    first, end = first_nomination(tl), end_of(tl, b)
    if (first is None and end >= due) or (first is not None and first.t > due):
        when = f"at {at(first.t)}" if first else "none"
        # a dispatcher that exited is said to have (suites.judge), not guessed at
        guess = (
            ""
            if tl.where(Kind.DISPATCHER_EXITED)
            else " (its watch of Workloads not re-established?)"
        )
        problems.append(
            f"created after {process} was back ({at(back.t)}): first nomination {when}, "
            f"due by {at(due)}{guess}"
        )
    stuck_at = created + b.placement_bound(b.expected_cluster) + b.handover_slack
    return _placed_by(first_placement(tl), end, stuck_at, problems, measured)


def _round_survives(
    tl: Timeline, b: Bounds, down: float, back: float, what: str, measured: dict[str, Any]
) -> Verdict:
    """A workload pending while `what` was out (from `down` to `back`): the round running at
    `down` ends on its original schedule (`_restart_window`), and the workload is placed
    within placement_bound(expected_cluster) + the outage of creation."""
    placed, end = first_placement(tl), end_of(tl, b)
    went = "the kill" if what == "dispatcher" else f"{what} went down"
    if placed and placed.t <= down:
        return Verdict.unclear(f"placed at {at(placed.t)}, before {went}", **measured)
    problems: list[str] = []
    reviews = [r for r in review_rounds(tl, b) if r.round.t <= down and r.timeout is not None]
    if reviews:
        offset = "killOffsetSeconds" if what == "dispatcher" else "outageOffsetSeconds"
        measured[offset] = down - reviews[-1].round.t
        problems += _restart_window(reviews[-1], down, back, b, end, what)
    stuck_at = created_at(tl) + b.placement_bound(b.expected_cluster) + (back - down)
    return _placed_by(placed, end, stuck_at, problems, measured)


def _placed_by(
    placed: Event | None, end: float, stuck_at: float, problems: list[str], measured: dict[str, Any]
) -> Verdict:
    """`problems`, plus a placement later than `stuck_at` (or none by then)."""
    if (placed is None and end >= stuck_at) or (placed and placed.t > stuck_at):
        state = f"placed at {at(placed.t)}" if placed else "never placed"
        problems = [*problems, f"workload {state}; bound {at(stuck_at)}"]
    if problems:
        return Verdict.fail(problems, **measured)
    if placed is None:
        return not_judged(end, stuck_at, "the placement bound")
    return Verdict.ok(**measured)


def _restart_window(
    r: RoundReview, kill: float, back: float, b: Bounds, end: float, what: str = "dispatcher"
) -> list[str]:
    """The round running when `what` went down must end on its original schedule (EXT-11)."""
    assert r.timeout is not None
    due = r.round.t + r.timeout
    latest = due + (back - kill) + b.escalation_slack
    went = "killed" if what == "dispatcher" else f"{what} down"
    label = f"round {joined(r.round.added)} of {at(r.round.t)} ({went} {at(kill)}, back {at(back)})"
    if r.next_t is None:
        return [f"never escalated: {label} due by {at(latest)}"] if r.late and end >= latest else []
    if r.next_t < due - b.early_tolerance:
        return [f"jumped: escalated at {at(r.next_t)}, {label} was due at {at(due)}"]
    if r.next_t > latest:
        reset = abs(r.next_t - back - r.timeout) <= b.escalation_slack
        hint = " (= back after restart + timeout: round reset)" if reset else ""
        return [f"escalated at {at(r.next_t)}{hint}, {label} due by {at(latest)}"]
    return []


@check(
    "EXT-12",
    "LeaderFailover",
    feature="HighAvailability",
    summary="With two replicas, killing the leader hands over within the lease time, without "
    "double writes.",
    bounds=(
        Bound(
            "mkdc",
            "the standby writes within handover_slack; no two replicas write within "
            "conflict_window",
            "the HighAvailability claim, judged as mkdc reads it",
        ),
    ),
)
def leader_failover(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-12: after ACTION what="leader-killed" at tk (data user = the killed leader's
    user; default the last dispatcher writer before tk), if the workload still needs a
    write (unplaced, an escalation or the first nomination outstanding) a dispatcher WRITE
    by another user follows by max(tk + handover_slack, due + escalation_slack). And no
    two different dispatcher users WRITE the workload within conflict_window of each other
    (any outcome: a 409 is a write attempt too), except the handover itself: the killed
    leader's write (from tk - conflict_window) followed by another user's after
    tk - observation_skew (by tk + handover_slack). A standby cannot hold the lease before
    the leader dies, so another user's write before the killed leader's last one, however
    close to the kill, is two replicas writing at once."""
    if not b.dispatcher_users:
        return Verdict.unclear("dispatcher users unknown: replicas cannot be told apart")
    writes = [e for e in tl.where(Kind.WRITE) if e.user in b.dispatcher_users]
    kill = tl.action("leader-killed")
    before = [w for w in writes if kill and w.t <= kill.t]
    old = (kill.user if kill else None) or (before[-1].user if before else None)

    def handover(a: Event, c: Event) -> bool:
        if kill is None or a.user != old or c.user == old:
            return False
        after = kill.t - b.observation_skew < c.t <= kill.t + b.handover_slack
        return after and a.t >= kill.t - b.conflict_window

    problems = [
        f"conflicting writes by {a.user} at {at(a.t)} and {c.user} at {at(c.t)}"
        for a, c in pairwise(writes)
        if a.user != c.user and c.t - a.t <= b.conflict_window and not handover(a, c)
    ]
    if kill is None:
        return Verdict.fail(problems) if problems else Verdict.unclear("no leader-killed action")
    late, due = _handover(tl, b, kill, writes)
    problems += late
    if problems:
        return Verdict.fail(problems)
    if not due:
        return Verdict.unclear("no write was due after the leader was killed")
    return Verdict.ok()


def _handover(tl: Timeline, b: Bounds, kill: Event, writes: list[Event]) -> tuple[list[str], bool]:
    """Problems with the takeover write, and whether one was due at all (see EXT-12)."""
    before = [w for w in writes if w.t <= kill.t]
    old = kill.user or (before[-1].user if before else None)
    current = [r for r in rounds(tl) if r.t <= kill.t]
    timeout = b.round_timeout_for(current[-1].added) if current else 0.0
    if timeout is None:
        return [], False  # the running round never escalates
    due = (current[-1].t if current else kill.t) + timeout
    deadline = max(kill.t + b.handover_slack, due + b.escalation_slack)
    takeover = next((w for w in writes if w.t > kill.t and w.user != old), None)
    if takeover and takeover.t <= deadline:
        return [], True
    tried = {c for r in current for c in r.added}
    placed = first_placement(tl)
    if (placed and placed.t <= deadline) or not set(configured(tl, b, kill.t)) - tried:
        return [], False
    if end_of(tl, b) < deadline:
        return [], False
    when = f"first at {at(takeover.t)}" if takeover else "none"
    return [
        f"leader {old} killed at {at(kill.t)}; write by another replica {when}, "
        f"due by {at(deadline)}"
    ], True
