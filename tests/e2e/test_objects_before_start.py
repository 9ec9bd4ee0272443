"""A dispatcher that needs objects before it starts, run from a profile alone: a ConfigMap
of prices made by `spec.run.objects`, and worker Secrets named by its own rule through a
`workerKubeconfigSecret` template. Without the objects it exits at start, and the console
says why; with them it is judged. One plan on one environment."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from tests.e2e.mkdc_cli import mkdc, profile_variant, report_of, results_of

VENV_PYTHON = str(Path(sys.prefix) / "bin" / "python")
READ = {"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get"]}
PRICES = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: prices
data:
  prices.json: '{"east-cluster": 1.5}'
"""


def cost_aware(tmp_path: Path, with_objects: bool) -> Path:
    (tmp_path / "deploy").mkdir(parents=True, exist_ok=True)
    (tmp_path / "deploy" / "prices.yaml").write_text(PRICES)

    def vendor(doc: dict) -> None:
        doc["metadata"]["name"] = "cost-aware"
        run = doc["spec"]["run"]
        run["command"] = [
            VENV_PYTHON,
            "-m",
            "tests.e2e.vendor_like.cost_aware",
            *run["command"][3:],
        ]
        run["rbac"] = {"namespaceRules": [READ]}
        if with_objects:
            run["objects"] = {"manager": [str(tmp_path / "deploy")]}
        doc["spec"]["environment"] = {
            "clusters": ["east-cluster"],
            "clusterScope": "shared",
            "workerKubeconfigSecret": "{cluster|trimSuffix:-cluster}-kc",
        }

    return profile_variant(tmp_path / "cost-aware.yaml", vendor)


@pytest.mark.e2e
def test_objects_made_before_start_let_it_run(selected_versions, tmp_path: Path) -> None:
    without, with_them = tmp_path / "without", tmp_path / "with"
    plan = [
        {"profile": str(cost_aware(without, False)), "reportDir": str(without / "r")},
        {"profile": str(cost_aware(with_them, True)), "reportDir": str(with_them / "r")},
    ]
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan))
    proc = mkdc(["run", "--plan", str(plan_file), "--checks", "CORE-08"])
    assert proc.returncode == 2, proc.stderr[-3000:]  # the worse of the two runs
    [error] = [line for line in proc.stderr.splitlines() if "mkdc: error:" in line]
    assert "at start: error: cannot read ConfigMap kueue-system/prices: 404" in error, error

    assert "made before the dispatcher starts: ConfigMap kueue-system/prices on manager" in (
        proc.stderr
    )
    report = report_of(with_them / "r")
    assert results_of(report)["CORE-08"] == "passed", proc.stderr[-3000:]
    assert report["environment"]["shape"]["workerKubeconfigSecret"] == (
        "{cluster|trimSuffix:-cluster}-kc"
    )
