"""What a store shows of one artifact: the observation a verifier judges.

An :class:`ArtifactObservation` is made by the one run reader, for any store
(:mod:`agc.integrity._run_reader`), and judged, without further I/O, by
:func:`agc.integrity._judge.judge_artifact`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agc._core.digest import Algorithm
from agc._core.record import FrozenRecord, field, record
from agc._core.sidecar import Sidecar
from agc._core.store import ArtifactKind

if TYPE_CHECKING:
    from agc._core.checkpoint import PrefixCheck

__all__ = ["ArtifactObservation"]


@record
class ArtifactObservation(FrozenRecord):
    """What a store shows of one artifact, gathered by the run reader.

    Attributes:
        kind: the artifact kind.
        path: the artifact file's path.
        file_type: ``"file"``, ``"absent"``, ``"symlink"`` or ``"other"``.
        bytes: file length in bytes (``None`` unless a regular file).
        digest: digest of the whole file with ``algorithm`` (``None`` if not hashed).
        algorithm: the algorithm used for ``digest``.
        ends_with_newline: True if the file is empty or its last byte is ``\\n``.
        records: number of ``\\n``-terminated lines, counted only when needed.
        segment_mismatch: the first earlier segment (of a re-opened file) whose prefix no
            longer hashes to the digest it was sealed with.
        prefix_digest: digest of the first ``expected bytes`` when the file is longer
            than its seal (tells "extended" from "modified").
        sidecars: parsed sidecar (or the error text) by algorithm, for sidecars present.
        prefix: the file checked against its crash checkpoints (unsealed files only).
        changed_lines: when the sealed bytes differ, the 1-based range of lines
            ``(first, last)`` between two of the seal's prefix digests where the first
            change lies (see :func:`changed_lines`).
    """

    kind: ArtifactKind
    path: Path
    file_type: Literal["file", "absent", "symlink", "other"]
    bytes: int | None = None
    digest: str | None = None
    algorithm: Algorithm | None = None
    ends_with_newline: bool = True
    records: int | None = None
    prefix_digest: str | None = None
    segment_mismatch: Mapping[str, Any] | None = None
    sidecars: Mapping[Algorithm, Sidecar | str] = field(default_factory=dict)
    prefix: PrefixCheck | None = None
    changed_lines: tuple[int, int] | None = None
