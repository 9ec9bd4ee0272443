"""Lease-based leader election of the reference dispatcher, with a fake clock and store."""

from __future__ import annotations

from dataclasses import replace

from dispatchers.reference.leader import Conflict, LeaderElector, LeaseRecord, micro_time


class Store:
    """An in-memory Lease with resourceVersion compare-and-swap, as the API server does."""

    def __init__(self) -> None:
        self.record: LeaseRecord | None = None
        self.rv = 0

    def get(self) -> LeaseRecord | None:
        return self.record

    def create(self, record: LeaseRecord) -> LeaseRecord:
        if self.record is not None:
            raise Conflict("exists")
        return self._store(record)

    def update(self, record: LeaseRecord) -> LeaseRecord:
        if self.record is None or record.resource_version != self.record.resource_version:
            raise Conflict("stale")
        return self._store(record)

    def _store(self, record: LeaseRecord) -> LeaseRecord:
        self.rv += 1
        self.record = replace(record, resource_version=str(self.rv))
        return self.record


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def pair(duration: float = 15):
    store, clock = Store(), Clock()
    a = LeaderElector(store, "a", duration, clock=clock, wall=clock)
    b = LeaderElector(store, "b", duration, clock=clock, wall=clock)
    return store, clock, a, b


def test_first_candidate_creates_the_lease_and_leads() -> None:
    store, _, a, b = pair()
    assert a.tick() and not b.tick()
    assert store.record is not None and store.record.holder == "a"
    assert store.record.duration == 15 and store.record.transitions == 0


def test_leader_renews_and_standby_never_takes_a_live_lease() -> None:
    store, clock, a, b = pair()
    a.tick()
    for _ in range(20):
        clock.now += 3
        assert a.tick() and not b.tick()
    assert store.record is not None and store.record.holder == "a"


def test_killed_leader_is_replaced_after_expiry_not_before() -> None:
    store, clock, a, b = pair()
    a.tick()
    b.tick()  # b observes a's record now
    clock.now += 14.9
    assert not b.tick()
    clock.now += 0.2
    assert b.tick()
    assert store.record is not None and store.record.holder == "b"
    assert store.record.transitions == 1


def test_leader_that_cannot_renew_steps_down_before_expiry() -> None:
    _, clock, a, _ = pair()
    a.tick()
    clock.now += 9.9
    assert a.is_leader
    clock.now += 0.2  # past the renew deadline (2/3 of the lease): stop writing
    assert not a.is_leader


def test_concurrent_takeover_has_one_winner() -> None:
    store, clock, a, b = pair()
    c = LeaderElector(store, "c", 15, clock=clock, wall=clock)
    a.tick()
    b.tick()
    c.tick()
    clock.now += 16
    stale = store.get()
    assert b.tick()
    store.get = lambda: stale  # c read before b wrote
    assert not c.tick()
    store.get = Store.get.__get__(store)
    assert store.record is not None and store.record.holder == "b"


def test_release_lets_a_standby_take_over_at_once() -> None:
    store, clock, a, b = pair()
    a.tick()
    b.tick()
    a.release()
    assert not a.is_leader
    clock.now += 1
    assert b.tick()


def test_micro_time_has_six_fraction_digits() -> None:
    assert micro_time(0) == "1970-01-01T00:00:00.000000Z"
