"""Run manifests: what was sealed for a run, so deletion and truncation can be told apart.

One manifest per run, ``audit/manifests/<runId>.json``, written atomically each time an
artifact of the run is sealed. For each artifact it records the file name, algorithm,
digest, byte length, record count and last ``seq``; ``closed`` is true once every
artifact of the run (transcript and tool events) is sealed. The format is documented in
``docs/format.md``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any, Final

from agc._core import json as strict_json
from agc._core.canonical import canonical_json
from agc._core.digest import ALGORITHMS, Algorithm
from agc._core.record import FrozenRecord, field, record, replace
from agc._core.store import ARTIFACT_KINDS, ArtifactKind, validate_run_id
from agc.errors import (
    JsonInvalidError,
    ManifestInvalidError,
    RecordInvalidError,
    RunIdInvalidError,
)

if TYPE_CHECKING:
    from agc._core.checkpoint import Checkpoint

__all__ = [
    "MANIFEST_SCHEMA_VERSION",
    "MAX_ATTRIBUTES_BYTES",
    "ArtifactSeal",
    "RunManifest",
    "check_attributes",
    "sealed_checkpoints",
]

MANIFEST_SCHEMA_VERSION: Final = 1
MAX_MANIFEST_BYTES: Final = 1024 * 1024
MAX_ATTRIBUTES_BYTES: Final = 64 * 1024
_MANIFEST_KEYS: Final = frozenset(
    {"schema_version", "run_id", "closed", "artifacts", "chain", "signature", "attributes"}
)
_ENTRY_KEYS: Final = frozenset(
    {
        "file",
        "algorithm",
        "digest",
        "bytes",
        "records",
        "last_seq",
        "sealed_at_ms",
        "closed",
        "segments",
        "recovered",
        "reopened_at_ms",
        "quarantine",
        "checkpoints",
        "unverified_bytes",
        "unverified_records",
    }
)
_CHECKPOINT_KEYS: Final = frozenset({"records", "bytes", "digest"})


@record
class ArtifactSeal(FrozenRecord):
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
        segments: earlier seals of this file, oldest first, when a sealed file was
            re-opened to append (each ``{"records", "bytes", "digest", "sealed_at_ms"}``:
            the file's state when that segment was sealed).
        reopened_at_ms: set while the file is re-opened for a new segment (the seal
            then covers only the prefix it names; the artifact is not closed).
        recovered: True when ``agc recover`` sealed the file after a crash.
        quarantine: for a recovered file whose last line was torn: ``{"file", "bytes",
            "digest"}`` of the quarantine file that holds the torn bytes.
        checkpoints: prefix digests of the file taken while it was written (each
            ``{"records", "bytes", "digest"}``: the first ``bytes`` bytes, holding
            ``records`` complete records, hash to ``digest`` with ``algorithm``), in
            increasing order; a verifier uses them, only when the whole digest differs,
            to name the first changed range of lines. Empty for a file sealed before
            they were kept, or too short for a checkpoint.
        unverified_bytes, unverified_records: for a recovered file, the bytes and
            records that no crash checkpoint (nor an earlier seal) vouched for; kept
            by later seals of the file (a re-opened file's new segment is vouched for
            by its own seal). ``None`` for a file never recovered, and for a recovery
            recorded before these were kept (then how much was vouched for is unknown).
    """

    kind: ArtifactKind
    file: str
    algorithm: Algorithm
    digest: str
    bytes: int
    records: int
    last_seq: int | None
    sealed_at_ms: int
    segments: tuple[Mapping[str, Any], ...] = ()
    reopened_at_ms: int | None = None
    recovered: bool = False
    quarantine: Mapping[str, Any] | None = None
    checkpoints: tuple[Mapping[str, Any], ...] = ()
    unverified_bytes: int | None = None
    unverified_records: int | None = None

    @property
    def closed(self) -> bool:
        """False while the file is re-opened for a new segment."""
        return self.reopened_at_ms is None

    @property
    def unvouched(self) -> tuple[int, int] | None:
        """``(bytes, records)`` of a recovered file that no checkpoint or earlier seal
        vouched for: ``(0, 0)`` when every byte was vouched for (and for a file sealed
        normally), ``None`` when a recovery recorded before the counts were kept leaves
        it unknown."""
        if not self.recovered:
            return 0, 0
        if self.unverified_bytes is None or self.unverified_records is None:
            return None
        return self.unverified_bytes, self.unverified_records

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "file": self.file,
            "algorithm": self.algorithm,
            "digest": self.digest,
            "bytes": self.bytes,
            "records": self.records,
            "last_seq": self.last_seq,
            "sealed_at_ms": self.sealed_at_ms,
            "closed": self.closed,
            "segments": [dict(segment) for segment in self.segments],
            "recovered": self.recovered,
        }
        if self.reopened_at_ms is not None:
            data["reopened_at_ms"] = self.reopened_at_ms
        if self.quarantine is not None:
            data["quarantine"] = dict(self.quarantine)
        if self.checkpoints:
            data["checkpoints"] = [dict(checkpoint) for checkpoint in self.checkpoints]
        if self.unverified_bytes is not None:
            data["unverified_bytes"] = self.unverified_bytes
        if self.unverified_records is not None:
            data["unverified_records"] = self.unverified_records
        return data

    @classmethod
    def from_dict(cls, kind: ArtifactKind, data: object) -> ArtifactSeal:
        """Build from a manifest entry; raises ``ManifestInvalidError`` on any bad field."""
        if not isinstance(data, dict):
            raise ManifestInvalidError(f"manifest entry {kind!r} is not an object")
        unknown = set(data) - _ENTRY_KEYS
        if unknown:
            raise ManifestInvalidError(f"manifest entry {kind!r} has unknown {sorted(unknown)}")
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
        reopened = data.get("reopened_at_ms")
        if reopened is not None and not _is_count(reopened):
            raise ManifestInvalidError(f"manifest entry {kind!r} has a bad reopened_at_ms")
        if data.get("closed") is not (reopened is None):
            raise ManifestInvalidError(f"manifest entry {kind!r} has a bad 'closed'")
        segments = data.get("segments", [])
        if not isinstance(segments, list) or not all(_is_segment(s) for s in segments):
            raise ManifestInvalidError(f"manifest entry {kind!r} has bad segments")
        quarantine = data.get("quarantine")
        if quarantine is not None and not _is_quarantine(quarantine, data["file"]):
            raise ManifestInvalidError(f"manifest entry {kind!r} has a bad quarantine")
        if not isinstance(data.get("recovered", False), bool):
            raise ManifestInvalidError(f"manifest entry {kind!r} has a bad 'recovered'")
        checkpoints = data.get("checkpoints", [])
        if not _are_checkpoints(checkpoints, data["bytes"], data["records"]):
            raise ManifestInvalidError(f"manifest entry {kind!r} has bad checkpoints")
        verified = (data.get("unverified_bytes"), data.get("unverified_records"))
        if verified != (None, None) and not (
            data.get("recovered") is True
            and _is_count(verified[0])
            and _is_count(verified[1])
            and verified[0] <= data["bytes"]
            and verified[1] <= data["records"]
        ):
            raise ManifestInvalidError(
                f"manifest entry {kind!r} has a bad unverified_bytes/unverified_records"
            )
        return cls(
            kind=kind,
            file=data["file"],
            algorithm=algorithm,
            digest=data["digest"],
            bytes=data["bytes"],
            records=data["records"],
            last_seq=last_seq,
            sealed_at_ms=data["sealed_at_ms"],
            segments=tuple(segments),
            reopened_at_ms=reopened,
            recovered=data.get("recovered", False),
            quarantine=quarantine,
            checkpoints=tuple(checkpoints),
            unverified_bytes=verified[0],
            unverified_records=verified[1],
        )


# RFC 8785 §3.2.2.3: numbers are IEEE 754 doubles; integers beyond 2**53 - 1 in
# magnitude, NaN and the infinities have no canonical form.
_MAX_SAFE_INTEGER: Final = 2**53 - 1


def _not_canonicalizable(value: object) -> str | None:
    """What in ``value`` (parsed JSON) RFC 8785 cannot canonicalize, else ``None``.

    Checked here without importing the rfc8785 package, which ``agc-verify`` would
    otherwise pay for at every start.
    """
    stack: list[Any] = [value]
    pop, extend = stack.pop, stack.extend
    while stack:
        item = pop()
        kind = type(item)
        # Exact types first (what a JSON parser returns), then subclasses as before.
        if kind is str or kind is bool or item is None:
            continue
        if kind is dict:
            extend(item.values())
        elif kind is list:
            extend(item)
        elif isinstance(item, (bool, str)):
            continue
        elif isinstance(item, int):
            if abs(item) > _MAX_SAFE_INTEGER:
                return f"the integer {item} is beyond 2**53 - 1"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return f"the number {item} is not finite"
        elif isinstance(item, dict):
            extend(item.values())
        elif isinstance(item, list):
            extend(item)
    return None


def check_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Return a plain-dict copy of run attributes after checking they can be stored.

    Attributes are a JSON object (string keys; values of JSON types) that RFC 8785 can
    canonicalize (no NaN/Infinity, integers within 2**53 - 1), at most
    :data:`MAX_ATTRIBUTES_BYTES` bytes as compact JSON.

    Raises:
        RecordInvalidError: any of these does not hold (nothing is written).
    """
    if not isinstance(attributes, Mapping):
        raise RecordInvalidError("run attributes must be a JSON object")
    try:
        text = json.dumps(
            dict(attributes), allow_nan=False, ensure_ascii=False, separators=(",", ":")
        )
        size = len(text.encode("utf-8"))  # a lone surrogate has no UTF-8 form
    except (TypeError, ValueError) as exc:
        raise RecordInvalidError(f"run attributes are not JSON: {exc}") from exc
    copy: dict[str, Any] = json.loads(text)
    if set(copy) != set(attributes):  # a non-string key that json.dumps coerced
        raise RecordInvalidError("run attributes must have string keys")
    problem = _not_canonicalizable(copy)
    if problem is not None:
        raise RecordInvalidError(f"run attributes cannot be canonicalized: {problem}")
    if size > MAX_ATTRIBUTES_BYTES:
        raise RecordInvalidError(
            f"run attributes are larger than {MAX_ATTRIBUTES_BYTES} bytes as JSON"
        )
    return copy


def _is_segment(value: object) -> bool:
    return (
        isinstance(value, dict)
        and all(_is_count(value.get(key)) for key in ("records", "bytes", "sealed_at_ms"))
        and isinstance(value.get("digest"), str)
    )


def sealed_checkpoints(
    earlier: Iterable[Mapping[str, Any]], taken: Iterable[Checkpoint]
) -> tuple[dict[str, Any], ...]:
    """The ``checkpoints`` of a seal: an earlier seal's (a re-opened file) and those just
    taken beyond them, at most :data:`~agc._core.checkpoint.MAX_SEALED_CHECKPOINTS`."""
    from agc._core.checkpoint import thin_checkpoints  # noqa: PLC0415 - writers only

    kept = [dict(c) for c in earlier]
    end = kept[-1]["bytes"] if kept else 0
    kept += [
        {"records": c.records, "bytes": c.bytes, "digest": c.digest} for c in taken if c.bytes > end
    ]
    return tuple(thin_checkpoints(kept))


def _are_checkpoints(value: object, size: int, records: int) -> bool:
    """A list of ``{"records", "bytes", "digest"}`` within the file, in increasing order."""
    if not isinstance(value, list):
        return False
    previous = (0, 0)
    for item in value:
        if not (
            isinstance(item, dict)
            and set(item) == _CHECKPOINT_KEYS
            and _is_count(item["records"])
            and _is_count(item["bytes"])
            and isinstance(item["digest"], str)
            and item["digest"]
        ):
            return False
        here = (item["bytes"], item["records"])
        if not (previous[0] <= here[0] <= size and previous[1] <= here[1] <= records):
            return False
        previous = here
    return True


def _is_quarantine(value: object, file: str) -> bool:
    """``{"file": "<file>.quarantine[-N]", "bytes": n, "digest": hex}`` beside the file."""
    return (
        isinstance(value, dict)
        and set(value) == {"file", "bytes", "digest"}
        and isinstance(value["file"], str)
        and re.fullmatch(re.escape(file) + r"\.quarantine(-[0-9]+)?", value["file"]) is not None
        and _is_count(value["bytes"])
        and isinstance(value["digest"], str)
    )


_DIGEST_HEX: Final = re.compile(r"[0-9a-f]{64}")


def _is_chain_link(value: object) -> bool:
    """Exactly ``{"position": n >= 1, "prev": <SHA-256 hex> | None}``: a renamed, missing
    or extra member is a changed manifest, never read as a default."""
    return (
        isinstance(value, dict)
        and set(value) == {"position", "prev"}
        and _is_count(value["position"])
        and value["position"] >= 1
        and (
            value["prev"] is None
            or (isinstance(value["prev"], str) and _DIGEST_HEX.fullmatch(value["prev"]) is not None)
        )
    )


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@record
class RunManifest(FrozenRecord):
    """The manifest of one run.

    Attributes:
        run_id: the run id (validated).
        artifacts: sealed artifacts by kind.
        schema_version: manifest format version (``MANIFEST_SCHEMA_VERSION``).
        chain: the store-chain link once the run is closed: ``{"position": n,
            "prev": <digest of the previous closed manifest> | None}``.
        signature: ``{"algorithm": "ed25519", "key_id", "value"}`` when signed
            (see :mod:`agc.integrity._signing`).
        attributes: caller-supplied facts about the run (a JSON object, see
            :func:`check_attributes`), fixed by the run's first seal and covered by the
            signature and the chain digest like every other member; ``None`` when the
            writer gave none.
    """

    run_id: str
    artifacts: Mapping[ArtifactKind, ArtifactSeal] = field(default_factory=dict)
    schema_version: int = MANIFEST_SCHEMA_VERSION
    chain: Mapping[str, Any] | None = None
    signature: Mapping[str, Any] | None = None
    attributes: Mapping[str, Any] | None = None
    raw: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    """The JSON document exactly as parsed from disk (``None`` for a new manifest).
    Signatures and chain digests are checked over this, never over a re-serialization,
    so nothing in the stored document escapes them."""

    def document(self) -> Mapping[str, Any]:
        """The stored document if this manifest was read from disk, else :meth:`to_dict`."""
        return self.raw if self.raw is not None else self.to_dict()

    @cached_property
    def digest(self) -> str:
        """SHA-256 hex of :meth:`document` as RFC 8785 canonical JSON (signature included).

        Computed once per object (the manifest is frozen and its document is never
        changed after parsing) and pickled with it, so a worker of ``agc-verify --all
        --jobs N`` that read the manifest hands its digest to the chain check too.
        """
        return hashlib.sha256(canonical_json(self.document())).hexdigest()

    @property
    def closed(self) -> bool:
        """True once every artifact kind of the run is sealed (and none is re-opened)."""
        return all(
            kind in self.artifacts and self.artifacts[kind].closed for kind in ARTIFACT_KINDS
        )

    @property
    def recovered_unvouched(self) -> bool:
        """True when ``agc recover`` sealed an artifact with bytes that no crash
        checkpoint vouched for, or without the counts that would say (see
        :attr:`ArtifactSeal.unvouched`): such a run fails the gate unless recovered
        runs are allowed."""
        return any(seal.unvouched != (0, 0) for seal in self.artifacts.values())

    def with_seal(self, seal: ArtifactSeal) -> RunManifest:
        """Return a copy that records ``seal``.

        An artifact is sealed once; it may be sealed again only while re-opened for a
        new segment (``reopened_at_ms`` set), which the new seal ends.

        Raises:
            ManifestInvalidError: the artifact is already sealed and not re-opened.
        """
        current = self.artifacts.get(seal.kind)
        if current is not None and current.closed:
            raise ManifestInvalidError(f"{seal.kind} of run {self.run_id} is already sealed")
        return replace(self, artifacts={**self.artifacts, seal.kind: seal}, raw=None)

    def with_reopened(self, kind: ArtifactKind, at_ms: int) -> RunManifest:
        """Return a copy where ``kind`` is marked re-opened for a new segment."""
        current = self.artifacts.get(kind)
        if current is None or not current.closed:
            raise ManifestInvalidError(f"{kind} of run {self.run_id} is not sealed")
        reopened = replace(current, reopened_at_ms=at_ms)
        return replace(self, artifacts={**self.artifacts, kind: reopened}, raw=None)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "schema_version": self.schema_version,
            "run_id": self.run_id,
            "closed": self.closed,
            "artifacts": {
                kind: self.artifacts[kind].to_dict()
                for kind in ARTIFACT_KINDS
                if kind in self.artifacts
            },
        }
        if self.chain is not None:
            data["chain"] = dict(self.chain)
        if self.signature is not None:
            data["signature"] = dict(self.signature)
        if self.attributes is not None:
            data["attributes"] = dict(self.attributes)
        return data

    def to_bytes(self) -> bytes:
        """Stable JSON encoding (sorted keys, two-space indent, trailing newline)."""
        return (json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n").encode()

    @classmethod
    def from_bytes(cls, data: bytes, *, expected_run_id: str | None = None) -> RunManifest:
        """Parse manifest bytes strictly.

        Raises:
            ManifestInvalidError: not strict JSON (:mod:`agc._core.json`: a duplicate
                member anywhere, NaN, a lone surrogate, nesting too deep …), wrong
                shape, unknown schema version, or (when ``expected_run_id`` is given)
                a manifest of another run.
        """
        try:
            raw = strict_json.loads(data)
        except JsonInvalidError as exc:
            raise ManifestInvalidError(f"manifest is not valid JSON: {exc.message}") from exc
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
            if artifacts[kind].file != f"{run_id}.jsonl":
                raise ManifestInvalidError(
                    f"manifest entry {kind!r} names the file {artifacts[kind].file!r}, "
                    f"not {run_id}.jsonl"
                )
        chain = raw.get("chain")
        if chain is not None and not _is_chain_link(chain):
            raise ManifestInvalidError(
                "manifest has a bad chain link (want exactly "
                '{"position": n >= 1, "prev": <64 lowercase hex> | null})'
            )
        signature = raw.get("signature")
        if signature is not None and not isinstance(signature, dict):
            raise ManifestInvalidError("manifest has a bad signature member")
        attributes = raw.get("attributes")
        if attributes is not None and not isinstance(attributes, dict):
            raise ManifestInvalidError("manifest has a bad attributes member (not an object)")
        unknown = set(raw) - _MANIFEST_KEYS
        if unknown:
            raise ManifestInvalidError(f"manifest has unknown member(s) {sorted(unknown)}")
        problem = _not_canonicalizable(raw)  # chain digests and signatures use RFC 8785
        if problem is not None:
            raise ManifestInvalidError(
                f"manifest holds a value RFC 8785 cannot canonicalize: {problem}"
            )
        manifest = cls(
            run_id=run_id,
            artifacts=artifacts,
            chain=chain,
            signature=signature,
            attributes=attributes,
            raw=raw,
        )
        if raw.get("closed") is not manifest.closed:
            raise ManifestInvalidError("manifest 'closed' disagrees with its artifacts")
        return manifest
