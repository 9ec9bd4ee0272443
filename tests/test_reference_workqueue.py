"""The reference dispatcher's work queue, driven by a fake clock (timeout=0: never blocks)."""

from __future__ import annotations

import threading
import time

from dispatchers.reference.workqueue import Slots, TokenBucket, WorkQueue


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def drain(q: WorkQueue) -> list[str]:
    got = []
    while (key := q.get(timeout=0)) is not None:
        got.append(key)
        q.done(key)
    return got


def test_adds_are_deduplicated_and_ordered() -> None:
    q = WorkQueue(Clock())
    for key in ("a", "b", "a", "c", "b"):
        q.add(key)
    assert drain(q) == ["a", "b", "c"]


def test_key_added_while_processing_comes_back_after_done() -> None:
    q = WorkQueue(Clock())
    q.add("a")
    assert q.get(timeout=0) == "a"
    q.add("a")
    assert q.get(timeout=0) is None  # not handed to a second worker
    q.done("a")
    assert q.get(timeout=0) == "a"


def test_delayed_add_waits_and_earliest_due_wins() -> None:
    clock = Clock()
    q = WorkQueue(clock)
    q.add_after("a", 10)
    q.add_after("a", 5)
    q.add_after("a", 20)
    clock.now += 4.9
    assert drain(q) == []
    clock.now += 0.2
    assert drain(q) == ["a"]
    clock.now += 30
    assert drain(q) == []  # the later entries were merged into the first


def test_immediate_add_replaces_a_delayed_one() -> None:
    clock = Clock()
    q = WorkQueue(clock)
    q.add_after("a", 10)
    q.add("a")
    assert drain(q) == ["a"]
    clock.now += 11
    assert drain(q) == []


def test_failures_back_off_exponentially_until_forgotten() -> None:
    clock = Clock()
    q = WorkQueue(clock, base_delay=1, max_delay=5)
    assert [q.rate_limited("a") for _ in range(5)] == [1, 2, 4, 5, 5]
    q.forget("a")
    assert q.rate_limited("a") == 1


def test_urgent_keys_jump_the_normal_lane() -> None:
    q = WorkQueue(Clock())
    q.add("old")
    q.add("escalating")
    q.add("new", urgent=True)
    q.add("escalating", urgent=True)  # moves, still once
    assert drain(q) == ["new", "escalating", "old"]


def test_a_moved_key_leaves_no_second_turn_behind() -> None:
    """The entry a move to the urgent lane leaves in the normal lane is never served."""
    q = WorkQueue(Clock())
    q.add("moved")
    q.add("b")
    q.add("moved", urgent=True)
    assert len(q) == 2
    assert q.get(timeout=0) == "moved"
    q.done("moved")
    q.add("c")
    q.add("moved")  # queued again, now behind c
    assert len(q) == 3
    assert drain(q) == ["b", "c", "moved"]


def test_a_worker_kept_for_new_workloads_takes_only_the_urgent_lane() -> None:
    q = WorkQueue(Clock())
    q.add("escalating")
    assert q.get(timeout=0, urgent_only=True) is None  # left for the other workers
    q.add("new", urgent=True)
    assert q.get(timeout=0, urgent_only=True) == "new"
    assert q.get(timeout=0) == "escalating"


def test_a_normal_key_wakes_a_general_worker_while_a_kept_one_waits_too() -> None:
    """Both wait on one condition: the normal key must not be lost on the kept worker."""
    q = WorkQueue()
    got: dict[str, str | None] = {}
    # the kept worker still waits when the key comes (at 0.1 s), and gives up at 1.5 s
    kept = threading.Thread(target=lambda: got.update(kept=q.get(1.5, urgent_only=True)))
    general = threading.Thread(target=lambda: got.update(general=q.get(5.0)))
    kept.start()
    general.start()
    time.sleep(0.1)  # both are waiting
    started = time.monotonic()
    q.add("escalating")
    general.join()
    waited = time.monotonic() - started
    kept.join()
    assert got == {"general": "escalating", "kept": None}
    assert waited < 2.5  # woken at once, not at its timeout (5 s)


def test_an_urgent_key_wakes_a_kept_worker_at_once() -> None:
    q = WorkQueue()
    got: dict[str, str | None] = {}
    kept = threading.Thread(target=lambda: got.update(kept=q.get(5.0, urgent_only=True)))
    kept.start()
    time.sleep(0.1)
    started = time.monotonic()
    q.add("new", urgent=True)
    kept.join()
    assert got == {"kept": "new"}
    assert time.monotonic() - started < 2.5  # woken at once, not at its timeout (5 s)


def test_urgency_added_while_processing_is_kept() -> None:
    q = WorkQueue(Clock())
    q.add("a")
    q.add("b")
    assert q.get(timeout=0) == "a"
    q.add("a", urgent=True)
    q.done("a")
    assert drain(q) == ["a", "b"]


def test_token_bucket_bounds_the_rate() -> None:
    clock = Clock()
    slept: list[float] = []
    bucket = TokenBucket(qps=2, burst=3, clock=clock, sleep=slept.append)
    for _ in range(3):
        bucket.take()
    assert slept == []
    bucket.take()  # 4th within the same instant: half a second at 2/s
    clock.now += 0.5
    bucket.take()  # the refilled token went to the 4th: wait another 0.5 s
    assert slept == [0.5, 0.5]
    clock.now += 10
    bucket.take()  # refilled (capped at burst)
    assert slept == [0.5, 0.5]


def test_shutdown_unblocks() -> None:
    q = WorkQueue()
    q.shutdown()
    assert q.get(timeout=5) is None


def test_waited_is_the_time_a_key_was_due_before_a_worker_took_it() -> None:
    clock = Clock()
    q = WorkQueue(clock)
    q.add("a")
    clock.now += 0.5
    q.add("a", urgent=True)  # moving lanes keeps the first due time
    clock.now += 1.0
    assert q.get(timeout=0) == "a"
    assert q.waited("a") == 1.5
    q.done("a")
    assert q.waited("a") == 0.0
    q.add_after("b", 2)
    clock.now += 3  # due after 2 s, taken after 3: waited from when it was due
    assert q.get(timeout=0) == "b" and q.waited("b") == 1.0


def test_a_key_with_no_slot_free_is_parked_and_woken_in_turn() -> None:
    clock, woken = Clock(), list[str]()
    slots = Slots(1, woken.append, clock)
    assert slots.take("a") == 0.0
    assert slots.take("b") is None and slots.take("c") is None and slots.take("b") is None
    assert woken == []
    clock.now += 3
    slots.release()
    assert woken == ["b"]  # the longest parked, once
    assert slots.take("b") == 3.0  # parked for 3 s before it got the slot
    slots.release()
    assert woken == ["b", "c"]


def test_a_woken_key_that_takes_no_slot_passes_the_wake_on() -> None:
    """It no longer escalates (placed meanwhile, say): the next parked key is woken, or it
    would wait for a release that no one is left to make."""
    woken: list[str] = []
    slots = Slots(1, woken.append, Clock())
    slots.take("a")
    for key in ("b", "c"):
        slots.take(key)
    slots.settle("b")  # not woken yet: nothing to pass on
    assert woken == []
    slots.release()
    assert woken == ["b"]
    slots.settle("b")
    assert woken == ["b", "c"]
    slots.take("d")  # holds the slot
    slots.take("e")
    slots.settle("c")  # the slot is held: its release will wake the next
    assert woken == ["b", "c"]
    slots.release()
    assert woken == ["b", "c", "e"]
