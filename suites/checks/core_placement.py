"""Core, decided by suites/conformance/test_core_placement.py: nominations stay inside
the config and a workload that fits somewhere is placed. CORE-02 (the nomination list's
shape) is judged on every timeline and sits here beside CORE-01."""

from __future__ import annotations

from typing import Any

from harness.check_terms import Bound
from harness.recording.timeline import Kind, Timeline
from suites.checks.catalogue import always, check
from suites.checks.queries import (
    created_at,
    end_of,
    first_placement,
    names,
    placed_at,
)
from suites.checks.verdict import Bounds, Verdict, at, joined, not_judged


@check(
    "CORE-01",
    "NominatesConfiguredOnly",
    summary="Only clusters of the workload's MultiKueueConfig are ever nominated.",
    writes_only=True,
    every_timeline=True,
    bounds=(
        Bound(
            "KEP",
            "only clusters of the workload's MultiKueueConfig",
            "the KEP's dispatcher selects among the worker clusters MultiKueue dispatches to: "
            "those of the config",
        ),
    ),
)
def nominates_configured_only(tl: Timeline, b: Bounds) -> Verdict:
    """CORE-01: every nominated name is in the config (Bounds.clusters, extended from
    the time of each CONFIG_CHANGED by the clusters it lists; a removal is not enforced,
    to avoid blaming writes racing with the change)."""
    allowed, problems = list(b.clusters), []
    for e in tl:
        if e.kind is Kind.CONFIG_CHANGED:
            allowed += [c for c in e.clusters if c not in allowed]
        elif e.kind is Kind.NOMINATION:
            outside = [n for n in names(e) if n not in allowed]
            if outside:
                problems.append(
                    f"{at(e.t)} nominated {joined(outside)}, not in the config ({joined(allowed)})"
                )
    return Verdict.fail(problems) if problems else Verdict.ok()


@check(
    "CORE-02",
    "NominationListValid",
    summary="The nomination list stays within the API maximum and has no duplicates.",
    writes_only=True,
    every_timeline=True,
    bounds=(
        Bound(
            "Kueue API",
            "at most 20 names",
            "the Workload CRD's maxItems of .status.nominatedClusterNames",
        ),
        Bound(
            "mkdc",
            "no name twice",
            "the API allows it (listType atomic), but a cluster named twice is a list no "
            "dispatcher means",
        ),
    ),
)
def nomination_list_valid(tl: Timeline, b: Bounds) -> Verdict:
    """CORE-02: no NOMINATION longer than Bounds.max_nominations, none with duplicates;
    the same for the lists in a dispatcher's WRITEs the apiserver rejected (the API's
    validation refuses a list too long, so a rejected write is the only trace of it; a
    duplicate it lets through, listType atomic)."""
    problems, longest = [], 0
    rejected = [e for e in tl.where(Kind.WRITE) if "names" in e.data and e.code >= 400]
    for e in sorted([*tl.where(Kind.NOMINATION), *rejected], key=lambda e: e.t):
        ns = names(e)
        longest = max(longest, len(ns))
        what = "nominated" if e.kind is Kind.NOMINATION else f"tried (code {e.code})"
        if len(ns) > b.max_nominations:
            problems.append(f"{at(e.t)} {what} {len(ns)} clusters (max {b.max_nominations})")
        dups = sorted({n for n in ns if ns.count(n) > 1})
        if dups:
            problems.append(f"{at(e.t)} {what} {joined(dups)} more than once")
    measured = {"longestNomination": longest}
    return Verdict.fail(problems, **measured) if problems else Verdict.ok(**measured)


@check(
    "CORE-04",
    "EventualPlacement",
    summary="A workload that fits in exactly one configured worker is placed there.",
    decided_by_wait=always,  # the wait for placement is the check
    bounds=(
        Bound(
            "mkdc",
            "placed within the claimed rounds to its cluster, plus placement_slack",
            "the KEP sets no deadline; the profile's claims and mkdc's slack for Kueue's own "
            "latency do",
        ),
    ),
)
def eventual_placement(tl: Timeline, b: Bounds) -> Verdict:
    """CORE-04: placed on Bounds.expected_cluster (any cluster when None) within
    placement_bound(expected) of WORKLOAD_CREATED: the rounds the claims need to reach that
    cluster x their timeouts, plus placement_slack."""
    created, bound = created_at(tl), b.placement_bound(b.expected_cluster)
    deadline, p = created + bound, first_placement(tl)
    measured: dict[str, Any] = {"boundSeconds": bound}
    if p is None:
        end = end_of(tl, b)
        if end < deadline:
            return not_judged(end, deadline, "the placement bound")
        target = b.expected_cluster or "any cluster"
        return Verdict.fail(f"never placed on {target} (bound {bound:.1f}s, {at(deadline)})")
    cluster = p.about_cluster
    measured["timeToPlacementSeconds"] = p.t - created
    if b.expected_cluster and cluster != b.expected_cluster:
        return Verdict.fail(
            f"placed on {cluster} at {at(p.t)}, expected {b.expected_cluster}", **measured
        )
    if p.t > deadline:
        return Verdict.fail(
            f"placed on {cluster} at {at(p.t)}, {p.t - created:.1f}s after creation; "
            f"bound {bound:.1f}s ({at(deadline)})",
            **measured,
        )
    return Verdict.ok(**measured)


@check(
    "CORE-07",
    "ConfigChangeHonoured",
    summary="A cluster added to the MultiKueueConfig while a workload is pending is considered.",
    decided_by_wait=lambda tl: len(tl.where(Kind.CONFIG_CHANGED)) > 1,  # after it joined
    bounds=(
        Bound(
            "mkdc",
            "a cluster added to the config is taken in by the next round, plus placement_slack",
            "the KEP lets the list change while pending; when a new cluster must be considered is "
            "mkdc's reading",
        ),
    ),
)
def config_change_honoured(tl: Timeline, b: Bounds) -> Verdict:
    """CORE-07: a cluster added by CONFIG_CHANGED (data clusters = the new list) while the
    workload is unplaced gets nominated (or the workload placed on it) within
    placement_bound of it in the new list plus one round_timeout, counted from the
    change: a dispatcher may take the new cluster in at its next round. Being placed
    elsewhere first also satisfies the check: the cluster was no longer needed."""
    previous, problems, judged = list(b.clusters), [], 0
    for change in tl.where(Kind.CONFIG_CHANGED):
        new = change.clusters
        added, previous = [c for c in new if c not in previous], new
        if not added or placed_at(tl, change.t):
            continue
        bound_for = b.with_scenario(clusters=tuple(new)).placement_bound
        next_round = b.round_timeout or 0.0
        for cluster in added:
            deadline = change.t + bound_for(cluster) + next_round
            hit = _first_use(tl, cluster, change.t)
            other = first_placement(tl, after=change.t)
            if (hit is not None and hit <= deadline) or (other and other.t <= deadline):
                judged += 1
                continue
            if end_of(tl, b) < deadline:
                return not_judged(end_of(tl, b), deadline, f"the bound for {cluster}")
            judged += 1
            problems.append(
                f"{cluster} added to the config at {at(change.t)}, "
                + (f"first nominated at {at(hit)}" if hit else "never nominated")
                + f"; bound {at(deadline)}"
            )
    if problems:
        return Verdict.fail(problems)
    return Verdict.ok() if judged else Verdict.unclear("no cluster added while pending")


def _first_use(tl: Timeline, cluster: str, after: float) -> float | None:
    """First time at/after `after` that `cluster` is nominated or placed on."""
    for e in tl:
        if e.t < after:
            continue
        if e.kind is Kind.NOMINATION and cluster in names(e):
            return e.t
        if e.kind is Kind.PLACEMENT and e.about_cluster == cluster:
            return e.t
    return None
