"""Mutual TLS for every gRPC server and channel.

A TaskExecutor runs whatever code it is handed, so no server may accept a caller
that cannot prove, with a certificate from the cluster's own CA, that it belongs to
this cluster. ``local`` makes a throw-away CA when a cluster starts; on YARN the
per-application certificate Skein localizes into every container serves the same role.
"""
from __future__ import annotations

import datetime
import ipaddress
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import grpc

if TYPE_CHECKING:
    from cryptography import x509

# `cryptography` is imported where certificates are made, not at module level: a
# TaskExecutor only reads PEM files, and the import costs it start-up time.

# The name Skein's own clients check on its ApplicationMaster's certificate.
SKEIN_NAME = "skein-internal"

# The name every certificate carries and every channel checks, whatever address it
# dials (TaskExecutors and masters are reached by IP; one shared name avoids
# per-host certificates).
CLUSTER_NAME = "yarnflow-cluster"


@dataclass(frozen=True)
class TlsCredentials:
    """PEM bytes of the CA, and of the certificate/key this process presents."""
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    def server_credentials(self) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials(
            [(self.key_pem, self.cert_pem)], root_certificates=self.ca_pem,
            require_client_auth=True)

    def channel_credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            root_certificates=self.ca_pem, private_key=self.key_pem,
            certificate_chain=self.cert_pem)

    def write(self, directory: str | os.PathLike[str]) -> Path:
        """Write the three files (key readable by the owner only) for child processes."""
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        (path / "ca.crt").write_bytes(self.ca_pem)
        (path / "node.crt").write_bytes(self.cert_pem)
        key = path / "node.key"
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(self.key_pem)
        return path

    @classmethod
    def read(cls, directory: str | os.PathLike[str]) -> "TlsCredentials":
        path = Path(directory)
        try:
            return cls((path / "ca.crt").read_bytes(), (path / "node.crt").read_bytes(),
                       (path / "node.key").read_bytes())
        except FileNotFoundError as err:
            raise RuntimeError(f"TLS material missing: {err.filename}; every yarnflow "
                               "process needs ca.crt, node.crt and node.key") from None


def _name(common_name: str) -> "x509.Name":
    from cryptography import x509
    from cryptography.x509.oid import NameOID
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def generate_cluster_credentials(valid_days: int = 30) -> TlsCredentials:
    """A fresh CA and one certificate signed by it, good as both server and client."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("yarnflow throw-away CA"))
        .issuer_name(_name("yarnflow throw-away CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=valid_days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    alt_names: list[x509.GeneralName] = [
        x509.DNSName(CLUSTER_NAME), x509.DNSName("localhost"),
        x509.DNSName(socket.gethostname()), x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(CLUSTER_NAME))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=valid_days))
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                              ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return TlsCredentials(
        ca_pem=ca_cert.public_bytes(pem),
        cert_pem=cert.public_bytes(pem),
        key_pem=key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()),
    )


def generate_application_credentials(valid_days: int = 30) -> TlsCredentials:
    """One self-signed certificate for a YARN application, given to Skein as the
    application's security: Skein's ApplicationMaster trusts exactly this certificate,
    localizes it into every container, and yarnflow's servers and channels use it as
    CA and identity alike. It names both Skein's and yarnflow's server names, so one
    secret guards the application. An EC P-256 key: Skein's Java side takes it, and it
    is made in milliseconds where RSA-2048 costs the submitting client ~0.2 s."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    now = datetime.datetime.now(datetime.timezone.utc)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(SKEIN_NAME))
        .issuer_name(_name(SKEIN_NAME))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=valid_days))
        .add_extension(x509.SubjectAlternativeName(
            [x509.DNSName(SKEIN_NAME), x509.DNSName(CLUSTER_NAME)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    cert_pem = cert.public_bytes(pem)
    return TlsCredentials(ca_pem=cert_pem, cert_pem=cert_pem,
                          key_pem=key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                    serialization.NoEncryption()))


def read_skein_container_credentials(directory: str | os.PathLike[str] = ".") -> TlsCredentials:
    """The application's credentials inside a Skein container (its working directory
    holds ``.skein.crt`` and ``.skein.pem``)."""
    path = Path(directory)
    try:
        cert = (path / ".skein.crt").read_bytes()
        return TlsCredentials(cert, cert, (path / ".skein.pem").read_bytes())
    except FileNotFoundError as err:
        raise RuntimeError(f"{err.filename} missing: not running in a Skein container of a "
                           "yarnflow application") from None
