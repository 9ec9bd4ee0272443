"""A dispatcher that, like many capacity-aware ones, reads the worker kubeconfig Secrets in
its own namespace at start, and exits when it may not. It knows only in-cluster config (no
kubeconfig flag) and finds its namespace where a Pod's is; then it dispatches as the
reference does. It needs `run.rbac` to be judged at all.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kubernetes import client, config
from kubernetes.client.rest import ApiException

NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def main(argv: list[str]) -> int:
    config.load_incluster_config()
    namespace = NAMESPACE_FILE.read_text().strip()
    try:
        secrets = client.CoreV1Api().list_namespaced_secret(namespace)
    except ApiException as exc:
        print(f"cannot list Secrets in {namespace}: {exc.status} {exc.reason}", file=sys.stderr)
        return 3
    print(f"read {len(secrets.items)} Secrets in {namespace}", flush=True)
    from dispatchers.reference.__main__ import main as reference

    return reference(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
