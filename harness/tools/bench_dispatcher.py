"""Benchmark dispatchers under many pending workloads, one fresh environment each.

    python -m harness.tools.bench_dispatcher --profiles reference,incremental,all-at-once \\
        --workloads 1000 [--workers 4] [--settle 60] [--logs DIR]

For each profile, back to back: start a local environment whose workers have no
capacity (so every workload stays pending and keeps the dispatcher busy escalating),
submit the workloads, wait until each has a nominee (or ``--settle`` seconds), and stop
the environment. Prints one JSON document: per dispatcher, time from Workload creation
(and from quota reservation, the dispatcher's own share) to first nomination, CPU
seconds, peak RSS and API requests per nomination.

Times come from the manager apiserver's audit log (``audit``: the apiserver's own
clock) and, as before, from the recorder's watches (``watched``: includes the watcher's
lag). For Kueue's built-in dispatchers the process measured is the manager's kueue
(which does much more than dispatching), and the requests counted are only its writes
of nominations (it reads from its informer cache); for an external dispatcher every
request of its identity is counted. ``--logs DIR`` keeps each run's dispatcher and
manager Kueue logs and the manager's audit log there.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from harness.cluster import inventory, kube, multikueue, versions, workloads
from harness.cluster.environment import Cluster
from harness.errors import command_exit
from harness.orchestrate.start import start_dispatcher
from harness.profile import load_profile
from harness.providers.local import LocalProvider
from harness.recording.recorder import Recorder
from harness.recording.timeline import Kind
from harness.stats import p50_p99, rounded
from harness.tools import audit_figures, sampling

NAMESPACE = "mkdc"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--profile", help="one profile (same as --profiles NAME)")
    parser.add_argument(
        "--profiles", help="comma-separated profiles, each in its own environment, in order"
    )
    parser.add_argument("--workloads", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument(
        "--settle", type=float, default=60, help="max seconds to wait for nominations"
    )
    parser.add_argument(
        "--logs",
        type=Path,
        help="keep each run's dispatcher and kueue logs and the manager's audit log",
    )
    args = parser.parse_args(argv)
    names = [p for p in (args.profiles or "").split(",") if p]
    if args.profile:
        names.insert(0, args.profile)
    args.names = names or ["reference"]
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    document: dict[str, Any] = {
        "workloads": args.workloads,
        "workers": args.workers,
        "dispatchers": {},
    }
    for name in args.names:
        result = bench(name, args.workloads, args.workers, args.settle, args.logs)
        document["dispatchers"][result["profile"]] = result
    print(json.dumps(document, indent=2))


def bench(
    profile_name: str, count: int, workers: int, settle: float, logs: Path | None
) -> dict[str, Any]:
    """One dispatcher in a fresh environment: submit ``count`` workloads, measure."""
    profile = load_profile(profile_name)
    provider = LocalProvider(
        versions.select(),
        workers=workers,
        dispatcher_name=profile.dispatcher_name,
        kueue_extra=profile.kueue,
        write_mode=None if profile.run else "kueue-admission",
        progress=lambda m: print(m, file=sys.stderr),
    )
    result: dict[str, Any] = {"profile": profile.name}
    with contextlib.ExitStack() as stack:
        env = provider.up()
        stack.callback(provider.down)
        if logs is not None:
            run_dir, audit_log = Path(str(env.run_dir)), env.info.get("auditLog")
            stack.callback(_keep_logs, run_dir, audit_log, logs / profile.name)
        for worker in env.workers:  # no capacity anywhere: everything stays pending
            kube.apply(worker.dyn, multikueue.cluster_queue(NAMESPACE, {"cpu": "0", "memory": "0"}))
        users: frozenset[str] = frozenset()
        if profile.run:
            runner, users = start_dispatcher(profile, env, inventory.new_run_id(), stack)
            measured = runner.supervisor.procs["dispatcher-0"].popen.pid
        else:
            measured = provider.supervisor.procs["manager-kueue"].popen.pid  # type: ignore[union-attr]
        recorder = Recorder(env).start()
        stack.callback(recorder.stop)
        with sampling.ProcessSampler(lambda: sampling.with_children(measured)) as sampler:
            cpu_before = _cpu(sampling.with_children(measured))
            started_wall, started = time.time(), time.monotonic()
            with ThreadPoolExecutor(max_workers=8) as pool:
                jobs = (workloads.job(f"b{i}", NAMESPACE, NAMESPACE) for i in range(count))
                list(pool.map(lambda doc: workloads.submit(env.manager, doc), jobs))
            result["submitSeconds"] = round(time.monotonic() - started, 1)
            deadline = time.monotonic() + settle
            while time.monotonic() < deadline:
                if _nominated(recorder.snapshot(NAMESPACE)) >= count:
                    break
                time.sleep(1)
            time.sleep(2)
        result["settleSeconds"] = round(time.monotonic() - started, 1)
        tl = recorder.snapshot(NAMESPACE)
        result["watched"] = _watched(tl)
        audit = env.info.get("auditLog")
        if audit:
            entries = audit_figures.read(str(audit), since=started_wall - 1)
            result["audit"] = audit_result(
                audit_figures.summarize(entries, NAMESPACE, users), bool(users)
            )
        result["atEnd"] = _counts_or_why(env.manager)
        result["peakRssMiB"] = round(sampler.peak_rss / 2**20, 1)
        # during the benchmark only: start-up (imports, initial lists) is not counted
        result["cpuSeconds"] = round(sum(sampler.cpu.values()) - cpu_before, 1)
        result["measuredProcess"] = (
            "dispatcher" if profile.run else "manager kueue (all controllers)"
        )
    print(f"{profile.name}: {json.dumps(result)}", file=sys.stderr)  # kept if a later one fails
    return result


def audit_result(summary: Mapping[str, Any], external: bool) -> dict[str, Any]:
    """Latencies and requests per nomination from an ``audit_figures.summarize`` result."""
    created, reserved, nominated = summary["created"], summary["reserved"], summary["nominated"]
    since_created = [t - created[k] for k, t in nominated.items() if k in created]
    since_reserved = [t - reserved[k] for k, t in nominated.items() if k in reserved]
    received = summary["nominationReceived"]
    reaction = [received[k] - reserved[k] for k in nominated if k in reserved]
    write = [t - received[k] for k, t in nominated.items()]
    requests = sum(summary["requests"].values()) if external else summary["nominationWrites"]
    first = len(nominated)
    return {
        "created": len(created),
        "nominated": first,
        "timeToFirstNominationSeconds": spread(since_created),
        "quotaReservedToFirstNominationSeconds": spread(since_reserved),
        # the two parts of the above: until the nominating request reached the apiserver,
        # then the apiserver's handling of it (admission, storage)
        "quotaReservedToNominationRequestSeconds": spread(reaction),
        "firstNominationWriteSeconds": spread(write),
        "nominationWrites": summary["nominationWrites"],
        "apiRequests": requests,
        "apiRequestsPerFirstNomination": round(requests / first, 2) if first else None,
        "counted": (
            "every request of the dispatcher's identity"
            if external
            else "Kueue's Workload writes that set nominatedClusterNames (its reads are cached)"
        ),
        "requestsByKind": dict(sorted(summary["requests"].items())),
    }


def _watched(tl: Any) -> dict[str, Any]:
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
    return {
        "nominated": len(since_created),
        "timeToFirstNominationSeconds": spread(since_created),
        "quotaReservedToFirstNominationSeconds": spread(since_reserved),
    }


def spread(values: list[float]) -> dict[str, float | None]:
    return {**p50_p99(values), "max": rounded(max(values) if values else None)}


def _keep_logs(run_dir: Path, audit: str | None, into: Path) -> None:
    """The logs, and the audit log: its stamps against the dispatcher's log lines say where
    a nomination's time went (the watch, the queue, the write)."""
    into.mkdir(parents=True, exist_ok=True)
    logs = run_dir / "logs"
    for source in (logs / "dispatcher-0.log", logs / "manager-kueue.log", audit):
        if source:
            with contextlib.suppress(OSError):
                shutil.copy(source, into / Path(source).name)


def _items(manager: Cluster) -> list[dict[str, Any]]:
    res = manager.resource(multikueue.API, "Workload")
    return list(res.get(namespace=NAMESPACE).to_dict()["items"])


def _nominated(tl: Any) -> int:
    return len({e.workload for e in tl.where(Kind.NOMINATION) if e.names})


def _cpu(procs: list[Any]) -> float:
    """User + system seconds the processes have used so far."""
    total = 0.0
    for proc in procs:
        with contextlib.suppress(Exception):
            times = proc.cpu_times()
            total += times.user + times.system
    return total


def _counts_or_why(manager: Cluster) -> dict[str, Any]:
    """``_counts``, or why they could not be had: a manager apiserver too busy to list
    every Workload within its 60 s (seen at 1+20) must not cost the figures measured."""
    try:
        return _counts(manager)
    except Exception as exc:  # any API error: the timings come from the audit log
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}


def _counts(manager: Cluster) -> dict[str, int]:
    """From the API at the end: how many workloads had quota, and how many a nominee."""
    items = _items(manager)
    return {
        "workloads": len(items),
        "quotaReserved": sum(kube.condition_true(i, "QuotaReserved") for i in items),
        "withNominees": sum(
            bool((i.get("status") or {}).get("nominatedClusterNames")) for i in items
        ),
    }


if __name__ == "__main__":
    sys.exit(command_exit("bench_dispatcher", main))
