"""Keys and certificates of a local cluster: one CA signs everything, every name is 127.0.0.1.

The API server serves with a certificate for 127.0.0.1 and localhost; people and components reach
it with one admin client certificate (group system:masters); service-account tokens are signed
with their own key; every webhook a controller serves gets a certificate of its own folder.
Keys are EC P-256 (fast to make: a cluster's whole PKI takes milliseconds).
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

VALID_FOR = datetime.timedelta(days=30)  # a local cluster lives for a test or a working day


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


def _imports():
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    return x509, hashes, serialization, ec, ExtendedKeyUsageOID, NameOID


def _write_key(key, path: Path) -> None:
    _, _, serialization, _, _, _ = _imports()
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


def _load(pair: Pair):
    x509, _, serialization, _, _, _ = _imports()
    return (x509.load_pem_x509_certificate(pair.cert.read_bytes()),
            serialization.load_pem_private_key(pair.key.read_bytes(), password=None))


def make_ca(folder: Path, common_name: str) -> Pair:
    x509, hashes, serialization, ec, _, NameOID = _imports()
    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALID_FOR)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    pair = Pair(folder / "ca.crt", folder / "ca.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key, pair.key)
    return pair


def issue(ca: Pair, folder: Path, stem: str, common_name: str, *, server: bool = False, client: bool = False,
          organization: str = "") -> Pair:
    """A certificate signed by `ca`: for serving on 127.0.0.1/localhost, or for a client identity."""
    x509, hashes, serialization, ec, ExtendedKeyUsageOID, NameOID = _imports()
    ca_cert, ca_key = _load(ca)
    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + ([ExtendedKeyUsageOID.CLIENT_AUTH] if client else [])
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(x509.Name(attributes)).issuer_name(ca_cert.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALID_FOR)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage(usages), critical=False))
    if server:
        builder = builder.add_extension(x509.SubjectAlternativeName([
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    pair = Pair(folder / f"{stem}.crt", folder / f"{stem}.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key, pair.key)
    return pair


def signing_key(folder: Path, stem: str) -> Pair:
    """A key pair for signing service-account tokens (`cert` holds the public key, PEM)."""
    _, _, serialization, ec, _, _ = _imports()
    key = ec.generate_private_key(ec.SECP256R1())
    pair = Pair(folder / f"{stem}.pub", folder / f"{stem}.key")
    pair.cert.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                        serialization.PublicFormat.SubjectPublicKeyInfo))
    _write_key(key, pair.key)
    return pair
