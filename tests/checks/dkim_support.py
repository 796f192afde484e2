"""Signing messages with DKIM for the tests: a fresh RSA key pair and its TXT record."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

__all__ = ["SIGNED_HEADERS", "Signer"]

dkim = pytest.importorskip("dkim", reason="dkimpy is not installed (pip install dkimpy)")

SIGNED_HEADERS = [b"from", b"to", b"subject", b"date", b"message-id"]


class Signer:
    """An RSA key pair: signs messages and publishes its TXT record."""

    def __init__(self) -> None:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
        der = key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        self.record = f"v=DKIM1; k=rsa; p={base64.b64encode(der).decode()}"

    def sign(
        self,
        raw: bytes,
        *,
        selector: bytes = b"sel",
        domain: bytes = b"example.com",
        canonicalize: tuple[bytes, bytes] = (b"relaxed", b"simple"),
    ) -> bytes:
        signature: bytes = dkim.sign(
            raw,
            selector,
            domain,
            self.pem,
            include_headers=SIGNED_HEADERS,
            canonicalize=canonicalize,
        )
        return signature + raw
