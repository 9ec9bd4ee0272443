"""The conformance check catalogue: pure evaluation functions, one module per behaviour
area (mirroring suites/conformance/), each check declared by `@check` on its evaluator.

Evaluation is pure: it reads a recorded (or hand-made) `Timeline` and the `Bounds`
derived from the profile claims and the scenario, and never touches a cluster, so every
check is unit-tested without clusters. Importing this package imports every area module,
which completes `CATALOGUE`.

Scope: a "workload" check is evaluated once per workload on `timeline.of(workload)`
(that workload's events plus environment events); a "scenario" check sees the whole
timeline. `run_check` does that iteration and folds the verdicts.

Conventions shared by all checks (scenario authors rely on them):
- Times are the timeline's monotonic seconds; a workload's clock starts at its
  WORKLOAD_CREATED event (or its first event when that is missing).
- A *round* is a NOMINATION, while the workload is not yet placed, that names at least
  one cluster not named by an earlier nomination of that pending period; `added` are those
  new names. A round's timeout is the largest timeout of its added clusters
  (`Bounds.timeout_of`: per-cluster override, else `round_timeout`).
- The observation ends at `Bounds.observed_until`, or the timeline's last event. A
  deadline after the end is not judged: the verdict is *inconclusive* (not passed, and
  the harness may report it as skipped) when nothing else decided it.
- "Dispatcher identities" are `Bounds.dispatcher_users` (audit usernames, and may include
  the dispatcher's field managers, which NOMINATION events carry as `writer`).
"""

from __future__ import annotations

from suites.checks import (  # the area modules: importing them fills CATALOGUE
    core_burst,
    core_lifecycle,
    core_placement,
    escalation,
    failover,
    fan_out,
    ordering,
    resilience,
)
from suites.checks.catalogue import (
    CATALOGUE,
    Check,
    Scope,
    check,
    every_timeline,
    run_check,
    wanted_gates,
)
from suites.checks.queries import (
    INF,
    Interval,
    Peak,
    Round,
    RoundReview,
    copy_intervals,
    created_at,
    first_nomination,
    first_placement,
    names,
    peak,
    percentile,
    placed_or_ran,
    preempting_workers,
    provisioning_intervals,
    reservation_intervals,
    review_rounds,
    rounds,
)
from suites.checks.verdict import DEFAULT_SLACKS, MAX_NOMINATIONS, ORDERINGS, Bounds, Verdict

__all__ = [
    "CATALOGUE",
    "DEFAULT_SLACKS",
    "INF",
    "MAX_NOMINATIONS",
    "ORDERINGS",
    "Bounds",
    "Check",
    "Interval",
    "Peak",
    "Round",
    "RoundReview",
    "Scope",
    "Verdict",
    "check",
    "every_timeline",
    "copy_intervals",
    "created_at",
    "first_nomination",
    "first_placement",
    "names",
    "peak",
    "percentile",
    "placed_or_ran",
    "preempting_workers",
    "provisioning_intervals",
    "reservation_intervals",
    "review_rounds",
    "rounds",
    "run_check",
    "wanted_gates",
    "core_burst",
    "core_lifecycle",
    "core_placement",
    "escalation",
    "failover",
    "fan_out",
    "ordering",
    "resilience",
]
