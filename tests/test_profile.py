"""Dispatcher profiles: built-ins load, every malformed field is one clear line."""

from __future__ import annotations

import copy
import os
import shutil
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cluster import builds
from harness.errors import UserError
from harness.profile import (
    DISPATCHER_ALL_AT_ONCE,
    DISPATCHER_INCREMENTAL,
    PROFILES_DIR,
    available_profiles,
    load_profile,
    resolve_profile,
)

VALID: dict[str, Any] = {
    "apiVersion": "mkdc/v1alpha1",
    "kind": "DispatcherProfile",
    "metadata": {"name": "vendor"},
    "spec": {
        "dispatcherName": "example.com/vendor",
        "implementation": {"organization": "Example", "version": "1.2.3"},
        "kueue": {"multiKueue": {"workerLostTimeout": "1m"}, "featureGates": {"X": True}},
        "nominationWrites": "merge-patch",
        "run": {
            "command": ["python", "-m", "vendor", "--kubeconfig", "{kubeconfig}"],
            "env": {"NS": "{namespace}", "PORT": 8080},
            "replicas": 2,
            "readyTimeout": "90s",
        },
        "environment": {
            "workerClusterQueue": "gpu-cq",
            "resource": "nvidia.com/gpu",
            "workerKubeconfigSecret": "{cluster}-kubeconfig",
            "priorityClasses": ["low", "high"],
            "apiVersion": "v1beta1",
        },
        "knobs": {
            "clusterTimeoutAnnotation": "example.com/timeout",
            "clusterTierLabel": "example.com/tier",
        },
        "claims": {
            "stepSize": 1,
            "roundTimeout": "1m30s",
            "maxConcurrentProvisioning": 1,
            "ordering": "tiers",
            "features": ["BoundedFanOut", "Escalation", "PerClusterTimeout", "HighAvailability"],
        },
    },
}


def write(tmp_path: Path, doc: Any, name: str = "vendor.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc) if not isinstance(doc, str) else doc)
    return path


def mutated(path: str, value: Any) -> dict[str, Any]:
    """VALID with the dotted `path` set to `value` (or deleted when value is DELETE)."""
    doc = copy.deepcopy(VALID)
    *parents, last = path.split(".")
    node = doc
    for key in parents:
        node = node[key]
    if value is DELETE:
        del node[last]
    else:
        node[last] = value
    return doc


DELETE = object()


def test_builtin_profiles_load() -> None:
    assert {"all-at-once", "incremental"} <= set(available_profiles())
    aao = load_profile("all-at-once")
    assert aao.dispatcher_name == DISPATCHER_ALL_AT_ONCE
    assert aao.is_builtin and aao.run is None
    assert aao.claims.step_size == "all" and aao.claims.round_timeout is None
    assert aao.claims.features == ()
    inc = load_profile("incremental")
    assert inc.dispatcher_name == DISPATCHER_INCREMENTAL
    assert inc.claims.step_size == 3 and inc.claims.round_timeout == 300.0
    assert inc.claims.ordering == "config"
    assert inc.claims.features == ("BoundedFanOut", "Escalation", "Ordering")


def test_builtin_dispatcher_names_match_kueue_source() -> None:
    """The constants must be Kueue's exact strings, or Kueue would not dispatch at all."""
    go = shutil.which("go")
    cache = (
        subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True) if go else None
    )
    module = Path(cache.stdout.strip() if cache else "") / "sigs.k8s.io" / "kueue@v0.19.2"
    source = module / "apis" / "config" / "v1beta2" / "configuration_types.go"
    if not go or not source.is_file():
        pytest.skip("Kueue module source not in the Go module cache")
    text = source.read_text()
    assert f'"{DISPATCHER_ALL_AT_ONCE}"' in text
    assert f'"{DISPATCHER_INCREMENTAL}"' in text


def test_incremental_step_profile_configures_the_step_it_claims() -> None:
    """The claim must match what the profile sets in Kueue's configuration, or the
    fan-out checks would judge Kueue against a step it was never given."""
    step2 = load_profile("incremental-step2")
    assert step2.dispatcher_name == DISPATCHER_INCREMENTAL
    configured = step2.kueue["multiKueue"]["incrementalDispatcherConfig"]["stepSize"]
    assert configured == step2.claims.step_size == 2


@pytest.mark.parametrize("name", ["all-at-once", "incremental"])
def test_builtin_profiles_say_claims_are_kueues(name: str) -> None:
    text = (PROFILES_DIR / f"{name}.yaml").read_text()
    assert "claims below are what Kueue's built-in does" in text


def test_valid_profile_loads(tmp_path: Path) -> None:
    profile = load_profile(write(tmp_path, VALID))
    assert profile.name == "vendor"
    assert profile.nomination_writes == "merge-patch"
    assert profile.kueue == {
        "multiKueue": {"workerLostTimeout": "1m"},
        "featureGates": {"X": True},
    }
    assert profile.run is not None
    assert profile.run.replicas == 2 and profile.run.ready_timeout == 90.0
    assert profile.run.env == {"NS": "{namespace}", "PORT": "8080"}
    assert profile.environment.priority_classes == ("low", "high")
    assert profile.environment.api_version == "v1beta1"
    assert profile.knobs.cluster_tier_label == "example.com/tier"
    assert profile.claims.round_timeout == 90.0
    assert profile.claims.claims("Escalation") and not profile.claims.claims("Ordering")
    assert profile.claims.to_dict()["stepSize"] == 1


def test_defaults_when_optional_sections_absent(tmp_path: Path) -> None:
    doc = {
        "apiVersion": "mkdc/v1alpha1",
        "kind": "DispatcherProfile",
        "metadata": {"name": "bare"},
        "spec": {"dispatcherName": "example.com/bare"},
    }
    profile = load_profile(write(tmp_path, doc))
    assert profile.nomination_writes is None and profile.run is None
    assert profile.claims.step_size == "all" and profile.claims.ordering == "none"
    assert profile.environment.worker_cluster_queue is None


@pytest.mark.parametrize(
    ("path", "value", "field", "words"),
    [
        ("apiVersion", "mkdc/v2", "apiVersion", "mkdc/v1alpha1"),
        ("kind", "Profile", "kind", "DispatcherProfile"),
        ("metadata.name", DELETE, "metadata.name", "required"),
        ("metadata.name", "a b/c", "metadata.name", "letters"),
        ("spec.dispatcherName", DELETE, "spec.dispatcherName", "required"),
        ("spec.dispatcherName", 7, "spec.dispatcherName", "string"),
        ("spec.claimz", {}, "spec.claimz", "unknown field"),
        ("spec.run.comand", ["x"], "spec.run.comand", "unknown field"),
        ("spec.knobs.tier", "x", "spec.knobs.tier", "unknown field"),
        ("spec.environment.queue", "x", "spec.environment.queue", "unknown field"),
        ("spec.environment.apiVersion", "beta1", "spec.environment.apiVersion", "v1beta1"),
        (
            "spec.environment.workerKubeconfigSecret",
            "{worker}-kc",
            "spec.environment.workerKubeconfigSecret",
            "{worker}",
        ),
        ("spec.kueue.flags", {}, "spec.kueue.flags", "unknown field"),
        ("spec.kueue.featureGates", {"A": "yes"}, "spec.kueue.featureGates.A", "true or false"),
        (
            "spec.kueue.multiKueue",
            {"dispatcherName": "x"},
            "spec.kueue.multiKueue.dispatcherName",
            "spec.dispatcherName",
        ),
        ("spec.nominationWrites", "apply", "spec.nominationWrites", "admission-policy"),
        ("spec.run.command", [], "spec.run.command", "empty"),
        ("spec.run.command", "python -m x", "spec.run.command", "list"),
        ("spec.run.command", [3], "spec.run.command[0]", "string"),
        ("spec.run.command", ["no-such-binary-mkdc"], "spec.run.command[0]", "not found"),
        ("spec.run.command", ["./missing/bin"], "spec.run.command[0]", "not found"),
        ("spec.run.command", ["x", "{kubconfig}"], "spec.run.command[1]", "{kubconfig}"),
        ("spec.run.command", ["{kubeconfig}"], "spec.run.command[0]", "{kubeconfig}"),
        ("spec.run.env", {"A": ["x"]}, "spec.run.env.A", "string"),
        ("spec.run.replicas", 0, "spec.run.replicas", "at least 1"),
        ("spec.run.replicas", True, "spec.run.replicas", "integer"),
        ("spec.run.readyTimeout", "soon", "spec.run.readyTimeout", "not a positive duration"),
        ("spec.run.podEnvironment", "yes", "spec.run.podEnvironment", "true or false"),
        ("spec.run.rbac", {"rules": []}, "spec.run.rbac.rules", "unknown field"),
        ("spec.run.rbac", {"clusterRules": {}}, "spec.run.rbac.clusterRules", "list"),
        (
            "spec.run.rbac",
            {"namespaceRules": [{"apiGroups": [""], "resources": ["secrets"]}]},
            "spec.run.rbac.namespaceRules[0].verbs",
            "at least one verb",
        ),
        (
            "spec.run.rbac",
            {"namespaceRules": [{"resources": ["secrets"], "verbs": ["get"]}]},
            "spec.run.rbac.namespaceRules[0].apiGroups",
            "core group",
        ),
        (
            "spec.run.rbac",
            {"namespaceRules": [{"nonResourceURLs": ["/x"], "verbs": ["get"]}]},
            "spec.run.rbac.namespaceRules[0].nonResourceURLs",
            "unknown field",
        ),
        (
            "spec.run.rbac",
            {"clusterRules": [{"apiGroups": [""], "verbs": ["get"]}]},
            "spec.run.rbac.clusterRules[0]",
            "resources",
        ),
        (
            "spec.run.rbac",
            {"clusterRules": [{"apiGroups": "", "resources": ["x"], "verbs": ["get"]}]},
            "spec.run.rbac.clusterRules[0].apiGroups",
            "list",
        ),
        ("spec.environment.clusters", [], "spec.environment.clusters", "must not be empty"),
        ("spec.environment.clusterScope", "global", "spec.environment.clusterScope", "shared"),
        ("spec.environment.clusters", ["East"], "spec.environment.clusters[0]", "DNS label"),
        ("spec.environment.clusters", ["manager"], "spec.environment.clusters[0]", "manager"),
        ("spec.environment.clusters", ["a", "a"], "spec.environment.clusters[1]", "duplicate"),
        (
            "spec.environment.workerKubeconfigSecret",
            "{cluster|chop:-x}",
            "spec.environment.workerKubeconfigSecret",
            "unknown filter 'chop'",
        ),
        (
            "spec.environment.workerKubeconfigSecret",
            "{cluster|upper}-kc",
            "spec.environment.workerKubeconfigSecret",
            "gives 'WORKER-1-kc' for cluster 'worker-1': not a Secret name",
        ),
        (
            "spec.environment.workerKubeconfigSecret",
            "shared-kubeconfig",
            "spec.environment.workerKubeconfigSecret",
            "must use {cluster}",
        ),
        (
            "spec.claims.roundTimeout",
            "10 sec",
            "spec.claims.roundTimeout",
            "not a positive duration",
        ),
        ("spec.claims.roundTimeout", 0, "spec.claims.roundTimeout", "positive"),
        ("spec.claims.stepSize", 0, "spec.claims.stepSize", ">= 1"),
        ("spec.claims.stepSize", "some", "spec.claims.stepSize", '"all"'),
        (
            "spec.claims.maxConcurrentProvisioning",
            -1,
            "spec.claims.maxConcurrentProvisioning",
            "at least",
        ),
        ("spec.claims.ordering", "random", "spec.claims.ordering", "alphabetical"),
        (
            "spec.claims.features",
            ["BoundedFanOut", "Foo"],
            "spec.claims.features[1]",
            'unknown feature "Foo" (known: BoundedFanOut,',
        ),
        (
            "spec.claims.features",
            ["Escalation", "Escalation"],
            "spec.claims.features[1]",
            "duplicate",
        ),
        ("spec.claims.roundTimeout", None, "spec.claims.features[1]", "roundTimeout"),
        ("spec.knobs.clusterTimeoutAnnotation", DELETE, "spec.claims.features[2]", "Annotation"),
        ("spec.knobs.clusterTierLabel", DELETE, "spec.claims.ordering", "clusterTierLabel"),
        ("spec.run.replicas", 1, "spec.claims.features[3]", "replicas >= 2"),
        ("spec.claims.stepSize", "all", "spec.claims.features[0]", "integer"),
        ("spec.run", DELETE, "spec.claims.features[3]", "replicas >= 2"),
        ("spec.run.goBuild", "no-such-folder", "spec.run.goBuild", "with a go.mod"),
        ("spec.run.command", ["{binary}"], "spec.run.command[0]", "needs spec.run.goBuild"),
    ],
)
def test_validation_error_names_the_field(
    tmp_path: Path, path: str, value: Any, field: str, words: str
) -> None:
    file = write(tmp_path, mutated(path, value))
    with pytest.raises(UserError) as err:
        load_profile(file)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("profile ") and "vendor.yaml" in message
    assert f": {field}: " in message, message
    assert words in message, message


def test_ordering_feature_needs_an_ordering(tmp_path: Path) -> None:
    doc = mutated("spec.claims.ordering", "none")
    doc["spec"]["claims"]["features"] = ["Ordering"]
    with pytest.raises(UserError, match=r"spec\.claims\.features\[0\]: Ordering needs"):
        load_profile(write(tmp_path, doc))


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("a: [1, 2\n", "not valid YAML"),
        ("- 1\n- 2\n", "must be a mapping"),
        ("apiVersion: mkdc/v1alpha1\napiVersion: mkdc/v1alpha1\n", "duplicate key"),
    ],
)
def test_malformed_documents(tmp_path: Path, text: str, words: str) -> None:
    with pytest.raises(UserError) as err:
        load_profile(write(tmp_path, text))
    assert "\n" not in str(err.value) and words in str(err.value)


def test_render_command_and_env(tmp_path: Path) -> None:
    doc = mutated(
        "spec.run.command",
        ["python", "-m", "vendor", "--kubeconfig={kubeconfig}", "{dispatcher_name}", '{"a": 1}'],
    )
    profile = load_profile(write(tmp_path, doc))
    argv = profile.render_command(tmp_path / "kc", namespace="kueue-test")
    assert argv == [
        sys.executable,
        "-m",
        "vendor",
        f"--kubeconfig={tmp_path / 'kc'}",
        "example.com/vendor",
        '{"a": 1}',
    ]
    assert profile.render_env("/kc", "kueue-test") == {"NS": "kueue-test", "PORT": "8080"}


def test_relative_executable_resolves_against_profile_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = tmp_path / "bin" / "dispatch"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    file = write(tmp_path, mutated("spec.run.command", ["./bin/dispatch", "{namespace}"]))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    profile = load_profile(file)
    assert profile.render_command("/kc") == [str(exe.resolve()), "kueue-system"]


def test_bare_executable_found_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = tmp_path / "mkdc-test-dispatcher"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    profile = load_profile(write(tmp_path, mutated("spec.run.command", [exe.name])))
    assert profile.render_command("/kc") == [str(exe)]


def test_render_without_run_is_a_user_error() -> None:
    with pytest.raises(UserError):
        load_profile("all-at-once").render_command("/kc")
    assert load_profile("all-at-once").render_env("/kc") == {}


def test_resolve_by_name_and_path(tmp_path: Path) -> None:
    assert resolve_profile("incremental") == PROFILES_DIR / "incremental.yaml"
    file = write(tmp_path, VALID)
    assert resolve_profile(str(file)) == file
    assert resolve_profile(file) == file


def test_resolve_unknown_name_lists_available() -> None:
    with pytest.raises(UserError) as err:
        resolve_profile("no-such-profile")
    assert "all-at-once" in str(err.value) and "incremental" in str(err.value)
    assert "\n" not in str(err.value)


def test_resolve_missing_path(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such file"):
        resolve_profile(tmp_path / "nope.yaml")


def test_kueue_admission_variant_differs_from_reference_only_in_how_it_writes() -> None:
    base, variant = load_profile("reference"), load_profile("reference-kueue-admission")
    assert variant.nomination_writes == "kueue-admission" != base.nomination_writes
    assert variant.claims == base.claims and variant.knobs == base.knobs
    assert variant.dispatcher_name == base.dispatcher_name
    assert base.run is not None and variant.run is not None
    swapped = ["kueue-admission" if arg == "admission-policy" else arg for arg in base.run.command]
    assert list(variant.run.command) == swapped


def test_pod_environment_is_the_default_and_can_be_turned_off(tmp_path: Path) -> None:
    on = load_profile(write(tmp_path, VALID)).run
    assert on is not None and on.pod_environment is True
    off = load_profile(write(tmp_path, mutated("spec.run.podEnvironment", False))).run
    assert off is not None and off.pod_environment is False


def test_declared_privileges_and_cluster_names_load(tmp_path: Path) -> None:
    secrets = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]}
    nodes = {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}
    doc = mutated("spec.run.rbac", {"namespaceRules": [secrets], "clusterRules": [nodes]})
    doc["spec"]["environment"]["clusters"] = ["east-cluster", "west-cluster"]
    doc["spec"]["environment"]["clusterScope"] = "shared"
    profile = load_profile(write(tmp_path, doc))
    assert profile.environment.cluster_scope == "shared"
    assert load_profile(write(tmp_path, VALID)).environment.cluster_scope == "per-scenario"
    assert profile.run is not None
    assert profile.run.rbac.namespace_rules == (secrets,)
    assert profile.run.rbac.cluster_rules == (nodes,)
    assert profile.environment.clusters == ("east-cluster", "west-cluster")
    plain = load_profile(write(tmp_path, VALID)).run
    assert plain is not None and not plain.rbac


def test_a_virtualenv_interpreter_keeps_its_path(tmp_path: Path) -> None:
    """bin/python of a virtualenv is a symlink to the system interpreter; started through
    the resolved target it would not see the virtualenv's packages."""
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").symlink_to(sys.executable)
    doc = mutated("spec.run.command", [str(venv_bin / "python"), "-m", "vendor"])
    profile = load_profile(write(tmp_path, doc))
    assert profile.render_command("/kc")[0] == str(venv_bin / "python")
    relative = mutated("spec.run.command", ["venv/bin/python", "-m", "vendor"])
    profile = load_profile(write(tmp_path, relative))
    assert profile.render_command("/kc")[0] == str(venv_bin / "python")


def test_go_build_fills_binary_with_the_cached_build_of_this_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MKDC_CACHE_DIR", str(tmp_path / "cache"))
    module = tmp_path / "vendor-dispatcher"
    module.mkdir()
    (module / "go.mod").write_text("module example.com/vendor\n")
    (module / "main.go").write_text("package main\n\nfunc main() {}\n")
    doc = mutated("spec.run.command", ["{binary}", "--config={profile_dir}/settings.yaml"])
    doc["spec"]["run"]["goBuild"] = "vendor-dispatcher"  # relative to the profile
    profile = load_profile(write(tmp_path, doc))  # not built yet, and that is fine here
    assert profile.run is not None and profile.run.go_build == module.resolve()
    binary = builds.go_module_binary(module.resolve())
    assert binary.parent.parent == tmp_path / "cache" / "bin" and binary.name == module.name
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    assert profile.render_command("/kc") == [
        str(binary),
        f"--config={tmp_path.resolve()}/settings.yaml",
    ]
    assert profile.shown_command() == f"{binary} --config={tmp_path.resolve()}/settings.yaml"
    (module / "README.md").write_text("docs\n")
    assert builds.go_module_binary(module.resolve()) == binary  # not a Go source
    (module / "main.go").write_text("package main\n\nfunc main() { println() }\n")
    assert builds.go_module_binary(module.resolve()) != binary  # an edit is a new build
    # ... yet a run keeps the binary it built, whatever is edited while it runs
    built = replace(profile, run=replace(profile.run, built=binary))
    assert built.render_command("/kc")[0] == str(binary)


def test_the_shown_command_keeps_per_replica_values_as_placeholders(tmp_path: Path) -> None:
    profile = load_profile(write(tmp_path, VALID))
    assert profile.shown_command() == "python -m vendor --kubeconfig {kubeconfig}"
