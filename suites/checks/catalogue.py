"""The catalogue: each check is declared by `@check(...)` on its evaluator, so its ID, name
and summary sit on the function that decides it; `run_check` applies a check's scope."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from harness.check_terms import Bound, GateNeed
from harness.recording.timeline import Kind, Timeline
from suites.checks.verdict import Bounds, Verdict

Scope = Literal["workload", "scenario"]
Evaluate = Callable[[Timeline, Bounds], Verdict]
# Given a broken scenario's timeline: had it got as far as this check's decision point?
DecisionPoint = Callable[[Timeline], bool]
PREFIXES = ("CORE", "EXT")  # catalogue order: core checks, then extended ones


@dataclass(frozen=True)
class Check:
    """One catalogue entry: stable id and name, required feature, and its evaluation."""

    id: str
    name: str
    feature: str | None  # None: core, every dispatcher must pass it
    summary: str
    evaluate: Evaluate
    scope: Scope = "workload"
    # judged on what the dispatcher wrote alone (names, their number, when, to whom): no
    # fault of the environment excuses a failure; any other check that fails while an
    # injected fault disturbed its scenario is undecided, naming the fault
    writes_only: bool = False
    # held on every scenario's timeline, whatever the scenario was for
    every_timeline: bool = False
    # its decision point is a wait of its own scenario, once the timeline shows this (see
    # suites.judge.settle): a wait there that times out is the check's own verdict
    decided_by_wait: DecisionPoint | None = None
    # it passes only on evidence it judged, never for want of it (no round came due:
    # inconclusive), so a scenario another check broke still decides it on what came
    judges_what_came: bool = False
    # whose each bound is (the KEP's, Kueue's API's or mkdc's) and why: the catalogue says it
    bounds: tuple[Bound, ...] = ()
    # Kueue feature gates in whose other state the dispatcher cannot be seen: the harness
    # starts Kueue with them so, and a run whose Kueue had one otherwise leaves it undecided
    gates: tuple[GateNeed, ...] = ()

    def supported_by(self, features: Iterable[str]) -> bool:
        """Core checks always apply; extended ones when the profile claims the feature."""
        return self.feature is None or self.feature in set(features)


# id -> Check in catalogue order (CORE-01.., then EXT-01..), whatever the import order.
# Complete once suites.checks has imported every area module.
CATALOGUE: dict[str, Check] = {}


def catalogue_order(check_id: str) -> tuple[int, int]:
    """Sort key of a check ID: its prefix's place in PREFIXES, then its number."""
    prefix, _, number = check_id.partition("-")
    if prefix not in PREFIXES or not number.isdigit():
        raise ValueError(f"check id {check_id!r}: want one of {', '.join(PREFIXES)}-<number>")
    return PREFIXES.index(prefix), int(number)


def register(registry: dict[str, Check], entry: Check) -> None:
    """Add `entry` to `registry`, keeping it in catalogue order; a duplicate ID is an error."""
    if entry.id in registry:
        raise ValueError(f"check {entry.id} declared twice")
    entries = sorted([*registry.values(), entry], key=lambda c: catalogue_order(c.id))
    registry.clear()
    registry.update((c.id, c) for c in entries)


def check(
    id: str,
    name: str,
    *,
    summary: str,
    feature: str | None = None,
    scope: Scope = "workload",
    writes_only: bool = False,
    every_timeline: bool = False,
    decided_by_wait: DecisionPoint | None = None,
    judges_what_came: bool = False,
    bounds: tuple[Bound, ...],
    gates: tuple[GateNeed, ...] = (),
) -> Callable[[Evaluate], Evaluate]:
    """Declare the decorated evaluator as catalogue check `id` (core unless `feature`),
    with whose each of its `bounds` is."""

    def declare(evaluate: Evaluate) -> Evaluate:
        entry = Check(
            id,
            name,
            feature,
            summary,
            evaluate,
            scope,
            writes_only,
            every_timeline,
            decided_by_wait,
            judges_what_came,
            bounds,
            gates,
        )
        register(CATALOGUE, entry)
        return evaluate

    return declare


def every_timeline() -> list[str]:
    """The checks held on every scenario's timeline, in catalogue order."""
    return [c.id for c in CATALOGUE.values() if c.every_timeline]


def wanted_gates() -> dict[str, bool]:
    """The Kueue feature gates the catalogue's checks need, in the state they need them."""
    return {g.gate: g.state for c in CATALOGUE.values() for g in c.gates}


def always(tl: Timeline) -> bool:
    """The decision point of a check whose scenario's whole wait is the check."""
    return True


def placed_once(tl: Timeline) -> bool:
    """The decision point once the workload was placed a first time."""
    return bool(tl.where_placed())


def after_action(what: str) -> DecisionPoint:
    """The decision point once the scenario's action `what` (e.g. a restart) happened."""
    return lambda tl: any(e.what == what for e in tl.where(Kind.ACTION))


def run_check(
    check: Check, timeline: Timeline, bounds: Bounds, workloads: Iterable[str] | None = None
) -> Verdict:
    """Evaluate `check` as its scope says and fold per-workload verdicts into one.

    Workload scope: every workload of the timeline except foreign ones (or `workloads`).
    Any failure fails (messages prefixed by the workload); all inconclusive is
    inconclusive; otherwise passed. `measured` holds each workload's figures.
    """
    if check.scope == "scenario":
        return check.evaluate(timeline, bounds)
    chosen = list(workloads) if workloads is not None else timeline.workloads()
    chosen = [w for w in chosen if w not in bounds.foreign_workloads]
    if not chosen:
        return Verdict.unclear("no workload in the timeline")
    verdicts = {w: check.evaluate(timeline.of(w), bounds) for w in chosen}
    if len(verdicts) == 1:
        return next(iter(verdicts.values()))
    measured = {"perWorkload": {w: v.measured for w, v in verdicts.items()}}
    failed = [
        f"{w}: {v.message}" for w, v in verdicts.items() if not v.passed and not v.inconclusive
    ]
    if failed:
        return Verdict.fail(failed, **measured)
    if all(v.inconclusive for v in verdicts.values()):
        return Verdict.unclear(next(iter(verdicts.values())).message, **measured)
    return Verdict.ok(**measured)
