"""Dispatchers that fail at start, each in a way vendors' do: the one line on the console
quotes the log line that says why (not the last frame of a stack trace), and a port taken
on a shared network comes with its fix. One plan on one environment: each failure ends
only its own run."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.e2e.mkdc_cli import PROFILES, mkdc, profile_variant

PANICS = Path(__file__).parent / "vendor_like" / "panics"


def panicking_go(tmp_path: Path) -> Path:
    def panics(doc: dict) -> None:
        doc["metadata"]["name"] = "panics"
        doc["spec"]["run"].update(goBuild=str(PANICS), command=["{binary}"], env={})

    return profile_variant(tmp_path / "panics.yaml", panics, base="example-go")


def fixed_ports_on_the_host(tmp_path: Path) -> Path:
    """The Go example with controller-runtime's default ports, two replicas, and the host's
    network (as a Pod with hostNetwork): the second replica finds the ports taken."""
    settings = yaml.safe_load((PROFILES.parent / "example-go" / "settings.yaml").read_text())
    settings.update(metricsBindAddress=":8080", healthProbeBindAddress=":8081")
    (tmp_path / "settings.yaml").write_text(yaml.safe_dump(settings))

    def on_the_host(doc: dict) -> None:
        doc["metadata"]["name"] = "host-network"
        doc["spec"]["run"].update(replicas=2, hostNetwork=True)
        doc["spec"]["run"]["env"]["DISPATCHER_CONFIG"] = str(tmp_path / "settings.yaml")

    return profile_variant(tmp_path / "host-network.yaml", on_the_host, base="example-go")


@pytest.mark.e2e
def test_each_start_failure_says_its_cause(selected_versions, tmp_path: Path) -> None:
    plan = [
        {"profile": str(panicking_go(tmp_path)), "reportDir": str(tmp_path / "panics")},
        {"profile": str(fixed_ports_on_the_host(tmp_path)), "reportDir": str(tmp_path / "host")},
    ]
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan))
    proc = mkdc(["run", "--plan", str(plan_file), "--checks", "CORE-08", "--workers", "1"])
    assert proc.returncode == 2, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if "mkdc: error:" in line]
    assert len(errors) == 2, proc.stderr[-3000:]
    panicked, port_taken = errors
    assert "at start: panic: prices ConfigMap not configured" in panicked, panicked
    assert "goroutine" not in panicked and "main.go" not in panicked, panicked
    assert "address already in use" in port_taken, port_taken
    assert "perhaps by another replica" in port_taken and "one replica" in port_taken
    assert proc.stderr.count("environment ready in") == 1
