"""Reading a run's artifact from object storage as it was verified (``agc resume``).

A reader that checks a run and then fetches its transcript makes two requests, and a
writer of the bucket can put another version of the object there in between: the check
would judge one set of bytes and the reader parse another. Here the run is checked by
:func:`~agc.integrity._s3_verify.check_object_run` and the artifact is copied from the
very stream its digest is computed over (one ``GetObject``); the copy is then hashed
again on this host against the seal it was judged by, and a reader parses that copy
only. Nothing is fetched a second time.

The copy is held in memory up to ``spool_bytes`` and moved to a temporary file above
that (:class:`tempfile.SpooledTemporaryFile`: created with mode 0600 in the temporary
folder, ``$TMPDIR``, and unlinked at once), so a large transcript does not fill memory.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import IO, Final

from agc._core.digest import digests_equal, new_hasher
from agc._core.fs import describe_os_error
from agc._core.objstore import ObjectInfo, ObjectStore
from agc._core.report import Finding
from agc._core.store import ArtifactKind
from agc.errors import StoreError
from agc.integrity._manifest import ArtifactSeal
from agc.integrity._s3 import artifact_path
from agc.integrity._s3_verify import check_object_run
from agc.integrity._verify import RunReport

__all__ = ["SPOOL_BYTES", "KeptArtifact", "check_object_run_kept"]

SPOOL_BYTES: Final = 8 * 1024 * 1024
"""A kept copy larger than this (bytes) is moved from memory to a temporary file."""
_CHUNK: Final = 1 << 20


@dataclass
class KeptArtifact:
    """The bytes of one artifact object exactly as :func:`check_object_run` hashed them
    (an :class:`~agc.integrity._s3_verify.ObjectCopy`); a context manager that drops
    the copy on exit.

    Attributes:
        kind: the artifact kind; ``url``: its object's ``s3://`` URL.
        file: the copy, positioned at its start once the check is over.
        info: what the ``GetObject`` answered (its ``version_id`` is the version copied);
            ``None`` when the object was not read (absent, or a delete marker).
        seal: the manifest's entry the object was judged against (``None``: none).
        size: bytes copied.
    """

    kind: ArtifactKind
    url: str
    spool_bytes: int = SPOOL_BYTES
    file: IO[bytes] = field(init=False, repr=False)
    info: ObjectInfo | None = None
    seal: ArtifactSeal | None = None
    size: int = 0

    def __post_init__(self) -> None:
        self.file = tempfile.SpooledTemporaryFile(max_size=self.spool_bytes, mode="w+b")  # noqa: SIM115 - closed by close()

    @property
    def read(self) -> bool:
        """Whether the object was read (and the copy holds its bytes)."""
        return self.info is not None

    def begin(self, info: ObjectInfo, seal: ArtifactSeal | None) -> None:
        self.info, self.seal = info, seal

    def write(self, chunk: bytes, /) -> None:
        """Append a chunk of the body.

        Raises:
            StoreError: the copy cannot be written (a full temporary folder: exit 3).
        """
        try:
            self.file.write(chunk)
        except OSError as exc:
            raise StoreError(
                f"cannot keep a copy of {self.url} in {tempfile.gettempdir()}: "
                f"{describe_os_error(exc)}",
                hint="Free disk space there, or set TMPDIR to a folder with room.",
            ) from exc
        self.size += len(chunk)

    def matches_seal(self) -> bool:
        """Hash the copy again and compare it with its seal (length and digest, in
        constant time); ``False`` without a seal. Leaves the copy at its start.

        Raises:
            OSError: the copy cannot be read back.
        """
        self.file.seek(0)
        if self.seal is None or not self.read:
            return False
        hasher = new_hasher(self.seal.algorithm)
        total = 0
        while chunk := self.file.read(_CHUNK):
            hasher.update(chunk)
            total += len(chunk)
        self.file.seek(0)
        return total == self.seal.bytes and digests_equal(self.seal.digest, hasher.hexdigest())

    def close(self) -> None:
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


def check_object_run_kept(
    store: ObjectStore,
    run_id: str,
    *,
    kind: ArtifactKind = "transcript",
    spool_bytes: int = SPOOL_BYTES,
) -> tuple[RunReport, KeptArtifact]:
    """Check the run as ``agc-verify RUN --store s3://…`` does, keeping a copy of one
    artifact's bytes from the same read.

    The report is the verifier's, with one more ``modified`` finding when its verdict is
    complete but the kept copy does not hash to the seal on this host (the copy changed
    after it was read): a complete report means the copy is the sealed bytes. The caller
    closes the copy (``with``).

    Raises:
        RunIdInvalidError, StoreError: as :func:`check_object_run` (the copy is closed).
    """
    kept = KeptArtifact(kind, store.url_of(artifact_path(run_id, kind)), spool_bytes)
    try:
        report = check_object_run(store, run_id, copies={kind: kept})
        if report.complete and not kept.matches_seal():
            report = replace(
                report,
                findings=(
                    *report.findings,
                    Finding(
                        "modified",
                        f"{kind}: the copy read from {kept.url} does not match its seal "
                        "on this host (changed after it was read)",
                        artifact=kind,
                    ),
                ),
            )
        kept.file.seek(0)
    except BaseException:
        kept.close()
        raise
    return report, kept
