"""Kueue as a plain process: its configuration, CRDs and webhooks pointed at 127.0.0.1.

The upstream manifests come from the module cache of the selected Kueue version.
Webhook and conversion clientConfigs are rewritten from an in-cluster Service to
`https://127.0.0.1:PORT/...` with the run's CA, since there is no Service here.
"""

from __future__ import annotations

import base64
import copy
import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from harness.cluster import feature_gates
from harness.cluster.kube import load_documents
from harness.cluster.upstream import Manifests

NAMESPACE = "kueue-system"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
# where an install keeps Kueue's configuration: this ConfigMap, under this key
CONFIG_MAP, CONFIG_KEY = "kueue-manager-config", "controller_manager_config.yaml"
# Kueue's webhooks for objects we use; the pod/deployment/... webhooks of disabled
# integrations would otherwise intercept every pod of the cluster.
_KEEP_WEBHOOK_PATHS = re.compile(r"kueue-x-k8s-io|batch-v1-job")


def config_api_version(kueue_version: str) -> str:
    """Kueue's Configuration API: v1beta2 from 0.15, v1beta1 before."""
    major, minor = (int(x) for x in kueue_version.split(".")[:2])
    return (
        "config.kueue.x-k8s.io/v1beta2"
        if (major, minor) >= (0, 15)
        else "config.kueue.x-k8s.io/v1beta1"
    )


def release_defaults(man: Manifests) -> dict[str, Any]:
    """The controller_manager_config.yaml Kueue's release ships (from the module cache),
    read once per process for every cluster. Callers must not change it."""
    return _read_once(man.kueue_dir / "config/components/manager" / CONFIG_KEY)


@functools.cache
def _read_once(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text()) or {}


def kueue_configuration(
    *,
    kueue_version: str,
    webhook_port: int,
    health_port: int,
    cert_dir: Path,
    manager: bool,
    dispatcher_name: str | None = None,
    extra: dict[str, Any] | None = None,
    release: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The Configuration for one kueue process (manager or worker).

    `release` is the release's shipped configuration: its controller concurrency is
    kept, as Kueue's own deployment does; without it every Kueue controller runs one
    reconcile at a time, and one scenario's slow reconciles delay every other's."""
    cfg: dict[str, Any] = {
        "apiVersion": config_api_version(kueue_version),
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"port": webhook_port, "host": "127.0.0.1", "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "clientConnection": {"qps": 200, "burst": 400},
        "integrations": {"frameworks": ["batch/job"]},
        "featureGates": {"VisibilityOnDemand": False},
    }
    if release and "controller" in release:
        cfg["controller"] = copy.deepcopy(release["controller"])
    if manager:
        multikueue: dict[str, Any] = {"gcInterval": "30s", "workerLostTimeout": "2m"}
        if dispatcher_name:
            multikueue["dispatcherName"] = dispatcher_name
        cfg["multiKueue"] = multikueue
    return deep_merge(cfg, extra or {})


def deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _conversion_patched_crds(manifests: Manifests) -> set[str]:
    """CRD names Kueue's kustomization wires to its conversion webhook."""
    crd_dir = manifests.kueue_crds.parent
    kustomization = yaml.safe_load((crd_dir / "kustomization.yaml").read_text())
    names = set()
    for patch in kustomization.get("patches") or []:
        path = patch.get("path", "") if isinstance(patch, dict) else str(patch)
        if "webhook_in_" in path:
            doc = yaml.safe_load((crd_dir / path).read_text())
            names.add(doc["metadata"]["name"])
    return names


def _url_client_config(port: int, path: str, ca_pem: bytes) -> dict[str, Any]:
    return {
        "url": f"https://127.0.0.1:{port}{path}",
        "caBundle": base64.b64encode(ca_pem).decode(),
    }


@functools.cache
def _upstream_crds(folder: Path, provisioning_request_crd: Path) -> tuple[dict[str, Any], ...]:
    """The CRD documents as shipped, less their schemas' descriptions, parsed once per
    process for every cluster (the module cache is read-only). Callers must not change them."""
    docs = [doc for path in sorted(folder.glob("*.yaml")) for doc in load_documents(path)]
    docs += load_documents(provisioning_request_crd)
    for doc in docs:
        for version in doc["spec"].get("versions") or []:
            if "schema" in version:
                version["schema"]["openAPIV3Schema"] = without_descriptions(
                    version["schema"]["openAPIV3Schema"]
                )
    return tuple(docs)


# JSONSchemaProps keywords whose value is a schema or a list of schemas, and those whose
# value maps names to them (a dependency may also be a list of property names).
_SUBSCHEMAS = ("items", "additionalProperties", "additionalItems", "not", "allOf", "anyOf", "oneOf")
_NAMED_SUBSCHEMAS = ("properties", "patternProperties", "definitions", "dependencies")


def without_descriptions(schema: Any) -> Any:
    """An OpenAPI v3 schema without its `description` texts, as controller-gen writes it
    with `crd:maxDescLen=0`. Kueue's Workload CRD embeds the Pod template's schema for
    two API versions, 1.4 MB of YAML, three quarters of it prose: every apiserver
    decodes, copies and converts it several times while the CRD is established. No
    request is served differently without it (validation, defaulting, pruning and CEL
    rules never read a description); only OpenAPI documents and `kubectl explain` lose
    their text, and the apiservers' bring-up takes less CPU (docs/benchmarks.md). Only
    schema keywords are followed, so a `default` or `example` value keeps any field of
    its own."""
    if not isinstance(schema, dict):
        return schema  # a boolean additionalProperties, or a dependency's property names
    return {k: _stripped(k, v) for k, v in schema.items() if k != "description"}


def _stripped(keyword: str, value: Any) -> Any:
    if keyword in _SUBSCHEMAS:
        return _each(value)
    if keyword in _NAMED_SUBSCHEMAS and isinstance(value, dict):
        return {name: _each(v) for name, v in value.items()}
    return value


def _each(value: Any) -> Any:
    """A schema or a list of them, stripped."""
    if isinstance(value, list):
        return [without_descriptions(v) for v in value]
    return without_descriptions(value)


def crds(manifests: Manifests, *, webhook_port: int, ca_pem: bytes) -> list[dict[str, Any]]:
    """Kueue's CRDs (conversion via the local webhook) and the ProvisioningRequest CRD."""
    converted = _conversion_patched_crds(manifests)
    conversion = {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": _url_client_config(webhook_port, "/convert", ca_pem),
            "conversionReviewVersions": ["v1"],
        },
    }
    return [
        {**doc, "spec": {**doc["spec"], "conversion": conversion}}
        if doc["metadata"]["name"] in converted
        else doc
        for doc in _upstream_crds(manifests.kueue_crds, manifests.provisioning_request_crd)
    ]


def webhook_configurations(
    manifests: Manifests, *, webhook_port: int, ca_pem: bytes
) -> list[dict[str, Any]]:
    """Kueue's webhook configurations, kept to our objects, pointed at 127.0.0.1."""
    out = []
    for doc in load_documents(manifests.kueue_webhooks):
        hooks = []
        for hook in doc.get("webhooks") or []:
            path = hook["clientConfig"]["service"]["path"]
            if _KEEP_WEBHOOK_PATHS.search(path):
                hook["clientConfig"] = _url_client_config(webhook_port, path, ca_pem)
                hooks.append(hook)
        doc["metadata"]["name"] = "kueue-" + doc["metadata"]["name"]
        doc["webhooks"] = hooks
        out.append(doc)
    return out


# How an external dispatcher's nominations coexist with Kueue's own status writes.
ADMISSION_POLICY = "admission-policy"  # Kueue's MutatingAdmissionPolicy clears stale nominations
MERGE_PATCH = "merge-patch"  # Kueue's WorkloadRequestUseMergePatch gate on
KUEUE_ADMISSION = "kueue-admission"  # the dispatcher applies as Kueue's own field manager
WRITE_MODES = (ADMISSION_POLICY, MERGE_PATCH, KUEUE_ADMISSION)


def admission_policy_path(manifests: Manifests) -> Path:
    return manifests.kueue_dir / "config/components/map/manifests.yaml"


def write_mode_supported(mode: str, manifests: Manifests, kubernetes_minor: int) -> str | None:
    """None when the mode works on these versions, else why not (one line)."""
    if mode == ADMISSION_POLICY:
        if not admission_policy_path(manifests).exists():
            return (
                "this Kueue ships no clear-nominated-cluster-names MutatingAdmissionPolicy "
                "(v0.18.6+, v0.19.2+): use a profile whose nominationWrites is kueue-admission "
                "(e.g. reference-kueue-admission)"
            )
        if kubernetes_minor < 36:
            return "MutatingAdmissionPolicy admissionregistration.k8s.io/v1 needs Kubernetes 1.36+"
    elif mode not in WRITE_MODES:
        return f"unknown mode {mode!r} (known: {', '.join(WRITE_MODES)})"
    return None


def default_write_mode(manifests: Manifests, kubernetes_minor: int) -> str:
    """admission-policy where the versions support it, else kueue-admission."""
    if write_mode_supported(ADMISSION_POLICY, manifests, kubernetes_minor) is None:
        return ADMISSION_POLICY
    return KUEUE_ADMISSION


def write_mode_config(mode: str) -> dict[str, Any]:
    """Extra Kueue configuration a mode needs."""
    return {"featureGates": {"WorkloadRequestUseMergePatch": True}} if mode == MERGE_PATCH else {}


def manager_extra(
    manifests: Manifests, extra: dict[str, Any], mode: str, wanted_gates: Mapping[str, bool]
) -> dict[str, Any]:
    """The manager's extra Kueue configuration: the profile's, what the write mode needs,
    and the feature gates the checks need set so where this Kueue knows them."""
    merged = deep_merge(extra, write_mode_config(mode))
    defaults = feature_gates.kueue_defaults(manifests.kueue_dir)
    return feature_gates.with_wanted(merged, defaults, wanted_gates)


def gates_as_run(manifests: Manifests, config: Mapping[str, Any]) -> dict[str, bool]:
    """The feature gates of a Kueue started with `config`: its version's defaults, read
    from its source, with the configuration's on top."""
    return feature_gates.as_run(feature_gates.kueue_defaults(manifests.kueue_dir), config)


def admission_policy_documents(manifests: Manifests) -> list[dict[str, Any]]:
    return load_documents(admission_policy_path(manifests))


def manager_config_map(config: dict[str, Any], kueue_version: str) -> dict[str, Any]:
    """Kueue's configuration where a real install keeps it, so tools can read it back."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": CONFIG_MAP,
            "namespace": NAMESPACE,
            "labels": {"app.kubernetes.io/version": f"v{kueue_version}"},
        },
        "data": {CONFIG_KEY: yaml.safe_dump(config, sort_keys=False)},
    }
