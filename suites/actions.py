"""What the dispatcher did in a check's window: its own requests, in words a vendor can act on.

A failed check says what the timeline showed ("evicted at t=3.0s, never placed"); this says
what the dispatcher itself did meanwhile, from the manager's audit log as the timeline holds
it: how many writes, to which workloads, with which lists, which were refused and why, and
above all what it did (or did not do) after the last turn of the scenario it had to answer
(a creation, a placement, an eviction, a config change, a restart). Findings name patterns
across scenarios; this is one scenario's account, for the check it decided.

A pure function of the timeline (scenario times, from its first event) and the bounds, so
it is unit-tested on hand-made timelines and computed on recorded ones with the same code.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.recording.timeline import Event, Kind, Timeline
from harness.results import DispatcherActions
from suites.checks.queries import (
    configured,
    end_of,
    inactive_at,
    inactive_spans,
    is_dispatcher,
    placed_at,
)
from suites.checks.verdict import Bounds, at, joined

SHOWN_WRITES = 4  # a line lists this many writes (or lists), then counts the rest
# harness actions a dispatcher has to answer, as the clause "after ... at t=" reads them
ACTIONS = {
    "dispatcher-killed": "the dispatcher was killed",
    "leader-killed": "the leader replica was killed",
    "dispatcher-restarted": "the dispatcher was started again",
    "manager-apiserver-down": "the manager's kube-apiserver went down",
    "manager-apiserver-back": "the manager's kube-apiserver was back",
    "manager-kueue-down": "the manager's Kueue went down",
    "manager-kueue-back": "the manager's Kueue was back",
    "lose-capacity": "a worker lost its capacity",
}
# actions after which its lists and watches of Workloads tell whether it is back
READS_TELL = frozenset(
    {
        "dispatcher-killed",
        "leader-killed",
        "dispatcher-restarted",
        "manager-apiserver-down",
        "manager-apiserver-back",
    }
)


@dataclass(frozen=True)
class Turn:
    """A moment the dispatcher had to answer: when, in words, for which workload."""

    t: float
    clause: str  # "the workload was evicted from w1", read after "after"
    workload: str = ""  # "" for the environment's (a config change, a restart)
    cluster: str = ""  # the cluster it left, for an eviction
    action: str = ""  # the harness's action, for one


def describe(
    tl: Timeline,
    b: Bounds,
    workloads: Sequence[str],
    *,
    audited: bool = True,
    scenario: str = "",
) -> DispatcherActions:
    """The dispatcher's own requests in the window [0, end of observation] of a scenario's
    timeline `tl`, for the scenario's own `workloads` (foreign ones are named as such).
    Without the manager's audit log (`audited` False: a provider that keeps none) its
    nominations as the recorder's watch saw them stand for its writes. Cluster names lose
    the `scenario`'s prefix (its MultiKueueClusters are `<scenario>-<worker>`).

    The lines, most telling first: each exit of a replica; what it did after the last
    turn it had to answer and the refused writes it never followed with another (those
    two are the console's `summary`); then its writes in all and the refused ones it
    retried."""
    end = end_of(tl, b)
    own = list(workloads)
    short = _shortener(scenario)
    writes = _writes(tl, b, end, audited)
    turns = _turns(tl, own, end, short)
    evicted_from = {t.cluster for t in turns if t.cluster}
    names = _Names(tl, b, evicted_from, len(own) == 1 and own[0], short)
    exits = [f"it exited: {said}" for said in exits_said(tl, end)]
    waiting = [w for w in own if placed_at(tl.of(w), end) is None]
    turn = _anchor(turns, waiting)
    if waiting and len(waiting) < len(own):  # what it owed: the workloads still unplaced
        owed, names.owed = [w for w in writes if w.workload in waiting], waiting
    else:
        owed = writes
    restarts = [t for t in turns if t.action in READS_TELL and (turn is None or t.t <= turn.t)]
    lines = [_after_turn(tl, b, (owed, writes), turn, end, names, audited)]
    if audited and restarts and not any(w.t >= (turn.t if turn else 0.0) for w in owed):
        lines[0] += "; " + _last_read(tl, b, end, restarts[-1])
    refused = [w for w in writes if w.code >= 400]
    said, dropped = _refused(refused, writes, names) if refused else ("", False)
    if dropped:
        lines.append(said)
    summary = "; ".join(lines)  # a check's message already says an exit (suites.judge)
    lines = exits + lines
    if writes:
        lines.append(_totals(writes, own, b, end, names))
    if refused and not dropped:
        lines.append(said)
    return DispatcherActions(
        lines=tuple(lines),
        summary=summary,
        writes=len(writes),
        nomination_writes=sum(_nominates(w) for w in writes),
        refused=len(refused),
        workloads=tuple(dict.fromkeys(w.workload for w in writes if w.workload)),
        last_write=round(writes[-1].t, 1) if writes else None,
        until=round(end, 1),
        audited=audited,
    )


def exits_said(tl: Timeline, end: float = math.inf) -> list[str]:
    """Each exit of a dispatcher replica on the timeline up to `end`, in words: which,
    when (before the scenario: how long before), its exit status and the cause quoted
    from its log."""
    said = []
    for e in tl.where(Kind.DISPATCHER_EXITED):
        if e.t > end:
            continue
        when = f"at {at(e.t)}" if e.t >= 0 else f"{-e.t:.1f}s before this scenario began"
        code = e.data.get("code")
        how = f" with code {code}" if code is not None else ""
        said.append(f"{e.data.get('process') or 'a replica'} exited{how} {when}: {e.cause}")
    return said


def _writes(tl: Timeline, b: Bounds, end: float, audited: bool) -> list[Event]:
    """The dispatcher's writes to Workloads up to `end`: its WRITEs (every user's when it is
    built into Kueue and has no identity of its own), else its nominations as seen."""
    if audited:
        return [
            e
            for e in tl.where(Kind.WRITE)
            if e.t <= end and (not b.dispatcher_users or e.user in b.dispatcher_users)
        ]
    return [
        e
        for e in tl.where(Kind.NOMINATION)
        if e.t <= end and e.names and is_dispatcher(e.writer, b)
    ]


def _nominates(e: Event) -> bool:
    """A write of .status.nominatedClusterNames (a nomination as seen is one too)."""
    return e.kind is Kind.NOMINATION or "names" in e.data


def _shortener(scenario: str) -> Callable[[str], str]:
    """A cluster's name without the scenario's prefix: `<worker>`, not `<scenario>-<worker>`."""
    prefix = f"{scenario}-" if scenario else ""
    return lambda name: name.removeprefix(prefix) if prefix else name


def _turns(
    tl: Timeline, own: Sequence[str], end: float, short: Callable[[str], str] = str
) -> list[Turn]:
    """What the dispatcher had to answer up to `end`, in time order."""
    out: list[Turn] = []
    single = len(own) == 1
    evicted: set[str] = set()  # workloads evicted and not placed since
    for e in tl:
        if e.t > end:
            break
        if e.workload and e.workload not in own:
            continue
        who = "the workload" if single else _short(e.workload)
        if e.kind is Kind.WORKLOAD_CREATED:
            out.append(Turn(e.t, f"{who} was created", e.workload))
        elif e.kind is Kind.PLACEMENT and e.about_cluster:
            evicted.discard(e.workload)
            out.append(Turn(e.t, f"{who} was placed on {short(e.about_cluster)}", e.workload))
        elif e.kind in (Kind.PLACEMENT, Kind.EVICTED) and e.workload not in evicted:
            left = placed_at(tl.of(e.workload), e.t - 1e-6) or ""
            if left or e.kind is Kind.EVICTED:
                # the manager's clearing of clusterName and its Evicted are one eviction
                evicted.add(e.workload)
                where = f" from {short(left)}" if left else ""
                out.append(Turn(e.t, f"{who} was evicted{where}", e.workload, left))
        elif not any(t.workload for t in out):
            continue  # the scenario's set-up, before its first workload: nothing to answer
        elif e.kind is Kind.CONFIG_CHANGED:
            out.append(Turn(e.t, f"the config changed to [{joined(map(short, e.clusters))}]"))
        elif e.kind is Kind.CLUSTER_ACTIVE and e.cluster_active is False:
            out.append(Turn(e.t, f"{short(e.about_cluster)} went inactive"))
        elif e.kind is Kind.ACTION and e.what in ACTIONS:
            out.append(Turn(e.t, ACTIONS[e.what], action=e.what))
    return out


def _anchor(turns: list[Turn], waiting: Sequence[str]) -> Turn | None:
    """The last turn the dispatcher had to answer: of the `waiting` workloads (unplaced at
    the end: what it owed them) and the environment when there are any, else of any."""
    owed = [t for t in turns if not t.workload or t.workload in waiting] if waiting else turns
    chosen = owed or turns
    return chosen[-1] if chosen else None


class _Names:
    """How a write's list reads, with what a reader must know of its names: the cluster
    the workload was evicted from, a name in no config of the workload, an inactive one."""

    def __init__(
        self,
        tl: Timeline,
        b: Bounds,
        evicted_from: set[str],
        one: str | bool,
        short: Callable[[str], str] = str,
    ) -> None:
        self.tl, self.b, self.evicted_from, self.short = tl, b, evicted_from, short
        self.spans = inactive_spans(tl)
        self.one = one  # the scenario's only workload, whose name a line need not repeat
        self.owed: list[str] = []  # the workloads a line is about, when not all of them

    def of(self, e: Event, mark: bool = True) -> str:
        """`e` in words: its list (and notes) for a nomination, else its verb; `mark`: say
        when it was refused."""
        if not _nominates(e):
            return f"a {e.verb or 'write'}{' of ' + e.subresource if e.subresource else ''}"
        listed = f"[{joined(map(self.short, e.names))}]" if e.names else "[] (cleared)"
        allowed = configured(self.tl, self.b, e.t)
        notes = {}
        for name in dict.fromkeys(e.names):
            if name in self.evicted_from:
                notes[name] = "the cluster that evicted it"
            elif self.b.clusters and name not in allowed:
                notes[name] = "in no config of the workload"
            elif inactive_at(self.spans, name, e.t):
                notes[name] = "inactive then"
        said = [f"refused: {e.code}"] if mark and e.code >= 400 else []
        if len(set(e.names)) == 1 and notes:  # one name: the note is about it
            said += notes.values()
        else:
            said += [f"{self.short(n)}: {note}" for n, note in notes.items()]
        return listed + (f" ({'; '.join(said)})" if said else "")

    def to(self, e: Event, owed: bool = True) -> str:
        """ " to <workload>", unless it is the scenario's only one or (`owed`) the one a
        line is about."""
        if e.workload == self.one or not e.workload or (owed and [e.workload] == self.owed):
            return ""
        return f" to {_short(e.workload)}"

    def about(self, turn: Turn | None) -> str:
        """ " to <workload>" when a line is about some of the workloads only (" to it":
        the one its `turn` names)."""
        if len(self.owed) == 1:
            return (
                " to it"
                if turn and turn.workload == self.owed[0]
                else f" to {_short(self.owed[0])}"
            )
        return f" to the {len(self.owed)} workloads still unplaced" if self.owed else ""


def _after_turn(
    tl: Timeline,
    b: Bounds,
    writes: tuple[list[Event], list[Event]],
    turn: Turn | None,
    end: float,
    names: _Names,
    audited: bool,
) -> str:
    """What it did after the last turn it had to answer, and its last write before it.
    `writes`: those to the workloads the line is about (`names.owed`), and all."""
    owed, every = writes
    since = turn.t if turn is not None else 0.0
    after = [w for w in owed if w.t >= since]
    before = [w for w in owed if w.t < since] or [w for w in every if w.t < since]
    head = f"after {turn.clause} at {at(turn.t)}" if turn is not None else "in the scenario"
    to = names.about(turn)
    if not after:
        line = f"{head} it wrote nothing{to} for {end - since:.1f}s (to {at(end)})"
        if before:
            last = before[-1]
            it = " to it" if to and last.workload in names.owed else ""
            line += f"; its last write{it}, at {at(last.t)}, was {names.of(last)}{names.to(last)}"
        elif audited:
            line += "; it wrote nothing before either"
        return line
    shown = [f"{names.of(w)}{names.to(w)} at {at(w.t)}" for w in after[:SHOWN_WRITES]]
    more = f" and {len(after) - SHOWN_WRITES} more" if len(after) > SHOWN_WRITES else ""
    line = f"{head} it wrote{to} {len(after)} time(s): {', '.join(shown)}{more}"
    quiet = end - after[-1].t
    if len(after) > SHOWN_WRITES:
        line += f"; the last at {at(after[-1].t)}: {names.of(after[-1])}"
    if quiet >= 1.0:
        line += f"; then nothing for {quiet:.1f}s (to {at(end)})"
    return line


def _last_read(tl: Timeline, b: Bounds, end: float, restart: Turn) -> str:
    """Its last list or watch of Workloads, said when it wrote nothing after a `restart`
    (its own, or the manager's apiserver's): the sign its watch is back, or not."""
    reads = [
        e
        for e in tl.where(Kind.READ)
        if e.t <= end
        and not e.workload
        and (not b.dispatcher_users or e.user in b.dispatcher_users)
    ]
    if not reads:
        return "it listed or watched no Workloads in the scenario"
    last = reads[-1]
    said = f"its last {last.verb or 'read'} of Workloads was at {at(last.t)}"
    return said + (f", before {restart.clause} at {at(restart.t)}" if last.t < restart.t else "")


def _totals(writes: list[Event], own: Sequence[str], b: Bounds, end: float, names: _Names) -> str:
    """Every write in the window: how many, to which workloads, with which lists."""
    count = Counter(w.workload for w in writes)
    foreign = [w for w in count if w not in own]
    lists = Counter(names.of(w) for w in writes if _nominates(w))
    shown = [f"{text} x{n}" if n > 1 else text for text, n in list(lists.items())[:SHOWN_WRITES]]
    more = f" and {len(lists) - SHOWN_WRITES} more" if len(lists) > SHOWN_WRITES else ""
    nominations = sum(lists.values())
    line = (
        f"in all, {len(writes)} write(s) to {len(count)} workload(s) up to {at(end)}"
        f" ({nominations} of the nomination list"
        + (f": {', '.join(shown)}{more}" if shown else "")
        + ")"
    )
    if foreign:
        line += (
            f"; {sum(count[w] for w in foreign)} to workloads not MultiKueue work of this "
            f"scenario ({joined(_short(w) for w in foreign)})"
        )
    unwritten = [w for w in own if w not in count]
    if unwritten and len(own) > 1:
        missed = joined(_short(w) for w in unwritten)
        line += f"; {len(unwritten)} of its {len(own)} workloads got none ({missed})"
    return line


def _refused(refused: list[Event], writes: list[Event], names: _Names) -> tuple[str, bool]:
    """Which writes were refused and why, and whether some workload's last refused write
    was followed by no other write to it (not retried: returned True)."""
    why = Counter((w.code, _first(w.message)) for w in refused)
    said = ", ".join(
        f"{code} x{n}" + (f" ({message})" if message else "")
        for (code, message), n in why.most_common(3)
    )
    line = f"{len(refused)} refused: {said}"
    dropped = [
        last
        for w in dict.fromkeys(r.workload for r in refused)
        if (last := [r for r in refused if r.workload == w][-1])
        and not any(x.workload == w and x.t > last.t for x in writes)
    ]
    if dropped:
        last = dropped[-1]
        what = f"{names.of(last, mark=False)}{names.to(last, owed=False)}"
        line += f"; after its refused write at {at(last.t)} ({what}) it did not write "
        line += "that workload again"
    return line, bool(dropped)


def _first(message: str, limit: int = 120) -> str:
    text = message.strip().splitlines()[0] if message.strip() else ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _short(workload: str) -> str:
    """A workload's name without its namespace (the scenario's, which the report names)."""
    return workload.rsplit("/", 1)[-1]
