"""When a signature is required, and which key ids are shown: one rule for every signed file.

Run manifests (``agc-verify``) and resume snapshots (``agc resume``) follow the same
rule, stated once here and imported without ``cryptography`` (the signature itself is
:mod:`agc._core.signing`, loaded only when one is made or checked):

* any trusted key requires a signature (an unsigned file fails as ``unsigned``);
* ``require_signature`` asks for it explicitly, also without trusted keys (then a
  signed file fails as ``unknown-key``: there is nothing to check it against);
* only ``allow_unsigned`` relaxes it, for unsigned files: a signed file is still
  checked against the trusted keys.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from agc.errors import UsageError

__all__ = ["KEY_ID_PATTERN", "printable_key_id", "signature_required"]

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
