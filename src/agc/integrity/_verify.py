"""The run verifier: is a run's evidence complete and untouched?

``check_run`` returns a :class:`RunReport` and never raises on findings; ``verify_run``
raises :class:`~agc.errors.VerificationError` when the report is not complete. The report
answers ``complete`` (computed from its findings) and ``missing`` (the message of every
error finding, "transcript checksum mismatch" …), and holds the structured findings
with stable codes (:data:`RunFindingCode`).

One reader observes a run in any store, through the store interface, and hands what
it saw to one pure judge (:mod:`agc.integrity._run_reader`); the findings and their
codes are judged in :mod:`agc.integrity._judge` (its table of codes is the one
``docs/format.md`` documents).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from agc._core.report import Finding
from agc._core.storage import Store
from agc._core.store import StoreArg, StoreLayout, open_store
from agc.errors import VerificationError
from agc.integrity._judge import (
    ArtifactReport,
    RunFindingCode,
    RunReport,
    judge_artifact,
)
from agc.integrity._observation import ArtifactObservation
from agc.integrity._run_reader import check_store_run
from agc.integrity._store_io import iter_json_objects

if TYPE_CHECKING:
    # cryptography is imported only when a signature is actually checked: agc-verify
    # gates CI and pays its import time on every run.
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

__all__ = [
    "ArtifactObservation",
    "ArtifactReport",
    "Finding",
    "RunFindingCode",
    "RunReport",
    "check_run",
    "judge_artifact",
    "read_tool_events",
    "verify_run",
]


# -- the run ----------------------------------------------------------------------------


def check_run(
    run_id: str,
    store: StoreArg | Store = None,
    *,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
    allow_unsigned: bool = False,
    allow_recovered: bool = False,
) -> RunReport:
    """Check one run's evidence and return a report; never raises on findings.

    Args:
        run_id: the run id (validated first: ``RunIdInvalidError``, nothing touched).
        store: the store folder (``--store`` / ``$AGC_HOME`` / ``~/.agc``).
        trusted_keys: Ed25519 public keys by key id. With any, every run must carry a
            valid signature by one of them: an unsigned run (a stripped signature, a
            legacy-format store, a segment sealed without the key, a fabricated run)
            is incomplete (``unsigned``), a bad one ``bad-signature``, another key's
            ``unknown-key``.
        require_signature: the explicit spelling of that rule; without trusted keys it
            makes every run incomplete (``unknown-key``: nothing to check against).
        allow_unsigned: with trusted keys, let an unsigned run pass (signed runs are
            still checked). The only way to relax the rule.
        allow_recovered: let a run that ``agc recover`` sealed with bytes no crash
            checkpoint vouched for pass (its ``recovered`` finding is then a warning).

    Raises:
        RunIdInvalidError: bad run id.
        UsageError: ``require_signature`` and ``allow_unsigned`` together.
        StoreError: the store or a file in it cannot be read (exit 3).

    ``store`` may be a folder, an object store (``s3://bucket/prefix``) or any
    :class:`~agc._core.storage.Store` (one in memory, in tests): one reader observes
    every store (:func:`~agc.integrity._run_reader.check_store_run`), and what only a
    versioned store shows (newer versions, delete markers, retention) is reported too.
    """
    return check_store_run(
        open_store(store),
        run_id,
        trusted_keys=trusted_keys,
        require_signature=require_signature,
        allow_unsigned=allow_unsigned,
        allow_recovered=allow_recovered,
    )


def verify_run(
    run_id: str,
    store: StoreArg = None,
    *,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
    allow_unsigned: bool = False,
    allow_recovered: bool = False,
) -> RunReport:
    """Like :func:`check_run`, but raise when the run is not complete.

    Raises:
        VerificationError: the report has error findings (``exc.report`` holds it).
        RunIdInvalidError, UsageError, StoreError: as :func:`check_run`.
    """
    report = check_run(
        run_id,
        store,
        trusted_keys=trusted_keys,
        require_signature=require_signature,
        allow_unsigned=allow_unsigned,
        allow_recovered=allow_recovered,
    )
    if not report.complete:
        raise VerificationError(
            f"run {run_id} is incomplete: " + "; ".join(report.missing), report=report
        )
    return report


def read_tool_events(
    run_id: str,
    store: str | os.PathLike[str] | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield the records of the run's own tool-events file (what ``check_run`` verifies).

    Records naming the run in the legacy shared ``audit/tool-events.jsonl`` are NOT
    yielded: no seal covers them (``check_run`` reports them as ``unverified-records``);
    :func:`~agc.integrity.read_legacy_tool_events` reads them for a caller who asks.
    Lines that are not JSON objects are skipped here (the verifier, not this reader,
    reports damage).

    Raises:
        RunIdInvalidError: bad run id.
        UnsafePathError: the file is a symlink.
        StoreError: it is not a regular file (a FIFO, a folder) or cannot be read.
    """
    layout = StoreLayout.at(store)
    yield from iter_json_objects(layout.artifact_path(run_id, "tool-events"))
