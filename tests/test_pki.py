"""Certificates and kubeconfigs: what the apiservers and MultiKueue will accept."""

from __future__ import annotations

import base64
import stat

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from harness.cluster import pki


def test_serving_certificate_names_loopback_and_chains_to_ca(tmp_path):
    ca = pki.CertificateAuthority()
    pair = ca.issue("kube-apiserver", server_hosts=("127.0.0.1", "localhost"))
    cert = x509.load_pem_x509_certificate(pair.cert_pem)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in san.get_values_for_type(x509.DNSName)
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem)
    cert.verify_directly_issued_by(ca_cert)
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in usages


def test_client_certificate_carries_group_for_rbac():
    pair = pki.CertificateAuthority().issue("admin", organizations=("system:masters",), client=True)
    cert = x509.load_pem_x509_certificate(pair.cert_pem)
    orgs = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    assert orgs == ["system:masters"]
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.CLIENT_AUTH in usages


def test_a_certificate_for_no_purpose_is_refused():
    with pytest.raises(ValueError, match="names no purpose"):
        pki.CertificateAuthority().issue("nothing")


def test_keys_are_private_files(tmp_path):
    crt, key = pki.CertificateAuthority().issue("x", client=True).write(tmp_path, "x")
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(crt.stat().st_mode) == 0o600


def test_kubeconfig_embeds_data_and_no_file_paths(tmp_path):
    ca = pki.CertificateAuthority()
    client = ca.issue("admin", client=True)
    cfg = pki.kubeconfig("w1", "https://127.0.0.1:1234", ca.cert_pem, client, "admin")
    text = str(cfg)
    for forbidden in (
        "certificate-authority'",
        "client-certificate'",
        "client-key'",
        "tokenFile",
        "exec",
    ):
        assert forbidden not in text
    user = cfg["users"][0]["user"]
    assert base64.b64decode(user["client-key-data"]) == client.key_pem
    path = pki.write_kubeconfig(tmp_path / "k", cfg)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
