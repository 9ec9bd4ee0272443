"""Kueue's gate in Kueue's form (ci/kueue/): the Prow jobs run the make target, the make
target runs the script, the presubmit is optional and runs on the dispatchers' and
MultiKueue's paths, and every mkdc command of the script parses (bash runs it with `mkdc`
recording its arguments). Its real run against a Kueue clone is in docs/benchmarks.md."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import yaml

from harness.cli import build_parser

KUEUE = Path(__file__).resolve().parent.parent / "ci" / "kueue"
SCRIPT = KUEUE / "hack" / "testing" / "run-multikueue-dispatcher-conformance.sh"
TARGET = "test-multikueue-dispatcher-conformance"


def test_the_jobs_run_the_make_target_which_runs_the_script() -> None:
    jobs = yaml.safe_load(
        (KUEUE / "prow" / "kueue-multikueue-dispatcher-conformance.yaml").read_text()
    )
    [presubmit] = jobs["presubmits"]["kubernetes-sigs/kueue"]
    [periodic] = jobs["periodics"]
    assert presubmit["optional"] is True and presubmit["always_run"] is False
    changed = re.compile(presubmit["run_if_changed"])
    assert changed.search("pkg/controller/workloaddispatcher/incrementaldispatcher.go")
    assert changed.search("pkg/controller/admissionchecks/multikueue/workload.go")
    assert not changed.search("site/content/en/docs/overview.md")
    for job in (presubmit, periodic):
        assert job["spec"]["containers"][0]["args"] == ["make", TARGET]
    assert {"name": "MKDC_FULL", "value": "true"} in periodic["spec"]["containers"][0]["env"]
    make = (KUEUE / "Makefile-multikueue-dispatcher-conformance.mk").read_text()
    assert f"{TARGET}:" in make and "hack/testing/run-multikueue-dispatcher-conformance.sh" in make


def test_every_mkdc_command_of_the_script_parses(tmp_path: Path) -> None:
    mkdc = tmp_path / "mkdc"
    mkdc.write_text('#!/bin/sh\nprintf "MKDC %s\\n" "$*" >> "$CALLS"\n')
    mkdc.chmod(0o755)
    calls = tmp_path / "calls"
    env = {"PATH": "/usr/bin:/bin", "MKDC": str(mkdc), "CALLS": str(calls)}
    env |= {"ARTIFACTS": str(tmp_path / "artifacts"), "MKDC_FULL": "true"}
    subprocess.run(["bash", str(SCRIPT)], env=env, check=True, capture_output=True)
    argvs = [shlex.split(line[5:]) for line in calls.read_text().splitlines()]
    assert [a[0] for a in argvs] == ["prepare", "bins", "run"]  # no report: no summary
    for argv in argvs:
        build_parser().parse_args(argv)
    run = argvs[-1]
    assert "--full" in run and run.count("--profile") == 2
    assert run[run.index("--report-dir") + 1] == str(tmp_path / "artifacts" / "mkdc")
