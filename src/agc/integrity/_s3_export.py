"""Reading a run's artifact from object storage as it was verified (``agc resume``).

A reader that checks a run and then fetches its transcript makes two requests, and a
writer of the bucket can put another version of the object there in between: the check
would judge one set of bytes and the reader parse another. Here the run is checked by
:func:`~agc.integrity._s3_verify.check_object_run` and the artifact is copied from the
very stream its digest is computed over (one ``GetObject``); the copy is then hashed
again on this host against the seal it was judged by, and a reader parses that copy
only. Nothing is fetched a second time.

The copy is a :class:`~agc.integrity._kept.KeptArtifact` (in memory up to
``spool_bytes``, then a private temporary file), as a folder's is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from agc._core.objstore import ObjectStore
from agc._core.store import ArtifactKind, artifact_path
from agc.integrity._kept import SPOOL_BYTES, KeptArtifact, with_modified
from agc.integrity._s3_verify import check_object_run
from agc.integrity._verify import RunReport

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

__all__ = ["SPOOL_BYTES", "KeptArtifact", "check_object_run_kept"]


def check_object_run_kept(
    store: ObjectStore,
    run_id: str,
    *,
    kind: ArtifactKind = "transcript",
    spool_bytes: int = SPOOL_BYTES,
    max_bytes: int | None = None,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
    allow_unsigned: bool = False,
) -> tuple[RunReport, KeptArtifact]:
    """Check the run as ``agc-verify RUN --store s3://…`` does (``trusted_keys``,
    ``require_signature``, ``allow_unsigned`` as
    :func:`~agc.integrity._s3_verify.check_object_run`), keeping a copy of one
    artifact's bytes from the same read, of at most ``max_bytes`` (an object larger is
    refused before its bytes are read).

    The report is the verifier's, with one more ``modified`` finding when its verdict is
    complete but the kept copy does not hash to the seal on this host (the copy changed
    after it was read): a complete report means the copy is the sealed bytes. The caller
    closes the copy (``with``).

    Raises:
        RunIdInvalidError, StoreError: as :func:`check_object_run` (the copy is closed).
        InputError: the artifact is larger than ``max_bytes``.
    """
    kept = KeptArtifact(
        kind, store.url_of(artifact_path(run_id, kind)), spool_bytes, max_bytes=max_bytes
    )
    try:
        report = check_object_run(
            store,
            run_id,
            copies={kind: kept},
            trusted_keys=trusted_keys,
            require_signature=require_signature,
            allow_unsigned=allow_unsigned,
        )
        if report.complete and not _is_judged(kept, report):
            report = with_modified(
                report,
                kind,
                f"{kind}: the copy read from {kept.url} does not match its seal "
                "on this host (changed after it was read)",
            )
        kept.rewind()
    except BaseException:
        kept.close()
        raise
    return report, kept


def _is_judged(kept: KeptArtifact, report: RunReport) -> bool:
    """Whether the copy hashes, on this host, to what the check judged the artifact by:
    its seal for a run with a manifest; for a run without one (a legacy run, judged by
    its sidecar) the digest the verifier computed, as a folder's copy is checked."""
    if kept.seal is not None:
        return kept.matches_seal()
    observed = next((a for a in report.artifacts if a.kind == kept.kind), None)
    return observed is not None and kept.matches(
        observed.algorithm, observed.bytes, observed.digest
    )
