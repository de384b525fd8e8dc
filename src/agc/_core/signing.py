"""Ed25519 signatures over JSON documents (``cryptography``), canonical form RFC 8785.

A signature covers the document's RFC 8785 canonical JSON (JCS) without its
``signature`` member, so the document's spelling on disk (key order, white space) does
not matter and a document changed by someone without the key fails. Run manifests and
the ledger's seal records are signed this way.

Key id: the lower-case hex SHA-256 of the raw 32-byte Ed25519 public key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from agc._core.canonical import canonical_json

__all__ = [
    "SIGNATURE_ALGORITHM",
    "SignatureStatus",
    "SigningKey",
    "canonical_bytes",
    "check_signature",
    "key_id_of",
    "sign_document",
]

SIGNATURE_ALGORITHM: Final = "ed25519"
_SIGNATURE_MEMBERS: Final = frozenset({"algorithm", "key_id", "value"})
SignatureStatus = Literal["signature-valid", "bad-signature", "unknown-key", "unsigned"]


def key_id_of(public_key: Ed25519PublicKey) -> str:
    """Hex SHA-256 of the raw public key bytes (32 bytes for Ed25519)."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


@dataclass(frozen=True)
class SigningKey:
    """A private Ed25519 key and its key id."""

    private_key: Ed25519PrivateKey
    key_id: str


def canonical_bytes(document: Mapping[str, Any]) -> bytes:
    """RFC 8785 canonical JSON of ``document`` without its ``signature`` member."""
    unsigned = {key: value for key, value in document.items() if key != "signature"}
    result: bytes = canonical_json(unsigned)
    return result


def sign_document(document: Mapping[str, Any], key: SigningKey) -> dict[str, Any]:
    """Return ``document`` with a ``signature`` member: algorithm, key id, base64 value."""
    value = key.private_key.sign(canonical_bytes(document))
    return {
        **{k: v for k, v in document.items() if k != "signature"},
        "signature": {
            "algorithm": SIGNATURE_ALGORITHM,
            "key_id": key.key_id,
            "value": base64.b64encode(value).decode("ascii"),
        },
    }


def check_signature(
    document: Mapping[str, Any], trusted: Mapping[str, Ed25519PublicKey]
) -> SignatureStatus:
    """Check a document's signature against trusted public keys (by key id).

    Returns ``"unsigned"`` (no signature member), ``"unknown-key"`` (signed by a key
    that is not trusted), ``"bad-signature"`` (malformed, or does not verify) or
    ``"signature-valid"``.

    The ``signature`` member itself is not signed, so it must be exactly what
    :func:`sign_document` writes: ``algorithm``, a string ``key_id`` and ``value``. One
    with any other member (which no signature would cover) or without a key id is
    malformed: ``"bad-signature"``.
    """
    signature = document.get("signature")
    if signature is None:
        return "unsigned"
    if (
        not isinstance(signature, Mapping)
        or set(signature) != _SIGNATURE_MEMBERS
        or signature["algorithm"] != SIGNATURE_ALGORITHM
        or not isinstance(signature["key_id"], str)
    ):
        return "bad-signature"
    key_id = signature["key_id"]
    if key_id not in trusted:
        return "unknown-key"
    try:
        raw = base64.b64decode(str(signature.get("value", "")), validate=True)
        trusted[key_id].verify(raw, canonical_bytes(document))
    except (InvalidSignature, binascii.Error, ValueError):
        return "bad-signature"
    return "signature-valid"
