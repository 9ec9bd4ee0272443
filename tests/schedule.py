"""The order a parallel `make test` runs its tests in, so its slowest tests never end alone.

pytest-xdist's worksteal hands each worker one contiguous slice of the collection at the
start (sizes as ``slices`` computes them); an idle worker later steals the tail half of the
busiest one's queue. In collection order every e2e test fell into the first worker's
slice: the others ran unit tests, then stole, and the last e2e tests ran with the CPU
two-thirds idle (`vmstat 5`: 90 % idle through the last minute). Here each slice starts
with its share of the e2e tests, dealt longest first onto the slice with the least
expected time, and is filled up with unit tests, which the others steal at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def slices(count: int, workers: int) -> list[int]:
    """How many of ``count`` tests worksteal gives each of ``workers`` at the start."""
    sizes, left = [], count
    for i in range(workers):
        sizes.append(left // (workers - i))
        left -= sizes[-1]
    return sizes


def deal(items: Sequence[T], workers: int, seconds: Callable[[T], float | None]) -> list[T]:
    """``items`` reordered for ``workers`` worksteal workers: the timed ones (``seconds``
    not None) dealt longest first, each onto the slice expected to finish first, each
    slice then filled with the untimed ones in their order. One worker: longest first."""
    timed: list[tuple[float, T]] = []
    untimed: list[T] = []
    for item in items:
        secs = seconds(item)
        if secs is None:
            untimed.append(item)
        else:
            timed.append((secs, item))
    timed.sort(key=lambda pair: pair[0], reverse=True)
    sizes = slices(len(items), max(1, workers))
    lanes: list[list[T]] = [[] for _ in sizes]
    totals = [0.0] * len(sizes)
    for secs, item in timed:
        best = min(
            (k for k in range(len(lanes)) if len(lanes[k]) < sizes[k]), key=totals.__getitem__
        )
        lanes[best].append(item)
        totals[best] += secs
    rest = iter(untimed)
    for lane, size in zip(lanes, sizes, strict=True):
        lane.extend(next(rest) for _ in range(size - len(lane)))
    return [item for lane in lanes for item in lane]
