"""The reference dispatcher's work queue, driven by a fake clock (timeout=0: never blocks)."""

from __future__ import annotations

from dispatchers.reference.workqueue import WorkQueue


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


def test_token_bucket_bounds_the_rate() -> None:
    clock = Clock()
    q = WorkQueue(clock, qps=2, burst=3)
    for key in "abcdef":
        q.add(key)
    assert drain(q) == ["a", "b", "c"]
    clock.now += 0.5  # one token
    assert drain(q) == ["d"]
    clock.now += 1.0
    assert drain(q) == ["e", "f"]


def test_shutdown_unblocks() -> None:
    q = WorkQueue()
    q.shutdown()
    assert q.get(timeout=5) is None
