"""A private Sigstore instance built in the test suite: a CA, a CT log and a Rekor log.

:class:`Instance` makes keys with ``cryptography``, writes a ``trusted_root.json`` that
names them, and signs artifacts the way Fulcio, the CT log and Rekor v1 together do: a
short-lived code-signing certificate for an identity (with the OIDC issuer extensions and
an embedded precertificate SCT), an ECDSA signature over the artifact, and a one-entry
transparency log with a signed checkpoint and an inclusion promise. The bundles it writes
are real: sigstore's unpatched ``Verifier`` checks every part of them.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

import rfc8785
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

GITHUB = "https://token.actions.githubusercontent.com"
_OIDC_ISSUER_V1 = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
_OIDC_ISSUER_V2 = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
_SOURCE_REPO = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.12")
_SCT_LIST = x509.ObjectIdentifier("1.3.6.1.4.1.11129.2.4.2")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _spki(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _der_utf8(text: str) -> bytes:
    return b"\x0c" + _der_octets(text.encode())[1:]


def _der_octets(raw: bytes) -> bytes:
    n = len(raw)
    length = bytes([n]) if n < 128 else bytes([0x82]) + struct.pack(">H", n)
    return b"\x04" + length + raw


@dataclass
class Instance:
    """Keys and a root CA of a private Sigstore deployment (see the module docs)."""

    name: str = "test"
    ca_key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    ct_key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    rekor_key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))

    def __post_init__(self) -> None:
        now = dt.datetime.now(dt.timezone.utc)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{self.name} sigstore CA"),
                          x509.NameAttribute(NameOID.ORGANIZATION_NAME, self.name)])
        self.ca_cert = (
            x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(self.ca_key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=30)).not_valid_after(now + dt.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.ca_key.public_key()), critical=False)
            .sign(self.ca_key, hashes.SHA256())
        )

    def trusted_root(self) -> dict[str, object]:
        """The ``trusted_root.json`` document of this instance."""
        start = {"start": "2020-01-01T00:00:00Z"}

        def log(key: ec.EllipticCurvePrivateKey, url: str) -> dict[str, object]:
            spki = _spki(key)
            return {
                "baseUrl": url, "hashAlgorithm": "SHA2_256",
                "publicKey": {"rawBytes": _b64(spki), "keyDetails": "PKIX_ECDSA_P256_SHA_256", "validFor": start},
                "logId": {"keyId": _b64(hashlib.sha256(spki).digest())},
            }

        return {
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [log(self.rekor_key, f"https://rekor.{self.name}.invalid")],
            "certificateAuthorities": [{
                "subject": {"organization": self.name, "commonName": f"{self.name} sigstore CA"},
                "uri": f"https://fulcio.{self.name}.invalid",
                "certChain": {"certificates": [{"rawBytes": _b64(self.ca_cert.public_bytes(serialization.Encoding.DER))}]},
                "validFor": start,
            }],
            "ctlogs": [log(self.ct_key, f"https://ctfe.{self.name}.invalid")],
            "timestampAuthorities": [],
        }

    def write_root(self, path: Path) -> Path:
        """Write :meth:`trusted_root` to ``path``; returns it."""
        path.write_text(json.dumps(self.trusted_root()))
        return path

    def _certificate(
        self, identity: str, issuer: str, repository: str | None, key: ec.EllipticCurvePrivateKey, now: dt.datetime
    ) -> x509.Certificate:
        def builder() -> x509.CertificateBuilder:
            b = (
                x509.CertificateBuilder().subject_name(x509.Name([])).issuer_name(self.ca_cert.subject)
                .public_key(key.public_key()).serial_number(serial)
                .not_valid_before(now - dt.timedelta(minutes=1)).not_valid_after(now + dt.timedelta(minutes=10))
                .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.ca_key.public_key()), critical=False)
                .add_extension(x509.SubjectAlternativeName([x509.UniformResourceIdentifier(identity)]), critical=True)
                .add_extension(x509.UnrecognizedExtension(_OIDC_ISSUER_V1, issuer.encode()), critical=False)
                .add_extension(x509.UnrecognizedExtension(_OIDC_ISSUER_V2, _der_utf8(issuer)), critical=False)
            )
            if repository is not None:
                b = b.add_extension(x509.UnrecognizedExtension(_SOURCE_REPO, _der_utf8(repository)), critical=False)
            return b

        serial = x509.random_serial_number()
        # The precertificate is the certificate without its SCT list; the CT log signs it.
        pre = builder().sign(self.ca_key, hashes.SHA256())
        millis = int(now.timestamp() * 1000)
        issuer_key_hash = hashlib.sha256(_spki(self.ca_key)).digest()
        tbs = pre.tbs_certificate_bytes
        signed = struct.pack(">BBQH", 0, 0, millis, 1) + issuer_key_hash + struct.pack(">I", len(tbs))[1:] + tbs + b"\x00\x00"
        sig = self.ct_key.sign(signed, ec.ECDSA(hashes.SHA256()))
        sct = (b"\x00" + hashlib.sha256(_spki(self.ct_key)).digest() + struct.pack(">Q", millis) + b"\x00\x00"
               + b"\x04\x03" + struct.pack(">H", len(sig)) + sig)
        sct_list = struct.pack(">H", len(sct) + 2) + struct.pack(">H", len(sct)) + sct
        return builder().add_extension(
            x509.UnrecognizedExtension(_SCT_LIST, _der_octets(sct_list)), critical=False
        ).sign(self.ca_key, hashes.SHA256())

    def sign(self, artifact: bytes, identity: str, issuer: str = GITHUB, repository: str | None = "") -> bytes:
        """A bundle (JSON bytes) signing ``artifact`` as ``identity`` from ``issuer``.

        ``repository``: the source repository the certificate names (default: the one of a
        GitHub workflow identity, as GitHub Actions' tokens say; None: no such extension).
        """
        if repository == "":
            repository = "/".join(identity.split("/")[:5]) if identity.startswith("https://github.com/") else None
        now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - dt.timedelta(seconds=30)
        key = ec.generate_private_key(ec.SECP256R1())
        cert = self._certificate(identity, issuer, repository, key, now)
        digest = hashlib.sha256(artifact).digest()
        signature = key.sign(artifact, ec.ECDSA(hashes.SHA256()))
        pem = cert.public_bytes(serialization.Encoding.PEM)
        body = json.dumps({
            "apiVersion": "0.0.1", "kind": "hashedrekord",
            "spec": {"data": {"hash": {"algorithm": "sha256", "value": digest.hex()}},
                     "signature": {"content": _b64(signature), "publicKey": {"content": _b64(pem)}}},
        }).encode()
        log_id = hashlib.sha256(_spki(self.rekor_key)).digest()
        when = int(now.timestamp()) + 5
        promise = self.rekor_key.sign(
            rfc8785.dumps({"body": _b64(body), "integratedTime": when, "logID": log_id.hex(), "logIndex": 0}),
            ec.ECDSA(hashes.SHA256()),
        )
        root_hash = hashlib.sha256(b"\x00" + body).digest()
        origin = f"rekor.{self.name}.invalid - 1"
        note = f"{origin}\n1\n{_b64(root_hash)}\n"
        note_sig = self.rekor_key.sign(note.encode(), ec.ECDSA(hashes.SHA256()))
        checkpoint = f"{note}\n\u2014 {origin.split()[0]} {_b64(log_id[:4] + note_sig)}\n"
        bundle = {
            "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
            "verificationMaterial": {
                "certificate": {"rawBytes": _b64(cert.public_bytes(serialization.Encoding.DER))},
                "tlogEntries": [{
                    "logIndex": "0", "logId": {"keyId": _b64(log_id)},
                    "kindVersion": {"kind": "hashedrekord", "version": "0.0.1"},
                    "integratedTime": str(when),
                    "inclusionPromise": {"signedEntryTimestamp": _b64(promise)},
                    "inclusionProof": {"logIndex": "0", "rootHash": _b64(root_hash), "treeSize": "1",
                                       "hashes": [], "checkpoint": {"envelope": checkpoint}},
                    "canonicalizedBody": _b64(body),
                }],
            },
            "messageSignature": {"messageDigest": {"algorithm": "SHA2_256", "digest": _b64(digest)},
                                 "signature": _b64(signature)},
        }
        return json.dumps(bundle).encode()
