"""A run's artifact read once, as it was verified (``agc resume RUN``, ``agc export``).

A reader that checks a run and then opens its transcript reads it twice, and a writer
of the store can put other bytes there in between (rewrite the file, swap in a symlink
or another run's file, put another version of an object): the check would judge one set
of bytes and the reader parse another. So nothing is read twice: :func:`check_run_kept`
checks the run with the one run reader
(:func:`~agc.integrity._run_reader.check_store_run`), in any store, and copies the
artifact from the very stream its digest is computed over; the copy is then hashed again
on this host against what the check judged it by, and a reader parses that copy only. A
copy that differs makes the verdict incomplete, with a ``modified`` finding.

The copy is a :class:`KeptArtifact`: held in memory up to ``spool_bytes`` and moved to
a temporary file above that (:class:`tempfile.SpooledTemporaryFile`: mode 0600 in the
temporary folder, ``$TMPDIR``, unlinked at once), so a large transcript does not fill
memory.
"""

from __future__ import annotations

import contextlib
import tempfile
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import IO, TYPE_CHECKING, Final

from agc._core.digest import check_algorithm, digests_equal, new_hasher
from agc._core.fs import describe_os_error
from agc._core.report import Finding
from agc._core.storage import Store
from agc._core.store import (
    ArtifactKind,
    StoreArg,
    artifact_path,
    open_store,
)
from agc.errors import InputError, StoreError, UsageError
from agc.integrity import _run_reader
from agc.integrity._judge import RunFindingCode, RunReport

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from agc._core.storage import ObjectInfo, Store
    from agc.integrity._manifest import ArtifactSeal

__all__ = ["SPOOL_BYTES", "KeptArtifact", "check_run_kept"]

SPOOL_BYTES: Final = 8 * 1024 * 1024
"""A kept copy larger than this (bytes) is moved from memory to a temporary file."""
_CHUNK: Final = 1 << 20


@dataclass
class KeptArtifact:
    """The bytes of one artifact exactly as they were read for its check; a context
    manager that drops the copy on exit.

    Attributes:
        kind: the artifact kind; ``url``: where it was read (a path or an ``s3://`` URL).
        file: the copy, positioned at its start once the check is over.
        info: for an object, what the ``GetObject`` answered (its ``version_id`` is the
            version copied); ``None`` for a file, or when nothing was read.
        seal: the manifest's entry the object was judged against (``None``: none).
        size: bytes copied.
        max_bytes: refuse to copy more than this (``None``: no limit); an artifact
            known to be larger is refused before its first byte is copied.
    """

    kind: ArtifactKind
    url: str
    spool_bytes: int = SPOOL_BYTES
    file: IO[bytes] = field(init=False, repr=False)
    info: ObjectInfo | None = None
    seal: ArtifactSeal | None = None
    size: int = 0
    max_bytes: int | None = None
    _read: bool = field(default=False, init=False, repr=False)

    def __post_init__(self) -> None:
        # SpooledTemporaryFile reads max_size=0 as "never move to a file": at least one
        # byte, so spool_bytes=0 means every copy goes to a temporary file.
        self.file = tempfile.SpooledTemporaryFile(max_size=max(self.spool_bytes, 1), mode="w+b")  # noqa: SIM115 - closed by close()

    @property
    def read(self) -> bool:
        """Whether the artifact was read (and the copy holds its bytes)."""
        return self._read

    def begin(
        self,
        info: ObjectInfo | None = None,
        seal: ArtifactSeal | None = None,
        *,
        size: int | None = None,
    ) -> None:
        """The artifact is being read: its bytes follow through :meth:`write`.

        ``size``: its length when known (else ``info.size``).

        Raises:
            InputError: that length is more than :attr:`max_bytes` (nothing is copied).
        """
        known = size if size is not None else (info.size if info is not None else None)
        if known is not None:
            self._refuse_above(known)
        self.info, self.seal, self._read = info, seal, True

    def _refuse_above(self, size: int) -> None:
        if self.max_bytes is not None and size > self.max_bytes:
            raise InputError(
                f"the {self.kind} {self.url} is larger than {self.max_bytes} bytes; not read",
                hint="agc reads histories of up to this size.",
            )

    def write(self, chunk: bytes, /) -> None:
        """Append a chunk of the artifact's bytes.

        Raises:
            InputError: the copy would hold more than :attr:`max_bytes`.
            StoreError: the copy cannot be written (a full temporary folder: exit 3).
        """
        self._refuse_above(self.size + len(chunk))
        try:
            self.file.write(chunk)
        except OSError as exc:
            raise self._failed(exc) from exc
        self.size += len(chunk)

    def rewind(self) -> None:
        """Put the copy at its start. The last chunk written may still be buffered,
        so this is where a full temporary folder can show.

        Raises:
            StoreError: the copy cannot be written or read back (exit 3).
        """
        try:
            self.file.seek(0)
        except OSError as exc:
            raise self._failed(exc) from exc

    def _failed(self, exc: OSError) -> StoreError:
        return StoreError(
            f"cannot keep a copy of {self.url} in {tempfile.gettempdir()}: "
            f"{describe_os_error(exc)}",
            hint="Free disk space there, or set TMPDIR to a folder with room.",
        )

    def matches(self, algorithm: str | None, size: int | None, digest: str | None) -> bool:
        """Hash the copy again and compare it with ``size`` bytes of ``digest`` (in
        constant time); ``False`` when nothing was read or a value is missing. Leaves
        the copy at its start.

        Raises:
            StoreError: the copy cannot be written or read back (exit 3).
        """
        self.rewind()
        if not self._read or size is None or not digest:
            return False
        try:
            hasher = new_hasher(check_algorithm(algorithm or ""))
        except UsageError:  # not an algorithm agc knows: nothing to compare with
            return False
        total = 0
        try:
            while chunk := self.file.read(_CHUNK):
                hasher.update(chunk)
                total += len(chunk)
        except OSError as exc:
            raise self._failed(exc) from exc
        self.rewind()
        return total == size and digests_equal(digest, hasher.hexdigest())

    def matches_seal(self) -> bool:
        """:meth:`matches` against :attr:`seal`; ``False`` without a seal."""
        if self.seal is None:
            self.rewind()
            return False
        return self.matches(self.seal.algorithm, self.seal.bytes, self.seal.digest)

    def close(self) -> None:
        """Drop the copy. Never raises: a tail still buffered when the temporary folder
        is full fails to flush here, and the copy is discarded anyway (the descriptor is
        closed all the same); the error that stopped the copy is the one to report."""
        with contextlib.suppress(OSError):
            self.file.close()

    def __enter__(self) -> KeptArtifact:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def with_modified(report: RunReport, kind: ArtifactKind, message: str) -> RunReport:
    """``report`` with one more ``modified`` finding about ``kind`` (its verdict fails)."""
    finding: Finding[RunFindingCode] = Finding("modified", message, artifact=kind)
    return replace(report, findings=(*report.findings, finding))


def check_run_kept(
    run_id: str,
    store: StoreArg | Store = None,
    *,
    kind: ArtifactKind = "transcript",
    spool_bytes: int = SPOOL_BYTES,
    max_bytes: int | None = None,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
    allow_unsigned: bool = False,
) -> tuple[RunReport, KeptArtifact]:
    """Check the run as ``agc-verify RUN`` does (``trusted_keys``, ``require_signature``,
    ``allow_unsigned`` as :func:`~agc.integrity._verify.check_run`), keeping a copy of
    one artifact's bytes from the same read (never through a symlink, never from a FIFO
    or a folder), of at most ``max_bytes`` (an artifact known to be larger is refused
    before its bytes are copied).

    The report is the check's, with one more ``modified`` finding when its verdict is
    complete but the copy does not hash, on this host, to what the check judged (the
    copy changed after it was read): a complete report means the copy is the sealed
    bytes. When the artifact is absent (or not a regular file) nothing is read
    (:attr:`KeptArtifact.read` is false). The caller closes the copy (``with``).

    Raises:
        RunIdInvalidError, StoreError: as ``check_run``; StoreError too when the
            artifact cannot be read or copied (the copy is closed).
        InputError: the artifact is larger than ``max_bytes``.
    """
    opened = open_store(store)
    kept = KeptArtifact(
        kind, opened.url_of(artifact_path(run_id, kind)), spool_bytes, max_bytes=max_bytes
    )
    try:
        report = _run_reader.check_store_run(
            opened,
            run_id,
            copies={kind: kept},
            trusted_keys=trusted_keys,
            require_signature=require_signature,
            allow_unsigned=allow_unsigned,
        )
        if report.complete and kept.read and not _is_judged(kept, report):
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
