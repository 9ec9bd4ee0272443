"""The gate for a Kueue change: `mkdc run --kueue-source DIR` builds Kueue's manager from a
source tree and judges the dispatcher built into it. A copy of the released Kueue's source
whose Incremental dispatcher nominates every worker at once (each round takes all the
workers left, not stepSize of them) is rejected by the check that bounds duplicate
admissions (EXT-03: at most stepSize workers reserve quota at once), and the report names
the tree, not a release. The tree is a git tree with vendor/, one of its dependencies in
no module proxy, as Kueue's repository is: it builds only as Go builds it by default."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cluster import versions
from tests.e2e.kueue_tree import broken_incremental
from tests.e2e.mkdc_cli import mkdc_run, report_of, results_of


@pytest.mark.e2e
def test_a_kueue_tree_whose_incremental_nominates_every_worker_is_rejected(
    selected_versions, tmp_path: Path
) -> None:
    tree = tmp_path / "kueue"
    tree.mkdir()
    broken_incremental(selected_versions, tree)
    report_dir = tmp_path / "report"
    proc = mkdc_run(
        "incremental",
        report_dir,
        "--kueue-source",
        str(tree),
        "--checks",
        "EXT-03",
        "--workers",
        "5",
        "--environments",
        "1",
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    report = report_of(report_dir)
    assert results_of(report)["EXT-03"] == "failed", proc.stderr[-3000:]
    [ext03] = [c for c in report["checks"] if c["id"] == "EXT-03"]
    assert "reservations at once" in ext03["message"] and "(stepSize 3)" in ext03["message"]
    source = versions.read_source(tree)
    assert source.describe != f"tree {source.tree}"  # named by git describe
    assert report["environment"]["kueueVersion"] == f"source {source.describe} ({tree})"
