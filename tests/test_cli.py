"""Bad input gets one clear line and exit 2."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import tempfile

import pytest

from harness import cli
from harness.cluster import rundir
from suites.checks import CATALOGUE


def _run(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    return code, capsys.readouterr().err


def test_unknown_kueue_version_exits_2_with_one_line(capsys):
    code, err = _run(capsys, "bins", "--kueue-version", "v9.9.9")
    assert code == 2
    assert err.count("\n") == 1 and "v9.9.9" in err and "version matrix" in err


def test_down_without_environment_is_harmless(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("MKDC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code, err = _run(capsys, "down")
    assert code == 0 and "no environment" in err


def test_down_removes_what_a_killed_run_left_and_says_so(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("MKDC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    left = tmp_path / "mkdc-run-killed"
    left.mkdir()
    (left / rundir.OWNER_FILE).write_text(json.dumps({"pid": 999_999_999, "started": 0.0}))
    live = rundir.create("mkdc-run-")  # a run going on beside it, owned by this process
    code, err = _run(capsys, "down")
    assert code == 0 and not left.exists() and live.exists()
    assert (
        err == f"mkdc: removed left-over run directory {left} (its run, pid 999999999, is gone)\n"
    )


def test_progress_goes_to_the_console_as_lines_or_as_json():
    parse = cli.build_parser().parse_args
    assert parse(["run", "--profile", "reference"]).progress == "human"
    assert parse(["run", "--profile", "reference", "--progress", "jsonl"]).progress == "jsonl"
    with pytest.raises(cli.UsageError, match="--progress: invalid choice: 'xml'"):
        parse(["run", "--profile", "reference", "--progress", "xml"])


def test_up_with_missing_binaries_exits_2_and_leaves_nothing(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("MKDC_CACHE_DIR", str(tmp_path))
    code, err = _run(capsys, "up", "--workers", "1")
    assert code == 2
    assert "is not built: run `mkdc bins`" in err
    assert not (tmp_path / cli.CURRENT).exists()


def test_usage_error_is_one_line_and_exit_2(capsys):
    """Not argparse's usage text plus message: one line that says where to read on."""
    code, err = _run(capsys, "up", "--workers", "many")
    assert code == 2
    assert err == (
        "mkdc: error: argument --workers: must be a whole number from 1 to 64, got 'many'"
        " (see `mkdc up --help`)\n"
    )


def test_run_dir_markers_are_what_up_writes():
    """`mkdc down` removes only a folder holding these, so they must be the real names."""
    from harness.cluster import environment, procs

    assert cli.RUN_DIR_MARKERS == (procs.STATE_FILE, environment.ENV_FILE)


@pytest.mark.parametrize("record", ["", ".", "relative/dir", "/"])
def test_down_never_removes_what_the_record_does_not_name(capsys, tmp_path, monkeypatch, record):
    """An emptied or edited record (`.` is the cwd) must not make `mkdc down` remove it."""
    monkeypatch.setenv("MKDC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / cli.CURRENT).write_text(record)
    (tmp_path / "mine.txt").write_text("keep")
    code, err = _run(capsys, "down")
    assert code == 0 and "named none" in err
    assert (tmp_path / "mine.txt").read_text() == "keep"
    assert not (tmp_path / "cache" / cli.CURRENT).exists()


def test_checks_lists_the_catalogue_with_the_scenario_that_decides_each(capsys):
    code = cli.main(["checks"])
    lines = capsys.readouterr().out.splitlines()
    heads = [line for line in lines if not line.startswith(" ")]
    assert code == 0 and len(heads) == len(CATALOGUE)
    at = lines.index(next(line for line in lines if line.startswith("EXT-07 ")))
    assert (
        lines[at + 1].strip().startswith("decided by: suites/conformance/test_ordering.py::test_")
    )
    core_02 = lines.index(next(line for line in lines if line.startswith("CORE-02 ")))
    assert lines[core_02 + 1].strip() == "decided by: every scenario's timeline"
    # whose each bound is: the API's maximum, mkdc's ban on duplicates
    assert lines[core_02 + 2].strip().startswith("bound, Kueue API: at most 20 names")
    assert lines[core_02 + 3].strip().startswith("bound, mkdc: no name twice")
    ext_04 = lines.index(next(line for line in lines if line.startswith("EXT-04 ")))
    assert any(
        "needs Kueue's MultiKueueOrchestratedPreemption off" in line
        for line in lines[ext_04 : ext_04 + 4]
    )


def test_a_reader_that_goes_away_is_an_ordinary_end() -> None:
    """`mkdc checks | head -1`: no traceback once head has what it wanted."""
    proc = subprocess.run(
        f"{shlex.quote(sys.executable)} -m harness.cli checks | head -1",
        shell=True,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.stdout.startswith("CORE-01 ") and proc.stderr == "", proc.stderr


def test_a_second_signal_does_not_cut_the_cleanup_short(monkeypatch, capsys):
    """The first SIGTERM unwinds (so `finally` blocks stop clusters); a second one, as
    `timeout` plus a user both send, only says so."""
    import signal

    from harness import cli

    monkeypatch.setattr(cli, "_stopping", [])
    with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
        cli._terminate(signal.SIGTERM, None)
    cli._terminate(signal.SIGINT, None)  # no exception: the cleanup goes on
    assert "SIGINT: already stopping" in capsys.readouterr().err
