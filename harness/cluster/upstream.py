"""Upstream YAML the environments install: Kueue's CRDs and webhooks (from the release's
module or the source tree under test), the ProvisioningRequest CRD, KWOK's stages."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from harness.cluster.gomodules import module_dir
from harness.cluster.versions import Versions, required_version
from harness.errors import UserError


@dataclass(frozen=True)
class Manifests:
    """Upstream YAML read from the module cache of the selected versions."""

    kueue_crds: Path  # folder of CRD YAMLs
    kueue_webhooks: Path  # webhook configurations
    kueue_dir: Path  # module root, for anything else (e.g. admission policies)
    provisioning_request_crd: Path
    kwok_stages: list[Path]


def kueue_dir(v: Versions) -> Path:
    """Where Kueue's manifests and go.mod are read: the release's module, or the source
    tree under test (checked to serve the API mkdc drives)."""
    if v.source is None:
        return module_dir("sigs.k8s.io/kueue", f"v{v.kueue}")
    _require_served_api(Path(v.source.path))
    return Path(v.source.path)


def manifests(v: Versions) -> Manifests:
    kueue = kueue_dir(v)
    autoscaler_version = required_version(
        kueue / "go.mod", "k8s.io/autoscaler/cluster-autoscaler/apis"
    )
    autoscaler = module_dir("k8s.io/autoscaler/cluster-autoscaler/apis", autoscaler_version)
    kwok = module_dir("sigs.k8s.io/kwok", f"v{v.kwok}")
    # "fast" stages make pods run at once; pod-complete comes from the "general" set,
    # which honours the per-pod delay annotation (how long a pod "runs").
    fast, general = kwok / "kustomize/stage/pod/fast", kwok / "kustomize/stage/pod/general"
    stages = [
        kwok / "kustomize/stage/node/fast/node-initialize.yaml",
        fast / "pod-ready.yaml",
        general / "pod-complete.yaml",
        fast / "pod-delete.yaml",
    ]
    found = Manifests(
        kueue_crds=kueue / "config/components/crd/bases",
        kueue_webhooks=kueue / "config/components/webhook/manifests.yaml",
        kueue_dir=kueue,
        provisioning_request_crd=autoscaler
        / "config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml",
        kwok_stages=stages,
    )
    for path in (found.kueue_crds, found.kueue_webhooks, found.provisioning_request_crd, *stages):
        if not path.exists():
            raise UserError(
                f"upstream manifest {path} is missing: run `go clean -modcache` and `mkdc bins`"
            )
    return found


# The Kueue API the harness and the recorder speak (harness.cluster.multikueue.API), which
# a source tree's Workload CRD must serve
KUEUE_API_GROUP, KUEUE_API_VERSION = "kueue.x-k8s.io", "v1beta2"


def _require_served_api(kueue: Path) -> None:
    """A source tree whose Workload CRD does not serve the API the harness speaks cannot
    be judged: said in one line."""
    crd = kueue / f"config/components/crd/bases/{KUEUE_API_GROUP}_workloads.yaml"
    try:
        doc = yaml.safe_load(crd.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise UserError(
            f"Kueue source {kueue}: cannot read its Workload CRD {crd}: {exc}"
        ) from None
    served = [v.get("name") for v in doc.get("spec", {}).get("versions", []) if v.get("served")]
    if KUEUE_API_VERSION not in served:
        raise UserError(
            f"Kueue source {kueue} serves Workloads as {', '.join(map(str, served)) or 'nothing'},"
            f" not {KUEUE_API_GROUP}/{KUEUE_API_VERSION}, the API mkdc drives: judge a tree"
            " of Kueue v0.15 or newer"
        )
