"""docs/benchmarks.md's benchmark tables are generated from benchmarks/figures.json, never
typed."""

from __future__ import annotations

from typing import Any

import pytest

from harness.tools import bench

BRING_UP = {
    "command": "harness.tools.bench_up --workers 4,20 --settle 15",
    "machine": {"cores": 2, "memoryGiB": 23.4, "measuredAt": "2026-12-02 03:00 UTC"},
    "figures": [
        {"workers": 4, "upSeconds": 14.9, "steadyRssMiB": 3600, "steadyPssMiB": 2500,
         "byKind": {"apiserver": {"rssEachMiB": 330}}, "downSeconds": 2.1},
        {"workers": 20, "upSeconds": 70.2, "steadyRssMiB": 11000, "steadyPssMiB": 7800,
         "memAvailableDropMiB": 8192,
         "byKind": {"apiserver": {"rssEachMiB": 320}}, "downSeconds": 6.0},
    ],
}  # fmt: skip


def test_each_measured_section_becomes_a_titled_table():
    block = bench.render({"bringUp": BRING_UP})
    assert block.startswith(bench.BEGIN) and block.endswith(bench.END)
    assert "`python -m harness.tools.bench_up --workers 4,20 --settle 15`" in block
    assert "| 1 + 20 | 70.2 s | 10.74 GiB | 7.62 GiB | 8.00 GiB | 320 MiB | 6.0 s |" in block
    assert "| 1 + 4 | 14.9 s | 3.52 GiB | 2.44 GiB | – | 330 MiB | 2.1 s |" in block
    assert "Dispatchers" not in block  # not measured, not shown


def test_the_block_is_replaced_in_place_and_a_page_without_one_is_an_error():
    page = f"# x\n\nbefore\n{bench.BEGIN}\nold figures\n{bench.END}\nafter\n"
    new = bench.with_figures(page, bench.render({"bringUp": BRING_UP}))
    assert new.startswith("# x\n\nbefore\n") and new.endswith("\nafter\n")
    assert "old figures" not in new and "1 + 4" in new
    with pytest.raises(SystemExit, match="no generated block"):
        bench.with_figures("# x\n", "block")


def test_the_benchmarks_page_shows_what_the_figures_file_holds():
    """Fails when someone edits a generated number by hand, or measures without `tables`."""
    assert bench.PAGE == bench.ROOT / "docs" / "benchmarks.md"
    assert bench.main(["tables", "--check"]) == 0


def test_the_generated_tables_live_in_the_benchmarks_page_only():
    """One place for the generated figures: the README links to the page, never copies it."""
    assert bench.BEGIN not in (bench.ROOT / "README.md").read_text()
    assert bench.PAGE.read_text().count(bench.BEGIN) == 1


DISPATCHERS = {
    "command": "harness.tools.bench_dispatcher --profiles reference,incremental",
    "machine": {"cores": 2, "memoryGiB": 23.4, "measuredAt": "2026-12-02 03:30 UTC"},
    "figures": {
        "workloads": 1000,
        "workers": 20,
        "dispatchers": {
            "reference": {
                "profile": "reference",
                "audit": {
                    "created": 1000, "nominated": 998,
                    "timeToFirstNominationSeconds": {"p50": 0.31, "p99": 0.9},
                    "quotaReservedToFirstNominationSeconds": {"p50": 0.2, "p99": 0.7},
                    "quotaReservedToNominationRequestSeconds": {"p50": 0.15, "p99": 0.5},
                    "firstNominationWriteSeconds": {"p50": 0.05, "p99": 0.2},
                    "apiRequestsPerFirstNomination": 3.1,
                },
                "peakRssMiB": 98.5, "cpuSeconds": 12.0, "measuredProcess": "dispatcher",
                "submitSeconds": 120.5,
            },
            "incremental": {
                "profile": "incremental",
                "watched": {"created": 1000, "nominated": 1000,
                            "timeToFirstNominationSeconds": {"p50": 0.5, "p99": None}},
                "peakRssMiB": 140.0, "cpuSeconds": 20.1,
            },
        },
    },
}  # fmt: skip


def test_dispatchers_side_by_side_from_the_audit_log_else_the_watches():
    block = bench.render({"dispatchers": DISPATCHERS})
    assert "1000 workloads at once, 20 workers without capacity:" in block
    assert "| | reference | incremental |" in block
    assert "| nominated of created | 998 of 1000 | 1000 of 1000 |" in block
    assert "| every Job submitted after (s) | 120.5 | – |" in block
    assert "| creation to first nomination p50 / p99 (s) | 0.31 / 0.90 | 0.50 / – |" in block
    assert "| API requests per first nomination | 3.1 | – |" in block
    # the split of reservation-to-nomination; a run measured before it shows dashes
    assert "| of which until the request reached the apiserver | 0.15 / 0.50 | – / – |" in block
    assert "| of which the apiserver's write | 0.05 / 0.20 | – / – |" in block


def _run(workers: int, p99: float) -> dict[str, Any]:
    timing = {"timeToFirstNominationSeconds": {"p50": p99 / 2, "p99": p99}}
    return {"workloads": 1000, "workers": workers, "dispatchers": {"reference": {"audit": timing}}}


def test_the_dispatchers_run_is_the_scaling_curves_last_point_when_it_fits():
    scaling = {"runs": [_run(8, 0.8), _run(4, 0.4)]}
    merged = bench.with_point(scaling, _run(20, 2.0))
    assert [r["workers"] for r in merged["runs"]] == [4, 8, 20]
    # a count already measured, or other workloads, is not mixed in
    assert [r["workers"] for r in bench.with_point(scaling, _run(8, 9.0))["runs"]] == [4, 8]
    other = {**_run(20, 2.0), "workloads": 200}
    assert [r["workers"] for r in bench.with_point(scaling, other)["runs"]] == [4, 8]
    assert [r["workers"] for r in bench.with_point(scaling, None)["runs"]] == [4, 8]


def test_a_new_dispatchers_run_replaces_the_curves_point_from_the_one_before():
    own = bench.worker_counts("harness.tools.bench_scaling --workers 4,8 --workloads 1000")
    assert own == {4, 8}
    curve = bench.with_point({"runs": [_run(8, 0.8), _run(4, 0.4)]}, _run(20, 2.0))
    renewed = bench.with_point(curve, _run(20, 1.5), own)["runs"]
    assert [(r["workers"], _p99(r)) for r in renewed] == [(4, 0.4), (8, 0.8), (20, 1.5)]
    # without the scaling runs' own counts, a point already there stays (as before)
    assert [_p99(r) for r in bench.with_point(curve, _run(20, 1.5))["runs"]] == [0.4, 0.8, 2.0]


def _p99(run: dict[str, Any]) -> float:
    return float(run["dispatchers"]["reference"]["audit"]["timeToFirstNominationSeconds"]["p99"])


def test_the_scaling_picture_comes_with_its_points_as_a_table():
    section = {"command": "x", "figures": {"runs": [_run(4, 0.4), _run(20, 2.0)]}}
    lines = bench.scaling_lines(section)
    # linked from docs/, so the picture in benchmarks/ is one folder up, and it is there
    assert lines[0] == "![p99 to first nomination against workers](../benchmarks/scaling.png)"
    assert (bench.PAGE.parent / bench.picture_link()).resolve() == bench.SCALING
    assert "| workers | 4 | 20 |" in lines
    assert "| reference p50 / p99 (s) | 0.20 / 0.40 | 1.00 / 2.00 |" in lines
