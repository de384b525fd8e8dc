"""``agc-verify RUN --store s3://… --retention-days N``: one run against a retention policy."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from agc.errors import UsageError
from agc.flows import Retention, open_store
from agc.integrity import RunReport, check_object_run, verify_policy

__all__ = ["check_run_with_retention"]


def check_run_with_retention(
    run_id: str,
    store: Path | None,
    retention: Retention,
    trusted: Mapping[str, Ed25519PublicKey] | None,
    require_signature: bool,
    allow_unsigned: bool,
    allow_recovered: bool = False,
) -> RunReport:
    """:func:`~agc.integrity.check_object_run` with ``retention`` as the policy.

    Raises:
        UsageError: the store's objects cannot carry a retention (a folder: retention is
            a property of object storage).
    """
    opened = open_store(store)
    try:
        remote = opened.with_policy(retention=retention, legal_hold=False)
    except UsageError as exc:
        raise UsageError("--retention-days goes with an s3:// store", hint=exc.hint) from exc
    return check_object_run(
        remote,
        run_id,
        trusted_keys=trusted,
        require_signature=require_signature,
        allow_unsigned=allow_unsigned,
        allow_recovered=allow_recovered,
        policy=verify_policy(remote, retention),
    )
