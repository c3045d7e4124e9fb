"""The session's certificate authority for ``sandbox.network.tlsTerminate``.

Made when the first call that needs it starts: an ECDSA P-256 key and a self-signed CA
certificate valid for one day, with a name that says what it is. Its private key lives only
in this process's memory (never written anywhere), so nothing inside the sandbox — nor any
file — holds it. Leaf certificates are made per host on first use and cached; the stdlib
``ssl`` module only loads keys from a path, so each leaf's key and certificate go through an
anonymous memory file (``memfd``) read back through ``/proc/self/fd``, closed at once.

The sandbox's trust store is the system's bundle with the session CA added
(:meth:`SessionCA.bundle`), bind-mounted over the system bundle's path inside the sandbox
and named by the usual variables (:data:`TRUST_ENV`).
"""

from __future__ import annotations

import datetime
import os
import ssl
import threading
import uuid
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: Variables that make the usual clients (OpenSSL, Python requests, Node, git, curl) trust
#: the sandbox's bundle.
TRUST_ENV = (
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
    "CURL_CA_BUNDLE",
)
#: Where systems keep their CA bundle; the sandbox gets the combined one at each that exists.
SYSTEM_BUNDLES = (
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
    "/etc/ssl/ca-bundle.pem",
)
#: Used inside the sandbox when the system has no bundle at a known path (the private /tmp).
FALLBACK_BUNDLE = "/tmp/.codingcode-ca-bundle.pem"
_LIFETIME = datetime.timedelta(days=1)


class SessionCA:
    def __init__(self) -> None:
        now = datetime.datetime.now(datetime.UTC)
        self._key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "codingcode sandbox"),
                x509.NameAttribute(
                    NameOID.COMMON_NAME, f"codingcode session CA {uuid.uuid4().hex[:12]}"
                ),
            ]
        )
        self.name = name
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _LIFETIME)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=False,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False
            )
            .sign(self._key, hashes.SHA256())
        )
        self.cert_pem = self.cert.public_bytes(serialization.Encoding.PEM)
        # One leaf key for the session's leaves (in memory too).
        self._leaf_key = ec.generate_private_key(ec.SECP256R1())
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._lock = threading.Lock()
        self._bundle: bytes | None = None

    def leaf_pem(self, host: str) -> bytes:
        """A certificate for ``host`` signed by the CA (PEM)."""
        import ipaddress

        now = datetime.datetime.now(datetime.UTC)
        try:
            alt: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
        except ValueError:
            alt = x509.DNSName(host)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host[:64])]))
            .issuer_name(self.name)
            .public_key(self._leaf_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _LIFETIME)
            .add_extension(x509.SubjectAlternativeName([alt]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                critical=False,
            )
            .sign(self._key, hashes.SHA256())
        )
        return cert.public_bytes(serialization.Encoding.PEM)

    def server_context(self, host: str) -> ssl.SSLContext:
        """The TLS server context presenting ``host``'s leaf (made once, then cached)."""
        with self._lock:
            ctx = self._contexts.get(host)
            if ctx is not None:
                return ctx
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            ctx.set_alpn_protocols(["http/1.1"])
            key_pem = self._leaf_key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            fd = os.memfd_create("codingcode-leaf", os.MFD_CLOEXEC)
            try:
                os.write(fd, key_pem + self.leaf_pem(host) + self.cert_pem)
                path = f"/proc/self/fd/{fd}"
                ctx.load_cert_chain(path, path)
            finally:
                os.close(fd)
            self._contexts[host] = ctx
            return ctx

    def bundle(self) -> bytes:
        """The system's CA certificates with the session CA added (what the sandbox trusts)."""
        if self._bundle is None:
            system = b""
            for candidate in (ssl.get_default_verify_paths().cafile, *SYSTEM_BUNDLES):
                if candidate and Path(candidate).is_file():
                    try:
                        system = Path(candidate).read_bytes()
                    except OSError:
                        continue
                    break
            if system and not system.endswith(b"\n"):
                system += b"\n"
            self._bundle = system + self.cert_pem
        return self._bundle


def bundle_paths() -> list[str]:
    """The sandbox paths to put the combined bundle at (the system's bundles that exist)."""
    found = [p for p in SYSTEM_BUNDLES if os.path.isfile(p)]
    return found or [FALLBACK_BUNDLE]


def upstream_context() -> ssl.SSLContext:
    """How the proxy checks the real server of an intercepted host: the system's trust."""
    ctx = ssl.create_default_context()
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx
