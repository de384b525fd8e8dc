"""Detached Ed25519 signatures of session snapshots: ``<file>.sig`` beside the sidecar.

The checksum sidecar (``<file>.b3``) is unkeyed: whoever can write the ``sessions/``
folder can replace a snapshot and its sidecar together. A signature says who saved it.
It is a small JSON document (``docs/resume.md``, "Signed snapshots")::

    {"algorithm":"blake3","bytes":1234,"digest":"<64 hex>","file":"run-7.json",
     "schemaVersion":1,"signature":{"algorithm":"ed25519","key_id":"<64 hex>",
     "value":"<base64>"},"type":"agc-snapshot-signature"}

signed as run manifests are (:mod:`agc._core.signing`): Ed25519 (RFC 8032) over the
RFC 8785 canonical JSON of the document without its ``signature`` member. What is
signed names the file (so a signature moved to another snapshot fails), the digest
algorithm, the digest of the file's bytes on disk and their length (so re-sealed bytes
fail), and the document's own type and version (so it cannot be taken for another
signed document). Every member is required and no other is allowed, here and in
``signature`` (which the signature does not cover).

The rule of when a signature is required and the judgement of one are the run
manifests' (:func:`agc._core.signature_rule.judge_trust`); :func:`judge_signature`
turns that verdict into the errors shared with ``agc-verify``'s codes: ``unsigned``,
``bad-signature``, ``unknown-key``.

``cryptography`` is imported only when a signature is made or checked.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

from agc._core import json as strict_json
from agc._core.digest import ALGORITHMS, Algorithm, digest_bytes, digests_equal
from agc._core.signature_rule import judge_trust
from agc.errors import BadSignatureError, JsonInvalidError, UnknownKeyError, UnsignedError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from agc._core.signing import SigningKey

__all__ = [
    "MAX_SIGNATURE_BYTES",
    "SIGNATURE_SUFFIX",
    "SIGNATURE_TYPE",
    "SIGNATURE_VERSION",
    "SignatureOutcome",
    "encode_signature",
    "judge_signature",
    "signature_name",
]

SIGNATURE_SUFFIX: Final = ".sig"
SIGNATURE_TYPE: Final = "agc-snapshot-signature"
SIGNATURE_VERSION: Final = 1
MAX_SIGNATURE_BYTES: Final = 4096
"""The largest signature file read: a signature document is about 400 bytes."""
_MEMBERS: Final = frozenset(
    {"type", "schemaVersion", "file", "algorithm", "digest", "bytes", "signature"}
)
_HEX: Final = frozenset("0123456789abcdef")

SignatureOutcome = Literal["signature-valid", "not-checked", "unsigned"]
"""What :func:`judge_signature` let pass: a valid signature by a trusted key, a signature
not checked (no trusted key given, none required), no signature (none required)."""


def signature_name(file_name: str) -> str:
    """``run-7.json`` -> ``run-7.json.sig`` (pure)."""
    return file_name + SIGNATURE_SUFFIX


def encode_signature(
    file_name: str, data: bytes, algorithm: Algorithm, key: SigningKey
) -> tuple[bytes, str]:
    """The signature file of the snapshot ``file_name`` holding ``data``, and its digest.

    Returns:
        (the file's bytes: the signed document as RFC 8785 canonical JSON and a line
        break, the hex ``algorithm`` digest of ``data``).
    """
    from agc._core.canonical import canonical_json  # noqa: PLC0415 - with the signature
    from agc._core.signing import sign_document  # noqa: PLC0415 - cryptography

    digest = digest_bytes(data, algorithm)
    document = {
        "type": SIGNATURE_TYPE,
        "schemaVersion": SIGNATURE_VERSION,
        "file": file_name,
        "algorithm": algorithm,
        "digest": digest,
        "bytes": len(data),
    }
    signed: bytes = canonical_json(sign_document(document, key))
    return signed + b"\n", digest


def _parse(raw: bytes, where: str) -> dict[str, Any]:
    """The signature document in ``raw``, every member of the documented type.

    Raises:
        BadSignatureError: not strict JSON, not an object of exactly the documented
            members, another type or version, or a member of the wrong type.
    """

    def bad(problem: str) -> BadSignatureError:
        return BadSignatureError(f"{where} is not a snapshot signature: {problem}")

    if len(raw) > MAX_SIGNATURE_BYTES:
        raise bad(f"larger than {MAX_SIGNATURE_BYTES} bytes")
    try:
        document = strict_json.loads(raw)
    except JsonInvalidError as exc:
        raise bad(f"not JSON ({exc.message})") from exc
    if not isinstance(document, dict):
        raise bad("not a JSON object")
    if set(document) != _MEMBERS:
        extra, missing = sorted(set(document) - _MEMBERS), sorted(_MEMBERS - set(document))
        raise bad(
            "; ".join(
                part
                for part in (
                    f"unexpected member(s) {', '.join(map(json.dumps, extra))}" if extra else "",
                    f"missing member(s) {', '.join(missing)}" if missing else "",
                )
                if part
            )
        )
    if document["type"] != SIGNATURE_TYPE:
        raise bad(f"type is not {SIGNATURE_TYPE!r}")
    version = document["schemaVersion"]
    if type(version) is not int or version != SIGNATURE_VERSION:
        raise bad(f"schemaVersion is not {SIGNATURE_VERSION}")
    if not isinstance(document["file"], str):
        raise bad("file is not a string")
    if document["algorithm"] not in ALGORITHMS:
        raise bad(f"algorithm is not one of {', '.join(ALGORITHMS)}")
    digest = document["digest"]
    if not isinstance(digest, str) or len(digest) != 64 or not set(digest) <= _HEX:
        raise bad("digest is not 64 lower-case hex digits")
    size = document["bytes"]
    if type(size) is not int or size < 0:
        raise bad("bytes is not a non-negative integer")
    return document


def judge_signature(
    read: Callable[[], bytes] | None,
    *,
    where: str,
    file_name: str,
    data: bytes,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None,
    required: bool,
    on_note: Callable[[str], None] | None = None,
) -> SignatureOutcome:
    """Judge a snapshot's signature file, or refuse the snapshot.

    Args:
        read: reads the signature file's bytes (called only when a trusted key is
            given: without one a signature is not read, so a snapshot loads as before);
            ``None`` when there is no signature file.
        where: the signature file's path or URL, for messages.
        file_name: the snapshot's file (object) name, which the signature must name.
        data: the snapshot's bytes, already checked against its sidecar.
        trusted_keys: trusted Ed25519 public keys by key id.
        required: whether an unsigned snapshot fails
            (:func:`agc._core.signature_rule.signature_required`).
        on_note: called with a one-line note when a signature is present but not
            checked (no trusted key given and none required).

    Returns:
        ``"signature-valid"``, ``"not-checked"`` or ``"unsigned"`` (only when not
        ``required``).

    Raises:
        UnsignedError: no signature file, and one is required.
        UnknownKeyError: signed by a key not in ``trusted_keys``, or a signature is
            required and no trusted key was given to check it.
        BadSignatureError: the file is not a regular file or is malformed (see
            :func:`_parse`), its Ed25519
            signature (RFC 8032) does not verify over the RFC 8785 form of the other
            members, or it is a valid signature of another file name, another digest or
            another length than ``data``.
        StoreError: ``read`` could not read the file (exit 3).
    """
    snapshot = where.removesuffix(SIGNATURE_SUFFIX)
    if read is None:
        if judge_trust(None, trusted_keys, required=required).code is not None:
            raise UnsignedError(
                f"{snapshot} is not signed (no {signature_name(file_name)} beside it), and a "
                "signature is required: a trusted key was given, or --require-signature"
            )
        return "unsigned"
    parsed: list[dict[str, Any]] = []

    def parse() -> dict[str, Any]:  # read only to be checked: with a trusted key
        parsed.append(_parse(read(), where))
        return parsed[-1]

    trust = judge_trust(
        parse,
        trusted_keys,
        required=required,
        covers=lambda document: _signs(document, file_name, data),
    )
    if trust.reason == "no-trusted-key":
        if trust.code is not None:
            raise UnknownKeyError(
                f"{snapshot} is signed, but no trusted key was given to check its signature"
            )
        if on_note is not None:
            on_note(
                f"{snapshot} is signed but no trusted key was given, so its signature "
                "was not checked"
            )
        return "not-checked"
    if trust.reason == "absent":
        raise BadSignatureError(f"{where} has a null signature member")
    if trust.reason == "untrusted-key":
        key_id = trust.key_id or "(malformed key id)"
        raise UnknownKeyError(f"{snapshot} is signed by a key that is not trusted: {key_id}")
    if trust.reason == "invalid":
        raise BadSignatureError(
            f"{where} does not verify: a malformed signature member, or a document changed "
            "after it was signed"
        )
    if trust.reason == "other-bytes":
        document = parsed[-1]
        if document["file"] != file_name:
            raise BadSignatureError(
                f"{where} signs the snapshot {json.dumps(document['file'])}, not {file_name}"
            )
        raise BadSignatureError(
            f"{where} signs other bytes than {snapshot} holds ({document['bytes']} bytes "
            f"signed, {len(data)} now): the snapshot was replaced and sealed again"
        )
    return "signature-valid"


def _signs(document: Mapping[str, Any], file_name: str, data: bytes) -> bool:
    """Whether the signature ``document`` signs exactly ``file_name`` holding ``data``."""
    return (
        document["file"] == file_name
        and document["bytes"] == len(data)
        and digests_equal(document["digest"], digest_bytes(data, document["algorithm"]))
    )
