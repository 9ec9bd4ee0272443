"""Kueue's feature gates as a run had them: defaults read from Kueue's source, the
configuration on top, and the gates the checks need set where Kueue knows them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.check_terms import GateNeed
from harness.cluster import feature_gates

SOURCE = """
const (
\t// a comment
\tMultiKueue featuregate.Feature = "MultiKueue"

\tRenamedConst featuregate.Feature = "TheGateName"
\tOrchestrated featuregate.Feature = "MultiKueueOrchestratedPreemption"
)

var defaultVersionedFeatureGates = map[featuregate.Feature]featuregate.VersionedSpecs{
\tMultiKueue: {
\t\t{Version: version.MustParse("0.6"), Default: false, PreRelease: featuregate.Alpha},
\t\t{Version: version.MustParse("0.9"), Default: true, PreRelease: featuregate.Beta},
\t},

\tRenamedConst: {
\t\t{Version: version.MustParse("0.17"), Default: true, PreRelease: featuregate.Beta},
\t\t{Version: version.MustParse("0.19"), Default: false, PreRelease: featuregate.Deprecated},
\t},
\tOrchestrated: {
\t\t{Version: version.MustParse("0.17"), Default: false, PreRelease: featuregate.Alpha},
\t},
}
"""


def test_the_latest_default_of_each_gate_by_its_name() -> None:
    assert feature_gates.parse_defaults(SOURCE) == {
        "MultiKueue": True,  # Alpha off, then Beta on: the later one is in force
        "MultiKueueOrchestratedPreemption": False,
        "TheGateName": False,  # named by its string, not its Go constant
    }


def test_no_table_no_gates(tmp_path: Path) -> None:
    assert feature_gates.parse_defaults("package features\n") == {}
    assert feature_gates.kueue_defaults(tmp_path) == {}


def test_gates_as_run_are_the_defaults_with_the_configuration_on_top() -> None:
    defaults = feature_gates.parse_defaults(SOURCE)
    config = {"featureGates": {"MultiKueue": False, "VisibilityOnDemand": False}}
    assert feature_gates.as_run(defaults, config) == {
        "MultiKueue": False,
        "MultiKueueOrchestratedPreemption": False,
        "TheGateName": False,
        "VisibilityOnDemand": False,
    }


def test_wanted_gates_are_set_only_where_kueue_knows_them_and_the_profile_is_silent() -> None:
    defaults = feature_gates.parse_defaults(SOURCE)
    wanted = {"MultiKueueOrchestratedPreemption": False, "NotInThisKueue": False}
    added = feature_gates.with_wanted({"multiKueue": {"x": 1}}, defaults, wanted)
    # an unknown gate would stop Kueue at start: left out
    assert added == {
        "multiKueue": {"x": 1},
        "featureGates": {"MultiKueueOrchestratedPreemption": False},
    }
    chosen = {"featureGates": {"MultiKueueOrchestratedPreemption": True}}
    assert feature_gates.with_wanted(chosen, defaults, wanted) == chosen  # the profile's choice


def test_a_gate_in_the_other_state_says_why_the_check_cannot_be_decided() -> None:
    need = GateNeed("MultiKueueOrchestratedPreemption", False, "it hides the fan-out")
    assert need.unmet({"MultiKueueOrchestratedPreemption": False}) == ""
    assert need.unmet({}) == ""  # a Kueue without the gate behaves as if it were off
    assert need.unmet(None) == ""  # gates not known (clusters mkdc did not start)
    said = need.unmet({"MultiKueueOrchestratedPreemption": True})
    assert said.startswith("Kueue's feature gate MultiKueueOrchestratedPreemption was on")
    assert said.endswith("it hides the fan-out")


def test_kueue_v0_19_2_gates_read_from_its_module() -> None:
    """The parser reads Kueue's real file: every gate of its table, the MultiKueue ones as
    that release ships them."""
    tree = Path("/root/go/pkg/mod/sigs.k8s.io/kueue@v0.19.2")
    if not (tree / feature_gates.FEATURES_FILE).is_file():
        pytest.skip("Kueue v0.19.2 is not in the Go module cache")
    gates = feature_gates.kueue_defaults(tree)
    text = (tree / feature_gates.FEATURES_FILE).read_text()
    table = text.split("var defaultVersionedFeatureGates", 1)[1].split("\n}\n", 1)[0]
    entries = [line for line in table.splitlines() if re.fullmatch(r"\t\w+: \{", line)]
    assert len(gates) == len(entries) > 50
    assert gates["MultiKueue"] is True
    assert gates["MultiKueueOrchestratedPreemption"] is False  # Alpha in v0.19.2
    assert gates["MultiKueueIncrementalDispatcherConfig"] is True  # Beta since v0.19
