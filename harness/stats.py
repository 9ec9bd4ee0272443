"""Percentiles as the report states them: nearest rank (always an observed value)."""

from __future__ import annotations

import math
from collections.abc import Iterable


def percentile(values: Iterable[float], q: float) -> float | None:
    """Nearest-rank percentile (always an observed value); None without values."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def rounded(value: float | None) -> float | None:
    """Milliseconds are the finest figure a report states."""
    return None if value is None else round(value, 3)


def p50_p99(values: Iterable[float]) -> dict[str, float | None]:
    values = list(values)
    return {"p50": rounded(percentile(values, 50)), "p99": rounded(percentile(values, 99))}
