"""The `mkdc` command line."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NoReturn

from harness.cluster import builds, faults, rundir, toolchain, upstream, userns, versions
from harness.console import log
from harness.counts import MAX_COUNT, valid_count
from harness.durations import parse_duration
from harness.errors import UserError, command_exit, shown, shown_path
from harness.scenarios import progress
from harness.suite import catalogue as suite_catalogue
from harness.suite import load as load_suite
from harness.userfiles import read_bytes

CURRENT = "current-environment"
# what a run directory of `mkdc up` holds (the supervisor's groups, the environment)
RUN_DIR_MARKERS = ("processes.json", "environment.json")


class UsageError(UserError):
    """Bad command-line arguments: argparse's message, on one line, with where to look."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit 2 like any bad input, not the
    usage text plus the message (main prints it)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def _count(text: str) -> int:
    """--workers, -n: a whole number in 1..MAX_COUNT (a billion workers would be tried)."""
    value = int(text) if re.fullmatch(r"[0-9]{1,6}", text) else 0  # not "1_0", "٣", "1e3"
    if not valid_count(value):
        raise argparse.ArgumentTypeError(
            f"must be a whole number from 1 to {MAX_COUNT}, got {shown(text)}"
        )
    return value


def _seconds(text: str) -> float:
    """--inject-every, --inject-downtime: a duration (`30s`, `2m`, or plain seconds) from
    1 s to 1 h."""
    try:
        value = parse_duration(text if not re.fullmatch(r"[0-9]{1,4}", text) else f"{text}s")
    except ValueError:
        value = None
    if value is None or not 1.0 <= value <= 3600.0:
        raise argparse.ArgumentTypeError(f"must be a duration from 1s to 1h, got {shown(text)}")
    return value


def _faults(text: str) -> tuple[str, ...]:
    """--inject: fault names, comma separated, or all."""
    try:
        return tuple(faults.parse(text))
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--inject {text!r}: ")) from None


def _version_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--kueue-version", help="Kueue version (env MKDC_KUEUE_VERSION; default v0.19.2)"
    )
    p.add_argument("--kubernetes-version", help="Kubernetes version (env MKDC_KUBERNETES_VERSION)")
    p.add_argument(
        "--kueue-source",
        metavar="DIR",
        help="a Kueue checkout to build and judge instead of a release (env MKDC_KUEUE_SOURCE;"
        " Kubernetes from its go.mod)",
    )


def _selected(args: argparse.Namespace) -> versions.Versions:
    return versions.select(args.kueue_version, args.kubernetes_version, args.kueue_source)


def cmd_bins(args: argparse.Namespace) -> int:
    v = _selected(args)
    userns.require()  # a runner that cannot run what is built is said before the build
    log(f"binaries for {v.describe()} (cache: {toolchain.cache_dir()})")
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=1) as aside:
        # the kind node's rootfs downloads while the binaries compile
        rootfs = aside.submit(_node_rootfs) if args.kind else None
        paths = builds.build_all(v, log, node=args.kind)
        upstream.manifests(v)
        log(f"{len(paths)} binaries ready in {time.monotonic() - started:.1f}s")
        if rootfs is not None:
            rootfs.result()
    if args.kind:
        _kind_images(v)
    return 0


def _node_rootfs() -> None:
    """The kind node image's Debian rootfs, where this machine can make it (node_image says
    why not otherwise)."""
    from harness.providers import kind_node

    if kind_node.can_build_rootfs():
        kind_node.debian_rootfs(log)


def _kind_images(v: versions.Versions) -> None:
    """`mkdc bins --kind`: the kind provider's tools and its offline images, built before a
    run needs them (a first kind run would otherwise spend minutes building them)."""
    from harness.providers import kind_images, kind_node

    started = time.monotonic()
    if _docker_engine() is None:
        raise UserError(
            "--kind: no Docker engine answers: start one (scripts/docker-engine, as root, "
            "installs and starts the distribution's), then run mkdc bins --kind again"
        )
    kind_node.node_image(v, log)
    kind_images.kueue_image(v)
    kind_images.kwok_image(v)
    log(f"kind tools and images ready in {time.monotonic() - started:.1f}s")


def cmd_doctor(args: argparse.Namespace) -> int:
    """Say what is present, missing or wrong, and the command that fixes it."""
    v = _selected(args)
    problems = 0
    print(f"versions: {v.describe()}")
    print(f"cache:    {toolchain.cache_dir()}")
    go = shutil.which("go")
    print(f"go:       {go or 'MISSING (install Go 1.26+)'}")
    problems += go is None
    fix = "mkdc bins" if v.source is None else f"mkdc bins --kueue-source {v.source.path}"
    for component in toolchain.components(v):
        built = toolchain.is_built(component)
        state = "ok" if built else f"missing (fix: {fix})"
        print(f"{component.key:32} {state}  {toolchain.bin_dir(component)}")
        problems += not built
    try:
        m = upstream.manifests(v) if go else None
        print(f"manifests: {'ok ' + str(m.kueue_dir) if m else 'unknown (needs go)'}")
    except UserError as exc:
        print(f"manifests: {exc}")
        problems += 1
    problems += _machine_readiness()
    try:
        refused = userns.probe()
        print(f"userns:   {'ok' if refused is None else refused.line()}")
        problems += refused is not None
    except UserError as exc:  # no unshare: _machine_readiness said so
        print(f"userns:   {exc}")
    for line in _kind_readiness(v):
        print(line)
    current = toolchain.cache_dir() / CURRENT
    if current.exists():
        print(f"environment: running, run dir {current.read_text().strip()} (stop: mkdc down)")
    print("doctor: all good" if not problems else f"doctor: {problems} problem(s)")
    return 0 if not problems else 1


SETUP_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "setup"


def _machine_readiness() -> int:
    """Print what scripts/setup would install for `make e2e` (the same script and the same
    words as the make targets); 1 when something is missing, 0 otherwise."""
    if not SETUP_SCRIPT.is_file():  # installed from a wheel: no checkout, no make targets
        unshare = shutil.which("unshare")
        print(f"unshare:  {unshare or 'MISSING (fix: apt-get install util-linux)'}")
        return int(unshare is None)
    check = subprocess.run(
        ["bash", str(SETUP_SCRIPT), "--for", "e2e", "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    print(check.stdout.rstrip())
    return int(check.returncode != 0)


def _docker_engine() -> str | None:
    """The version of the Docker engine that answers, None when none does (or no client)."""
    if not shutil.which("docker"):
        return None
    info = subprocess.run(
        ["docker", "info", "--format", "{{.ServerVersion}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return (info.stdout.strip() or "?") if info.returncode == 0 else None


def _kind_readiness(v: versions.Versions) -> list[str]:
    """What `--provider kind` would find (not counted as problems: local needs none)."""
    engine = _docker_engine()
    if engine is not None:
        lines = [f"kind:     Docker engine {engine} answers"]
    else:
        lines = [
            "kind:     no Docker engine answers (for --provider kind: start yours, or run"
            " `sudo scripts/docker-engine` on Debian/Ubuntu)"
        ]
    from harness.providers import kind_images, kind_node

    tools = [c for c in toolchain.node_components(v) if not toolchain.is_built(c)]
    if tools:
        lines.append(
            f"kind:     {', '.join(c.key for c in tools)} not built yet"
            " (the first kind run builds them)"
        )
    if not shutil.which("debootstrap"):
        lines.append(
            "kind:     debootstrap missing: the node image cannot be built here"
            " (apt-get install debootstrap), only kind's published one used"
        )
    if engine is not None:
        tag = kind_node.node_tag(v)
        state = "built" if kind_images.docker_has(tag) else "not built yet (about 2 min, once)"
        lines.append(f"kind:     node image {tag}: {state}")
    return lines


def _recorded_run_dir(current: Path) -> Path | None:
    """The run directory `mkdc up` recorded, None when there is none or the record does not
    name one (empty, edited, a folder mkdc did not make): `mkdc down` removes what it
    names, so it must never be the cwd or a user's folder."""
    try:
        text = current.read_text(errors="replace").strip()
    except OSError:
        return None
    run_dir = Path(text)
    if not text or not run_dir.is_absolute():
        return None
    if not any((run_dir / marker).is_file() for marker in RUN_DIR_MARKERS):
        return None
    return run_dir


def cmd_up(args: argparse.Namespace) -> int:
    from harness.providers.local import LocalProvider

    for removed in rundir.sweep():  # left by runs that were killed; never a live run's
        log(removed.describe())
    current = toolchain.cache_dir() / CURRENT
    running = _recorded_run_dir(current)
    if running is not None:
        raise UserError(f"an environment is already running ({running}): run `mkdc down` first")
    v = _selected(args)
    userns.require()
    builds.build_kueue_source(v, log)
    provider = LocalProvider(
        v,
        workers=args.workers,
        dispatcher_name=args.dispatcher_name,
        outlive_parent=True,
        progress=log,
    )
    env = provider.up()
    current.parent.mkdir(parents=True, exist_ok=True)
    current.write_text(str(env.run_dir))
    print(
        json.dumps(
            {
                "runDir": str(env.run_dir),
                "manager": str(env.manager.kubeconfig),
                "workers": {w.name: str(w.kubeconfig) for w in env.workers},
            },
            indent=2,
        )
    )
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    """Stop the environment `mkdc up` left running, and remove every run directory whose
    run is gone (a `mkdc run` that was killed); a live run's directory stays."""
    from harness.cluster.procs import stop_recorded

    current = toolchain.cache_dir() / CURRENT
    was_up = current.exists()
    run_dir = _recorded_run_dir(current) if was_up else None
    if was_up and run_dir is None:
        current.unlink()
        log(f"no environment is running (removed {current}, which named none)")
    elif run_dir is not None:
        started = time.monotonic()
        stopped = stop_recorded(run_dir) if run_dir.exists() else 0
        rundir.remove(run_dir)
        current.unlink()
        elapsed = time.monotonic() - started
        log(f"stopped {stopped} process groups and removed {run_dir} in {elapsed:.1f}s")
    removed = rundir.sweep()
    for gone in removed:
        log(gone.describe())
    if not was_up and not removed:
        log("no environment is running")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from harness.orchestrate import runplan
    from harness.orchestrate.options import Options
    from harness.orchestrate.run import exit_status, run_all

    def ids(text: str | None) -> tuple[str, ...]:
        return tuple(i.strip() for i in (text or "").split(",") if i.strip())

    slacks = {}
    for value in args.slack or []:
        name, sep, duration = value.partition("=")
        if not sep or not name or not duration:
            raise UsageError(
                f"--slack {shown(value)} must look like NAME=DURATION, e.g. placement_slack=90s"
            )
        slacks[name] = duration
    if args.report_dir == "":  # an unset shell variable, most likely
        raise UsageError("--report-dir '' names no folder; leave it out for reports/<profile>")
    if bool(args.plan) == bool(args.profile):
        raise UsageError("give --profile (one or more) or --plan FILE")
    base = Options(
        profile="",
        provider=args.provider,
        workers=args.workers,
        checks=ids(args.checks),
        skip_checks=ids(args.skip_checks),
        parallel=args.n,
        full=args.full,
        environments=args.environments,
        kueue_version=args.kueue_version,
        kubernetes_version=args.kubernetes_version,
        kueue_source=args.kueue_source,
        slacks=slacks,
        clusters=tuple(args.cluster or ()),
        progress=args.progress,
        kind_images=args.kind_images,
        inject=args.inject or (),
        inject_every=args.inject_every,
        inject_downtime=args.inject_downtime,
    )
    if args.plan:
        runs = runplan.read(Path(args.plan), base, args.report_dir)
    else:
        runs = runplan.for_profiles(args.profile, base, args.report_dir)
    userns.require()
    return exit_status(run_all(runs))


def cmd_prepare(_args: argparse.Namespace) -> int:
    userns.prepare(log)
    return 0


def cmd_report_verify(args: argparse.Namespace) -> int:
    from harness.report import verify_report_bytes
    from harness.report.verify import MAX_REPORT_BYTES

    # a file that cannot be read is bad input (exit 2); one that is not a sound report,
    # YAML or even UTF-8 is a verdict (exit 1)
    data = read_bytes(Path(args.file), f"report {shown_path(args.file)}", MAX_REPORT_BYTES)
    problems = verify_report_bytes(data, suite_catalogue())
    for problem in problems:
        print(f"{args.file}: {problem}")
    if not problems:
        print(f"{args.file}: ok")
    return 1 if problems else 0


def cmd_report_summary(args: argparse.Namespace) -> int:
    from harness.report import summary

    folder = Path(args.folder)
    if not folder.is_dir():
        raise UserError(f"report folder {shown_path(args.folder)} does not exist")
    sys.stdout.write(summary.markdown(folder, args.artifact, args.artifact_url))
    return 0


def cmd_profile_check(args: argparse.Namespace) -> int:
    """Validate a profile and say the plan a run would follow; no cluster, no build."""
    from harness.orchestrate import explain
    from harness.orchestrate.options import Options
    from harness.orchestrate.plan import worker_names
    from harness.profile import load_profile

    profile = load_profile(args.profile)
    workers = worker_names(Options(profile=args.profile, workers=args.workers), profile)
    print(explain.header(profile.path))
    for line in explain.plan(profile, workers, load_suite().catalogue):
        print(line)
    return 0


def cmd_checks(_args: argparse.Namespace) -> int:
    suite = load_suite()
    for check in suite.catalogue.values():
        print(f"{check.id:7} {check.name:28} {check.feature or 'core':22} {check.summary}")
        print(f"{'':8}decided by: {suite.decided_by(check.id)}")
        for bound in check.bounds:
            print(f"{'':8}bound, {bound.said()}")
        for gate in check.gates:
            print(f"{'':8}needs Kueue's {gate.gate} {'on' if gate.state else 'off'}: {gate.why}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="mkdc", description="MultiKueue dispatcher conformance")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("bins", help="build or locate every binary the local provider needs")
    _version_args(p)
    p.add_argument(
        "--kind",
        action="store_true",
        help="also the kind provider's tools and node, Kueue and KWOK images (needs Docker)",
    )
    p.set_defaults(func=cmd_bins)
    p = sub.add_parser("doctor", help="say what is present, missing or wrong")
    _version_args(p)
    p.set_defaults(func=cmd_doctor)
    p = sub.add_parser(
        "prepare",
        help="let this machine run mkdc as a non-root user: a user-namespace restriction"
        " lifted with passwordless sudo (exit 2 with the fix when it cannot be)",
    )
    p.set_defaults(func=cmd_prepare)
    p = sub.add_parser("up", help="start an environment and leave it running")
    _version_args(p)
    p.add_argument("--provider", default="local", choices=["local"])
    p.add_argument("--workers", type=_count, default=4)
    p.add_argument(
        "--dispatcher-name", default=None, help="the manager's multiKueue.dispatcherName"
    )
    p.set_defaults(func=cmd_up)
    p = sub.add_parser("down", help="stop the environment and remove everything it made")
    p.set_defaults(func=cmd_down)
    p = sub.add_parser("run", help="run the conformance suite for a dispatcher profile")
    _version_args(p)
    p.add_argument(
        "--profile",
        action="append",
        help="a built-in profile name or a path; several: judged one after another, on one"
        " environment where they can share it, reports in <report-dir>/<name>",
    )
    p.add_argument(
        "--plan",
        metavar="FILE",
        help="instead of --profile: a YAML list of runs (profile, checks, skipChecks, reportDir)",
    )
    p.add_argument("--provider", default="local", choices=["local", "kind", "existing"])
    p.add_argument(
        "--kind-images",
        default="auto",
        choices=["auto", "built", "release"],
        help="kind provider: node and Kueue images built here, or kind's and Kueue's"
        " published ones (auto: built when registry.k8s.io is not in reach)",
    )
    p.add_argument(
        "--workers", type=_count, default=None, help="default: the profile's clusters, else 4"
    )
    p.add_argument("--report-dir", help="default: reports/<profile> (several: reports/)")
    p.add_argument("--checks", help="only these check IDs (comma separated)")
    p.add_argument("--skip-checks", help="not these check IDs (comma separated)")
    p.add_argument("-n", type=_count, default=2, help="parallel scenario workers (pytest-xdist)")
    p.add_argument("--full", action="store_true", help="include slow scenarios (long rounds)")
    p.add_argument(
        "--environments",
        type=int,
        choices=[1, 2],
        default=None,
        help="2: the scenarios that run alone (the burst, the restarts) run on a second"
        " environment, beside the others (about 2 min less, about 2 GiB more); the"
        " default with the local provider when a run has them and memory allows;"
        " 1: after the others",
    )
    p.add_argument("--slack", action="append", metavar="NAME=DURATION", help="override a slack")
    p.add_argument(
        "--cluster",
        action="append",
        metavar="NAME=KUBECONFIG[:CONTEXT]",
        help="existing provider: the manager and each worker",
    )
    p.add_argument(
        "--progress",
        choices=[progress.HUMAN, progress.JSONL],
        default=progress.HUMAN,
        help="the console: a line per event on stderr (human), or JSON lines on stdout",
    )
    p.add_argument(
        "--inject",
        type=_faults,
        metavar="FAULT,...|all",
        help="environment faults to inject while the suite runs, one at a time, in turn: "
        + ", ".join(faults.KINDS),
    )
    p.add_argument("--inject-every", type=_seconds, default=45.0, metavar="DURATION")
    p.add_argument("--inject-downtime", type=_seconds, default=5.0, metavar="DURATION")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("report", help="work with reports")
    rsub = p.add_subparsers(dest="report_command", required=True)
    v = rsub.add_parser("verify", help="check a report as a submission gate would")
    v.add_argument("file")
    v.set_defaults(func=cmd_report_verify)
    s = rsub.add_parser(
        "summary", help="a run's verdict as Markdown, one row per check (a CI job's summary)"
    )
    s.add_argument("folder", help="a run's --report-dir")
    s.add_argument("--artifact", default="", help="the name the report is kept under")
    s.add_argument("--artifact-url", default="", help="a link to it")
    s.set_defaults(func=cmd_report_summary)
    p = sub.add_parser("profile", help="work with profiles")
    psub = p.add_subparsers(dest="profile_command", required=True)
    c = psub.add_parser(
        "check", help="validate a profile and say what a run would do, with no cluster"
    )
    c.add_argument("profile", help="a built-in profile name or a path")
    c.add_argument(
        "--workers", type=_count, default=None, help="default: the profile's clusters, else 4"
    )
    c.set_defaults(func=cmd_profile_check)
    p = sub.add_parser("checks", help="list the check catalogue")
    p.set_defaults(func=cmd_checks)
    return parser


_stopping: list[str] = []  # the signal that started the unwinding, once one has


def _terminate(signum: int, _frame: object) -> None:
    """SIGINT/SIGTERM/SIGHUP unwind once, so every `finally` stops what it started; a
    second signal (a second Ctrl-C, `timeout` and a user both sending SIGTERM) must not
    cut that cleanup short and leave clusters behind."""
    name = signal.Signals(signum).name
    if _stopping:
        print(f"mkdc: {name}: already stopping; cleaning up what the run started", file=sys.stderr)
        return
    _stopping.append(name)
    raise KeyboardInterrupt(name)


def main(argv: Sequence[str] | None = None) -> int:
    return command_exit("mkdc", lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is not signal.SIG_IGN:  # nohup, a background job
            signal.signal(sig, _terminate)
    try:
        return args.func(args)
    except BrokenPipeError:
        # the reader went away (`mkdc checks | head`): an ordinary end, not a traceback;
        # stdout goes to /dev/null so the interpreter's final flush cannot fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
