"""Benchmark of the local provider: up to ready, memory of the running environment, down.

    python -m harness.tools.bench_up [--workers 4] [--settle 20] [--cold]

`--cold` first builds every binary into empty Go and mkdc caches (a fresh
machine's first run; tens of minutes) and reports that time too.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from harness import versions
from harness.providers.local import LocalProvider
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument(
        "--settle", type=float, default=20, help="seconds to sample memory after ready"
    )
    parser.add_argument(
        "--cold", action="store_true", help="also time a cold build of every binary"
    )
    args = parser.parse_args()
    result: dict[str, object] = {"workers": args.workers}
    if args.cold:
        result["coldBuildSeconds"] = round(cold_build_seconds(), 1)
    provider = LocalProvider(
        versions.select(), workers=args.workers, progress=lambda m: print(m, file=sys.stderr)
    )

    def provider_processes() -> list[psutil.Process]:
        sup = provider.supervisor
        return sampling.in_groups({m.pgid for m in list(sup.procs.values())}) if sup else []

    with sampling.ProcessSampler(provider_processes) as sampler:
        started = time.monotonic()
        try:
            provider.up()
            result["upSeconds"] = round(time.monotonic() - started, 1)
            time.sleep(args.settle)
            result["steadyRssMiB"] = round(sampler.last_rss / 2**20)
        finally:
            started = time.monotonic()
            provider.down()
            result["downSeconds"] = round(time.monotonic() - started, 1)
    result["peakRssMiB"] = round(sampler.peak_rss / 2**20)
    leftovers = [
        p.info
        for p in psutil.process_iter(["pid", "name"])
        if p.info["name"]
        in {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kueue", "kwok"}
    ]
    result["leftoverProcesses"] = len(leftovers)
    result["runDirRemoved"] = not Path(str(provider.run_dir)).exists()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
