"""Benchmark of the local provider: up to ready, memory of the running environment, down.

    python -m harness.tools.bench_up [--workers 4[,8,...]] [--settle 20] [--cold]

`--cold` first builds every binary into empty Go and mkdc caches (a fresh
machine's first run; tens of minutes) and reports that time too.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from harness.cluster import versions
from harness.errors import command_exit
from harness.providers.local import LocalProvider
from harness.providers.local_processes import process_kind
from harness.tools import sampling


def cold_build_seconds() -> float:
    """Time `mkdc bins` with empty Go module/build caches and an empty mkdc cache."""
    with tempfile.TemporaryDirectory(prefix="mkdc-cold-") as tmp:
        env = {
            **os.environ,
            "GOMODCACHE": f"{tmp}/gomod",
            "GOCACHE": f"{tmp}/gocache",
            "MKDC_CACHE_DIR": f"{tmp}/mkdc",
        }
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "harness.cli", "bins"], env=env, check=True)
        elapsed = time.monotonic() - started
        subprocess.run(["chmod", "-R", "u+w", tmp], check=False)  # module cache is read-only
    return elapsed


def by_kind(provider: LocalProvider) -> dict[str, dict[str, float]]:
    """Per kind of process (apiserver, kueue, ...): how many, their summed and mean RSS and
    PSS (MiB; PSS shares the pages of one binary's code among its processes, so it sums to
    what the machine really holds), and CPU seconds since start. Largest first."""
    sums: dict[str, dict[str, float]] = {}
    for name, managed in (provider.supervisor.procs if provider.supervisor else {}).items():
        row = sums.setdefault(process_kind(name), {"processes": 0, "rss": 0, "pss": 0, "cpu": 0})
        row["processes"] += 1
        for proc in sampling.in_groups({managed.pgid}):
            with contextlib.suppress(psutil.Error):
                mem, cpu = proc.memory_full_info(), proc.cpu_times()
                row["rss"] += mem.rss
                row["pss"] += mem.pss
                row["cpu"] += cpu.user + cpu.system
    out = {
        kind: {
            "processes": int(r["processes"]),
            "rssMiB": round(r["rss"] / 2**20),
            "rssEachMiB": round(r["rss"] / r["processes"] / 2**20),
            "pssMiB": round(r["pss"] / 2**20),
            "cpuSeconds": round(r["cpu"], 1),
        }
        for kind, r in sums.items()
    }
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["rssMiB"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--workers", default="4", help="workers, or a comma-separated series (4,8,12,16,20)"
    )
    parser.add_argument(
        "--settle", type=float, default=20, help="seconds to sample memory after ready"
    )
    parser.add_argument(
        "--cold", action="store_true", help="also time a cold build of every binary"
    )
    args = parser.parse_args()
    series = [int(w) for w in args.workers.split(",")]
    cold = {"coldBuildSeconds": round(cold_build_seconds(), 1)} if args.cold else {}
    results = [{**cold, **measure(workers, args.settle)} for workers in series]
    print(json.dumps(results[0] if len(results) == 1 else results, indent=2))


def measure(workers: int, settle: float) -> dict[str, object]:
    """One environment of 1 + `workers` clusters: up, `settle` seconds idle, down."""
    result: dict[str, object] = {"workers": workers}
    provider = LocalProvider(
        versions.select(), workers=workers, progress=lambda m: print(m, file=sys.stderr)
    )

    def provider_processes() -> list[psutil.Process]:
        sup = provider.supervisor
        return sampling.in_groups({m.pgid for m in list(sup.procs.values())}) if sup else []

    groups: set[int] = set()
    available_before = psutil.virtual_memory().available
    with sampling.ProcessSampler(provider_processes) as sampler:
        started = time.monotonic()
        try:
            provider.up()
            groups = {m.pgid for m in provider.supervisor.procs.values()}  # type: ignore[union-attr]
            result["upSeconds"] = round(time.monotonic() - started, 1)
            time.sleep(settle)
            result["steadyRssMiB"] = round(sampler.last_rss / 2**20)
            # what the machine gave up: RSS counts each binary's shared code once per
            # process, PSS once; this also counts the kernel's part (etcd's files, sockets)
            drop = available_before - psutil.virtual_memory().available
            result["memAvailableDropMiB"] = round(drop / 2**20)
            kinds = by_kind(provider)
            result["steadyPssMiB"] = sum(k["pssMiB"] for k in kinds.values())
            result["byKind"] = kinds
        finally:
            started = time.monotonic()
            provider.down()
            result["downSeconds"] = round(time.monotonic() - started, 1)
    result["peakRssMiB"] = round(sampler.peak_rss / 2**20)
    leftovers = sampling.in_groups(groups)  # this environment's, not other runs' on the box
    result["leftoverProcesses"] = len(leftovers)
    result["runDirRemoved"] = not Path(str(provider.run_dir)).exists()
    return result


if __name__ == "__main__":
    sys.exit(command_exit("bench_up", main))
