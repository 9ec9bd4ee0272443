"""The dispatcher benchmark at several worker counts, and its scaling curve as a PNG.

    python -m harness.tools.bench_scaling --workers 4,8,12,16,20 \\
        --profiles reference,incremental,all-at-once --out reports/bench-scaling
    python -m harness.tools.bench_scaling --replot reports/bench-scaling/scaling.json

For each worker count, every profile is benchmarked in its own fresh environment
(``bench_dispatcher``), back to back, so the dispatchers of one point share the
machine's state. Writes ``scaling.json`` (every point's benchmark document, written
after each point so a later failure keeps the earlier ones) and ``scaling.png``: p99
(and p50, dashed) time from Workload creation to first nomination against the number
of workers. A local environment costs memory per worker (about 0.5 GiB each, with
Kueue); check what the machine has before going above 8.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.errors import command_exit
from harness.tools import bench_dispatcher

Curves = dict[str, dict[str, list[tuple[int, float]]]]  # dispatcher -> p50/p99 -> points


def curves(documents: Sequence[Mapping[str, Any]]) -> Curves:
    """Per dispatcher, (workers, seconds) for p50 and p99 to first nomination, sorted by
    workers; the audit log's figure where present, else the watched one; points without
    a figure (nothing nominated) are left out."""
    out: Curves = {}
    for doc in documents:
        workers = int(doc["workers"])
        for name, result in (doc.get("dispatchers") or {}).items():
            source = result.get("audit") or result.get("watched") or {}
            spread = source.get("timeToFirstNominationSeconds") or {}
            for q in ("p50", "p99"):
                if spread.get(q) is not None:
                    out.setdefault(name, {}).setdefault(q, []).append((workers, float(spread[q])))
    for per_q in out.values():
        for points in per_q.values():
            points.sort()
    return out


def plot(data: Curves, path: Path, title: str = "") -> None:
    """Draw ``data`` to a PNG at ``path`` (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    for index, (name, per_q) in enumerate(sorted(data.items())):
        color = f"C{index}"
        if per_q.get("p99"):
            xs, ys = zip(*per_q["p99"], strict=True)
            ax.plot(xs, ys, marker="o", color=color, label=f"{name} p99")
        if per_q.get("p50"):
            xs, ys = zip(*per_q["p50"], strict=True)
            ax.plot(xs, ys, marker=".", linestyle="--", color=color, label=f"{name} p50")
    workers = sorted({w for per_q in data.values() for pts in per_q.values() for w, _ in pts})
    ax.set_xticks(workers)  # the counts measured, not fractions between them
    values = [v for per_q in data.values() for pts in per_q.values() for _, v in pts]
    if values and min(values) > 0 and max(values) / min(values) > 20:
        ax.set_yscale("log")  # a dispatcher that falls behind would flatten the others
    ax.set_xlabel("worker clusters")
    ax.set_ylabel("Workload creation to first nomination (s)")
    ax.set_title(title or "Dispatcher scaling")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def title(documents: Sequence[Mapping[str, Any]]) -> str:
    counts = sorted({int(d.get("workloads") or 0) for d in documents})
    return f"{'/'.join(map(str, counts))} pending workloads, no capacity anywhere"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--workers", default="4,8,12,16,20", help="comma-separated counts")
    parser.add_argument("--profiles", default="reference,incremental,all-at-once")
    parser.add_argument("--workloads", type=int, default=1000)
    parser.add_argument("--settle", type=float, default=60)
    parser.add_argument("--out", type=Path, default=Path("reports/bench-scaling"))
    parser.add_argument("--replot", type=Path, help="only redraw the PNG from a scaling.json")
    parser.add_argument("--logs", type=Path, help="keep each run's logs under DIR/w<workers>")
    args = parser.parse_args(argv)
    if args.replot:
        documents = json.loads(args.replot.read_text())["runs"]
        plot(curves(documents), args.replot.with_suffix(".png"), title(documents))
        return
    names = [p for p in args.profiles.split(",") if p]
    documents = []
    args.out.mkdir(parents=True, exist_ok=True)
    for workers in [int(w) for w in args.workers.split(",") if w]:
        doc: dict[str, Any] = {"workloads": args.workloads, "workers": workers, "dispatchers": {}}
        for name in names:
            logs = args.logs / f"w{workers}" if args.logs else None
            result = bench_dispatcher.bench(name, args.workloads, workers, args.settle, logs)
            doc["dispatchers"][result["profile"]] = result
        documents.append(doc)
        (args.out / "scaling.json").write_text(json.dumps({"runs": documents}, indent=2))
        plot(curves(documents), args.out / "scaling.png", title(documents))
    print(json.dumps({"runs": documents}, indent=2))


if __name__ == "__main__":
    sys.exit(command_exit("bench_scaling", main))
