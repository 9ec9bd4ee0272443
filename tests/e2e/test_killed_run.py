"""`mkdc run` killed outright leaves nothing running, and `mkdc down` removes what it
left on disk.

A run killed with SIGKILL cannot clean up after itself: everything it started (both
environments' clusters, the dispatcher, the pytest of each and the xdist workers) must die
with it through parent-death signals, the ports they listened on must close, and its run
directories (CA keys, kubeconfigs) stay until the next `mkdc down` (or `mkdc run`,
`mkdc up`) removes them. The run has the shape `make e2e`'s has, a second environment for
the scenario that runs alone: the only run of that shape in the test suite.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from harness.cluster import rundir
from harness.scenarios import progress
from tests.e2e.mkdc_cli import mkdc_start, run_dirs

SETTLE = 20.0  # seconds for every process of the killed run to be gone


def scenario_started(report_dir: Path, run: subprocess.Popen[bytes], output: Path) -> None:
    """Wait for the first scenario-start of the run's progress stream."""
    stream = report_dir / progress.PUBLIC_FILE
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        assert run.poll() is None, output.read_text()[-3000:]
        if stream.exists() and progress.SCENARIO_START in stream.read_text():
            return
        time.sleep(0.5)
    pytest.fail(f"no scenario started in 300s: {output.read_text()[-3000:]}")


def listening(procs: list[psutil.Process]) -> set[int]:
    ports = set()
    for proc in procs:
        try:
            conns = proc.net_connections(kind="inet")
        except psutil.Error:
            continue
        ports |= {c.laddr.port for c in conns if c.status == psutil.CONN_LISTEN}
    return ports


def left_over(tree: list[psutil.Process], dirs: list[Path], ports: set[int]) -> dict[str, list]:
    """What of the run is still there: processes (of its tree, or naming its directories),
    and ports still listening."""
    alive = [p for p in tree if _live(p)]
    users = [p for d in dirs for p in rundir.using(d) if _live(p)]
    still = {
        c.laddr.port
        for c in psutil.net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN and c.laddr.port in ports
    }
    return {
        "processes": sorted({f"{p.pid} {' '.join(_cmdline(p))[:120]}" for p in alive + users}),
        "ports": sorted(still),
    }


def _live(proc: psutil.Process) -> bool:
    """Running, and the same process (not a reused pid); a zombie is gone."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except psutil.Error:
        return ["?"]


@pytest.mark.e2e
def test_a_killed_run_leaves_nothing_running_and_down_removes_its_directory(
    selected_versions, tmp_path: Path
) -> None:
    report_dir, output = tmp_path / "report", tmp_path / "mkdc-run.log"
    # a temporary directory of its own: any other mkdc on the machine removes a dead run's
    # directory it finds in its own, which is the point, but not of this test
    own_tmp = Path(tempfile.mkdtemp(prefix="mkdc-k-"))
    env = {**os.environ, "TMPDIR": str(own_tmp)}
    # any scenarios under way will do, two of them so that pytest runs them in its xdist
    # workers (a run starts no more than it has scenarios side by side): CORE-08's and
    # EXT-01's run on one worker, the smallest environment; the burst (CORE-09) runs alone,
    # on a second environment, as in `make e2e`
    checks = ("--checks", "CORE-08,EXT-01,CORE-09", "--workers", "1", "--environments", "2")
    run = mkdc_start("reference", report_dir, *checks, output=output, env=env)
    try:
        scenario_started(report_dir, run, output)
        time.sleep(3)  # under way: the recorder watching, the dispatcher nominating
        dirs = run_dirs(output.read_text())
        assert len(dirs) == 2, output.read_text()[-3000:]
        tree = [psutil.Process(run.pid), *psutil.Process(run.pid).children(recursive=True)]
        names = [p.name() for p in tree]
        assert names.count("kube-apiserver") == 4, names  # two environments of 1+1
        assert {"etcd", "kueue"} <= set(names), names
        controllers = [p for p in tree if "pytest" in _cmdline(p)[1:3]]
        # the first environment's, with its xdist workers (-n 2); the second's, if started
        assert max(len(c.children()) for c in controllers) == 2, controllers
        ports = listening(tree)
        assert ports, "the run listened on no port"
        run.send_signal(signal.SIGKILL)
        run.wait()
        deadline = time.monotonic() + SETTLE
        while (left := left_over(tree, dirs, ports)) != {"processes": [], "ports": []}:
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert left == {"processes": [], "ports": []}
        assert all(d.exists() for d in dirs)  # nothing of the run could remove them
        down = subprocess.run(
            [sys.executable, "-m", "harness.cli", "down"],
            env={**env, "MKDC_CACHE_DIR": str(tmp_path / "cache")},  # no `mkdc up` here
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert down.returncode == 0, down.stderr
        for run_dir in dirs:
            assert not run_dir.exists()
            assert f"removed left-over run directory {run_dir}" in down.stderr, down.stderr
        events = [
            json.loads(x) for x in (report_dir / progress.PUBLIC_FILE).read_text().splitlines()
        ]
        assert events[0]["event"] == progress.RUN_START and events[0]["total"] == 3
    finally:
        run.kill()
        run.wait()
        shutil.rmtree(own_tmp, ignore_errors=True)
