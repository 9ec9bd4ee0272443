"""The quick self-test inside the test suite: a few faulty dispatchers, each run for real,
must be rejected by exactly the checks the self-test table names (one test per fault, so
they run beside the other e2e tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from suites import selftest


@pytest.mark.e2e
@pytest.mark.parametrize("fault", selftest.QUICK)
def test_faulty_dispatcher_is_rejected_by_its_checks(
    selected_versions, fault: str, tmp_path: Path
) -> None:
    argv = [sys.executable, "-m", "suites.selftest", "--only", fault, "--no-baselines"]
    argv += ["--report-root", str(tmp_path)]
    proc = subprocess.run(
        argv, cwd=selftest.ROOT, capture_output=True, text=True, timeout=900, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-2000:]
    assert "selftest: 1 passed, 0 failed" in proc.stdout
    expected = selftest.EXPECTED[fault]
    matrix = (tmp_path / selftest.MATRIX_FILE).read_text()
    [row] = [line for line in matrix.splitlines() if line.startswith(f"| {expected.row} |")]
    assert row.endswith("| ok |") and row.count("**killed**") == len(expected.kills), row
