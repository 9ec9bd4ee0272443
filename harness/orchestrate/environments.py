"""The environments a run judges on: its own (or one several runs share), and a second
one beside it for the scenarios that must run alone, where it helps and fits."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import psutil

from harness.cluster.environment import Environment
from harness.console import log
from harness.orchestrate.plan import Plan
from harness.orchestrate.report_builder import due
from harness.providers import Provider, Twins
from harness.suite import load as load_suite

SECOND_ENVIRONMENT = "second-environment"  # its logs' folder in artifacts/logs
ASIDE_LOG = "second environment: "  # what its console lines begin with
GIB = 1 << 30
# one cluster's memory (PSS), from the bring-up benchmark (docs/benchmarks.md)
CLUSTER_MEMORY = int(0.37 * GIB)
MEMORY_ROOM = 2 * GIB  # for the test processes and dispatchers of the run


@dataclass
class Aside:
    """A run's second environment, where the scenarios that must run alone (the burst, the
    restarts) run beside the others instead of after them."""

    provider: Provider
    env: Environment


def bring_up(
    plans: Sequence[Plan], provider: Provider, stack: contextlib.ExitStack
) -> tuple[Environment, Aside | None]:
    """The runs' environment up, and a second one (`second_provider`) brought up beside
    it: on two cores, two bring-ups at once end sooner than one after the other, for each
    waits on its apiservers part of the time. Each is stopped when `stack` closes, however
    the other's bring-up ended."""
    stack.callback(provider.down)
    twin = second_provider(plans)
    if twin is None:
        return provider.up(), None
    stack.callback(twin.down)
    with ThreadPoolExecutor(max_workers=1) as beside:
        second = beside.submit(twin.up)
        env = provider.up()  # on failure, the pool waits for the second before the stack stops it
        return env, Aside(twin, second.result())


def second_provider(plans: Sequence[Plan]) -> Provider | None:
    """The provider of a second environment for a run on an environment of its own; None
    where the provider cannot make one, the run lacks scenarios of either kind (alone, or to run
    beside them), faults are injected (into one environment), --environments 1 said so, or
    (unless --environments 2 said so) the memory left would not hold it. Several runs
    sharing one environment take their turns on it alone."""
    p = plans[0]
    if len(plans) > 1:
        if any(q.opts.environments == 2 for q in plans):
            log("several runs share this environment: each runs on it alone")
        return None
    if not isinstance(p.provider, Twins) or p.opts.environments == 1 or p.opts.inject:
        return None
    suite = load_suite()
    kinds = {
        c: suite.runs_alone(c)
        for c, check in suite.catalogue.items()
        if due(c, check.feature, p.profile, p.opts)
    }
    alone = [c for c, runs_alone in kinds.items() if runs_alone]
    if not alone or False not in kinds.values():
        return None  # nothing to run beside them
    second = p.provider.twin(progress=lambda msg: log(f"{ASIDE_LOG}{msg}"))  # bad input raises
    if p.opts.environments is None:  # --environments 2: whatever the memory
        short = memory_short(1 + len(p.provider.worker_names))
        if short:
            log(
                f"no second environment: {short}; the scenarios that run alone run after the others"
            )
            return None
    log(f"a second environment for the scenarios that run alone ({', '.join(alone)})")
    return second


def memory_short(clusters: int) -> str:
    """Why a second environment of `clusters` clusters, brought up with the first, would
    not fit in the memory left: both, and as much again as one for the runs beside them;
    "" where it would."""
    needed = clusters * CLUSTER_MEMORY
    available = psutil.virtual_memory().available
    if available >= 3 * needed + MEMORY_ROOM:
        return ""
    return (
        f"{available / GIB:.1f} GiB of memory available, and the two environments need about"
        f" {2 * needed / GIB:.1f} GiB with {needed / GIB:.1f} GiB more to spare"
    )
