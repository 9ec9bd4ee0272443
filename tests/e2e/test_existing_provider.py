"""The existing provider, for real: the suite runs against clusters it did not start.

A local environment stands in for a vendor's clusters, named as a vendor names them.
`mkdc run --provider existing` is pointed at its kubeconfigs; the reference dispatcher
must pass, and afterwards the clusters must hold nothing the suite created.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cluster import inventory
from harness.providers.local import LocalProvider, running
from tests.e2e.mkdc_cli import assert_conforms, mkdc_run, profile_variant

REFERENCE = "mkdc.example/reference"
OTHER = "example.com/other"
# the quick checks (scenarios of seconds with the reference's 10 s rounds): the e2e tests'
# conformance run of the reference, with no environment of its own
CHECKS = "CORE-01,CORE-03,CORE-04,CORE-07,EXT-05,EXT-06,EXT-07"
VENDOR_NAMES = ["east-cluster", "west-cluster", "gpu-reserved-cluster"]


@pytest.mark.e2e
def test_suite_passes_on_existing_clusters_and_leaves_nothing(selected_versions, tmp_path) -> None:
    """Then a profile naming another dispatcher than the clusters' Kueue expects is refused
    in one line naming both, and leaves nothing either (the same clusters: a second
    environment would cost the suite a bring-up for one refusal)."""
    provider = LocalProvider(
        selected_versions,
        workers=VENDOR_NAMES,
        dispatcher_name=REFERENCE,
        write_mode="admission-policy",
    )
    with running(provider) as env:
        before = inventory.snapshot(env)
        clusters = [f"--cluster={w.name}={w.kubeconfig}" for w in env.workers]
        args = ["--provider", "existing", "--checks", CHECKS]
        args += ["--cluster", f"manager={env.manager.kubeconfig}", *clusters]
        report_dir = tmp_path / "r"
        # three scenarios at a time: they mostly wait out rounds, and this is one of the
        # longest tests of make test
        proc = mkdc_run("reference", report_dir, *args, "-n", "3")
        assert_conforms(proc, report_dir, CHECKS)
        assert (report_dir / "junit.xml").exists() and (report_dir / "report.html").exists()
        assert inventory.added(before, inventory.snapshot(env)) == {}

        proc = mkdc_run(another_dispatcher(tmp_path), tmp_path / "other", *args, timeout=300)
        assert proc.returncode == 2, proc.stderr[-3000:]
        lines = [line for line in proc.stderr.splitlines() if "error" in line]
        assert len(lines) == 1, proc.stderr
        assert REFERENCE in lines[0] and OTHER in lines[0], lines[0]
        assert inventory.added(before, inventory.snapshot(env)) == {}


def another_dispatcher(tmp_path: Path) -> Path:
    """The reference's profile under another dispatcherName."""
    return profile_variant(
        tmp_path / "other.yaml", lambda doc: doc["spec"].update(dispatcherName=OTHER)
    )
