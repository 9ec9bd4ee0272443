"""What a check returns (`Verdict`) and what it judges against (`Bounds`).

Bounds turn a profile's claims and a scenario's facts into the deadlines every check
judges by; both are shared by all check modules, the scorecard, findings and the harness."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, overload

from harness.durations import parse_duration
from harness.errors import shown

ORDERINGS = ("config", "alphabetical", "tiers", "none")
MAX_NOMINATIONS = 20  # the API's maxItems of .status.nominatedClusterNames (Workload CRD)

# Seconds. Named so the report can show the tolerances actually used.
DEFAULT_SLACKS: dict[str, float] = {
    # admission on a worker + Job creation after the right nomination: Kueue's MultiKueue
    # reconciles alone come close to this under a burst on a small machine
    "placement_slack": 60.0,
    "escalation_slack": 3.0,  # an escalation (or a first nomination) may be this late
    "early_tolerance": 1.0,  # ... and this early (clock skew between recorders)
    "loser_cleanup_slack": 15.0,  # losers' copies must be gone this long after placement
    "handover_slack": 30.0,  # lease takeover by the standby replica
    "burst_slack": 60.0,  # extra for queueing when a burst is dispatched
    "observation_skew": 0.5,  # watch vs audit timestamps; races inside it are not blamed
    "conflict_window": 2.0,  # two replicas writing within this window conflict
}


@dataclass
class Verdict:
    """The outcome of one check: pass/fail, a one-line why, and the figures measured.

    `inconclusive` means the timeline did not exercise the check (no eviction happened,
    observation ended before the deadline...); `passed` is then False and the harness
    should report the check as skipped with `message`, not as a dispatcher failure.
    """

    passed: bool
    message: str = ""
    measured: dict[str, Any] = field(default_factory=dict)
    inconclusive: bool = False

    @classmethod
    def ok(cls, message: str = "", /, **measured: Any) -> Verdict:
        return cls(True, message, measured)

    @classmethod
    def fail(cls, problems: str | list[str], /, **measured: Any) -> Verdict:
        if isinstance(problems, str):
            problems = [problems]
        message = "; ".join(problems[:3])
        if len(problems) > 3:
            message += f" (and {len(problems) - 3} more)"
        return cls(False, message, measured)

    @classmethod
    def unclear(cls, message: str, /, **measured: Any) -> Verdict:
        return cls(False, message, measured, inconclusive=True)


@dataclass(frozen=True)
class Bounds:
    """What the checks need from the profile claims and the scenario.

    Profile part: step_size (None = "all"), round_timeout (None = never escalates),
    max_concurrent_provisioning, ordering. Scenario part: clusters (the MultiKueueConfig
    in declared order), cluster_timeouts and tiers (per-cluster knobs the scenario set),
    expected_cluster, foreign_workloads, dispatcher_users, observed_until.
    """

    clusters: tuple[str, ...] = ()
    step_size: int | None = None
    round_timeout: float | None = None
    max_concurrent_provisioning: int | None = None
    ordering: str = "none"
    cluster_timeouts: Mapping[str, float] = field(default_factory=dict)
    tiers: Mapping[str, int] = field(default_factory=dict)
    expected_cluster: str | None = None
    foreign_workloads: frozenset[str] = frozenset()
    dispatcher_users: frozenset[str] = frozenset()
    max_nominations: int = MAX_NOMINATIONS
    observed_until: float | None = None
    placement_slack: float = DEFAULT_SLACKS["placement_slack"]
    escalation_slack: float = DEFAULT_SLACKS["escalation_slack"]
    early_tolerance: float = DEFAULT_SLACKS["early_tolerance"]
    loser_cleanup_slack: float = DEFAULT_SLACKS["loser_cleanup_slack"]
    handover_slack: float = DEFAULT_SLACKS["handover_slack"]
    burst_slack: float = DEFAULT_SLACKS["burst_slack"]
    observation_skew: float = DEFAULT_SLACKS["observation_skew"]
    conflict_window: float = DEFAULT_SLACKS["conflict_window"]

    def __post_init__(self) -> None:
        # Accept lists/sets from callers; store immutable, ordered copies.
        object.__setattr__(self, "clusters", tuple(self.clusters))
        object.__setattr__(self, "cluster_timeouts", dict(self.cluster_timeouts))
        object.__setattr__(self, "tiers", dict(self.tiers))
        object.__setattr__(self, "foreign_workloads", frozenset(self.foreign_workloads))
        object.__setattr__(self, "dispatcher_users", frozenset(self.dispatcher_users))
        if self.ordering not in ORDERINGS:
            raise ValueError(f"ordering: must be one of {', '.join(ORDERINGS)}")

    @classmethod
    def derive(
        cls,
        claims: Mapping[str, Any],
        clusters: Iterable[str],
        slacks: Mapping[str, float | str] | None = None,
        *,
        cluster_timeouts: Mapping[str, float | str | None] | None = None,
        tiers: Mapping[str, int] | None = None,
        expected_cluster: str | None = None,
        foreign_workloads: Iterable[str] = (),
        dispatcher_users: Iterable[str] = (),
        max_nominations: int = MAX_NOMINATIONS,
        observed_until: float | None = None,
    ) -> Bounds:
        """Bounds from profile `claims` (profile spelling) plus the scenario's facts.

        `slacks` overrides DEFAULT_SLACKS by name (durations allowed: "5s").
        Raises ValueError naming the bad claim or slack.
        """
        step = claims.get("stepSize", "all")
        if step != "all" and (isinstance(step, bool) or not isinstance(step, int) or step < 1):
            raise ValueError(f'claims.stepSize: must be an integer >= 1 or "all", got {step!r}')
        prov = claims.get("maxConcurrentProvisioning")
        if prov is not None and (isinstance(prov, bool) or not isinstance(prov, int)):
            raise ValueError(f"claims.maxConcurrentProvisioning: not an integer: {prov!r}")
        ordering = claims.get("ordering") or "none"
        if ordering not in ORDERINGS:
            raise ValueError(f"claims.ordering: must be one of {', '.join(ORDERINGS)}")
        slack_values: dict[str, float] = {}
        for name, value in (slacks or {}).items():
            if name not in DEFAULT_SLACKS:
                raise ValueError(
                    f"unknown slack {shown(name)} (known: {', '.join(DEFAULT_SLACKS)})"
                )
            slack_values[name] = _duration(value, f"slacks.{name}")
        timeouts = {
            c: _duration(v, f"cluster_timeouts.{c}") for c, v in (cluster_timeouts or {}).items()
        }
        return cls(
            clusters=tuple(clusters),
            step_size=None if step == "all" else step,
            round_timeout=parse_duration(claims.get("roundTimeout")),
            max_concurrent_provisioning=prov,
            ordering=ordering,
            cluster_timeouts={c: v for c, v in timeouts.items() if v is not None},
            tiers=dict(tiers or {}),
            expected_cluster=expected_cluster,
            foreign_workloads=frozenset(foreign_workloads),
            dispatcher_users=frozenset(dispatcher_users),
            max_nominations=max_nominations,
            observed_until=observed_until,
            **slack_values,
        )

    def with_scenario(self, **changes: Any) -> Bounds:
        """A copy with scenario facts set (expected_cluster, clusters, observed_until...)."""
        return replace(self, **changes)

    def slacks(self) -> dict[str, float]:
        """The slacks in use, for the report's `timeouts` section."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name in DEFAULT_SLACKS}

    def report_timeouts(self) -> dict[str, float | None]:
        """The report's `timeouts` section: the slacks and the claimed round timeout."""
        return {**self.slacks(), "roundTimeout": self.round_timeout}

    def ordered(self, clusters: Iterable[str] | None = None) -> list[str]:
        """Clusters in the order the claims say they are tried ("none": as configured)."""
        names = list(self.clusters if clusters is None else clusters)
        if self.ordering == "alphabetical":
            return sorted(names)
        if self.ordering == "tiers":  # a cluster without a tier is tier 0
            return sorted(names, key=lambda c: (self.tiers.get(c, 0), names.index(c)))
        return names

    def timeout_of(self, cluster: str) -> float | None:
        """Seconds a round nominating `cluster` lasts: its override, else round_timeout."""
        return self.cluster_timeouts.get(cluster, self.round_timeout)

    def round_timeout_for(self, clusters: Iterable[str]) -> float | None:
        """A round lasts the largest timeout of its clusters; None if one never times out."""
        values = [self.timeout_of(c) for c in clusters] or [self.round_timeout]
        return None if any(v is None for v in values) else max(v for v in values if v is not None)

    def escalation_delay(self, cluster: str | None = None) -> float:
        """Seconds from creation until the claims have `cluster` nominated.

        Sum of the timeouts of the batches (of step_size, in claimed order) before the
        cluster's batch. Unknown cluster or ordering "none": the worst case (last batch).
        Step "all" or a dispatcher that never escalates: 0 (all it will ever try is tried).
        """
        order = self.ordered()
        if self.step_size is None or not order:
            return 0.0
        position = len(order) - 1
        if cluster in order and self.ordering != "none":
            position = order.index(cluster)
        delay = 0.0
        for start in range(0, (position // self.step_size) * self.step_size, self.step_size):
            timeout = self.round_timeout_for(order[start : start + self.step_size])
            if timeout is None:
                return 0.0
            delay += timeout
        return delay

    def placement_bound(self, cluster: str | None = None) -> float:
        """Rounds needed to reach `cluster` x timeout, plus placement_slack."""
        return self.escalation_delay(cluster) + self.placement_slack


# Only None is passed through as None (a cluster that never times out).
@overload
def _duration(value: float | str, where: str) -> float: ...
@overload
def _duration(value: float | str | None, where: str) -> float | None: ...
def _duration(value: float | str | None, where: str) -> float | None:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


# --------------------------------------------------------------------------- messages
# So that every check words times and cluster lists alike.


def at(t: float) -> str:
    return f"t={t:.1f}s"


SHOWN_NAMES = 8  # a message lists this many names, then counts the rest


def joined(items: Iterable[Hashable]) -> str:
    """Names for a message: all of a few, the first SHOWN_NAMES of many (twenty workers'
    cluster names would drown the rest of the message)."""
    listed = [str(i) for i in items]
    more = len(listed) - SHOWN_NAMES
    text = ",".join(listed[:SHOWN_NAMES]) + (f" (and {more} more)" if more > 0 else "")
    return text or "-"


def not_judged(end: float, deadline: float, what: str) -> Verdict:
    return Verdict.unclear(f"observation ended at {at(end)}, before {what} ({at(deadline)})")
