"""The quick self-test inside the test suite: a few faulty dispatchers, each run for real
and one after another on one environment (the manager's Kueue restarted for each one's
dispatcherName), must be rejected by exactly the checks the self-test table names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from suites import selftest


@pytest.mark.e2e
def test_faulty_dispatchers_sharing_an_environment_are_each_rejected_by_their_checks(
    selected_versions, tmp_path: Path
) -> None:
    # each run on the fewest workers its scenarios need (3: CORE-01's), chosen by the self-test
    argv = [sys.executable, "-m", "suites.selftest", "--quick", "--report-root", str(tmp_path)]
    proc = subprocess.run(
        argv, cwd=selftest.ROOT, capture_output=True, text=True, timeout=900, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-2000:]
    assert f"selftest: {len(selftest.QUICK)} passed, 0 failed" in proc.stdout
    assert proc.stderr.count("next run on the same environment") == len(selftest.QUICK) - 1
    assert proc.stderr.count("environment ready in") == 1
    assert "starting 4 kube-apiservers" in proc.stderr  # the manager and 3 workers
    matrix = (tmp_path / selftest.MATRIX_FILE).read_text()
    for fault in selftest.QUICK:
        expected = selftest.EXPECTED[fault]
        [row] = [line for line in matrix.splitlines() if line.startswith(f"| {expected.row} |")]
        assert row.endswith("| ok |") and row.count("**killed**") == len(expected.kills), row
