"""Process groups: everything a started process forks is stopped with it."""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harness.cluster import procs
from harness.errors import UserError


def _pids_in_group(pgid: int) -> bool:
    return procs.group_alive(pgid)


def test_stop_reaches_grandchildren(tmp_path):
    sup = procs.Supervisor(tmp_path)
    managed = sup.start("tree", ["/bin/sh", "-c", "sleep 60 & sleep 60 & wait"])
    time.sleep(0.2)
    assert _pids_in_group(managed.pgid)
    sup.stop_all()
    assert not _pids_in_group(managed.pgid)
    assert json.loads((tmp_path / procs.STATE_FILE).read_text()) == {}


def test_term_ignoring_process_is_killed_after_grace(tmp_path):
    sup = procs.Supervisor(tmp_path)
    managed = sup.start("stubborn", ["/bin/sh", "-c", "trap '' TERM; sleep 60 & wait; sleep 60"])
    time.sleep(0.2)
    started = time.monotonic()
    sup.stop("stubborn", grace=0.5)
    assert not _pids_in_group(managed.pgid)
    assert time.monotonic() - started < 5


def test_recorded_groups_can_be_stopped_from_another_process(tmp_path):
    sup = procs.Supervisor(tmp_path, outlive_parent=True)
    managed = sup.start("lingering", ["/bin/sleep", "60"])
    assert procs.stop_recorded(tmp_path) == 1
    assert not _pids_in_group(managed.pgid)
    managed.popen.wait(timeout=5)


def test_missing_binary_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="not found: run `mkdc bins`"):
        procs.Supervisor(tmp_path).start("ghost", [str(tmp_path / "nope")])


def test_death_at_start_names_the_log(tmp_path):
    sup = procs.Supervisor(tmp_path)
    sup.start(
        "dies",
        ["/bin/sh", "-c", "echo listen tcp 127.0.0.1:1: bind: address already in use; exit 3"],
    )
    sup.procs["dies"].popen.wait(timeout=5)
    with pytest.raises(UserError) as err:
        sup.check_alive("dies")
    message = str(err.value)
    assert (
        "exited with code 3" in message
        and "dies.log" in message
        and "address already in use" in message
    )
    assert "\n" not in message


def test_temp_files_of_a_started_process_stay_in_the_run_directory(tmp_path):
    """A kubernetes client writes its kubeconfig's key to a temp file and removes it at
    exit; killed outright it cannot, so the file must be inside the (private) run dir."""
    sup = procs.Supervisor(tmp_path)
    script = "import tempfile; print(tempfile.mkstemp()[1])"
    sup.start("writer", [sys.executable, "-c", script])
    sup.start("told", [sys.executable, "-c", script], env={"TMPDIR": str(tmp_path)})
    for name in ("writer", "told"):
        sup.procs[name].popen.wait(timeout=10)
    written = Path(sup.procs["writer"].log.read_text().strip())
    assert written.parent == tmp_path / "tmp" and written.exists()
    assert (tmp_path / "tmp").stat().st_mode & 0o777 == 0o700
    assert Path(sup.procs["told"].log.read_text().strip()).parent == tmp_path  # its own


def test_free_port_is_free_and_detects_use():
    port = procs.free_port()
    assert not procs.port_in_use(port)
    assert port < procs._ephemeral_low()  # no race with clients' ephemeral ports
    assert port not in {procs.free_port() for _ in range(50)}  # never handed out twice
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        assert procs.port_in_use(port)


def test_children_survive_the_thread_that_started_them(tmp_path):
    """The parent-death signal must not fire when a short-lived worker thread ends."""
    import threading

    sup = procs.Supervisor(tmp_path)
    started = []
    t = threading.Thread(target=lambda: started.append(sup.start("bg", ["/bin/sleep", "60"])))
    t.start()
    t.join()
    time.sleep(0.3)
    assert started[0].alive()
    sup.stop_all()


def test_a_step_runs_to_its_end_and_returns_its_exit_code(tmp_path):
    with (tmp_path / "out.log").open("ab") as out:
        codes = procs.run_lanes([[procs.Step(["/bin/sh", "-c", "echo to-the-log; exit 3"])]], out)
    assert codes == [3] and (tmp_path / "out.log").read_text() == "to-the-log\n"


def test_lanes_run_at_once_and_return_their_codes_in_order(tmp_path):
    """Each waits for the other's file: one after the other, the first would time out."""
    a, b = tmp_path / "a", tmp_path / "b"

    def waits_for(mine: Path, theirs: Path, code: int) -> procs.Step:
        script = f"touch {mine}; while [ ! -f {theirs} ]; do sleep 0.05; done; exit {code}"
        return procs.Step(["timeout", "20", "/bin/sh", "-c", script])

    with (tmp_path / "out.log").open("ab") as out:
        codes = procs.run_lanes([[waits_for(a, b, 4)], [waits_for(b, a, 0)]], out)
    assert codes == [4, 0]


def test_a_lanes_steps_run_one_after_the_other_each_asked_when_due(tmp_path):
    """A step's `when` sees what the step before it did; False skips just that step."""
    log = tmp_path / "order"

    def step(name: str, code: int = 0, when=None) -> procs.Step:
        return procs.Step(["/bin/sh", "-c", f"echo {name} >> {log}; exit {code}"], when=when)

    def first_ran() -> bool:
        return log.read_text().splitlines() == ["first"]

    lane = [step("first", 2), step("skipped", when=lambda: False), step("third", when=first_ran)]
    with (tmp_path / "out.log").open("ab") as out:
        codes = procs.run_lanes([lane], out)
    assert codes == [2, 0] and log.read_text().splitlines() == ["first", "third"]


def test_an_interrupted_step_gets_sigint_then_sigkill_and_the_interrupt_goes_on(tmp_path):
    """As pytest under `mkdc run` on Ctrl-C or SIGTERM: told first, killed after the grace."""
    import signal

    marker, leader = tmp_path / "got-int", tmp_path / "pgid"
    # the pid file is written once the trap is set: the interrupt comes only then, so a
    # slow start on a busy machine cannot kill the shell before it listens
    script = f"trap 'touch {marker}' INT; echo $$ > {leader}; sleep 60 & wait; sleep 60"

    def interrupt(_signum, _frame):
        if not leader.exists() or not leader.read_text().strip():
            signal.setitimer(signal.ITIMER_REAL, 0.1)
            return
        raise KeyboardInterrupt("SIGTERM")

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    started = time.monotonic()
    try:
        with (tmp_path / "out.log").open("ab") as out, pytest.raises(KeyboardInterrupt):
            procs.run_lanes([[procs.Step(["/bin/sh", "-c", script])]], out, grace=1.0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert marker.exists()  # told
    assert 1.4 < time.monotonic() - started < 10  # then killed,
    assert not procs.group_alive(int(leader.read_text()))  # the background sleep too


def test_a_child_hears_sigint_even_when_the_harness_was_started_ignoring_it(tmp_path):
    """`mkdc run &` from a script ignores SIGINT; what it starts must not, or pytest
    would not end its scenarios when told to."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with (tmp_path / "out.log").open("ab") as out:
            popen = procs.spawn(["/bin/sh", "-c", "grep SigIgn /proc/self/status"], out)
            popen.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
    ignored = int((tmp_path / "out.log").read_text().split()[-1], 16)
    assert not ignored & (1 << (signal.SIGINT - 1))


def test_a_port_another_process_handed_out_is_not_handed_out_here(monkeypatch):
    """Parallel runs on one machine: each process picks ports at random, so without a
    machine-wide claim two could pick the same one before either server binds it."""
    code = (
        "import sys; from harness.cluster import procs;"
        " print(procs.free_port(), flush=True); input()"
    )
    other = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert other.stdin and other.stdout
    randrange = random.Random().randrange
    try:
        taken = int(other.stdout.readline())
        first_taken(monkeypatch, taken, randrange)
        assert procs.free_port() != taken
    finally:
        other.stdin.close()
        other.wait()
    first_taken(monkeypatch, taken, randrange)
    assert procs.free_port() == taken  # the claim went with the process that made it


def first_taken(monkeypatch: pytest.MonkeyPatch, port: int, randrange) -> None:
    """The next random pick is `port`, then picks are random again."""
    picks = iter([port])
    monkeypatch.setattr(procs.random, "randrange", lambda *a: next(picks, None) or randrange(*a))


def test_processes_started_from_many_threads_are_all_recorded(tmp_path, monkeypatch):
    """A local environment starts each cluster's processes from its own thread: the record
    of process groups must never be written while another thread adds to it."""

    class Started:  # what Managed needs of a Popen, without a process
        pid = os.getpid()

        def poll(self) -> None:
            return None

    monkeypatch.setattr(procs, "spawn", lambda *a, **k: Started())
    sup = procs.Supervisor(tmp_path)
    # enough starts that saving without the lock fails (tried: each save writes them all,
    # so more only cost time)
    starts = 1000
    with ThreadPoolExecutor(max_workers=32) as pool:
        list(pool.map(lambda i: sup.start(f"p{i}", ["/bin/true"]), range(starts)))
    recorded = json.loads((tmp_path / procs.STATE_FILE).read_text())
    assert set(recorded) == {f"p{i}" for i in range(starts)}


def test_only_a_workers_processes_run_go_on_one_thread():
    """The manager's processes and the shared etcd keep every core; collection pacing
    goes by process kind wherever it runs."""
    from harness.providers.local_processes import go_runtime

    workers = ["worker1", "gpu-reserved-cluster"]
    assert go_runtime("worker1-apiserver", workers) == {"GOGC": "75", "GOMAXPROCS": "1"}
    assert go_runtime("gpu-reserved-cluster-kueue", workers) == {"GOMAXPROCS": "1"}
    assert go_runtime("manager-apiserver", workers) == {"GOGC": "75"}
    assert go_runtime("manager-kueue", workers) == {}
    assert go_runtime("etcd", workers) == {"GOGC": "75"}


def test_a_process_kind_is_found_whatever_hyphens_the_cluster_name_has():
    from harness.providers.local_processes import process_kind

    assert process_kind("east-cluster-controller-manager") == "controller-manager"
    assert process_kind("gpu-reserved-cluster-apiserver") == "apiserver"
    assert process_kind("worker3-kueue") == "kueue"
    assert process_kind("etcd") == "etcd"
