"""What the dispatcher did in a check's window, told from hand-made timelines: each story
a faulty dispatcher tells, and a conforming one beside it."""

from __future__ import annotations

from harness.recording.timeline import Kind
from harness.results import DispatcherActions
from suites.actions import describe
from suites.checks import Bounds
from tests.timelines import WL, Story

ME = "system:serviceaccount:mkdc-dispatcher:d0"
B = Bounds.derive({"stepSize": 1, "roundTimeout": "10s"}, ["w1", "w2"], dispatcher_users={ME})


def until(t: float, b: Bounds = B) -> Bounds:
    return b.with_scenario(observed_until=t)


def nominated(story: Story, t: float, *names: str, code: int = 200, workload: str = WL) -> Story:
    """The dispatcher's write of the list (audit log) and, when accepted, the list as seen."""
    story.write(t, ME, code=code, workload=workload, names=list(names))
    return story.nominate(t + 0.1, *names) if code < 400 and workload == WL else story


def evicted(story: Story, t: float) -> Story:
    """The manager clears the placement and marks the workload Evicted: one eviction."""
    return story.place(t, "").evicted(t + 0.1)


def placed_then_evicted_from_w1() -> Story:
    story = nominated(Story().created(0), 2.0, "w1")
    return story.place(2.5, "w1")


def test_silence_after_an_eviction_names_the_list_it_left_in_place() -> None:
    """ignores-eviction: it wrote before the eviction, never after."""
    story = evicted(placed_then_evicted_from_w1(), 3.0)
    did = describe(story.timeline(), until(153.0), [WL])
    assert did.lines[0] == (
        "after the workload was evicted from w1 at t=3.0s it wrote nothing for 150.0s "
        "(to t=153.0s); its last write, at t=2.0s, was [w1] (the cluster that evicted it)"
    )
    assert did.summary == did.lines[0]  # the console's line
    assert (did.writes, did.nomination_writes, did.refused, did.last_write) == (1, 1, 0, 2.0)
    assert did.workloads == (WL,) and did.until == 153.0


def test_a_renomination_after_the_eviction_is_what_it_did() -> None:
    story = evicted(placed_then_evicted_from_w1(), 3.0)
    nominated(story, 4.0, "w2").place(6.0, "w2")
    did = describe(story.timeline(), until(20.0), [WL])
    # every workload placed again: the last turn is the new placement, and it kept quiet
    assert did.lines[0].startswith("after the workload was placed on w2 at t=6.0s it wrote nothing")
    assert "its last write, at t=4.0s, was [w2]" in did.lines[0]
    assert did.lines[1] == (
        "in all, 2 write(s) to 1 workload(s) up to t=20.0s (2 of the nomination list: "
        "[w1] (the cluster that evicted it), [w2])"
    )


def test_writes_after_the_placement_are_listed() -> None:
    """writes-after-placement: the same list written again 2 s after the placement."""
    story = nominated(Story().created(0), 1.0, "w1").place(3.0, "w1")
    nominated(story, 5.0, "w1")
    did = describe(story.timeline(), until(15.0), [WL])
    assert did.lines[0] == (
        "after the workload was placed on w1 at t=3.0s it wrote 1 time(s): [w1] at t=5.0s; "
        "then nothing for 10.0s (to t=15.0s)"
    )


def test_a_name_outside_the_config_is_pointed_out() -> None:
    story = nominated(Story().created(0), 1.0, "w1", "w9").place(3.0, "w1")
    did = describe(story.timeline(), until(10.0), [WL])
    assert "[w1,w9] (w9: in no config of the workload)" in did.lines[0]


def test_a_refused_write_it_never_retried() -> None:
    """drops-refused-writes: Kueue's webhook refused the escalation, and that was that."""
    story = nominated(Story().created(0), 1.0, "w1")
    story.write(11.0, ME, code=500, names=["w1", "w2"])
    story.events[-1].data["message"] = "Internal error occurred: failed calling webhook\nmore"
    did = describe(story.timeline(), until(40.0), [WL])
    assert did.lines[0].startswith(
        "after the workload was created at t=0.0s it wrote 2 time(s): [w1] at t=1.0s, "
        "[w1,w2] (refused: 500) at t=11.0s; then nothing for 29.0s"
    )
    # not retried: the console says it too
    assert did.lines[1] == (
        "1 refused: 500 x1 (Internal error occurred: failed calling webhook); after its "
        "refused write at t=11.0s ([w1,w2]) it did not write that workload again"
    )
    assert did.summary == f"{did.lines[0]}; {did.lines[1]}"
    assert did.refused == 1


def test_a_refused_write_retried_is_not_called_dropped() -> None:
    story = nominated(Story().created(0), 1.0, "w1")
    story.write(11.0, ME, code=409, names=["w1", "w2"])
    nominated(story, 11.5, "w1", "w2")
    did = describe(story.timeline(), until(40.0), [WL])
    assert did.lines[-1] == "1 refused: 409 x1"
    assert did.summary == did.lines[0]  # retried: a detail, not the console's line
    assert "[w1,w2] (refused: 409) at t=11.0s, [w1,w2] at t=11.5s" in did.summary


def test_after_a_restart_its_last_list_or_watch_is_said() -> None:
    """stale-watch: it watched before the manager's apiserver went away, never after."""
    story = Story().read(0.5, ME, "watch").created(1.0)
    nominated(story, 1.5, "w1").place(3.0, "w1")
    story.action(10.0, "manager-apiserver-down").action(20.0, "manager-apiserver-back")
    story.add(25.0, Kind.WORKLOAD_CREATED, of="ns/late")
    did = describe(story.timeline(), until(60.0), [WL, "ns/late"])
    assert did.lines[0] == (
        "after late was created at t=25.0s it wrote nothing to it for 35.0s (to t=60.0s); "
        "its last write, at t=1.5s, was [w1] to wl; its last watch of Workloads was at "
        "t=0.5s, before the manager's kube-apiserver was back at t=20.0s"
    )
    story.events = [e for e in story.events if e.workload != "ns/late"]
    did = describe(story.timeline(), until(60.0), [WL])
    # every workload placed: the last turn is the return of the apiserver
    assert did.lines[0] == (
        "after the manager's kube-apiserver was back at t=20.0s it wrote nothing for 40.0s "
        "(to t=60.0s); its last write, at t=1.5s, was [w1]; its last watch of Workloads was "
        "at t=0.5s, before the manager's kube-apiserver was back at t=20.0s"
    )
    story.read(21.0, ME, "watch")  # its watch came back: nothing before the restart said
    assert (
        describe(story.timeline(), until(60.0), [WL])
        .lines[0]
        .endswith("its last watch of Workloads was at t=21.0s")
    )
    kueue = Story().read(0.5, ME, "watch").created(1.0).action(20.0, "manager-kueue-back")
    assert "watch" not in describe(kueue.timeline(), until(60.0), [WL]).lines[0]


def test_a_dispatcher_that_never_wrote() -> None:
    did = describe(Story().created(0).mark(90).timeline(), until(90.0), [WL])
    assert did.lines == (
        "after the workload was created at t=0.0s it wrote nothing for 90.0s (to t=90.0s); "
        "it wrote nothing before either",
    )
    assert (did.writes, did.last_write, did.workloads) == (0, None, ())


def test_writes_to_a_foreign_workload_are_named() -> None:
    story = nominated(Story().created(0), 1.0, "w1").place(2.0, "w1")
    story.write(4.0, ME, verb="patch", subresource="", workload="other-ns/plain")
    did = describe(story.timeline(), until(15.0), [WL])
    assert did.lines[0].startswith(
        "after the workload was placed on w1 at t=2.0s it wrote 1 time(s): a patch to plain"
    )
    assert did.lines[1].endswith("; 1 to workloads not MultiKueue work of this scenario (plain)")


def test_someone_elses_writes_are_not_the_dispatchers() -> None:
    story = nominated(Story().created(0), 1.0, "w1")
    story.write(2.0, "system:serviceaccount:kueue-system:kueue", names=["w2"])
    did = describe(story.timeline(), until(10.0), [WL])
    assert did.writes == 1 and "[w2]" not in " ".join(did.lines)


def test_without_an_audit_log_its_nominations_as_seen_stand_for_writes() -> None:
    story = Story().created(0).nominate(1.0, "w1", writer=ME).nominate(5.0, "w1", "w2", writer=ME)
    story.nominate(6.0, "w3", writer="kueue")  # not its own
    did = describe(story.timeline(), until(30.0), [WL], audited=False)
    assert did.lines[0].startswith(
        "after the workload was created at t=0.0s it wrote 2 time(s): [w1] at t=1.0s, "
        "[w1,w2] at t=5.0s"
    )
    assert not did.audited


def test_many_workloads_the_ones_it_never_wrote_are_counted() -> None:
    story = Story().created(0)
    for i in range(6):
        story.add(i, Kind.WORKLOAD_CREATED, of=f"ns/b{i}")
    for i in range(3):
        story.write(10.0 + i, ME, workload=f"ns/b{i}", names=["w1"])
    own = [f"ns/b{i}" for i in range(6)]
    did = describe(story.timeline(), until(100.0), own)
    assert did.lines[0] == (
        "after b5 was created at t=5.0s it wrote 3 time(s): [w1] to b0 at t=10.0s, [w1] to b1 "
        "at t=11.0s, [w1] to b2 at t=12.0s; then nothing for 88.0s (to t=100.0s)"
    )
    assert did.lines[1].endswith("; 3 of its 6 workloads got none (b3,b4,b5)")


def test_the_account_travels_as_json() -> None:
    story = evicted(placed_then_evicted_from_w1(), 3.0)
    did = describe(story.timeline(), until(153.0), [WL])
    assert DispatcherActions.from_json(did.to_json()) == did


def test_cluster_names_lose_the_scenarios_prefix() -> None:
    story = Story().created(0).write(1.0, ME, names=["sc-9a-worker1", "sc-9a-worker2"])
    story.place(3.0, "sc-9a-worker2")
    bounds = until(10.0, B.with_scenario(clusters=("sc-9a-worker1", "sc-9a-worker2")))
    did = describe(story.timeline(), bounds, [WL], scenario="sc-9a")
    assert did.lines[0] == (
        "after the workload was placed on worker2 at t=3.0s it wrote nothing for 7.0s "
        "(to t=10.0s); its last write, at t=1.0s, was [worker1,worker2]"
    )


def test_an_exit_of_the_dispatcher_comes_first() -> None:
    """A replica that exited (its cause quoted from its log) is what it did, before all."""
    story = nominated(Story().created(0), 1.0, "w1").place(2.0, "w1")
    story.env(-5.0, Kind.DISPATCHER_EXITED, process="dispatcher-1", code=None, cause="killed")
    story.env(
        12.0,
        Kind.DISPATCHER_EXITED,
        process="dispatcher-0",
        code=1,
        cause="urllib3.exceptions.MaxRetryError: HTTPSConnectionPool(host='127.0.0.1')",
    )
    story.add(20.0, Kind.WORKLOAD_CREATED, of="ns/late")
    did = describe(story.timeline(), until(60.0), [WL, "ns/late"])
    assert did.lines[:3] == (
        "it exited: dispatcher-1 exited 5.0s before this scenario began: killed",
        "it exited: dispatcher-0 exited with code 1 at t=12.0s: "
        "urllib3.exceptions.MaxRetryError: HTTPSConnectionPool(host='127.0.0.1')",
        "after late was created at t=20.0s it wrote nothing to it for 40.0s (to t=60.0s); its last "
        "write, at t=1.0s, was [w1] to wl",
    )
    assert did.summary == did.lines[2]  # the check's message says the exits
    before = describe(story.timeline(), until(10.0), [WL])
    assert before.lines[0].startswith("it exited: dispatcher-1")
    assert "dispatcher-0" not in " ".join(before.lines)  # not yet exited


def test_what_it_owed_the_workload_left_unplaced_is_the_line() -> None:
    """drops-refused-writes, as a real run recorded it: the workload whose escalation
    Kueue refused was never written again, while the one created after the restart was
    served; the set-up's inactive clusters are no turn to answer."""
    before, after = "ns/job-before", "ns/job-after"
    story = Story().active(0.0, "w1", False).active(0.1, "w2", False)
    story.active(0.2, "w1", True).active(0.3, "w2", True)
    story.add(0.5, Kind.WORKLOAD_CREATED, of=before)
    nominated(story, 0.6, "w1", workload=before)
    story.action(7.8, "manager-kueue-down")
    nominated(story, 10.6, "w1", "w2", code=500, workload=before)
    story.action(13.3, "manager-kueue-back").add(13.5, Kind.WORKLOAD_CREATED, of=after)
    nominated(story, 13.8, "w1", workload=after).add(35.2, Kind.PLACEMENT, of=after, cluster="w1")
    did = describe(story.timeline(), until(119.1), [before, after])
    assert did.lines[0] == (
        "after the manager's Kueue was back at t=13.3s it wrote nothing to job-before for "
        "105.8s (to t=119.1s); "
        "its last write to it, at t=10.6s, was [w1,w2] (refused: 500)"
    )
    assert did.lines[1].endswith(
        "after its refused write at t=10.6s ([w1,w2] to job-before) it did not write that "
        "workload again"
    )
