"""Durations as written in profiles and scenarios: ``10s``, ``5m``, ``1m30s``, ``500ms``.

One parser for the whole harness so a profile, a scenario and a check never disagree on
what ``"1m30s"`` means. Go-style units (``ms``, ``s``, ``m``, ``h``) may be chained; a
plain number is seconds; ``None`` means "no duration" (e.g. a dispatcher that never
escalates) and is passed through.
"""

from __future__ import annotations

import math
import re

from harness.errors import shown

# ASCII digits only: float() and \d would also take "１０", "١٠" and "1_0", which no Go
# duration (and no reader of the profile) means
_NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_PLAIN = re.compile(_NUMBER + r"(?:[eE][-+]?[0-9]+)?")
_PART = re.compile(f"({_NUMBER})(ms|h|m|s)")
_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: str | int | float | None) -> float | None:
    """Seconds from ``"10s"``, ``"5m"``, ``"1m30s"``, ``"500ms"``, ``"1h"``, ``12``, ``"12"``.

    ``None`` gives ``None``. Anything else (negative, empty, unknown unit, bool) raises
    ``ValueError`` with a message naming the bad value and the accepted forms.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(_bad(value))
    if isinstance(value, str):
        seconds = _parse_text(value.strip(), value)
    else:
        seconds = float(value)
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(_bad(value))
    return seconds


def format_duration(seconds: float | None) -> str | None:
    """The inverse for reports: ``90.0`` -> ``"1m30s"``, ``0.5`` -> ``"500ms"``."""
    if seconds is None:
        return None
    if seconds < 1 and seconds != 0:
        return f"{round(seconds * 1000):d}ms"
    minutes, rest = divmod(seconds, 60)
    text = f"{int(minutes)}m" if minutes else ""
    if rest or not text:
        text += f"{rest:g}s"
    return text


def _parse_text(text: str, original: object) -> float:
    if _PLAIN.fullmatch(text):
        return float(text)
    parts = _PART.findall(text)
    if not text or "".join(n + u for n, u in parts) != text:
        raise ValueError(_bad(original))
    return sum(float(number) * _SECONDS[unit] for number, unit in parts)


def _bad(value: object) -> str:
    return (
        f"invalid duration {shown(value)}: expected a non-negative number of seconds or "
        "units like '500ms', '10s', '5m', '1m30s', '1h'"
    )
