"""The dispatcher's identity: baseline role, declared extras kept apart, Pod-style files."""

from __future__ import annotations

import base64
from pathlib import Path

from harness.cluster import identity

SECRETS = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]}
NODES = {"apiGroups": ["", "apps"], "resources": ["nodes"], "verbs": ["list"]}


def by_kind(docs: list[dict]) -> dict[tuple[str, str, str | None], dict]:
    return {(d["kind"], d["metadata"]["name"], d["metadata"].get("namespace")): d for d in docs}


def test_baseline_only_without_declared_rules() -> None:
    docs = by_kind(identity.rbac_documents("kueue-system", 2, {"l": "v"}))
    assert ("ClusterRole", identity.ROLE, None) in docs
    assert ("Role", identity.ROLE, "kueue-system") in docs
    assert not any(name == identity.EXTRA_ROLE for _, name, _ in docs)
    binding = docs[("ClusterRoleBinding", identity.ROLE, None)]
    assert [s["name"] for s in binding["subjects"]] == ["mkdc-dispatcher-0", "mkdc-dispatcher-1"]


def test_declared_rules_are_roles_of_their_own_bound_to_every_replica() -> None:
    docs = by_kind(identity.rbac_documents("kueue-system", 2, {}, [NODES], [SECRETS]))
    assert docs[("ClusterRole", identity.EXTRA_ROLE, None)]["rules"] == [NODES]
    assert docs[("Role", identity.EXTRA_ROLE, "kueue-system")]["rules"] == [SECRETS]
    binding = docs[("RoleBinding", identity.EXTRA_ROLE, "kueue-system")]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": identity.EXTRA_ROLE,
    }
    assert len(binding["subjects"]) == 2
    baseline = docs[("ClusterRole", identity.ROLE, None)]["rules"]
    assert SECRETS not in baseline and NODES not in baseline


def test_rules_read_as_sentences() -> None:
    assert identity.describe_rules([SECRETS], "kueue-system") == [
        "get, list, watch secrets in kueue-system"
    ]
    named = {**SECRETS, "resourceNames": ["a"]}
    assert identity.describe_rules([NODES, named], None) == [
        "list nodes (core, apps API group) cluster-wide",
        "get, list, watch secrets named a cluster-wide",
    ]


def test_ca_bundle_from_data_or_file(tmp_path: Path) -> None:
    pem = "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n"
    data = {"certificate-authority-data": base64.b64encode(pem.encode()).decode()}
    assert identity._ca_bundle({"clusters": [{"cluster": data}]}) == pem
    (tmp_path / "ca.crt").write_text(pem)
    on_disk = {"certificate-authority": str(tmp_path / "ca.crt")}
    assert identity._ca_bundle({"clusters": [{"cluster": on_disk}]}) == pem
    assert identity._ca_bundle({"clusters": [{"cluster": {"server": "https://x"}}]}) == ""
