"""The judge's own record of each scenario it judges, kept apart from the scenario: the
checks it decides, what has been said of them, and a note for its results."""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field

from harness.scenarios.scenario import Scenario


@dataclass
class Judgement:
    """The judge's own record of one scenario: the checks it decides (its test's), those
    whose result is written, the failed ones with their message, and a note said with
    every result of it that is not passed."""

    checks: tuple[str, ...] = ()
    note: str = ""
    recorded: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)  # check id -> message


_JUDGEMENTS: weakref.WeakKeyDictionary[Scenario, Judgement] = weakref.WeakKeyDictionary()


def judging(sc: Scenario, checks: Iterable[str] = (), *, note: str = "") -> Judgement:
    """Begin the judge's record of `sc`, which decides `checks`."""
    made = _JUDGEMENTS[sc] = Judgement(tuple(checks), note)
    return made


def judgement(sc: Scenario) -> Judgement:
    """The judge's record of `sc` (an empty one where none was begun: it decides nothing
    of its own, and is judged on the checks that hold on every timeline)."""
    return _JUDGEMENTS.setdefault(sc, Judgement())
