"""The version matrix: which upstream versions build one environment.

Selected by `--kueue-version` / `--kubernetes-version` or MKDC_KUEUE_VERSION /
MKDC_KUBERNETES_VERSION. Each Kueue version has a default Kubernetes version.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace

from harness.errors import UserError, shown


@dataclass(frozen=True)
class Versions:
    kubernetes: str  # without the leading "v", e.g. "1.36.3"
    kueue: str
    etcd: str
    kwok: str
    kind: str = "0.33.0"  # the kind provider's tool; node images are built for `kubernetes`
    coredns: str = "1.14.2"  # the cluster DNS of a node image built here (kubeadm 1.36's)

    @property
    def kubernetes_minor(self) -> int:
        return int(self.kubernetes.split(".")[1])

    @property
    def kueue_minor(self) -> tuple[int, int]:
        major, minor = self.kueue.split(".")[:2]
        return int(major), int(minor)

    def describe(self) -> str:
        return (
            f"kubernetes v{self.kubernetes}, kueue v{self.kueue}, "
            f"etcd v{self.etcd}, kwok v{self.kwok}"
        )


ETCD = "3.6.16"
KWOK = "0.8.0"

# Kueue version -> the environment it is tested on. v0.17.8 is not served by the
# module proxy here; v0.17.1 is the newest 0.17 patch that is, on Kubernetes 1.35.
# Kueue v0.19.2's Kubernetes is the patch whose staging modules (k8s.io/api v0.36.2, ...)
# Kueue requires: built against Kueue's versions, the packages both use compile once.
MATRIX: dict[str, Versions] = {
    "0.19.2": Versions(kubernetes="1.36.2", kueue="0.19.2", etcd=ETCD, kwok=KWOK),
    "0.17.1": Versions(kubernetes="1.35.4", kueue="0.17.1", etcd=ETCD, kwok=KWOK),
}
DEFAULT_KUEUE = "0.19.2"


def _strip_v(value: str) -> str:
    return value[1:] if value.startswith("v") else value


def select(kueue: str | None = None, kubernetes: str | None = None) -> Versions:
    """The versions to use: explicit arguments, then environment, then the default."""
    kueue = _strip_v(kueue or os.environ.get("MKDC_KUEUE_VERSION") or DEFAULT_KUEUE)
    kubernetes = kubernetes or os.environ.get("MKDC_KUBERNETES_VERSION")
    if kueue not in MATRIX:
        known = ", ".join(f"v{k}" for k in MATRIX)
        raise UserError(
            f"kueue version {shown('v' + kueue)} is not in the version matrix (known: {known})"
        )
    chosen = MATRIX[kueue]
    if kubernetes:
        kubernetes = _strip_v(kubernetes)
        # digits only: the minor version is read as a number, the rest names a module
        if not re.fullmatch(r"[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}", kubernetes):
            raise UserError(
                f"kubernetes version {shown(kubernetes)} must be a full version such as 1.36.3"
            )
        chosen = replace(chosen, kubernetes=kubernetes)
    return chosen
