"""The scaling curve from hand-made benchmark documents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PIL import Image

from harness.tools import bench_scaling


def doc(workers: int, **p99: float | None) -> dict[str, Any]:
    return {
        "workloads": 1000,
        "workers": workers,
        "dispatchers": {
            name: {"audit": {"timeToFirstNominationSeconds": {"p50": v and v / 2, "p99": v}}}
            for name, v in p99.items()
        },
    }


DOCS = [
    doc(8, reference=0.3, incremental=1.5),
    doc(4, reference=0.2, incremental=1.2),
    doc(12, reference=None, incremental=2.0),  # nothing nominated: no point
]


def test_curves_are_per_dispatcher_sorted_by_workers() -> None:
    out = bench_scaling.curves(DOCS)
    assert out["reference"]["p99"] == [(4, 0.2), (8, 0.3)]
    assert out["incremental"]["p99"] == [(4, 1.2), (8, 1.5), (12, 2.0)]
    assert out["incremental"]["p50"][0] == (4, 0.6)


def test_watched_figures_stand_in_without_an_audit_log() -> None:
    watched = {"watched": {"timeToFirstNominationSeconds": {"p50": 0.1, "p99": 0.4}}}
    out = bench_scaling.curves([{"workers": 4, "dispatchers": {"x": watched}}])
    assert out["x"]["p99"] == [(4, 0.4)]


def test_the_png_is_drawn_and_replotted_from_json(tmp_path: Path) -> None:
    png = tmp_path / "scaling.png"
    bench_scaling.plot(bench_scaling.curves(DOCS), png, "test")
    with Image.open(png) as image:
        assert image.format == "PNG" and image.size[0] > 400
    saved = tmp_path / "scaling.json"
    saved.write_text(json.dumps({"runs": DOCS}))
    png.unlink()
    bench_scaling.main(["--replot", str(saved)])
    assert png.exists()
