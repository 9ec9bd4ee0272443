"""Benchmark a dispatcher under many pending workloads.

    python -m harness.tools.bench_dispatcher --profile reference --workloads 1000

Starts a local environment whose workers have no capacity (so every workload stays
pending and keeps the dispatcher busy escalating), submits the workloads at once,
and reports time from Workload creation to its first nomination (p50/p99, from the
recorder's watches), plus the dispatcher's peak RSS and CPU seconds. For Kueue's
built-in dispatchers the process measured is the manager's kueue (which does much
more than dispatching), so only the latencies compare directly.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from harness import inventory, kube, multikueue, versions, workloads
from harness.environment import Cluster
from harness.profile import load_profile
from harness.providers.local import LocalProvider
from harness.recording.recorder import Recorder
from harness.recording.timeline import Kind
from harness.run import _start_dispatcher
from harness.stats import p50_p99, rounded
from harness.tools import sampling


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--profile", default="reference")
    parser.add_argument("--workloads", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument(
        "--settle", type=float, default=60, help="max seconds to wait for nominations"
    )
    args = parser.parse_args()
    profile = load_profile(args.profile)
    provider = LocalProvider(
        versions.select(),
        workers=args.workers,
        dispatcher_name=profile.dispatcher_name,
        kueue_extra=profile.kueue,
        write_mode=None if profile.run else "kueue-admission",
        progress=lambda m: print(m, file=sys.stderr),
    )
    result: dict[str, object] = {"profile": profile.name, "workloads": args.workloads}
    with contextlib.ExitStack() as stack:
        env = provider.up()
        stack.callback(provider.down)
        for worker in env.workers:  # no capacity anywhere: everything stays pending
            kube.apply(worker.dyn, multikueue.cluster_queue("mkdc", {"cpu": "0", "memory": "0"}))
        if profile.run:
            runner, _users = _start_dispatcher(profile, env, inventory.new_run_id(), stack)
            measured = runner.supervisor.procs["dispatcher-0"].popen.pid
        else:
            measured = provider.supervisor.procs["manager-kueue"].popen.pid  # type: ignore[union-attr]
        recorder = Recorder(env).start()
        stack.callback(recorder.stop)
        with sampling.ProcessSampler(lambda: sampling.with_children(measured)) as sampler:
            started = time.monotonic()
            with ThreadPoolExecutor(max_workers=8) as pool:
                jobs = (workloads.job(f"b{i}", "mkdc", "mkdc") for i in range(args.workloads))
                list(pool.map(lambda doc: workloads.submit(env.manager, doc), jobs))
            result["submitSeconds"] = round(time.monotonic() - started, 1)
            deadline = time.monotonic() + args.settle
            while time.monotonic() < deadline:
                tl = recorder.snapshot("mkdc")
                nominated = {e.workload for e in tl.where(Kind.NOMINATION) if e.names}
                if len(nominated) >= args.workloads:
                    break
                time.sleep(1)
            time.sleep(2)
        tl = recorder.snapshot("mkdc")
        since_created, since_reserved = [], []
        for key in tl.workloads():
            w = tl.of(key)
            created = w.where(Kind.WORKLOAD_CREATED)
            reserved = [e for e in w.where(Kind.QUOTA_RESERVED) if e.reserved]
            first = next((e for e in w.where(Kind.NOMINATION) if e.names), None)
            if created and first:
                since_created.append(first.t - created[0].t)
            if reserved and first:
                since_reserved.append(first.t - reserved[0].t)
        result["nominated"] = len(since_created)
        result["timeToFirstNominationSeconds"] = _spread(since_created)
        # the dispatcher's own share: Kueue must reserve quota before anyone may nominate
        result["quotaReservedToFirstNominationSeconds"] = _spread(since_reserved)
        result["atEnd"] = _counts(env.manager)
        result["peakRssMiB"] = round(sampler.peak_rss / 2**20, 1)
        result["cpuSeconds"] = round(sum(sampler.cpu.values()), 1)  # since the process started
        result["measuredProcess"] = (
            "dispatcher" if profile.run else "manager kueue (all controllers)"
        )
    print(json.dumps(result, indent=2))


def _spread(values: list[float]) -> dict[str, float | None]:
    return {**p50_p99(values), "max": rounded(max(values) if values else None)}


def _counts(manager: Cluster) -> dict[str, int]:
    """From the API at the end: how many workloads had quota, and how many a nominee."""
    items = manager.resource(multikueue.API, "Workload").get(namespace="mkdc").to_dict()["items"]
    return {
        "workloads": len(items),
        "quotaReserved": sum(kube.condition_true(i, "QuotaReserved") for i in items),
        "withNominees": sum(
            bool((i.get("status") or {}).get("nominatedClusterNames")) for i in items
        ),
    }


if __name__ == "__main__":
    main()
