"""Control plane PKI: a throwaway CA, the serving cert, client certs and the service-account key."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# Long enough for a development machine that keeps one instance up for weeks, short enough that a
# leaked test key is worthless; `up` regenerates everything whenever it starts a fresh instance.
_VALIDITY = datetime.timedelta(days=30)


@dataclass(frozen=True)
class Pki:
    """Paths of every PEM file the processes and kubeconfigs need."""

    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    readonly_cert: Path
    readonly_key: Path
    sa_public_key: Path
    sa_private_key: Path


def generate(
    directory: Path,
    *,
    admin: tuple[str, str],
    readonly_user: str,
    extra_serving: tuple[str, ...] = (),
) -> Pki:
    """Write a fresh CA and everything it signs into `directory` (created, mode 0700).

    `admin` is (user, group); the apiserver takes the user from CN= and the group from O=.
    `extra_serving` names more loopback serving certificates (`<name>.crt`, `<name>.key`), for
    the admission webhooks of tests/harness/simcluster: the CA key is never written to disk, so
    every certificate is issued here.
    """
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    ca_key = _new_key()
    ca_cert = _ca_certificate(ca_key)
    _write_cert(directory / "ca.crt", ca_cert)
    paths = Pki(
        ca_cert=directory / "ca.crt",
        serving_cert=directory / "apiserver.crt",
        serving_key=directory / "apiserver.key",
        admin_cert=directory / "admin.crt",
        admin_key=directory / "admin.key",
        readonly_cert=directory / "readonly.crt",
        readonly_key=directory / "readonly.key",
        sa_public_key=directory / "sa.pub",
        sa_private_key=directory / "sa.key",
    )
    _issue(
        paths.serving_cert,
        paths.serving_key,
        ca_cert,
        ca_key,
        common_name="kube-apiserver",
        serving=True,
    )
    _issue(
        paths.admin_cert,
        paths.admin_key,
        ca_cert,
        ca_key,
        common_name=admin[0],
        organization=admin[1],
    )
    _issue(paths.readonly_cert, paths.readonly_key, ca_cert, ca_key, common_name=readonly_user)
    for name in extra_serving:
        _issue(
            directory / f"{name}.crt",
            directory / f"{name}.key",
            ca_cert,
            ca_key,
            common_name=name,
            serving=True,
        )
    _write_service_account_keys(paths.sa_public_key, paths.sa_private_key)
    return paths


def _new_key() -> ec.EllipticCurvePrivateKey:
    # P-256: accepted by kube-apiserver for TLS, client auth and service-account tokens, and
    # generated in microseconds where RSA-2048 takes noticeable time per key.
    return ec.generate_private_key(ec.SECP256R1())


def _ca_certificate(key: ec.EllipticCurvePrivateKey) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "hetgitops-test-ca")])
    return (
        _builder(name, name, key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .sign(key, hashes.SHA256())
    )


def _issue(
    cert_path: Path,
    key_path: Path,
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    *,
    common_name: str,
    organization: str | None = None,
    serving: bool = False,
) -> None:
    key = _new_key()
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        # The apiserver maps O= to a group, CN= to the user name.
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    usage = ExtendedKeyUsageOID.SERVER_AUTH if serving else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (
        _builder(x509.Name(attributes), ca_cert.subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if serving:
        builder = builder.add_extension(_loopback_names(), critical=False)
    _write_cert(cert_path, builder.sign(ca_key, hashes.SHA256()))
    _write_private_key(key_path, key)


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    # Backdate a little so a clock that moves slightly backwards cannot make a new cert invalid.
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + _VALIDITY)
    )


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def _loopback_names() -> x509.SubjectAlternativeName:
    # The server only ever listens on loopback, so these are the only names a client can use.
    return x509.SubjectAlternativeName(
        [
            x509.DNSName("localhost"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        ]
    )


def _write_service_account_keys(public_path: Path, private_path: Path) -> None:
    key = _new_key()
    _write_private_key(private_path, key)
    public_path.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _write_private_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    data = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path.touch(mode=0o600)
    path.write_bytes(data)
