"""ProvisioningFailover, decided by suites/conformance/test_failover.py: a worker that
lost its capacity is not retried first, and the workload runs elsewhere."""

from __future__ import annotations

from harness.check_terms import Bound
from harness.recording.timeline import Kind, Timeline
from suites.checks.catalogue import check, placed_once
from suites.checks.queries import (
    INF,
    configured,
    end_of,
    first_placement,
    names,
    placed_at,
    placement_episodes,
)
from suites.checks.verdict import Bounds, Verdict, at, joined, not_judged


@check(
    "EXT-09",
    "ProvisioningFailover",
    feature="ProvisioningFailover",
    summary="When provisioning fails on a worker, the workload moves on and is placed elsewhere.",
    decided_by_wait=placed_once,  # placed once: then placed elsewhere
    bounds=(
        Bound(
            "mkdc",
            "after a provisioning failure, another cluster first, and placed within "
            "placement_bound",
            "the KEP's story of scarce capacity, made a bound by mkdc",
        ),
    ),
)
def provisioning_failover(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-09: provisioning fails on worker F (the first PROVREQ_STATE Failed or
    CapacityRevoked, at tf). The clock starts when the manager shows it (the placement on F
    cleared, or a manager EVICTED while placed on F, after tf); a failure before placement
    never reaches the manager, so then tf itself. From that moment t:
    (a) F is not retried first: the first NOMINATION after t names a cluster other than F,
        and names F only alongside every other configured cluster (judged only when the
        manager showed the failure: before that a dispatcher cannot know);
    (b) the workload is placed on a worker other than F by t + escalation_slack +
        placement_slack."""
    failed = [e for e in tl.where(Kind.PROVREQ_STATE) if e.state in ("Failed", "CapacityRevoked")]
    if not failed:
        return Verdict.unclear("no ProvisioningRequest failed or lost its capacity")
    bad, tf = failed[0].cluster, failed[0].t
    shown = sorted(
        [until for _, c, until in placement_episodes(tl) if c == bad and tf <= until < INF]
        + [e.t for e in tl.where(Kind.EVICTED) if e.t >= tf and placed_at(tl, e.t) == bad]
    )
    t = shown[0] if shown else tf
    deadline, problems = t + b.escalation_slack + b.placement_slack, []
    if shown:
        after = next((e for e in tl.where(Kind.NOMINATION) if e.t > t and names(e)), None)
        others = set(configured(tl, b, t)) - {bad}
        if after is not None:
            named = set(names(after))
            if not named - {bad}:
                problems.append(f"{bad} re-nominated alone at {at(after.t)} after it failed")
            elif bad in named and not others <= named:
                problems.append(
                    f"{bad} retried at {at(after.t)} with {joined(sorted(named - {bad}))} "
                    f"before {joined(sorted(others - named))}, right after it failed"
                )
    placed = first_placement(tl, after=t)
    if placed is None and end_of(tl, b) < deadline and not problems:
        return not_judged(end_of(tl, b), deadline, "the failover bound")
    if placed is None or placed.t > deadline or placed.about_cluster == bad:
        where = f"placed on {placed.about_cluster} at {at(placed.t)}" if placed else "not placed"
        problems.append(
            f"provisioning failed on {bad} at {at(tf)}; {where}, "
            f"expected another worker by {at(deadline)}"
        )
    return Verdict.fail(problems) if problems else Verdict.ok(failedOn=bad)
