"""What one `mkdc run` is asked to do: the command line's settings for one run (a plan
file's entry overrides some of them: `harness.orchestrate.runplan`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.scenarios import progress


@dataclass
class Options:
    profile: str
    provider: str = "local"
    workers: int | None = None  # None: as many as the profile names, else DEFAULT_WORKERS
    report_dir: Path = Path("reports")
    checks: tuple[str, ...] = ()
    skip_checks: tuple[str, ...] = ()
    parallel: int = 2
    full: bool = False  # include slow scenarios (e.g. 5-minute rounds)
    kueue_version: str | None = None
    kubernetes_version: str | None = None
    kueue_source: str | None = None  # a Kueue checkout built and judged instead of a release
    slacks: dict[str, str] | None = None
    clusters: tuple[str, ...] = ()  # existing provider: NAME=KUBECONFIG[:CONTEXT]
    progress: str = progress.HUMAN  # the console: human lines (stderr) or JSON lines (stdout)
    kind_images: str = "auto"  # kind provider: built here, kind's release, or auto
    inject: tuple[str, ...] = ()  # environment faults to inject while the suite runs
    inject_every: float = 45.0  # seconds between two faults
    inject_downtime: float = 5.0  # how long each fault lasts
    # 2: the scenarios that run alone run on a second environment, beside the others;
    # None: 2 where the provider can make one, the run has such scenarios and others, and
    # the memory left holds it (`harness.orchestrate.environments.second_provider`)
    environments: int | None = None
