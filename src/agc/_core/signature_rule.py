"""When a signature is required, and whether one is trusted: one rule for every signed file.

Run manifests (``agc-verify``), resume snapshots (``agc resume``) and the ledger's seal
records (``agc ledger check``) follow the same rule, stated once here and imported
without ``cryptography`` (the signature itself is :mod:`agc._core.signing`, loaded only
when one is checked):

* any trusted key requires a signature (an unsigned file fails as ``unsigned``);
* ``require_signature`` asks for it explicitly, also without trusted keys (then a
  signed file fails as ``unknown-key``: there is nothing to check it against);
* only ``allow_unsigned`` relaxes it, for unsigned files: a signed file is still
  checked against the trusted keys.

:func:`judge_trust` is the one judgement of a signature under that rule (pure but for
reading a detached signature the caller hands it); each caller turns its
:class:`Trust` verdict into its own finding, error or report field.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

from agc._core.record import FrozenRecord, record
from agc.errors import UsageError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

__all__ = [
    "KEY_ID_PATTERN",
    "Trust",
    "TrustCode",
    "TrustReason",
    "TrustStatus",
    "judge_trust",
    "printable_key_id",
    "signature_required",
]

KEY_ID_PATTERN: Final = re.compile(r"[0-9a-f]{64}")
"""A key id: the lower-case hex SHA-256 of the raw 32-byte Ed25519 public key."""


def signature_required(
    trusted_keys: Mapping[str, object] | None,
    *,
    require_signature: bool,
    allow_unsigned: bool,
) -> bool:
    """Whether an unsigned file fails: asked for, or implied by trusted keys.

    Args:
        trusted_keys: trusted public keys by key id (``None`` or empty: none given).
        require_signature: ``--require-signature``.
        allow_unsigned: ``--allow-unsigned``.

    Raises:
        UsageError: ``require_signature`` and ``allow_unsigned`` together.
    """
    if require_signature and allow_unsigned:
        raise UsageError("--require-signature and --allow-unsigned contradict each other")
    return require_signature or (bool(trusted_keys) and not allow_unsigned)


def printable_key_id(value: object) -> str | None:
    """``value`` when it is a well-formed key id, else ``None``: a key id read from a
    file is shown only in that form (anything else is the file's content, not echoed)."""
    return value if isinstance(value, str) and KEY_ID_PATTERN.fullmatch(value) else None


TrustStatus = Literal["signature-valid", "bad-signature", "unknown-key", "unsigned", "not-checked"]
"""What a signature is: valid by a trusted key, invalid, by a key not trusted, absent, or
present but not checked (no trusted key given)."""
TrustCode = Literal["bad-signature", "unknown-key", "unsigned"]
"""The finding (error) code of a signature that fails the rule."""
TrustReason = Literal[
    "valid", "absent", "no-trusted-key", "untrusted-key", "invalid", "other-bytes"
]
"""Why, finer than :data:`TrustStatus`: ``invalid`` is a malformed ``signature`` member
or one that does not verify; ``other-bytes`` a valid signature of a document that
describes other bytes than those at hand (another file, digest or length)."""

_STATUS: Final[Mapping[TrustReason, TrustStatus]] = {
    "valid": "signature-valid",
    "absent": "unsigned",
    "no-trusted-key": "not-checked",
    "untrusted-key": "unknown-key",
    "invalid": "bad-signature",
    "other-bytes": "bad-signature",
}


@record
class Trust(FrozenRecord):
    """The verdict on one signature (see :func:`judge_trust`).

    Attributes:
        reason: why (:data:`TrustReason`).
        required: whether a signature was required (:func:`signature_required`).
        key_id: the key id the signature names, when it is a well-formed one
            (:func:`printable_key_id`); ``None`` when unsigned, malformed or not read.
    """

    reason: TrustReason
    required: bool
    key_id: str | None = None

    @property
    def status(self) -> TrustStatus:
        """What the signature is, for a report's ``signature`` member."""
        return _STATUS[self.reason]

    @property
    def code(self) -> TrustCode | None:
        """The error code when the signature fails the rule, ``None`` when it passes.

        Absent: ``unsigned`` when required. Present without a trusted key to check it:
        ``unknown-key`` when required (nothing to check it against). Checked: a key not
        trusted is ``unknown-key``, an invalid signature or one of other bytes
        ``bad-signature``, whether or not a signature was required.
        """
        if self.reason == "valid":
            return None
        if self.reason == "absent":
            return "unsigned" if self.required else None
        if self.reason == "no-trusted-key":
            return "unknown-key" if self.required else None
        return "unknown-key" if self.reason == "untrusted-key" else "bad-signature"


def _named_key_id(document: Mapping[str, Any]) -> str | None:
    signature = document.get("signature")
    return printable_key_id(signature.get("key_id")) if isinstance(signature, Mapping) else None


def judge_trust(
    signed: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None,
    *,
    required: bool,
    covers: bool | Callable[[Mapping[str, Any]], bool] = True,
) -> Trust:
    """Judge a signed document's signature against trusted keys under the rule.

    Args:
        signed: the signed document (its ``signature`` member is judged; none, or
            ``null``, is unsigned); or a function returning it, for a detached signature
            that exists but is read only when it is checked (with trusted keys);
            ``None`` when there is nothing signed (no manifest, no signature file).
        trusted_keys: trusted Ed25519 public keys by key id (``None`` or empty: none).
        required: whether an unsigned file fails (:func:`signature_required`).
        covers: whether the signed document describes the bytes at hand (asked only of
            a signature that verifies): a valid signature over other bytes is
            ``other-bytes``.

    Returns:
        The :class:`Trust` verdict. The signature itself is checked as
        :func:`agc._core.signing.check_signature` does (Ed25519, RFC 8032, over the RFC
        8785 form without the ``signature`` member), only when a trusted key is given.

    Raises:
        Whatever ``signed`` raises when it is called (reading or parsing the file).
    """
    if signed is None:
        return Trust("absent", required)
    if isinstance(signed, Mapping):
        if signed.get("signature") is None:
            return Trust("absent", required)
        key_id = _named_key_id(signed)
        if not trusted_keys:
            return Trust("no-trusted-key", required, key_id)
        document = signed
    else:
        if not trusted_keys:
            return Trust("no-trusted-key", required)
        document = signed()
        if document.get("signature") is None:
            return Trust("absent", required)
        key_id = _named_key_id(document)
    from agc._core.signing import check_signature  # noqa: PLC0415 - cryptography

    status = check_signature(document, trusted_keys)
    if status == "unknown-key":
        return Trust("untrusted-key", required, key_id)
    if status != "signature-valid":
        return Trust("invalid", required, key_id)
    fits = covers(document) if callable(covers) else covers
    return Trust("valid" if fits else "other-bytes", required, key_id)
