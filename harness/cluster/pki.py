"""Certificates and kubeconfigs for local clusters, generated with `cryptography`.

One CA per run signs every serving and client certificate. Keys are written with
0600 permissions inside the private (0700) run directory and nowhere else.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = dt.timedelta(days=2)


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def write_private(path: Path, data: bytes) -> Path:
    """Write a file readable by the owner only (created 0600, never widened)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


@dataclass(frozen=True)
class KeyPair:
    cert_pem: bytes
    key_pem: bytes

    def write(self, directory: Path, stem: str) -> tuple[Path, Path]:
        return (
            write_private(directory / f"{stem}.crt", self.cert_pem),
            write_private(directory / f"{stem}.key", self.key_pem),
        )


class CertificateAuthority:
    """A throw-away CA for one run."""

    def __init__(self, common_name: str = "mkdc-ca") -> None:
        self._key = _key()
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        now = dt.datetime.now(dt.UTC)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )

    @property
    def cert_pem(self) -> bytes:
        return _pem_cert(self._cert)

    def issue(
        self,
        common_name: str,
        *,
        organizations: tuple[str, ...] = (),
        server_hosts: tuple[str, ...] = (),
        client: bool = False,
    ) -> KeyPair:
        """A leaf certificate: serving when server_hosts is given, client when client.

        One of the two is required: an extended key usage must name a purpose (newer
        `cryptography` refuses an empty one, and a certificate for nothing is a mistake).
        """
        if not server_hosts and not client:
            raise ValueError(
                f"certificate {common_name!r} names no purpose: server_hosts or client"
            )
        key = _key()
        attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
        attrs += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
        now = dt.datetime.now(dt.UTC)
        usages = []
        if server_hosts:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
        if client:
            usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(attrs))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        )
        if server_hosts:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([_san(h) for h in server_hosts]), critical=False
            )
        cert = builder.sign(self._key, hashes.SHA256())
        return KeyPair(_pem_cert(cert), _pem_key(key))


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def service_account_keys() -> KeyPair:
    """The key pair kube-apiserver signs (private) and verifies (public) tokens with.

    Returned as a KeyPair whose "cert" is the public key: the apiserver reads a
    PEM public key, not a certificate, from --service-account-key-file.
    """
    key = _key()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    return KeyPair(public, private)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def kubeconfig(name: str, server: str, ca_pem: bytes, client: KeyPair, user: str) -> dict:
    """A self-contained kubeconfig: CA and credentials embedded as data, no file paths.

    MultiKueue rejects kubeconfigs that reference files, so the same document
    serves the harness and the manager's worker Secrets.
    """
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": name,
                "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem)},
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": _b64(client.cert_pem),
                    "client-key-data": _b64(client.key_pem),
                },
            }
        ],
        "contexts": [{"name": name, "context": {"cluster": name, "user": user}}],
        "current-context": name,
    }


def write_kubeconfig(path: Path, config: dict) -> Path:
    return write_private(path, yaml.safe_dump(config, sort_keys=False).encode())
