"""Kueue's configuration and upstream manifests rewritten for processes on 127.0.0.1."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from harness.cluster import kueue_install, upstream, versions
from harness.cluster.kube import load_documents


@pytest.fixture(scope="module")
def manifests() -> upstream.Manifests:
    return upstream.manifests(versions.select("0.19.2"))


def test_configuration_disables_what_needs_a_pod(tmp_path: Path):
    cfg = kueue_install.kueue_configuration(
        kueue_version="0.19.2",
        webhook_port=9443,
        health_port=8081,
        cert_dir=tmp_path,
        manager=True,
        dispatcher_name="example.com/mine",
        extra={"multiKueue": {"incrementalDispatcherConfig": {"stepSize": 2}}},
    )
    assert cfg["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert cfg["leaderElection"] == {"leaderElect": False}
    assert cfg["internalCertManagement"] == {"enable": False}
    assert cfg["metrics"]["bindAddress"] == "0"
    assert cfg["featureGates"]["VisibilityOnDemand"] is False
    assert cfg["webhook"] == {"port": 9443, "host": "127.0.0.1", "certDir": str(tmp_path)}
    assert cfg["health"]["healthProbeBindAddress"] == "127.0.0.1:8081"
    # extra config merges into, not over, the harness's multiKueue section
    assert cfg["multiKueue"]["dispatcherName"] == "example.com/mine"
    assert cfg["multiKueue"]["incrementalDispatcherConfig"] == {"stepSize": 2}


def test_configuration_keeps_the_release_controller_concurrency(tmp_path: Path, manifests):
    """Without it every Kueue controller runs one reconcile at a time (not as deployed)."""
    release = kueue_install.release_defaults(manifests)
    cfg = kueue_install.kueue_configuration(
        kueue_version="0.19.2",
        webhook_port=1,
        health_port=2,
        cert_dir=tmp_path,
        manager=True,
        release=release,
    )
    concurrency = cfg["controller"]["groupKindConcurrency"]
    assert concurrency == release["controller"]["groupKindConcurrency"]
    assert concurrency["Workload.kueue.x-k8s.io"] > 1


def test_worker_configuration_has_no_dispatcher(tmp_path: Path):
    cfg = kueue_install.kueue_configuration(
        kueue_version="0.19.2", webhook_port=1, health_port=2, cert_dir=tmp_path, manager=False
    )
    assert "multiKueue" not in cfg


def test_webhooks_point_at_loopback_and_skip_other_integrations(manifests):
    ca = b"-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n"
    docs = kueue_install.webhook_configurations(manifests, webhook_port=9555, ca_pem=ca)
    kinds = {d["kind"] for d in docs}
    assert kinds == {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
    paths = []
    for doc in docs:
        for hook in doc["webhooks"]:
            cc = hook["clientConfig"]
            assert "service" not in cc
            assert cc["url"].startswith("https://127.0.0.1:9555/")
            assert base64.b64decode(cc["caBundle"]) == ca
            paths.append(cc["url"])
    assert any("batch-v1-job" in p for p in paths)
    assert any("clusterqueue" in p for p in paths)
    assert not any("v1-pod" in p or "deployment" in p for p in paths)


def test_crds_convert_through_local_webhook(manifests):
    docs = kueue_install.crds(manifests, webhook_port=9555, ca_pem=b"ca")
    by_name = {d["metadata"]["name"]: d for d in docs}
    assert "provisioningrequests.autoscaling.x-k8s.io" in by_name
    conversion = by_name["workloads.kueue.x-k8s.io"]["spec"]["conversion"]
    assert conversion["strategy"] == "Webhook"
    assert conversion["webhook"]["clientConfig"]["url"] == "https://127.0.0.1:9555/convert"
    assert "conversion" not in by_name["admissionchecks.kueue.x-k8s.io"]["spec"]


def test_each_cluster_gets_its_own_webhook_port_from_the_shared_parse(manifests):
    first = kueue_install.crds(manifests, webhook_port=9555, ca_pem=b"ca")
    second = kueue_install.crds(manifests, webhook_port=9666, ca_pem=b"ca")

    def url(docs):
        by_name = {d["metadata"]["name"]: d for d in docs}
        return by_name["workloads.kueue.x-k8s.io"]["spec"]["conversion"]["webhook"]["clientConfig"][
            "url"
        ]

    assert url(first).endswith(":9555/convert") and url(second).endswith(":9666/convert")


def test_schemas_lose_their_descriptions_and_nothing_else():
    schema = {
        "type": "object",
        "description": "a Workload",
        "properties": {
            "description": {"type": "string", "description": "a field named description"},
            "tags": {"type": "array", "items": {"type": "string", "description": "one tag"}},
            "labels": {"type": "object", "additionalProperties": {"description": "v"}},
            "either": {"anyOf": [{"type": "integer", "description": "n"}, {"type": "string"}]},
            "open": {"type": "object", "additionalProperties": True},
            "note": {"type": "object", "default": {"description": "a value, not a schema"}},
        },
        "dependencies": {"a": ["b"]},
        "x-kubernetes-validations": [{"rule": "self.a == 1", "message": "m"}],
    }
    assert kueue_install.without_descriptions(schema) == {
        "type": "object",
        "properties": {
            "description": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {}},
            "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "open": {"type": "object", "additionalProperties": True},
            "note": {"type": "object", "default": {"description": "a value, not a schema"}},
        },
        "dependencies": {"a": ["b"]},
        "x-kubernetes-validations": [{"rule": "self.a == 1", "message": "m"}],
    }


def test_the_installed_crds_keep_every_rule_and_lose_every_description(manifests):
    def count(node, key: str) -> int:
        if isinstance(node, dict):
            return (key in node and isinstance(node[key], str)) + sum(
                count(v, key) for v in node.values()
            )
        return sum(count(v, key) for v in node) if isinstance(node, list) else 0

    shipped = load_documents(manifests.kueue_crds / "kueue.x-k8s.io_workloads.yaml")[0]
    [installed] = [
        d
        for d in kueue_install.crds(manifests, webhook_port=9555, ca_pem=b"ca")
        if d["metadata"]["name"] == "workloads.kueue.x-k8s.io"
    ]

    def schemas(crd):  # printer columns keep theirs: they are not schemas
        return [v["schema"] for v in crd["spec"]["versions"]]

    assert count(schemas(shipped), "description") > 1000
    assert count(schemas(installed), "description") == 0
    assert count(installed, "rule") == count(shipped, "rule") > 30
    assert [v["name"] for v in installed["spec"]["versions"]] == ["v1beta1", "v1beta2"]
