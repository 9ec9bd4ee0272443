"""Unit tests of the reference dispatcher's settings: flags, file, precedence, errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dispatchers.reference.settings import (
    Settings,
    SettingsError,
    load_settings,
    parse_duration,
)
from harness import durations
from harness.profile import available_profiles, load_profile


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "settings.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("10s", 10.0),
        ("2m", 120.0),
        ("1m30s", 90.0),
        ("500ms", 0.5),
        ("1h", 3600.0),
        ("1.5s", 1.5),
        ("45", 45.0),
        ("0.25", 0.25),
        (12, 12.0),
        (2.5, 2.5),
    ],
)
def test_parse_duration_accepts_go_style_and_numbers(value: object, seconds: float) -> None:
    assert parse_duration(value) == pytest.approx(seconds)


@pytest.mark.parametrize("value", ["", "abc", "10x", "s", "1m 30s", "-5s", -1, True, "nan", None])
def test_parse_duration_rejects_garbage(value: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(value)


def test_defaults_are_valid() -> None:
    settings = load_settings([])
    assert settings == Settings()
    assert (settings.round_timeout, settings.step, settings.mode) == (30.0, 1, "cumulative")
    assert settings.state_annotation == "mkdc.example/dispatch-state"
    assert settings.metrics_port == 0 and settings.leader_elect


def test_flags(tmp_path: Path) -> None:
    kubeconfig = write(tmp_path, "apiVersion: v1\n")
    settings = load_settings(
        [
            "--round-timeout=1m30s",
            "--step=2",
            "--mode=exclusive",
            "--tier-label=example.com/tier",
            "--cluster-timeout-annotation=example.com/cluster-timeout",
            "--config-timeout-annotation=example.com/config-timeout",
            "--workload-timeout-annotation=example.com/workload-timeout",
            "--state-annotation=example.com/state",
            "--dispatcher-name=example.com/dispatcher",
            f"--kubeconfig={kubeconfig}",
            "--no-leader-elect",
            "--lease-name=my-lease",
            "--lease-namespace=ops",
            "--lease-duration=20s",
            "--metrics-port=9090",
            "--log-level=debug",
        ]
    )
    assert settings == Settings(
        round_timeout=90.0,
        step=2,
        mode="exclusive",
        tier_label="example.com/tier",
        cluster_timeout_annotation="example.com/cluster-timeout",
        config_timeout_annotation="example.com/config-timeout",
        workload_timeout_annotation="example.com/workload-timeout",
        state_annotation="example.com/state",
        dispatcher_name="example.com/dispatcher",
        kubeconfig=kubeconfig,
        leader_elect=False,
        lease_name="my-lease",
        lease_namespace="ops",
        lease_duration=20.0,
        metrics_port=9090,
        log_level="DEBUG",
    )


def test_file_accepts_flag_and_field_names(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "round-timeout: 2m\nstep: 3\nlease_duration: 30\nleader-elect: false\nmode: exclusive\n",
    )
    settings = load_settings(["--config", path])
    assert (settings.round_timeout, settings.step, settings.lease_duration) == (120.0, 3, 30.0)
    assert settings.mode == "exclusive" and not settings.leader_elect


def test_flags_override_file_and_file_overrides_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, "round-timeout: 2m\nstep: 3\n")
    settings = load_settings(["--config", path, "--step", "2"])
    assert (settings.round_timeout, settings.step, settings.mode) == (120.0, 2, "cumulative")


def test_empty_file_means_defaults(tmp_path: Path) -> None:
    assert load_settings(["--config", write(tmp_path, "")]) == Settings()


@pytest.mark.parametrize(
    ("flag", "value", "field"),
    [
        ("--round-timeout", "soon", "round-timeout"),
        ("--round-timeout", "0s", "round-timeout"),
        ("--step", "0", "step"),
        ("--step", "21", "step"),
        ("--step", "two", "step"),
        ("--mode", "greedy", "mode"),
        ("--tier-label", "not a key", "tier-label"),
        ("--cluster-timeout-annotation", "Bad_Prefix/x", "cluster-timeout-annotation"),
        ("--config-timeout-annotation", "", "config-timeout-annotation"),
        ("--workload-timeout-annotation", "a/b/c", "workload-timeout-annotation"),
        ("--state-annotation", "-x", "state-annotation"),
        ("--state-annotation", "mkdc.example/round-timeout", "state-annotation"),
        ("--dispatcher-name", "", "dispatcher-name"),
        (
            "--dispatcher-name",
            "kueue.x-k8s.io/multikueue-dispatcher-incremental",
            "dispatcher-name",
        ),
        ("--kubeconfig", "/no/such/kubeconfig", "kubeconfig"),
        ("--lease-name", "Upper", "lease-name"),
        ("--lease-namespace", "a.b", "lease-namespace"),
        ("--lease-duration", "500ms", "lease-duration"),
        ("--metrics-port", "70000", "metrics-port"),
        ("--metrics-port", "-1", "metrics-port"),
        ("--log-level", "chatty", "log-level"),
        ("--first-dispatch-workers", "-1", "first-dispatch-workers"),
        ("--escalation-writes", "0", "escalation-writes"),
    ],
)
def test_each_invalid_flag_names_its_field(flag: str, value: str, field: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings([f"{flag}={value}"])
    assert caught.value.field == field
    message = str(caught.value)
    assert message.startswith(f"{field}: ") and "\n" not in message


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("step: 2.5\n", "step"),
        ("step: true\n", "step"),
        ("leader-elect: maybe\n", "leader-elect"),
        ("round-timeout: [1]\n", "round-timeout"),
        ("mode: null\n", "mode"),
        ("colour: blue\n", "colour"),
        ("- a list\n", "config"),
        ("step: [unclosed\n", "config"),
    ],
)
def test_each_invalid_file_value_names_its_field(tmp_path: Path, text: str, field: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings(["--config", write(tmp_path, text)])
    assert caught.value.field == field and "\n" not in str(caught.value)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"^config: cannot read"):
        load_settings(["--config", str(tmp_path / "absent.yaml")])


def test_settings_error_is_a_value_error() -> None:
    assert issubclass(SettingsError, ValueError)


def test_validated_normalises_programmatic_settings() -> None:
    settings = Settings(round_timeout="1m", step="2", log_level="warning").validated()  # type: ignore[arg-type]
    assert (settings.round_timeout, settings.step, settings.log_level) == (60.0, 2, "WARNING")


def test_one_thread_is_always_left_for_escalations() -> None:
    assert Settings().kept_for_first_dispatch == 4
    assert Settings(workers=2).kept_for_first_dispatch == 1
    assert Settings(workers=1).kept_for_first_dispatch == 0
    assert (
        load_settings(["--workers", "8", "--first-dispatch-workers", "8"]).kept_for_first_dispatch
        == 7
    )


REFERENCE_MAIN = ("python", "-m", "dispatchers.reference")


def _reference_profiles() -> list[str]:
    return [
        name
        for name in available_profiles()
        if (run := load_profile(name).run) and run.command[:3] == REFERENCE_MAIN
    ]


def test_profiles_of_the_reference_are_found() -> None:
    assert {"reference", "reference-ha"} <= set(_reference_profiles())


@pytest.mark.parametrize("name", _reference_profiles())
def test_a_reference_profile_claims_what_its_flags_make_the_dispatcher_do(
    name: str, tmp_path: Path
) -> None:
    """In cumulative mode every earlier nominee keeps its copy, and so its live
    ProvisioningRequest: the dispatcher bounds how many workers start autoscaling per
    round (stepSize), not how many hold a request at once, so it claims no
    maxConcurrentProvisioning (reference-ha claimed 1 and failed EXT-02 on a real run)."""
    profile = load_profile(name)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("")
    settings = load_settings(profile.render_command(kubeconfig)[3:])
    assert profile.claims.step_size == settings.step
    assert profile.claims.round_timeout == settings.round_timeout
    if settings.mode == "cumulative":
        assert profile.claims.max_concurrent_provisioning is None


@pytest.mark.parametrize(
    "text",
    ["10s", "5m", "1m30s", "500ms", "1h", "0", "12", 12, 2.5, ".5s", "1.5m", "1e2", "1h2m3s4ms"]
    + ["", "10", "-1s", "10 s", "1_0", "１０", "10x", "s", "1.2.3s", "inf", "nan", None, True],
)
def test_durations_mean_what_the_harness_means(text: object) -> None:
    """Its own parser (the dispatcher runs without the harness) and the harness's agree."""
    try:
        harness_value = durations.parse_duration(text)  # type: ignore[arg-type]
    except ValueError:
        harness_value = None
    try:
        own: float | None = parse_duration(text)
    except ValueError:
        own = None
    assert own == harness_value, text


def test_the_reference_runs_without_the_harness() -> None:
    blocked = "import sys; sys.modules['harness'] = None; import dispatchers.reference.__main__"
    out = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
