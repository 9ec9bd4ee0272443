"""Ordering, decided by suites/conformance/test_ordering.py: clusters are tried in the
claimed order."""

from __future__ import annotations

from harness.check_terms import Bound
from harness.recording.timeline import Kind, Timeline
from suites.checks.catalogue import check
from suites.checks.queries import configured, inactive_at, inactive_spans, names
from suites.checks.verdict import Bounds, Verdict, at, joined


@check(
    "EXT-07",
    "OrderedDispatch",
    feature="Ordering",
    summary="Clusters are tried in the declared order (config order, or tiers).",
    bounds=(
        Bound(
            "mkdc",
            "clusters tried in the claimed order (config, alphabetical or tiers)",
            "the KEP allows any order; the profile's claim is judged as mkdc reads it (config "
            "order as Kueue's Incremental keeps it)",
        ),
    ),
)
def ordered_dispatch(tl: Timeline, b: Bounds) -> Verdict:
    """EXT-07: when a cluster is first nominated, every cluster before it in the claimed
    order (config, alphabetical, or tiers = (tier, config index)) was already nominated,
    or is inactive at that time, or is not configured yet. Names first appearing in the
    same write are a batch (list order inside a write is not judged). "none" passes."""
    if b.ordering == "none":
        return Verdict.ok('ordering "none": no order claimed')
    order, spans = b.ordered(configured(tl, b)), inactive_spans(tl)
    seen: dict[str, float] = {}
    problems: list[str] = []
    for e in tl.where(Kind.NOMINATION):
        new = [n for n in names(e) if n not in seen and n in order]
        seen.update(dict.fromkeys(new, e.t))
        for cluster in new:
            skipped = [
                c
                for c in order[: order.index(cluster)]
                if c not in seen and not inactive_at(spans, c, e.t) and c in configured(tl, b, e.t)
            ]
            if skipped:
                problems.append(
                    f"{cluster} nominated at {at(e.t)} before {joined(skipped)} "
                    f"({b.ordering} order: {joined(order)})"
                )
    if not seen:
        return Verdict.unclear("nothing was nominated")
    measured = {"firstNominated": list(seen)}
    return Verdict.fail(problems, **measured) if problems else Verdict.ok(**measured)
