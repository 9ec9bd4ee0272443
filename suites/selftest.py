"""Self-test of the suite: every faulty dispatcher must be rejected, by exactly its checks.

``python -m suites.selftest [--quick] [--only FAULT,...] [--no-baselines] [--jobs N]``

A conformance suite is only as good as the dispatchers it rejects. For each faulty
dispatcher (dispatchers/faulty/, profile ``faulty-<fault>``) this runs ``mkdc run`` on the
checks it must fail (``kills``) plus a few it must pass (``controls``), reads report.yaml,
and asserts that the kills failed, named in the report, and nothing else failed. Each run
is on the fewest workers every scenario runs on for its claims (``fewest_workers``). Without
``--quick`` the reference and the built-in dispatchers must fail none of the union of those
checks. A fault that survives is a hole in a check (fix the check, not the dispatcher).
A fault that leaves work behind on shared clusters (``left_behind``) must instead leave
the next scenario's checks undecided, naming the leftover: never judged on it.

The kill matrix (faulty dispatcher x check: killed / survived / —) is printed and written
to ``reports/selftest/kill-matrix.md`` (``reports/selftest-quick/`` with ``--quick``).
Exit 1 if any expectation does not hold, 2 if a run could not be made at all (bad
profile, environment error).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dispatchers.faulty.faults import FAULTS
from harness.orchestrate.options import Options
from harness.orchestrate.plan import plan as run_plan
from harness.profile import load_profile
from harness.results import Result
from suites.checks import CATALOGUE
from suites.judge import LEFT_BY_EARLIER, fewest_workers

ROOT = Path(__file__).resolve().parent.parent
REPORT_ROOT = Path("reports/selftest")
QUICK_REPORT_ROOT = Path("reports/selftest-quick")  # a quick run never wipes a full one
MATRIX_FILE = "kill-matrix.md"
MUST_FAIL_ANNOTATION = "mkdc.example/must-fail"  # faulty profiles repeat their kills here
ANY = ("CORE-02", "CORE-05")  # judged on every scenario that runs: free controls
QUICK = ("outside-config", "foreign-writer", "duplicate-names")  # fast scenarios, ~1 min each
BASELINES = ("reference", "all-at-once", "incremental")
BRING_UP_SECONDS = 60.0  # what a lane's new 1+3 or 1+4 environment costs it, beside other lanes

# Checks no dispatcher can violate on its own, with why (so the table need not kill them).
NOT_DISPATCHER_VIOLABLE: dict[str, str] = {
    "CORE-05": "Kueue runs the Job once; a dispatcher could only cause a second copy by "
    "nominating after placement, which CORE-03 already kills (writes-after-placement)",
}


@dataclass(frozen=True)
class Expectation:
    """One self-test run: the profile, the checks it must fail, and checks it must pass."""

    fault: str  # "" for a baseline (reference, built-in): must fail nothing
    kills: tuple[str, ...]
    controls: tuple[str, ...] = ANY
    profile: str = ""
    # checks whose scenario must not start, undecided naming what an earlier one left
    left_behind: tuple[str, ...] = ()
    # its replica exits by itself mid-run: the report lists the exit (dispatcherExits) and
    # each kill's message carries it (EXITED_NOTE), not a guess at what the timeline lacked
    exits: bool = False

    @property
    def profile_name(self) -> str:
        return self.profile or f"faulty-{self.fault}"

    @property
    def row(self) -> str:
        return self.fault or self.profile_name

    @property
    def checks(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*self.kills, *self.controls, *self.left_behind)))


def _e(
    fault: str, kills: Sequence[str], *controls: str, exits: bool = False
) -> tuple[str, Expectation]:
    others = tuple(c for c in dict.fromkeys((*ANY, *controls)) if c not in kills)
    return fault, Expectation(fault, tuple(kills), others, exits=exits)


# fault -> the checks it must fail (and the scenario checks run beside them, which must pass).
EXPECTED: dict[str, Expectation] = dict(
    [
        _e("outside-config", ["CORE-01"], "CORE-03"),
        _e("config-blind", ["CORE-01"], "CORE-03"),
        _e("duplicate-names", ["CORE-02"], "CORE-03"),
        _e("too-many-names", ["CORE-02"], "CORE-03"),
        _e("writes-after-placement", ["CORE-03"], "CORE-08"),
        _e("ignores-eviction", ["CORE-06"], "CORE-03"),
        _e("ignores-config-change", ["CORE-07"], "CORE-03"),
        _e("foreign-writer", ["CORE-08"], "CORE-03"),
        _e("nominates-while-evicted", ["CORE-10"], "CORE-03"),
        _e("stalls-under-burst", ["CORE-09"]),
        _e("big-step", ["EXT-01", "EXT-02", "EXT-03", "EXT-04"]),
        _e("never-escalates", ["CORE-04", "EXT-05"], "CORE-03"),
        _e("escalates-early", ["EXT-06", "EXT-08"], "EXT-05"),
        _e("ignores-order", ["EXT-07"], "CORE-04"),
        _e("ignores-cluster-timeouts", ["EXT-08"], "EXT-05", "EXT-06"),
        _e("retries-failed-first", ["EXT-09"], "CORE-03"),
        _e("nominates-inactive", ["EXT-10"], "CORE-03"),
        _e("resets-on-restart", ["EXT-11"], "CORE-03"),
        _e("both-replicas-write", ["EXT-12"], "CORE-03"),
        # once its watch is gone it sees nothing new: its control runs before (not exclusive)
        _e("stale-watch", ["EXT-13"], "CORE-03"),
        # it fails EXT-13 too whenever the restarting apiserver answers a 5xx: not a control
        _e("drops-refused-writes", ["EXT-14"], "EXT-11"),
        # kills nothing: CORE-03's scenario runs first and passes, and leaves its workload
        # behind on the shared clusters, so CORE-04's never starts
        (
            "leaves-workloads",
            Expectation("leaves-workloads", (), (*ANY, "CORE-03"), left_behind=("CORE-04",)),
        ),
        # dies at its first escalation, CORE-04's (CORE-03's scenario, beside it, needs none
        # and passes): the exit is said at once and CORE-04's failure carries it
        _e("dies-uncaught", ["CORE-04"], "CORE-03", exits=True),
    ]
)
EXITED_NOTE = "the dispatcher had exited: "  # what suites.judge adds to a later message


# --------------------------------------------------------------------------- judging


@dataclass
class Outcome:
    """What one run showed: per check its result and message, the problems, the wall time."""

    expectation: Expectation
    results: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (result, msg)
    exits: list[dict[str, Any]] = field(default_factory=list)  # report's dispatcherExits
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    error: str = ""  # the run itself failed (exit 2, no report)

    @property
    def ok(self) -> bool:
        return not self.problems and not self.error


def read_report(path: Path) -> dict[str, tuple[str, str]]:
    """report.yaml -> {check id: (result, message)}; "not run" skips are left out."""
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    out = {}
    for check in doc.get("checks") or []:
        if (
            check.get("result") == Result.SKIPPED
            and check.get("message") == "not run in this session"
        ):
            continue
        out[str(check["id"])] = (str(check["result"]), str(check.get("message") or ""))
    return out


def judge(
    exp: Expectation,
    results: Mapping[str, tuple[str, str]],
    names: Mapping[str, str],
    exits: Sequence[Mapping[str, Any]] = (),
) -> list[str]:
    """Why the results break the expectation: a kill that did not fail (a hole, or no
    scenario decided it), a failure without a message, any other check that failed; for
    a dispatcher that exits by itself, no exit in the report (``exits``: its
    dispatcherExits) or a kill whose message does not carry it."""
    problems = []
    if exp.exits and not exits:
        problems.append("its replica's exit is not in the report (dispatcherExits)")
    for cid in exp.kills if exp.exits else ():
        result, message = results.get(cid, ("absent", ""))
        if result == Result.FAILED and EXITED_NOTE not in message:
            problems.append(f"{cid} failed without saying the dispatcher had exited: {message}")
    for cid in exp.kills:
        result, message = results.get(cid, ("absent", "no scenario decided it"))
        if result == Result.PASSED:
            problems.append(f"{cid} {names.get(cid, '')} survived: a hole in the check")
        elif result != Result.FAILED:
            problems.append(f"{cid} was not judged ({result}: {message or 'no reason'})")
        elif not message:
            problems.append(f"{cid} failed without saying why")
    for cid in exp.left_behind:
        result, message = results.get(cid, ("absent", "no scenario decided it"))
        if result != Result.UNDECIDED or LEFT_BY_EARLIER not in message:
            problems.append(
                f"{cid} should be undecided naming an earlier scenario's leftover "
                f"({result}: {message[:200] or 'no reason'})"
            )
    for cid, (result, message) in results.items():
        if result == Result.FAILED and cid not in exp.kills:
            problems.append(f"{cid} {names.get(cid, '')} failed too: {message[:200]}")
    return problems


def cell(result: str | None) -> str:
    """Matrix cell: failed -> killed, passed -> survived, undecided, anything else -> —."""
    cells: dict[str, str] = {
        Result.FAILED: "killed",
        Result.PASSED: "survived",
        Result.UNDECIDED: "undecided",
    }
    return cells.get(result or "", "—")


def render_matrix(outcomes: Iterable[Outcome], columns: Sequence[str]) -> str:
    """Markdown: one row per run, one column per check, then wall time and verdict."""
    head = ["dispatcher", *columns, "wall", "verdict"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for o in outcomes:
        cells = []
        for cid in columns:
            text = cell(o.results.get(cid, ("", ""))[0])
            if cid in o.expectation.kills:
                text = f"**{text}**"  # bold: this fault must kill this check
            cells.append(text)
        verdict = "ok" if o.ok else "; ".join([o.error] if o.error else o.problems)
        row = [o.expectation.row, *cells, f"{o.seconds:.0f}s", verdict.replace("|", "/")]
        lines.append("| " + " | ".join(row) + " |")
    legend = (
        "\nBold: a check the dispatcher must fail. killed = failed, survived = passed, "
        "undecided = its scenario broke before deciding it, "
        "— = not run, skipped or not supported.\n"
    )
    return "\n".join(lines) + "\n" + legend


# --------------------------------------------------------------------------- running


def mkdc_command() -> list[str]:
    exe = Path(sys.executable).with_name("mkdc")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "harness.cli"]


def profile_arg(exp: Expectation, profile_dir: Path | None) -> str:
    """The profile as `mkdc run` is given it: its name, or its file in ``profile_dir``."""
    return str(profile_dir / f"{exp.profile_name}.yaml") if profile_dir else exp.profile_name


def run_lane(
    lane: Sequence[Expectation],
    report_root: Path,
    names: Mapping[str, str],
    extra: Sequence[str] = (),
    runner: Callable[[list[str]], int] | None = None,
    profile_dir: Path | None = None,
    plan_name: str = "plan",
) -> list[Outcome]:
    """One ``mkdc run --plan`` for these expectations, one after another (on one
    environment where they can share it), then judge each report. ``profile_dir``: take
    ``<profile>.yaml`` from there instead of the built-in profiles (e.g. edited copies)."""
    entries = []
    for exp in lane:
        report_dir = report_root / exp.profile_name
        (report_dir / "report.yaml").unlink(missing_ok=True)  # never judge a stale one
        profile = profile_arg(exp, profile_dir)
        entry = {"profile": profile, "checks": list(exp.checks), "reportDir": str(report_dir)}
        workers = workers_of(exp, profile_dir, extra)
        entries.append(entry if workers is None else {**entry, "workers": workers})
    report_root.mkdir(parents=True, exist_ok=True)
    plan_file = report_root / f"{plan_name}.yaml"
    plan_file.write_text(yaml.safe_dump(entries, sort_keys=False), encoding="utf-8")
    # one environment a run: the lanes keep the cores busy already, and a second for a
    # baseline's burst and restarts made the whole self-test slower (docs/benchmarks.md);
    # a later --environments in `extra` wins
    argv = [*mkdc_command(), "run", "--plan", str(plan_file), "--environments", "1", *extra]
    print(f"selftest: {' '.join(argv[1:])} ({', '.join(e.row for e in lane)})", file=sys.stderr)
    code = (runner or _call)(argv)
    return [outcome_of(exp, report_root, names, code) for exp in lane]


def run_one(
    exp: Expectation,
    report_root: Path,
    names: Mapping[str, str],
    extra: Sequence[str] = (),
    runner: Callable[[list[str]], int] | None = None,
    profile_dir: Path | None = None,
) -> Outcome:
    """``run_lane`` of one expectation."""
    [outcome] = run_lane([exp], report_root, names, extra, runner, profile_dir, exp.profile_name)
    return outcome


def outcome_of(
    exp: Expectation, report_root: Path, names: Mapping[str, str], code: int | None = None
) -> Outcome:
    """What the report ``report_root/<profile>`` shows, judged against ``exp``: an error
    when there is none, or the run could not judge the dispatcher (``code``: the exit of
    the ``mkdc run`` that was to write it)."""
    report = report_root / exp.profile_name / "report.yaml"
    outcome = Outcome(exp)
    if not report.exists():
        outcome.error = f"no report ({report}): mkdc run exited {code}"
        return outcome
    doc = yaml.safe_load(report.read_text(encoding="utf-8")) or {}
    outcome.seconds = float((doc.get("environment") or {}).get("wallSeconds") or 0.0)
    if doc.get("error"):
        outcome.error = f"not judged: {doc['error']}"
        return outcome
    outcome.results = read_report(report)
    outcome.exits = list(doc.get("dispatcherExits") or [])
    outcome.problems = judge(exp, outcome.results, names, outcome.exits)
    return outcome


def earlier_outcomes(
    report_root: Path, names: Mapping[str, str], skip: Iterable[str] = ()
) -> list[Outcome]:
    """Outcomes judged from reports an earlier selftest left under ``report_root``, the
    baselines' included."""
    skipped = set(skip)
    return [
        outcome_of(exp, report_root, names)
        for exp in plan_runs(False)
        if exp.profile_name not in skipped
        and (report_root / exp.profile_name / "report.yaml").exists()
    ]


def estimate(exp: Expectation, earlier: Mapping[str, float]) -> float:
    """Seconds the run will take: its last wall time here, else a rough guess from its
    number of checks (a minute, and half a minute a check)."""
    return earlier.get(exp.profile_name) or 60.0 + 30.0 * len(exp.checks)


def lanes(
    runs: Sequence[Expectation],
    jobs: int,
    environment: Callable[[Expectation], Hashable],
    seconds: Callable[[Expectation], float],
) -> list[list[Expectation]]:
    """Split the runs over ``jobs`` lanes, each one ``mkdc run --plan`` at a time:
    longest first, each onto the lane that would finish it first, counting a bring-up
    where the lane has no environment for it yet; in a lane, runs that share an
    environment follow one another. ``environment`` is asked once per run (it reads the
    profile)."""
    count = max(1, min(jobs, len(runs)))
    key = {exp.profile_name: environment(exp) for exp in runs}
    out: list[list[Expectation]] = [[] for _ in range(count)]
    kept: list[set[Hashable]] = [set() for _ in range(count)]  # environments a lane brings up
    totals = [0.0] * count

    def cost(i: int, exp: Expectation) -> float:
        bring_up = 0.0 if key[exp.profile_name] in kept[i] else BRING_UP_SECONDS
        return totals[i] + seconds(exp) + bring_up

    for exp in sorted(runs, key=seconds, reverse=True):
        best = min(range(count), key=lambda i: cost(i, exp))
        totals[best] = cost(best, exp)
        out[best].append(exp)
        kept[best].add(key[exp.profile_name])
    for lane in out:
        order = list(dict.fromkeys(key[e.profile_name] for e in lane))
        lane.sort(key=lambda e: order.index(key[e.profile_name]))
    return [lane for lane in out if lane]


def workers_of(
    exp: Expectation, profile_dir: Path | None = None, mkdc_args: Sequence[str] = ()
) -> int | None:
    """The fewest workers every scenario of the run runs on (``fewest_workers`` of its
    claims); None where ``mkdc_args`` set --workers for every run or the profile names its
    clusters."""
    if any(_sets_workers(a) for a in mkdc_args):
        return None
    profile = load_profile(profile_arg(exp, profile_dir))
    return None if profile.environment.clusters else fewest_workers(profile.claims)


def _sets_workers(arg: str) -> bool:
    """``--workers``, ``--workers=N``, or an abbreviation `mkdc run` takes for it
    (``--w 5``: argparse's prefix matching)."""
    flag = arg.split("=", 1)[0]
    return len(flag) > len("--") and "--workers".startswith(flag)


def environment_of(
    exp: Expectation, profile_dir: Path | None = None, extra: Sequence[str] = ()
) -> Hashable:
    """Which environment the run needs (``harness.orchestrate.plan.Plan.environment_key``)."""
    options = Options(
        profile_arg(exp, profile_dir),
        report_dir=Path("reports") / exp.profile_name,
        workers=workers_of(exp, profile_dir, extra),
    )
    return run_plan(options).environment_key() or exp.profile_name


def _call(argv: list[str]) -> int:
    return subprocess.run(argv, cwd=ROOT, check=False).returncode


def _logged(log: Path) -> Callable[[list[str]], int]:
    """A runner whose run's console output goes to ``log`` (runs at once would interleave)."""

    def call(argv: list[str]) -> int:
        with log.open("wb") as out:
            return subprocess.run(
                argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, check=False
            ).returncode

    return call


def plan_runs(
    quick: bool, only: Sequence[str] = (), baselines: Sequence[str] = BASELINES
) -> list[Expectation]:
    """Expectations to run: --only, else the quick subset or all; baselines unless quick."""
    unknown = [f for f in only if f not in EXPECTED]
    if unknown:
        raise SystemExit(f"selftest: unknown fault(s) {', '.join(unknown)} (see --list)")
    faults = list(only) or list(QUICK if quick else EXPECTED)
    runs = [EXPECTED[f] for f in faults]
    if not quick:
        union = tuple(dict.fromkeys(c for e in runs for c in e.checks))
        runs += [Expectation("", (), union, profile=b) for b in baselines]
    return runs


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m suites.selftest", description=__doc__)
    p.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}; no baselines")
    p.add_argument("--only", help="these faults (comma separated)")
    p.add_argument("--no-baselines", action="store_true", help="skip reference and built-ins")
    p.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="lanes at once, each a `mkdc run --plan` whose runs share environments where they"
        " can (about 2.5 GiB each at 4 workers)",
    )
    p.add_argument(
        "--report-root",
        type=Path,
        help=f"default {REPORT_ROOT}, or {QUICK_REPORT_ROOT} with --quick",
    )
    p.add_argument("--profile-dir", type=Path, help="profiles from here, not the built-in ones")
    p.add_argument("--list", action="store_true", help="print the expectation table and exit")
    p.add_argument("--matrix", action="store_true", help="no runs: matrix of existing reports")
    p.add_argument("--write-profiles", action="store_true", help="regenerate faulty-*.yaml")
    p.add_argument("mkdc_args", nargs="*", help="passed to mkdc run (after --), e.g. -n 1")
    args = p.parse_args(argv)
    if args.report_root is None:
        args.report_root = QUICK_REPORT_ROOT if args.quick else REPORT_ROOT
    names = {cid: c.name for cid, c in CATALOGUE.items()}
    if args.write_profiles:
        for path in write_profiles():
            print(path.relative_to(ROOT))
        return 0
    if args.list:
        for e in EXPECTED.values():
            print(f"{e.fault:26} kills {','.join(e.kills):30} controls {','.join(e.controls)}")
        return 0
    only = [f.strip() for f in (args.only or "").split(",") if f.strip()]
    runs = (
        [] if args.matrix else plan_runs(args.quick, only, () if args.no_baselines else BASELINES)
    )

    seconds = {e.profile_name: outcome_of(e, args.report_root, names).seconds for e in runs}
    if not args.matrix and args.report_root.exists() and not only:
        shutil.rmtree(args.report_root)
    args.report_root.mkdir(parents=True, exist_ok=True)
    split = lanes(
        runs,
        args.jobs,
        lambda e: environment_of(e, args.profile_dir, args.mkdc_args),
        lambda e: estimate(e, seconds),
    )

    def one(i: int, lane: list[Expectation]) -> list[Outcome]:
        log = args.report_root / f"lane-{i}.log"
        runner = None if len(split) <= 1 else _logged(log)
        outcomes = run_lane(
            lane, args.report_root, names, args.mkdc_args, runner, args.profile_dir, f"lane-{i}"
        )
        for o in outcomes:
            state = "ok" if o.ok else "NOT OK: " + "; ".join(o.problems or [o.error])
            print(f"selftest: {o.expectation.row}: {state} ({o.seconds:.0f}s)", file=sys.stderr)
        return outcomes

    # each lane is its own `mkdc run --plan`: own environments, ports claimed machine-wide
    with ThreadPoolExecutor(max_workers=max(1, len(split))) as pool:
        outcomes = [o for done in pool.map(one, range(1, len(split) + 1), split) for o in done]
    ran = {o.expectation.profile_name for o in outcomes}
    outcomes += earlier_outcomes(args.report_root, names, ran)  # --only: keep the other rows
    columns = [c for c in CATALOGUE if any(c in o.results for o in outcomes)]
    matrix = render_matrix(outcomes, columns)
    print(matrix)
    (args.report_root / MATRIX_FILE).write_text(matrix, encoding="utf-8")
    good = sum(o.ok for o in outcomes)
    print(f"selftest: {good} passed, {len(outcomes) - good} failed")
    if any(o.error for o in outcomes):
        return 2 if all(o.error for o in outcomes) else 1
    return 0 if all(o.ok for o in outcomes) else 1


def faulty_profile(fault: str) -> str:
    """The profile text of ``faulty-<fault>``: the reference's (reference-ha's for a fault
    that needs two replicas) with the faulty module, its name and its must-fail checks.
    It claims exactly what the reference claims: the point is that those claims are false."""
    f = FAULTS[fault]
    base = "reference-ha" if f.replicas > 1 else "reference"
    text = (ROOT / "dispatchers" / "profiles" / f"{base}.yaml").read_text()
    doc = yaml.safe_load(text)
    schema_line = [line for line in text.splitlines()[:1] if "yaml-language-server" in line]
    doc["metadata"] = {
        "name": f"faulty-{fault}",
        "annotations": {MUST_FAIL_ANNOTATION: ",".join(EXPECTED[fault].kills)},
    }
    spec = doc["spec"]
    spec["dispatcherName"] = f"mkdc.example/faulty-{fault}"
    spec["implementation"] = {**spec["implementation"], "project": f"mkdc faulty: {fault}"}
    command = list(spec["run"]["command"])
    at = command.index("dispatchers.reference")
    spec["run"]["command"] = [*command[:at], "dispatchers.faulty", "--fault", fault,
                              *command[at + 1 :]]  # fmt: skip
    if f.shared:
        spec["environment"] = {**spec.get("environment", {}), "clusterScope": "shared"}
    # the controller says the fault where it is the fault (the planner is the reference's)
    explained = f.controller.__doc__ is not None and (
        f.replicas > 1 or f.shared or f.planner.__doc__ is None
    )
    source = f.controller if explained else f.planner
    why = " ".join((source.__doc__ or f.breaks).split())
    exp = EXPECTED[fault]
    verdict = (
        [
            f"# It claims what {base}.yaml claims, falsely: the suite must fail it on",
            f"# {', '.join(exp.kills)} (also in metadata.annotations; the data lives in",
        ]
        if exp.kills
        else [
            f"# It claims what {base}.yaml claims; in clusterScope shared the suite must leave",
            f"# {', '.join(exp.left_behind)} undecided, naming what it left (the data lives in",
        ]
    )
    header = [
        *schema_line,
        f"# Faulty dispatcher {fault!r} (dispatchers/faulty/): the {base} dispatcher",
        f"# with one promise broken: {f.breaks}.",
        *_wrap(why, "# "),
        *verdict,
        "# suites/selftest.py EXPECTED). Regenerated by `python -m suites.selftest",
        "# --write-profiles` when the reference profile changes.",
    ]
    body = yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=100)
    return "\n".join(header) + "\n" + body


def _wrap(text: str, prefix: str, width: int = 92) -> list[str]:
    import textwrap

    return [prefix + line for line in textwrap.wrap(text, width)]


def write_profiles(faults: Iterable[str] = ()) -> list[Path]:
    """(Re)write dispatchers/profiles/faulty-*.yaml from the reference profiles."""
    out = []
    for fault in list(faults) or list(EXPECTED):
        path = ROOT / "dispatchers" / "profiles" / f"faulty-{fault}.yaml"
        path.write_text(faulty_profile(fault), encoding="utf-8")
        out.append(path)
    return out


def declared_kills(profile: Mapping[str, Any]) -> tuple[str, ...]:
    """The must-fail IDs a faulty profile declares in metadata.annotations."""
    annotations = (profile.get("metadata") or {}).get("annotations") or {}
    raw = str(annotations.get(MUST_FAIL_ANNOTATION, ""))
    return tuple(i.strip() for i in raw.split(",") if i.strip())


if __name__ == "__main__":
    sys.exit(main())
