"""The README's benchmark tables are generated from benchmarks/figures.json, never typed."""

from __future__ import annotations

import pytest

from harness.tools import bench

BRING_UP = {
    "command": "harness.tools.bench_up --workers 4,20 --settle 15",
    "machine": {"cores": 2, "memoryGiB": 23.4, "measuredAt": "2026-12-02 03:00 UTC"},
    "figures": [
        {"workers": 4, "upSeconds": 14.9, "steadyRssMiB": 3600, "steadyPssMiB": 2500,
         "byKind": {"apiserver": {"rssEachMiB": 330}}, "downSeconds": 2.1},
        {"workers": 20, "upSeconds": 70.2, "steadyRssMiB": 11000, "steadyPssMiB": 7800,
         "byKind": {"apiserver": {"rssEachMiB": 320}}, "downSeconds": 6.0},
    ],
}  # fmt: skip


def test_each_measured_section_becomes_a_titled_table():
    block = bench.render({"bringUp": BRING_UP})
    assert block.startswith(bench.BEGIN) and block.endswith(bench.END)
    assert "`python -m harness.tools.bench_up --workers 4,20 --settle 15`" in block
    assert "| 1 + 20 | 70.2 s | 10.74 GiB | 7.62 GiB | 320 MiB | 6.0 s |" in block
    assert "Dispatchers" not in block  # not measured, not shown


def test_the_block_is_replaced_in_place_and_a_readme_without_one_is_an_error():
    readme = f"# x\n\nbefore\n{bench.BEGIN}\nold figures\n{bench.END}\nafter\n"
    new = bench.with_figures(readme, bench.render({"bringUp": BRING_UP}))
    assert new.startswith("# x\n\nbefore\n") and new.endswith("\nafter\n")
    assert "old figures" not in new and "1 + 4" in new
    with pytest.raises(SystemExit, match="no generated block"):
        bench.with_figures("# x\n", "block")


def test_the_readme_shows_what_the_figures_file_holds():
    """Fails when someone edits a generated number by hand, or measures without `readme`."""
    assert bench.main(["readme", "--check"]) == 0
