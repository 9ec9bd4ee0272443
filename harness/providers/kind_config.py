"""What the kind provider writes: the kind cluster configuration (node image, kubeadm
patches, the manager's audit log), Kueue's configuration and the pins of its Deployment,
KWOK's stages, and the kubeconfigs that name a worker from inside and outside kind.
Pure: every function renders a value, nothing runs."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import yaml

from harness.cluster import audit, kueue_install, multikueue, upstream
from harness.cluster.versions import Versions
from harness.errors import UserError

# kind-configs/ at the checkout's top, their one source; an installed mkdc has them as
# the package data of harness.kind_configs, mapped from there (pyproject.toml)
_SHIPPED = Path(__file__).resolve().parents[1] / "kind_configs"
CONFIG_DIR = _SHIPPED if _SHIPPED.is_dir() else Path(__file__).resolve().parents[2] / "kind-configs"


NS = kueue_install.NAMESPACE
KUEUE_DEPLOYMENT = "kueue-controller-manager"


CONTROL_PLANE = "node-role.kubernetes.io/control-plane"
HASH_ANNOTATION = "mkdc.x-k8s.io/config-hash"
INTERNAL, EXTERNAL = "internal", "external"


# Kubernetes 1.35+ kubelets refuse a cgroup v1 host unless told otherwise.
CGROUP_V1_PATCH = "kind: KubeletConfiguration\nfailCgroupV1: false\n"
# etcd without fsync, as on the local provider: a throwaway test cluster loses nothing
# it needs on a crash, and several clusters' fsyncs on one disk made etcd time out
# requests while Kueue's CRDs were applied ("etcdserver: request timed out").
ETCD_NO_FSYNC_PATCH = (
    "kind: ClusterConfiguration\netcd:\n  local:\n    extraArgs:\n"
    '    - name: unsafe-no-fsync\n      value: "true"\n'
)


AUDIT_DIR = "/var/log/mkdc-audit"  # in the manager's node, a folder of the run directory
AUDIT_POLICY_FILE, AUDIT_LOG_FILE = "audit-policy.yaml", "audit.log"


def node_image(v: Versions) -> str:
    return f"kindest/node:v{v.kubernetes}"


def built_node_patches(v: Versions) -> list[str]:
    """kubeadm patches for a node image built here: our etcd's and CoreDNS's own tags
    (the images in the node's store; nothing is pulled)."""
    return [
        "kind: InitConfiguration\nskipPhases: [preflight]\n",
        f"kind: ClusterConfiguration\netcd:\n  local:\n    imageTag: {v.etcd}-0\n"
        f"dns:\n  imageTag: v{v.coredns}\n",
    ]


def audit_patch() -> str:
    """The manager's kube-apiserver keeps an audit log, as the local provider's does, in
    a folder of the host mounted into the node (AUDIT_DIR): the recorder tails it there."""
    args = {
        "audit-policy-file": f"{AUDIT_DIR}/{AUDIT_POLICY_FILE}",
        "audit-log-path": f"{AUDIT_DIR}/{AUDIT_LOG_FILE}",
        "audit-log-format": "json",
        "audit-log-maxbackup": "0",
    }
    server = {
        "extraArgs": [{"name": k, "value": v} for k, v in args.items()],
        "extraVolumes": [
            {"name": "mkdc-audit", "hostPath": AUDIT_DIR, "mountPath": AUDIT_DIR},
        ],
    }
    return yaml.safe_dump({"kind": "ClusterConfiguration", "apiServer": server})


def audit_policy() -> dict[str, Any]:
    """The local provider's policy, less Kueue's own requests beyond Workloads: on kind
    Kueue is a ServiceAccount of kueue-system, the group whose every request is logged
    for the dispatcher's sake."""
    rules = list(audit.POLICY["rules"])
    kueue = f"system:serviceaccount:{NS}:{KUEUE_DEPLOYMENT}"
    rules.insert(2, {"level": "None", "users": [kueue]})
    return {**audit.POLICY, "rules": rules}


def render_kind_config(
    role: str,
    v: Versions,
    config_dir: Path = CONFIG_DIR,
    *,
    image: str | None = None,
    built: bool = False,
    cgroup_v1: bool = False,
    audit_dir: Path | None = None,
) -> dict[str, Any]:
    """kind_configs/<role>.yaml with every node pinned to the node image (kind's for the
    selected Kubernetes version, or `image` built here) and the patches this host needs;
    with `audit_dir` (the manager) its apiserver's audit log is written there."""
    path = config_dir / f"{role}.yaml"
    if not path.is_file():
        raise UserError(f"kind config {path} is missing: reinstall mkdc (it ships them)")
    cfg = yaml.safe_load(path.read_text())
    for node in cfg.setdefault("nodes", [{"role": "control-plane"}]):
        node["image"] = image or node_image(v)
        if audit_dir is not None:
            mount = {"hostPath": str(audit_dir), "containerPath": AUDIT_DIR}
            node.setdefault("extraMounts", []).append(mount)
    patches = cfg.setdefault("kubeadmConfigPatches", [])
    patches.append(ETCD_NO_FSYNC_PATCH)
    if audit_dir is not None:
        patches.append(audit_patch())
    if cgroup_v1:
        patches.append(CGROUP_V1_PATCH)
    if built:
        patches += built_node_patches(v)
        cfg.setdefault("networking", {})["disableDefaultCNI"] = True  # the image's bridge
    return cfg


def kueue_configuration(
    defaults: dict[str, Any],
    *,
    kueue_version: str,
    manager: bool,
    dispatcher_name: str | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The release's configuration, reduced to batch/job, plus MultiKueue and the profile's extra.

    Kueue runs in a pod here, so the release's leader election, internal certificates,
    webhook and metrics ports stay as shipped (unlike the local provider's processes).
    """
    cfg = kueue_install.deep_merge(
        defaults,
        {
            "apiVersion": kueue_install.config_api_version(kueue_version),
            "kind": "Configuration",
            "namespace": NS,
            "leaderElection": {"leaderElect": True},
            "internalCertManagement": {"enable": True},
            "integrations": {"frameworks": ["batch/job"]},
        },
    )
    if manager:
        multikueue_cfg: dict[str, Any] = {"gcInterval": "30s", "workerLostTimeout": "2m"}
        if dispatcher_name:
            multikueue_cfg["dispatcherName"] = dispatcher_name
        cfg = kueue_install.deep_merge(cfg, {"multiKueue": multikueue_cfg})
    return kueue_install.deep_merge(cfg, extra or {})


def config_hash(cfg: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(cfg, sort_keys=True).encode()).hexdigest()[:16]


def pin_patch(cfg_hash: str | None = None) -> dict[str, Any]:
    """Run a deployment on the real node (tolerating its taint), never on a KWOK node.

    A changed config hash in the pod template restarts Kueue; an unchanged one
    (dev mode, same profile) leaves the running pod alone.
    """
    template: dict[str, Any] = {
        "spec": {
            "nodeSelector": {CONTROL_PLANE: ""},
            "tolerations": [{"key": CONTROL_PLANE, "operator": "Exists", "effect": "NoSchedule"}],
        }
    }
    if cfg_hash:
        template["metadata"] = {"annotations": {HASH_ANNOTATION: cfg_hash}}
    return {"spec": {"template": template}}


def _single(kc: dict[str, Any], name: str) -> dict[str, list[dict[str, Any]]]:
    """The current context of a kind kubeconfig, renamed to `name`."""
    ctx = next(c for c in kc["contexts"] if c["name"] == kc["current-context"])["context"]
    cluster = next(c for c in kc["clusters"] if c["name"] == ctx["cluster"])["cluster"]
    user = next(u for u in kc["users"] if u["name"] == ctx["user"])["user"]
    return {
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
    }


def merged_kubeconfig(current: str, parts: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One kubeconfig holding each named part as a context; `current` is the current one."""
    out: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [],
        "users": [],
        "contexts": [],
        "current-context": current,
        "preferences": {},
    }
    for name, kc in parts.items():
        for section, entries in _single(kc, name).items():
            out[section] += entries
    return out


def by_address(kc: dict[str, Any], address: str) -> dict[str, Any]:
    """`kind get kubeconfig --internal` with the node's address for its host name: a pod
    resolves the container's name only through CoreDNS forwarding to Docker's DNS, which
    no check here relies on; the address needs no DNS, and the apiserver's certificate
    names both."""
    for entry in kc["clusters"]:
        entry["cluster"]["server"] = re.sub(
            r"^https://[^:/]+", f"https://{address}", entry["cluster"]["server"]
        )
    return kc


def kwok_stages(man: upstream.Manifests) -> str:
    """The local provider's stages plus node heartbeats (kind runs a node lifecycle controller)."""
    node_dir = man.kwok_stages[0].parent.parent  # .../kustomize/stage/node
    files = [*man.kwok_stages, node_dir / "heartbeat-with-lease/node-heartbeat-with-lease.yaml"]
    return "\n---\n".join(p.read_text().strip() for p in files) + "\n"


def probe_cluster_queue() -> dict[str, Any]:
    return {
        "apiVersion": multikueue.API,
        "kind": "ClusterQueue",
        "metadata": {"name": "mkdc-probe"},
    }
