"""parse_duration: the one duration syntax shared by profiles, scenarios and checks."""

from __future__ import annotations

import pytest

from harness.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("10s", 10.0),
        ("5m", 300.0),
        ("1m30s", 90.0),
        ("500ms", 0.5),
        ("1h", 3600.0),
        ("1.5s", 1.5),
        (" 2m ", 120.0),
        ("12", 12.0),
        (12, 12.0),
        (0.25, 0.25),
        ("0s", 0.0),
        (None, None),
    ],
)
def test_parses(text: str | float | None, seconds: float | None) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "bad", ["", "ten", "10x", "5 m", "-1s", "1m-30s", "s", "10s junk", -3, True, [10], float("inf")]
)
def test_rejects_with_a_clear_message(bad: object) -> None:
    with pytest.raises(ValueError, match="invalid duration") as err:
        parse_duration(bad)  # type: ignore[arg-type]
    assert "10s" in str(err.value)  # says what would be accepted


@pytest.mark.parametrize(
    ("seconds", "text"), [(90.0, "1m30s"), (10.0, "10s"), (0.5, "500ms"), (0, "0s"), (None, None)]
)
def test_format_round_trips(seconds: float | None, text: str | None) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == seconds
