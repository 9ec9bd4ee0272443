"""A run's plan: every input of one `mkdc run` checked before anything is built, started
or written (the profile, the versions, the checks, the provider and what it can do, the
report directory), then what the dispatcher runs from built (`build`)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Hashable
from dataclasses import dataclass, replace
from pathlib import Path

from harness.cluster import builds, rundir, versions
from harness.cluster.kueue_install import KUEUE_ADMISSION
from harness.console import log
from harness.errors import UserError, shown, shown_path
from harness.orchestrate import container, deployrun
from harness.orchestrate.options import Options
from harness.profile import Profile, load_profile
from harness.providers import FAULTS, HandsOver, Provider, Twins
from harness.scenarios import control
from harness.suite import load as load_suite

REPORT_MARKERS = frozenset({"report.yaml", "results"})  # what says a folder is a report
DEFAULT_WORKERS = 4


@dataclass
class Plan:
    """One run's inputs, checked before anything is built, started or written."""

    opts: Options
    profile: Profile
    versions: versions.Versions
    report_dir: Path
    provider: Provider
    image: container.ImageSource | None = None
    # a deploy folder on kind: its images, checked before anything starts
    deployed: deployrun.Images | None = None

    def environment_key(self) -> tuple[Hashable, ...] | None:
        """Runs whose keys are equal can share one environment (a provider that hands it
        over restarts the manager's Kueue for each other dispatcherName), the cluster
        scope's objects too; None: never."""
        p = self.provider
        if not isinstance(p, HandsOver) or self.opts.inject:
            return None
        return (
            p.versions,
            tuple(p.worker_names),
            p.secret_pattern,
            p.write_mode,
            json.dumps(p.kueue_extra, sort_keys=True),
            json.dumps(p.node_capacity, sort_keys=True),
            self.profile.environment.cluster_scope,
        )


def plan(opts: Options) -> Plan:
    """Every input of one run checked; a UserError says what is wrong. Nothing is built,
    started or written (a Kueue source tree is read and hashed, and built by `build`)."""
    profile = load_profile(opts.profile)
    if profile.run is not None and profile.run.host_problem and opts.provider == "local":
        raise UserError(
            f"{profile.run.host_problem} (the local provider runs the container's command on"
            " this machine: give spec.run.goBuild, or run the folder's image on"
            " --provider kind)"
        )
    if versions.source_given(opts.kueue_source) and opts.provider == "existing":
        raise UserError(
            "--kueue-source builds the Kueue the run installs: existing clusters run their own;"
            " use --provider local or kind"
        )
    v = versions.select(opts.kueue_version, opts.kubernetes_version, opts.kueue_source)
    catalogue = load_suite().catalogue
    unknown = [c for c in (*opts.checks, *opts.skip_checks) if c not in catalogue]
    if unknown:
        shown_ids = ", ".join(shown(c) for c in unknown[:5]) + (", ..." if unknown[5:] else "")
        raise UserError(f"unknown check id(s) {shown_ids} (see `mkdc checks`)")
    try:
        load_suite().timeouts(profile.claims.to_dict(), opts.slacks)
    except ValueError as exc:
        raise UserError(f"--slack: {exc}") from None
    if opts.clusters and opts.provider != "existing":
        raise UserError(f"--cluster is for --provider existing, not {opts.provider}")
    report_dir = report_directory(opts.report_dir)
    # Kueue's built-in dispatchers write as Kueue itself (kueue-admission); no policy needed.
    write_mode = KUEUE_ADMISSION if profile.is_builtin else profile.nomination_writes
    provider = make_provider(opts, profile, v, write_mode)
    if opts.inject and FAULTS not in provider.capabilities:
        raise UserError(
            f"--inject: the {opts.provider} provider cannot inject faults; use --provider local"
        )
    if opts.environments == 2 and not isinstance(provider, Twins):
        raise UserError(
            f"--environments 2: the {opts.provider} provider makes one environment per run;"
            " use --provider local or --environments 1"
        )
    deployed = None
    if profile.run is not None and profile.run.deploy is not None and opts.provider == "kind":
        deployed = deployrun.images(profile.run, deployrun.docker_has)
    require_short_tmpdir()  # last: every input of its own said first
    return Plan(opts, profile, v, report_dir, provider, deployed=deployed)


def build(p: Plan) -> None:
    """What the run installs and starts, built before any cluster starts: a Kueue source
    tree's manager (cached by its hash; one that does not build is bad input), and what
    the dispatcher runs from (its image, or its Go module)."""
    builds.build_kueue_source(p.versions, log)
    run = p.profile.run
    if run is not None and run.image is not None:
        p.image = container.prepare(p.profile, p.opts.provider, log)
    elif run is not None and run.go_build is not None:
        built = builds.build_go_module(run.go_build, log)
        p.profile = replace(p.profile, run=replace(run, built=built))
        if run.deploy is not None and p.opts.provider != "local":
            p.image = deployrun.build_image(run.deploy, built, log)


def worker_names(opts: Options, profile: Profile) -> list[str]:
    """The workers' names: the profile's (a vendor's deployment shape), else worker1..N."""
    named = profile.environment.clusters
    if named is None:
        return [
            f"worker{i}"
            for i in range(1, (DEFAULT_WORKERS if opts.workers is None else opts.workers) + 1)
        ]
    if opts.workers is not None and opts.workers != len(named):
        raise UserError(
            f"--workers {opts.workers} but profile spec.environment.clusters names "
            f"{len(named)} ({', '.join(named)}): drop --workers or change the profile"
        )
    return list(named)


def make_provider(
    opts: Options, profile: Profile, v: versions.Versions, write_mode: str | None
) -> Provider:
    """The provider `--provider` names, set up for this profile (a new provider is wired
    in here)."""
    if opts.provider == "local":
        from harness.providers.local import LocalProvider

        return LocalProvider(
            v,
            workers=worker_names(opts, profile),
            secret_pattern=profile.environment.worker_kubeconfig_secret,
            dispatcher_name=profile.dispatcher_name,
            kueue_extra=profile.kueue,
            wanted_gates=load_suite().kueue_gates(),
            write_mode=write_mode,
            progress=log,
            node_capacity=node_capacity(profile),
        )
    if opts.provider == "existing":
        from harness.providers.existing import ExistingProvider, parse_cluster_args

        return ExistingProvider(
            parse_cluster_args(opts.clusters), dispatcher_name=profile.dispatcher_name
        )
    if opts.provider == "kind":
        from harness.providers.kind import KindProvider

        return KindProvider(
            v,
            workers=len(worker_names(opts, profile)),
            dispatcher_name=profile.dispatcher_name,
            kueue_extra=profile.kueue,
            wanted_gates=load_suite().kueue_gates(),
            write_mode=write_mode,
            node_capacity=node_capacity(profile),
            progress=log,
            images=opts.kind_images,
        )
    raise UserError(f"unknown provider {opts.provider!r} (local, kind, existing)")


def node_capacity(profile: Profile) -> dict[str, str] | None:
    """Fake nodes that also offer the profile's resource (e.g. nvidia.com/gpu), so the
    pods of its workloads run."""
    resource = profile.environment.resource
    if resource in (None, "cpu", "memory"):
        return None
    from harness.providers.local import NODE_CAPACITY

    return {**NODE_CAPACITY, resource: "64"}


def require_short_tmpdir() -> None:
    """The run's control socket lives in its run directory, under TMPDIR: a socket path
    longer than the kernel takes would crash the run once its environment is up."""
    tmp = Path(tempfile.gettempdir())
    longest = tmp / f"{max(rundir.PREFIXES, key=len)}xxxxxxxx"  # mkdtemp adds 8 characters
    size = len(os.fsencode(longest / control.SOCKET))
    if size > control.MAX_SOCKET_PATH:
        raise UserError(
            f"TMPDIR {shown_path(tmp)} is too long for the run's control socket"
            f" ({size} bytes, at most {control.MAX_SOCKET_PATH}): set TMPDIR to a shorter"
            " folder such as /tmp"
        )


def report_directory(given: Path) -> Path:
    """The report directory, checked: it is emptied at the start, so it must be a new
    folder, an empty one or an earlier report; never a file, the cwd or the user's files."""
    shown_dir = shown_path(given)
    try:
        report_dir = given.resolve()
        if report_dir.exists() or report_dir.is_symlink():
            if not report_dir.is_dir():
                raise UserError(f"--report-dir {shown_dir}: exists and is not a folder")
            entries = {p.name for p in report_dir.iterdir()}
            if entries and not entries & REPORT_MARKERS:
                raise UserError(
                    f"--report-dir {shown_dir}: holds files that are not a mkdc report and "
                    "would be removed; choose a new or empty folder"
                )
            return report_dir
        parent = report_dir.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
    except OSError as exc:
        raise UserError(f"--report-dir {shown_dir}: {exc.strerror or exc}") from None
    except ValueError:
        raise UserError(f"--report-dir {shown_dir}: not a usable path (a NUL byte)") from None
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"--report-dir {shown_dir}: cannot be made in {shown_path(parent)}")
    return report_dir
