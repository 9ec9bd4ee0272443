"""Several runs in one `mkdc run`: repeated --profile and plan files, read into runs; runs
that can share an environment are told apart from those that cannot; a bad plan is one
line and exit 2, before anything is built or started."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.orchestrate import runplan
from harness.orchestrate.options import Options
from harness.orchestrate.plan import plan
from harness.orchestrate.run import exit_status
from harness.profile import PROFILES_DIR
from tests.bad_input import expect_one_line, forbid_side_effects, run_cli
from tests.bad_input import sandbox as make_sandbox

BASE = Options("", checks=("CORE-01",))


def test_one_profile_keeps_its_report_dir_and_several_share_a_root() -> None:
    [one] = runplan.for_profiles(["reference"], BASE, None)
    assert one.report_dir == Path("reports/reference") and one.checks == ("CORE-01",)
    [a, b] = runplan.for_profiles(["reference", "x/faulty-duplicate-names.yaml"], BASE, "out")
    assert (a.report_dir, b.report_dir) == (
        Path("out/reference"),
        Path("out/faulty-duplicate-names"),
    )
    assert (a.profile, b.profile) == ("reference", "x/faulty-duplicate-names.yaml")


def test_a_plan_gives_each_run_its_checks_and_folder(tmp_path: Path) -> None:
    plan_file = tmp_path / "plan.yaml"
    entries = [
        {"profile": "faulty-outside-config", "checks": ["CORE-01", "CORE-02"]},
        {"profile": "reference", "checks": "CORE-02, CORE-03", "reportDir": "r/ref"},
        {"profile": "incremental", "skipChecks": ["CORE-09"], "workers": 4},
    ]
    plan_file.write_text(yaml.safe_dump(entries))
    runs = runplan.read(plan_file, BASE, "root")
    assert [r.checks for r in runs] == [
        ("CORE-01", "CORE-02"),
        ("CORE-02", "CORE-03"),
        ("CORE-01",),
    ]
    assert [r.report_dir for r in runs] == [
        Path("root/faulty-outside-config"),
        Path("r/ref"),
        Path("root/incremental"),
    ]
    assert runs[2].skip_checks == ("CORE-09",)
    assert [r.workers for r in runs] == [None, None, 4]  # None: --workers, else the default


def test_external_dispatchers_share_an_environment_and_built_ins_get_their_own(
    tmp_path: Path,
) -> None:
    def key(profile: str, **kw: object) -> object:
        return plan(Options(profile, report_dir=tmp_path / profile, **kw)).environment_key()  # type: ignore[arg-type]

    reference = key("reference")
    assert reference is not None
    assert key("faulty-duplicate-names") == reference  # only the dispatcherName differs
    assert key("reference-ha") == reference  # two replicas: the same clusters serve
    assert key("all-at-once") == key("incremental") != reference  # Kueue writes, no policy
    assert key("reference", workers=3) != reference
    assert key("reference", inject=("kill-worker-apiserver",)) is None  # faults: alone
    existing = ("manager=/k", "worker1=/k")
    assert key("reference", provider="existing", clusters=existing) is None


def test_runs_in_a_shared_cluster_scope_share_an_environment_only_with_each_other(
    tmp_path: Path,
) -> None:
    """The shared scope's config and queue stay for the next run: one that makes its own
    queues per scenario needs an environment without them."""

    def key(name: str, scope: str) -> object:
        doc = yaml.safe_load((PROFILES_DIR / "reference.yaml").read_text())
        doc["metadata"]["name"] = name
        doc["spec"]["environment"] = {"clusterScope": scope}
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(doc))
        return plan(Options(str(path), report_dir=tmp_path / name)).environment_key()

    assert key("a", "shared") == key("b", "shared") != key("c", "per-scenario")


def test_the_worst_exit_of_several_runs_and_an_interrupt_first() -> None:
    assert exit_status([0, 1, 0]) == 1
    assert exit_status([0, 2, 1]) == 2
    assert exit_status([130, 2]) == 130


BAD_PLANS = [
    ("", "must be a non-empty list"),
    ("- profile: reference\n  bogus: 1\n", "unknown field"),
    ("- reference\n", "must be a mapping"),
    ("- checks: [CORE-01]\n", "profile: required"),
    ("- profile: reference\n  checks: 3\n", "checks: must be a list"),
    ("- profile: reference\n  reportDir: ''\n", "reportDir: must be a folder"),
    ("- profile: reference\n  workers: 0\n", "workers: must be a whole number from 1 to 64"),
    ("- profile: reference\n  workers: '3'\n", "workers: must be a whole number from 1 to 64"),
    ("- profile: reference\n  workers: 65\n", "workers: must be a whole number from 1 to 64"),
    ("- profile: reference\n  workers: true\n", "workers: must be a whole number from 1 to 64"),
    ("[unclosed\n", "not YAML"),
    ("- profile: reference\n  checks: [CORE-99]\n", "unknown check id"),
    ("- profile: no-such-profile\n", "no-such-profile"),
    ("- profile: reference\n- profile: reference\n", "same report directory"),
]


@pytest.mark.parametrize(("text", "says"), BAD_PLANS)
def test_a_bad_plan_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str, says: str
) -> None:
    forbid_side_effects(monkeypatch)
    with make_sandbox(tmp_path) as box:
        path = box.write("plan.yaml", text)
        code, out, err = run_cli(["run", "--plan", str(path)])
        assert out == ""
        expect_one_line("plan file", code, err, says)
