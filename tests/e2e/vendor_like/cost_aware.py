"""A cost-aware dispatcher as vendors write them: at start it reads a ConfigMap of prices
in its own namespace and, for every MultiKueueCluster, the worker's kubeconfig Secret by
its own naming rule (the cluster's name without "-cluster", then "-kc"). It exits when
either is missing; then it dispatches as the reference does. Only in-cluster config."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.client.rest import ApiException

NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def main(argv: list[str]) -> int:
    config.load_incluster_config()
    namespace = NAMESPACE_FILE.read_text().strip()
    core = client.CoreV1Api()
    try:
        data = core.read_namespaced_config_map("prices", namespace).data or {}
    except ApiException as exc:
        print(f"error: cannot read ConfigMap {namespace}/prices: {exc.status}", file=sys.stderr)
        return 3
    prices = json.loads(data["prices.json"])
    clusters: Any = client.CustomObjectsApi().list_cluster_custom_object(
        "kueue.x-k8s.io", "v1beta2", "multikueueclusters"
    )
    for item in clusters["items"]:
        name = item["metadata"]["name"]
        secret = name.removesuffix("-cluster") + "-kc"
        try:
            core.read_namespaced_secret(secret, namespace)
        except ApiException as exc:
            print(f"error: cannot read Secret {namespace}/{secret}: {exc.status}", file=sys.stderr)
            return 3
        print(f"{name}: price {prices.get(name, 'unknown')}, kubeconfig from {secret}", flush=True)
    from dispatchers.reference.__main__ import main as reference

    return reference(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
