"""Run manifests: what was sealed for a run, so deletion and truncation can be told apart.

One manifest per run, ``audit/manifests/<runId>.json``, written atomically each time an
artifact of the run is sealed. For each artifact it records the file name, algorithm,
digest, byte length, record count and last ``seq``; ``closed`` is true once every
artifact of the run (transcript and tool events) is sealed. The format is documented in
``docs/format.md``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from agc.errors import ManifestInvalidError, RunIdInvalidError
from agc.integrity.hashing import ALGORITHMS, Algorithm
from agc.store import ARTIFACT_KINDS, ArtifactKind, validate_run_id

__all__ = ["MANIFEST_SCHEMA_VERSION", "ArtifactSeal", "RunManifest"]

MANIFEST_SCHEMA_VERSION: Final = 1
MAX_MANIFEST_BYTES: Final = 1024 * 1024


@dataclass(frozen=True)
class ArtifactSeal:
    """The sealed state of one artifact file.

    Attributes:
        kind: ``"transcript"`` or ``"tool-events"``.
        file: the file's name inside its artifact folder (``<runId>.jsonl``).
        algorithm: ``"blake3"`` or ``"sha256"``.
        digest: lower-case hex digest of the file's bytes.
        bytes: file length in bytes.
        records: number of records (lines).
        last_seq: ``seq`` of the last record, ``None`` when there are none.
        sealed_at_ms: Unix time of sealing, in milliseconds.
    """

    kind: ArtifactKind
    file: str
    algorithm: Algorithm
    digest: str
    bytes: int
    records: int
    last_seq: int | None
    sealed_at_ms: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "algorithm": self.algorithm,
            "digest": self.digest,
            "bytes": self.bytes,
            "records": self.records,
            "last_seq": self.last_seq,
            "sealed_at_ms": self.sealed_at_ms,
            "closed": True,
        }

    @classmethod
    def from_dict(cls, kind: ArtifactKind, data: object) -> ArtifactSeal:
        """Build from a manifest entry; raises ``ManifestInvalidError`` on any bad field."""
        if not isinstance(data, dict):
            raise ManifestInvalidError(f"manifest entry {kind!r} is not an object")
        algorithm = data.get("algorithm")
        if algorithm not in ALGORITHMS:
            raise ManifestInvalidError(f"manifest entry {kind!r} has algorithm {algorithm!r}")
        last_seq = data.get("last_seq")
        if last_seq is not None and not _is_count(last_seq):
            raise ManifestInvalidError(f"manifest entry {kind!r} has a bad last_seq")
        for key in ("bytes", "records", "sealed_at_ms"):
            if not _is_count(data.get(key)):
                raise ManifestInvalidError(f"manifest entry {kind!r} has a bad {key}")
        for key in ("file", "digest"):
            if not isinstance(data.get(key), str) or not data[key]:
                raise ManifestInvalidError(f"manifest entry {kind!r} has a bad {key}")
        if data.get("closed") is not True:
            raise ManifestInvalidError(f"manifest entry {kind!r} is not closed")
        return cls(
            kind=kind,
            file=data["file"],
            algorithm=algorithm,
            digest=data["digest"],
            bytes=data["bytes"],
            records=data["records"],
            last_seq=last_seq,
            sealed_at_ms=data["sealed_at_ms"],
        )


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@dataclass(frozen=True)
class RunManifest:
    """The manifest of one run.

    Attributes:
        run_id: the run id (validated).
        artifacts: sealed artifacts by kind.
        schema_version: manifest format version (``MANIFEST_SCHEMA_VERSION``).
    """

    run_id: str
    artifacts: Mapping[ArtifactKind, ArtifactSeal] = field(default_factory=dict)
    schema_version: int = MANIFEST_SCHEMA_VERSION

    @property
    def closed(self) -> bool:
        """True once every artifact kind of the run is sealed."""
        return all(kind in self.artifacts for kind in ARTIFACT_KINDS)

    def with_seal(self, seal: ArtifactSeal) -> RunManifest:
        """Return a copy that also records ``seal`` (an artifact is sealed only once)."""
        if seal.kind in self.artifacts:
            raise ManifestInvalidError(f"{seal.kind} of run {self.run_id} is already sealed")
        return replace(self, artifacts={**self.artifacts, seal.kind: seal})

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "run_id": self.run_id,
            "closed": self.closed,
            "artifacts": {
                kind: self.artifacts[kind].to_dict()
                for kind in ARTIFACT_KINDS
                if kind in self.artifacts
            },
        }

    def to_bytes(self) -> bytes:
        """Stable JSON encoding (sorted keys, two-space indent, trailing newline)."""
        return (json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n").encode()

    @classmethod
    def from_bytes(cls, data: bytes, *, expected_run_id: str | None = None) -> RunManifest:
        """Parse manifest bytes strictly.

        Raises:
            ManifestInvalidError: not UTF-8 JSON, wrong shape, unknown schema version, or
                (when ``expected_run_id`` is given) a manifest of another run.
        """
        try:
            raw = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ManifestInvalidError(f"manifest is not valid JSON: {exc}") from exc
        if not isinstance(raw, dict):
            raise ManifestInvalidError("manifest is not a JSON object")
        if raw.get("schema_version") != MANIFEST_SCHEMA_VERSION:
            raise ManifestInvalidError(
                f"manifest schema_version {raw.get('schema_version')!r} is not supported"
            )
        run_id = raw.get("run_id")
        if not isinstance(run_id, str):
            raise ManifestInvalidError("manifest has no run_id")
        try:
            validate_run_id(run_id)
        except RunIdInvalidError as exc:
            raise ManifestInvalidError(f"manifest has a bad run id: {exc.message}") from exc
        if expected_run_id is not None and run_id != expected_run_id:
            raise ManifestInvalidError(
                f"manifest belongs to run {run_id!r}, not {expected_run_id!r}"
            )
        entries = raw.get("artifacts")
        if not isinstance(entries, dict):
            raise ManifestInvalidError("manifest has no artifacts object")
        artifacts: dict[ArtifactKind, ArtifactSeal] = {}
        for name, entry in entries.items():
            kind = next((k for k in ARTIFACT_KINDS if k == name), None)
            if kind is None:
                raise ManifestInvalidError(f"manifest lists unknown artifact {name!r}")
            artifacts[kind] = ArtifactSeal.from_dict(kind, entry)
        manifest = cls(run_id=run_id, artifacts=artifacts)
        if raw.get("closed") is not manifest.closed:
            raise ManifestInvalidError("manifest 'closed' disagrees with its artifacts")
        return manifest
