"""A rate-limited work queue keyed by workload, in the manner of client-go's workqueue.

Why: watch events arrive in bursts (every status write of Kueue is one), a workload must be
reconciled by one worker at a time, and a round timeout is a delayed requeue, not a poll.
Guarantees: a key is queued at most once; a key added while being processed is handed out
again after ``done``; ``add_after`` keeps the earliest due time; failures back off
exponentially per key; an urgent lane (workloads still waiting for their first nominee) is
served before the normal one, so a burst of escalations never delays a new workload. The
rate of API writes is bounded where they are made (``TokenBucket``), not here: most
reconciles write nothing and should cost nothing. The clock is injected so all of it is
unit-tested without sleeping.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable


class WorkQueue:
    """Thread-safe; ``get`` blocks until a key is due (or the timeout, or shutdown)."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        *,
        base_delay: float = 0.2,
        max_delay: float = 60.0,
    ) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        # Lanes hold (ticket, key); a key's live ticket is in _queued, so moving a key to
        # the urgent lane leaves a stale entry behind instead of searching the deque.
        self._urgent: deque[tuple[int, str]] = deque()
        self._ready: deque[tuple[int, str]] = deque()
        self._queued: dict[str, tuple[int, bool]] = {}  # key -> (live ticket, urgent)
        self._tickets = itertools.count()
        self._processing: set[str] = set()
        self._dirty: dict[str, bool] = {}  # added while processing -> urgent; again after done
        self._due: dict[str, float] = {}  # delayed keys
        self._heap: list[tuple[float, str]] = []
        self._failures: dict[str, int] = {}
        self._since: dict[str, float] = {}  # key -> when it became due (for ``waited``)
        self._waited: dict[str, float] = {}  # key -> seconds it was due before handed out
        self._base, self._max = base_delay, max_delay
        self._shutdown = False

    def add(self, key: str, *, urgent: bool = False) -> None:
        """Queue now (a pending delayed entry is dropped: the reconcile reschedules).
        An urgent key already waiting in the normal lane moves to the urgent one."""
        with self._cond:
            self._due.pop(key, None)
            if urgent and key in self._queued and not self._queued[key][1]:
                del self._queued[key]  # its normal-lane entry goes stale
            self._enqueue(key, urgent)

    def add_after(self, key: str, delay: float) -> None:
        """Queue at ``now + delay``; an earlier due time already set wins."""
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            if key in self._queued:
                return
            due = self._clock() + delay
            if due < self._due.get(key, float("inf")):
                self._due[key] = due
                heapq.heappush(self._heap, (due, key))
                self._cond.notify()

    def rate_limited(self, key: str) -> float:
        """Requeue after a failure with per-key exponential backoff; returns the delay."""
        with self._cond:
            count = self._failures.get(key, 0) + 1
            self._failures[key] = count
        delay = min(self._base * 2 ** (count - 1), self._max)
        self.add_after(key, delay)
        return delay

    def forget(self, key: str) -> None:
        """Reset the key's backoff after a success."""
        with self._cond:
            self._failures.pop(key, None)

    def get(self, timeout: float | None = None, *, urgent_only: bool = False) -> str | None:
        """The next due key, marked as processing; None on timeout or shutdown.
        ``urgent_only``: only from the urgent lane (a worker kept for new workloads, so a
        backlog of escalations, each waiting on slow writes, never holds every worker)."""
        deadline = None if timeout is None else self._clock() + timeout
        with self._cond:
            while not self._shutdown:
                self._promote()
                key = self._pop(self._urgent) or (None if urgent_only else self._pop(self._ready))
                if key is not None:
                    self._processing.add(key)
                    self._waited[key] = self._clock() - self._since.pop(key, self._clock())
                    return key
                now = self._clock()
                if deadline is not None and now >= deadline:
                    return None
                pause = [deadline - now] if deadline is not None else []
                if self._heap:
                    pause.append(self._heap[0][0] - now)
                self._cond.wait(max(min(pause), 0.001) if pause else None)
        return None

    def waited(self, key: str) -> float:
        """Seconds ``key`` was due before ``get`` handed it out (queueing delay: the
        figure that shows whether workers, not the API, are the bottleneck)."""
        with self._cond:
            return self._waited.get(key, 0.0)

    def done(self, key: str) -> None:
        """Processing of ``key`` finished; hand it out again if it was added meanwhile."""
        with self._cond:
            self._processing.discard(key)
            self._waited.pop(key, None)
            if key in self._dirty:
                self._enqueue(key, self._dirty.pop(key))

    def shutdown(self) -> None:
        with self._cond:
            self._shutdown = True
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._queued) + len(self._due)

    def _enqueue(self, key: str, urgent: bool = False) -> None:
        if key in self._processing:
            self._dirty[key] = self._dirty.get(key, False) or urgent
        elif key not in self._queued:
            self._since.setdefault(key, self._clock())
            ticket = next(self._tickets)
            self._queued[key] = (ticket, urgent)
            (self._urgent if urgent else self._ready).append((ticket, key))
            self._cond.notify_all()  # a waiter kept for the urgent lane may not take it

    def _pop(self, lane: deque[tuple[int, str]]) -> str | None:
        """The lane's first live key (dropped from _queued), skipping stale entries."""
        while lane:
            ticket, key = lane.popleft()
            if self._queued.get(key, (None,))[0] == ticket:
                del self._queued[key]
                return key
        return None

    def _promote(self) -> None:
        now = self._clock()
        while self._heap and self._heap[0][0] <= now:
            due, key = heapq.heappop(self._heap)
            if self._due.get(key) == due:
                del self._due[key]
                if key not in self._processing:
                    self._since.setdefault(key, due)  # due since then, not since promoted
                self._enqueue(key)


class TokenBucket:
    """Client-side rate limit of API requests, as client-go's QPS/Burst: ``take`` blocks
    until a token is free. Shared by all workers so a burst of decisions cannot flood the
    apiserver."""

    def __init__(
        self,
        qps: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._qps, self._burst = qps, float(burst)
        self._tokens, self._filled = float(burst), clock()
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Take a token now (the bucket may go negative); seconds to wait before using it."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self._burst, self._tokens + (now - self._filled) * self._qps)
            self._filled = now
            self._tokens -= 1
            return 0.0 if self._tokens >= 0 else -self._tokens / self._qps

    def take(self) -> None:
        wait = self.reserve()
        if wait > 0:
            self._sleep(wait)


class Slots:
    """At most ``size`` holders at once; a key that finds none free is parked, not waited
    for: a worker thread blocked on a slot would be a thread less for first dispatches.
    Each ``release`` hands the longest-parked key to ``wake`` (which queues it again), so
    a parked key is never left behind while a slot is held."""

    def __init__(
        self, size: int, wake: Callable[[str], None], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._size, self._wake, self._clock = size, wake, clock
        self._lock = threading.Lock()
        self._held = 0
        self._parked: dict[str, float] = {}  # key -> when first parked (insertion order)
        self._woken: dict[str, float] = {}  # handed to ``wake``: key -> when first parked

    def take(self, key: str) -> float | None:
        """A slot for ``key`` and how long it was parked before, or None: parked."""
        with self._lock:
            since = self._woken.pop(key, None)
            if self._held < self._size:
                self._held += 1
                self._parked.pop(key, None)
                return 0.0 if since is None else self._clock() - since
            self._parked.setdefault(key, self._clock() if since is None else since)
            return None

    def release(self) -> None:
        with self._lock:
            self._held -= 1
            key = self._next()
        if key is not None:
            self._wake(key)

    def settle(self, key: str) -> None:
        """``key`` was looked at: if it was woken and took no slot (it no longer escalates,
        or failed first), the wake goes on to the next parked key, so none is stranded."""
        with self._lock:
            passed_on = self._woken.pop(key, None) is not None
            following = self._next() if passed_on and self._held < self._size else None
        if following is not None:
            self._wake(following)

    def _next(self) -> str | None:
        key = next(iter(self._parked), None)
        if key is not None:
            self._woken[key] = self._parked.pop(key)
        return key
