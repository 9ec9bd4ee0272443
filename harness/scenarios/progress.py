"""Live progress of a run: the events the test processes report, and how `mkdc run`
shows them.

Verdicts are decided inside the pytest processes (xdist workers are processes of their
own), so each appends one JSON object per event to `events.jsonl` in the private run
directory, one write under an exclusive lock, so that lines of parallel processes never
interleave. `mkdc run` follows that file, adds the running count and an estimate of the
time left, and writes the public stream: `progress.jsonl` in the report directory, and
the console (a line per event on stderr, or with `--progress jsonl` the JSON lines on
stdout).

Events (the `event` field; `time` is Unix time): run-start (the checks selected),
plan (the scenarios collected to run), scenario-start, check-verdict, scenario-end,
replica-exit (a dispatcher replica exited by itself), run-end (the summary).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import statistics
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from harness.results import Result
from harness.scenarios import slots

RUN_START = "run-start"
PLAN = "plan"
SCENARIO_START = "scenario-start"
CHECK_VERDICT = "check-verdict"
SCENARIO_END = "scenario-end"
REPLICA_EXIT = "replica-exit"  # a dispatcher replica exited by itself (harness.orchestrate.exits)
RUN_END = "run-end"

PUBLIC_FILE = "progress.jsonl"  # in the report directory
LOG_FILE = "pytest.log"  # pytest's own output and the tracebacks, in the report directory
HUMAN, JSONL = "human", "jsonl"
# What a scenario is expected to take until one has finished (most take 30-90 s).
DEFAULT_SCENARIO_SECONDS = 60.0
RAN = ("passed", "failed")  # scenario outcomes whose duration says what a scenario takes


def emit(path: Path, event: str, **fields: Any) -> None:
    """Append one event to the events file. Never fails the caller: progress is for the
    reader, the results are written elsewhere."""
    line = json.dumps({"event": event, "time": round(time.time(), 3), **fields}, default=str)
    with contextlib.suppress(OSError), path.open("a") as out:
        fcntl.flock(out, fcntl.LOCK_EX)
        out.write(line + "\n")


class Follower:
    """Reads the events appended to a file since the last read, whole lines only."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = b""

    def read(self) -> list[dict[str, Any]]:
        try:
            with self.path.open("rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return []
        self._offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        events = []
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line cut by a killed writer
            if isinstance(event, dict):
                events.append(event)
        return events


@dataclass
class Progress:
    """The state of a run as its events tell it: checks done (with a verdict, undecided
    included) of the total, and an estimate of the time left.

    A check judged on several scenarios' timelines (CORE-01, CORE-02, CORE-05) counts once,
    at its first verdict; the report keeps the worst. The estimate: every scenario not
    finished takes what it took in the report directory's previous run (``history``),
    scaled by how fast this run's finished scenarios went against theirs; one without a
    history takes the mean of those finished (DEFAULT_SCENARIO_SECONDS before any); less
    what a running one has already taken; `parallel` at a time, then the exclusive ones
    alone (or beside them, on a second environment that the first joins once its own are
    done: `aside`). Without the history the
    estimate ran short: the long scenarios (restarts, bursts) are the ones left at the end."""

    total: int = 0
    parallel: int = 1
    aside: bool = False  # the exclusive ones on a second environment, beside the others
    started: float | None = None
    verdicts: dict[str, str] = field(default_factory=dict)  # check -> worst result so far
    planned: dict[str, bool] = field(default_factory=dict)  # test -> exclusive
    # test -> (expected, bound) seconds, as the suite's plan says for these claims
    priors: dict[str, tuple[float, float | None]] = field(default_factory=dict)
    running: dict[str, float] = field(default_factory=dict)  # test -> start time
    names: dict[str, str] = field(default_factory=dict)  # test -> scenario name
    finished: set[str] = field(default_factory=set)
    durations: dict[str, float] = field(default_factory=dict)  # test -> seconds, if it ran
    checks: dict[str, set[str]] = field(default_factory=dict)  # test -> the checks it decides
    decided: dict[str, set[str]] = field(default_factory=dict)  # scenario -> checks judged
    exits: list[dict[str, Any]] = field(default_factory=list)  # replica-exit, as shown
    history: dict[str, float] = field(default_factory=dict)  # test -> seconds, last run
    _seen: set[tuple[str, str, str]] = field(default_factory=set)

    def feed(self, event: Mapping[str, Any]) -> dict[str, Any] | None:
        """Take one event; the public event (with elapsed time, count and estimate), or
        None for one that says nothing new (the same plan or verdict from another
        process)."""
        kind, now = event.get("event"), float(event.get("time") or time.time())
        if kind == RUN_START:
            self.started = now
            self.total = int(event.get("total", 0))
            self.parallel = max(int(event.get("parallel", 1)), 1)
            self.aside = bool(event.get("aside"))
        elif kind == PLAN:
            new = [s for s in event.get("scenarios", []) if s["test"] not in self.planned]
            if not new:
                return None
            self.planned.update({s["test"]: bool(s.get("exclusive")) for s in new})
            self.checks.update({s["test"]: set(s.get("checks") or ()) for s in new})
            self.priors.update({s["test"]: _prior(s) for s in new if "expectedSeconds" in s})
            event = {**event, "added": len(new), "planned": len(self.planned)}
        elif kind == SCENARIO_START:
            test = event["test"]
            if test in self.running or test in self.finished:
                return None
            self.running[test] = now
            self.names[test] = event.get("scenario", test)
            self.planned.setdefault(test, bool(event.get("exclusive")))
        elif kind == CHECK_VERDICT:
            key = (event["check"], event.get("scenario", ""), event["result"])
            if key in self._seen:
                return None
            self._seen.add(key)
            before = self.verdicts.get(event["check"])
            self.verdicts[event["check"]] = _worse(before, key[2])
            self.decided.setdefault(key[1], set()).add(key[0])
            if before is not None and self.verdicts[event["check"]] == before:
                # judged again on another scenario's timeline, and no worse: nothing new
                event = {**event, "repeat": True}
        elif kind == SCENARIO_END:
            test = event["test"]
            began = self.running.pop(test, None)
            self.finished.add(test)
            self.planned.setdefault(test, False)
            if event.get("outcome") in RAN:
                took = now - began if began is not None else event.get("durationSeconds")
                if took is not None:
                    self.durations[test] = float(took)
        public = {**event, "elapsedSeconds": round(now - (self.started or now), 1)}
        if kind == REPLICA_EXIT:
            self.exits.append(public)
        if kind == SCENARIO_END:
            if event["test"] in self.names:
                public.setdefault("scenario", self.names[event["test"]])
            # its checks' own lines say what became of them; its error is for pytest.log
            names = {public.get("scenario"), str(event["test"]).rsplit("::", 1)[-1]}
            public["explained"] = bool(names & set(self.decided))
        if kind in (PLAN, SCENARIO_START, CHECK_VERDICT, RUN_END):
            public.update(done=len(self.verdicts), total=self.total)
        if kind in (PLAN, SCENARIO_START, CHECK_VERDICT):
            public["etaSeconds"] = self.eta(now)
            public["etaGuessed"] = not self.durations  # no scenario of this run finished yet
        return public

    def eta(self, now: float) -> float | None:
        """Seconds left, estimated; None while no scenario is known."""
        if not self.planned:
            return None
        shared_work = shared_longest = exclusive = exclusive_longest = 0.0
        for test, alone in self.planned.items():
            if test in self.finished:
                continue
            rest = each = self.expected(test)
            if test in self.running:
                rest = self._rest(test, each, now - self.running[test])
            if alone:
                exclusive += rest
                exclusive_longest = max(exclusive_longest, rest)
            else:
                shared_work += rest
                shared_longest = max(shared_longest, rest)
        shared = max(shared_work / self.parallel, shared_longest)
        if not self.aside:
            return round(shared + exclusive, 1)
        # the second environment runs them from the start, the first joins in after its own
        return round(max(shared, (shared + exclusive) / 2, exclusive_longest), 1)

    def _rest(self, test: str, each: float, ran: float) -> float:
        """What is left of running scenario ``test``, expected to take ``each``, after
        ``ran`` seconds. Every check it decides has its verdict: its clean-up alone. Well
        past its expected time it waits on a wait of its own, at worst to its bound (a
        dispatcher that missed a deadline). Else what is left of ``each``, a little more
        once past it, never none."""
        checks = self.checks.get(test)
        if checks and checks <= self.decided.get(self.names.get(test, test), set()):
            return min(max(each - ran, 0.0), 0.1 * each)
        bound = self.priors.get(test, (0.0, None))[1]
        later = bound - ran if bound is not None and ran > 2 * each else 0.0
        return max(each - ran, later, 0.1 * each)

    def expected(self, test: str = "") -> float:
        """What scenario ``test`` (any scenario, without one) is expected to take: what it
        took last run at this run's pace; else its prior (the suite's, from the claimed
        round timeout) at the pace of this run's finished scenarios against theirs."""
        if test in self.history:
            return self.history[test] * self.pace()
        if self.durations:
            return self.prior(test) * self.prior_pace()
        if self.history:
            return statistics.fmean(self.history.values()) * self.pace()
        return self.prior(test)

    def prior(self, test: str) -> float:
        """What the plan expects of ``test`` before anything ran (the default without one)."""
        return self.priors.get(test, (DEFAULT_SCENARIO_SECONDS, None))[0]

    def prior_pace(self) -> float:
        """This run's finished scenarios' time over their priors (1: none yet)."""
        expected = sum(self.prior(t) for t in self.durations)
        return sum(self.durations.values()) / expected if expected > 0 else 1.0

    def pace(self) -> float:
        """This run's finished scenarios' time over what they took last run (1: none yet)."""
        both = [t for t in self.durations if self.history.get(t, 0) > 0]
        if not both:
            return 1.0
        return sum(self.durations[t] for t in both) / sum(self.history[t] for t in both)


def history(public: Path, profile: str | None = None) -> dict[str, float]:
    """What each scenario took in the run that wrote this public progress file (a report
    directory's previous run), read before the directory is emptied; {} without one, or
    when that run judged another `profile` (its rounds need not be this one's)."""
    replay, judged = Progress(), None
    for event in Follower(public).read():
        if event.get("event") == RUN_START:
            judged = event.get("profile")
        replay.feed(event)
    if profile is not None and judged is not None and judged != profile:
        return {}
    return dict(replay.durations)


class _ExitReader:
    """The replica-exit events of one events file, read on from where the last call left
    off: a test process asks at every verdict, and the file grows all run long."""

    def __init__(self, events: Path) -> None:
        self._follower = Follower(events)
        self.found: list[dict[str, Any]] = []

    def read(self) -> list[dict[str, Any]]:
        self.found += [e for e in self._follower.read() if e.get("event") == REPLICA_EXIT]
        return self.found


_exit_readers: dict[Path, _ExitReader] = {}


def exits(events: Path, environment: Path) -> list[dict[str, Any]]:
    """The replica-exit events of `environment`'s dispatcher so far, as its test
    processes read them from the run's events file (`monotonic`: the exit's time on the
    clock the timelines use)."""
    reader = _exit_readers.setdefault(events, _ExitReader(events))
    return [e for e in reader.read() if e.get("environment") == str(environment)]


def _prior(planned: Mapping[str, Any]) -> tuple[float, float | None]:
    bound = planned.get("boundSeconds")
    return float(planned["expectedSeconds"]), None if bound is None else float(bound)


def _worse(old: str | None, new: str) -> str:
    if old is None:
        return new
    try:
        return min(old, new, key=lambda r: Result(r).rank)
    except ValueError:
        return old


def clock(seconds: float) -> str:
    """Elapsed run time as mm:ss (h:mm:ss past an hour)."""
    s = max(int(seconds), 0)
    h, m = divmod(s // 60, 60)
    return f"{h}:{m:02d}:{s % 60:02d}" if h else f"{m:02d}:{s % 60:02d}"


def span(seconds: float) -> str:
    """A duration in words a glance reads: 41.2s, 2m05s, 1h02m."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    s = int(round(seconds))
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def _count(event: Mapping[str, Any]) -> str:
    """The count, and the time left: "(estimate)" while no scenario of this run finished
    (a figure from the plan or the last run alone, not yet from this run's pace)."""
    eta = event.get("etaSeconds")
    guessed = " (estimate)" if event.get("etaGuessed", True) else ""
    if eta is None:
        left = ""
    else:
        left = f", ~{span(round(eta)) if eta >= 60 else f'{eta:.0f}s'} left{guessed}"
    return f"[{event.get('done', 0)}/{event.get('total', 0)} checks done{left}]"


def _first_line(text: str, limit: int = 200) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def human(event: Mapping[str, Any], log: Path | str) -> str | None:
    """The console line for a public event; None for events the console leaves out."""
    kind, at = event.get("event"), clock(float(event.get("elapsedSeconds", 0)))
    if kind == RUN_START:
        return (
            f"judging {event.get('total', 0)} check(s), {event.get('parallel', 1)} scenario(s) "
            f"at a time; pytest's output and tracebacks go to {log}"
        )
    if kind == PLAN:
        added, planned = event.get("added", 0), event.get("planned", 0)
        more = (
            f"{added} more scenario(s) to run, {planned} in all"
            if added != planned
            else (f"{planned} scenario(s) to run")
        )
        return f"{at} {more} {_count(event)}"
    if kind == SCENARIO_START:
        checks = ", ".join(event.get("checks", []))
        return f"{at} {'started':<13} {event.get('scenario', event['test'])} ({checks}) " + (
            _count(event)
        )
    if kind == CHECK_VERDICT:
        if event.get("repeat"):
            return None
        line = (
            f"{at} {event['result']:<13} {event['check']} {event.get('name', '')}  "
            f"{event.get('scenario', '')}  {span(float(event.get('durationSeconds') or 0))}  "
            f"{_count(event)}"
        )
        why = _first_line(event.get("message", "")) if event["result"] != "passed" else ""
        did = _first_line(event.get("dispatcher", ""), 400)
        if did:  # what the dispatcher itself did, beside what the timeline showed
            why = f"{why} | the dispatcher: {did}"
        if why and event.get("traceback"):  # the scenario's exception, quoted: its traceback
            why = f"{why}; traceback in {log}"
        return f"{line}: {why}" if why else line
    if (
        kind == SCENARIO_END
        and event.get("outcome") not in ("passed", "skipped")
        and not event.get("explained")
    ):
        what = _first_line(event.get("error", ""), 160)
        name = event.get("scenario") or event["test"]
        return f"{at} {event.get('outcome', 'error'):<13} {name}: {what}; traceback in {log}"
    if kind == REPLICA_EXIT:
        code = event.get("code")
        how = "exited" if code is None else f"exited with code {code}"
        line = (
            f"{at} {'exited':<13} {event.get('where', '')}the dispatcher "
            f"({event.get('process', 'replica')}) {how}: "
            f"{_first_line(event.get('cause', ''), 300)}; its log: "
            f"{Path(log).parent / str(event.get('log'))}"
        )
        return line + _restart_said(event)
    if kind == RUN_END:
        missing = event.get("notDecided") or []
        how = "interrupted" if event.get("interrupted") else "finished"
        line = f"{at} {how}: {event.get('done', 0)}/{event.get('total', 0)} checks done"
        return f"{line}; not decided: {', '.join(missing)}" if missing else line
    return None


def _restart_said(event: Mapping[str, Any]) -> str:
    """How a replica-exit event's restart reads on the console (a kubelet's back-off)."""
    delay = event.get("restartIn")
    if delay is None:
        return ""
    when = "at once" if not delay else f"in {delay:.0f}s (back-off)"
    said = f"; restartPolicy Always: started again {when}"
    if event.get("crashLoop"):
        said += "; it is in a crash loop (it keeps exiting soon after each start)"
    return said


class Reporter:
    """Follows the events file in a thread and writes the public stream as it goes."""

    def __init__(
        self,
        events: Path,
        report_dir: Path,
        *,
        mode: str = HUMAN,
        poll: float = 0.5,
        out: IO[str] | None = None,
        err: IO[str] | None = None,
        history: Mapping[str, float] | None = None,
    ) -> None:
        self.events = events
        self.log = report_dir / LOG_FILE
        self.public = report_dir / PUBLIC_FILE
        self.mode = mode
        self.poll = poll
        self.out, self.err = out or sys.stdout, err or sys.stderr
        self.progress = Progress(history=dict(history or {}))
        self._follower = Follower(events)
        self._stop = threading.Event()
        self._ended = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="mkdc-progress", daemon=True)

    def __enter__(self) -> Reporter:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: object, _tb: object) -> None:
        """A run that ends in an error still ends its stream, saying why."""
        if exc_type is not None and not self._ended:
            self.end(error=str(exc) or exc_type.__name__)
        self.close()

    def start(self) -> Reporter:
        self._thread.start()
        return self

    def end(self, **fields: Any) -> None:
        """The run-end event."""
        self._ended = True
        self.emit(RUN_END, **fields)

    def emit(self, event: str, **fields: Any) -> None:
        """An event of `mkdc run` itself, shown after every event the test processes
        wrote before it (also once the run directory, and the events file, are gone)."""
        with self._lock:
            self._drain()
            self._show({"event": event, "time": round(time.time(), 3), **fields})

    def close(self) -> None:
        """Stop following, after showing every event written so far."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.pump()

    def pump(self) -> None:
        """Show the events written since the last call."""
        with self._lock:
            self._drain()

    def alone_left(self, claims: Path | None = None) -> bool:
        """Whether a collection so far planned a scenario that must run alone that no
        environment has taken from `claims` (`harness.scenarios.slots.claim`)."""
        self.pump()
        return any(
            alone and (claims is None or not slots.claimed(claims, test))
            for test, alone in self.progress.planned.items()
        )

    def _drain(self) -> None:
        for event in self._follower.read():
            self._show(event)

    def _show(self, event: dict[str, Any]) -> None:
        public = self.progress.feed(event)
        if public is None:
            return
        line = json.dumps(public, default=str)
        with contextlib.suppress(OSError), self.public.open("a") as out:
            out.write(line + "\n")
        if self.mode == JSONL:
            print(line, file=self.out, flush=True)
        elif (text := human(public, self.log)) is not None:
            print(f"mkdc: {text}", file=self.err, flush=True)

    def _run(self) -> None:
        while not self._stop.wait(self.poll):
            self.pump()
