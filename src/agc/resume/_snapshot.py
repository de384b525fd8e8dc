"""Session snapshots: secret-free, sealed, written atomically.

A snapshot is one JSON document (``docs/resume.md``) at
``<store>/sessions/<runId>.json`` or, compressed with zstd, ``<runId>.json.zst``, sealed
by a checksum sidecar beside it (``<file>.b3`` or ``<file>.sha256``) in the same format,
written by the same code, as the sidecars of sealed transcripts
(:mod:`agc._core.sidecar`), so ``b3sum --check`` verifies it too.

Before anything is written the snapshot is made secret-free: the agent config keeps only
``provider``, ``model`` and ``workspace`` (an allow-list; API keys, base URLs and
everything else are dropped), and every string in the messages and the kept config is
passed through :func:`agc._core.redact.redact_value`.

Saving: the old signature and the old sidecar are removed first, then the snapshot, its
new sidecar and, saved with a signing key, its signature (``<file>.sig``,
:mod:`agc.resume._snapshot_sig`) are each written atomically (temporary file in the same
folder, fsync, rename, fsync of the folder) with mode 0600. A crash in between leaves a
snapshot without a sidecar, which loading reports as ``snapshot-unsealed``, or a sealed
snapshot without a signature (``unsigned`` when one is required), never a valid snapshot
it is not, and never a signature beside bytes it does not sign. An object store keeps a
new set of objects per save (:mod:`agc.resume._snapshot_store`); saving and loading are
written once for both.

Loading checks the seal and then, by the rule of run manifests
(:mod:`agc._core.signature_rule`), the signature: with trusted keys a snapshot must be
signed by one of them over exactly its sealed bytes.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import zstandard

from agc._core import json as strict_json
from agc._core.digest import (
    ALGORITHMS,
    DEFAULT_ALGORITHM,
    SIDECAR_SUFFIXES,
    Algorithm,
    digest_bytes,
    digests_equal,
)
from agc._core.report import SCHEMA_VERSION
from agc._core.sidecar import format_sidecar
from agc._core.signature_rule import signature_required
from agc._core.storage import Store
from agc._core.store import RunId, StoreArg, validate_new_run_id, validate_run_id
from agc.errors import (
    HistoryFormatError,
    JsonInvalidError,
    RunIdInvalidError,
    SidecarInvalidError,
    SnapshotInvalidError,
    SnapshotTamperedError,
    SnapshotUnsealedError,
)
from agc.resume._formats.detect import get_spec
from agc.resume._formats.model import MAX_SNAPSHOT_BYTES, FormatName
from agc.resume._snapshot_sig import SIGNATURE_SUFFIX, encode_signature, judge_signature
from agc.resume._snapshot_store import (
    FolderSnapshots,
    FoundSnapshot,
    signature_path,
    snapshot_file,
    snapshot_place,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from agc._core.redact import RedactionStats
    from agc._core.signing import SigningKey

__all__ = [
    "ALLOWED_CONFIG_KEYS",
    "MAX_SNAPSHOT_BYTES",
    "SNAPSHOT_FORMATS",
    "SNAPSHOT_SCHEMA_VERSION",
    "SessionSnapshot",
    "SnapshotSaveResult",
    "ToolCallState",
    "decode_snapshot",
    "encode_snapshot",
    "has_snapshot",
    "load_snapshot",
    "load_snapshot_file",
    "sanitize_snapshot",
    "save_snapshot",
    "signature_path",
    "snapshot_path",
]

SNAPSHOT_SCHEMA_VERSION: Final = 1
ALLOWED_CONFIG_KEYS: Final[tuple[str, ...]] = ("provider", "model", "workspace")
SNAPSHOT_FORMATS: Final[tuple[FormatName, ...]] = (
    "openai-chat",
    "anthropic",
    "openai-responses",
    "gemini-chat",
)
"""The formats a snapshot's ``messages`` may be in: the three API formats (the history
as sent to the provider), and ``gemini-chat``: the records of a Gemini CLI session file,
one JSON object per line of the file (its client replays them into what it sends)."""
_ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class ToolCallState:
    """The snapshot's ``toolCallState``: was a call running when the snapshot was saved?

    Attributes:
        in_flight: ``inFlight``.
        pending_tool_call_id: ``pendingToolCallId`` (the running call's id).
    """

    in_flight: bool = False
    pending_tool_call_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"inFlight": self.in_flight, "pendingToolCallId": self.pending_tool_call_id}

    @classmethod
    def from_dict(cls, data: Any) -> ToolCallState:
        """Parse ``{"inFlight": bool, "pendingToolCallId"?: str | null}``.

        Raises:
            SnapshotInvalidError: another shape.
        """
        if not isinstance(data, dict) or not isinstance(data.get("inFlight"), bool):
            raise SnapshotInvalidError("toolCallState must be an object with a boolean inFlight")
        pending = data.get("pendingToolCallId")
        if pending is not None and not isinstance(pending, str):
            raise SnapshotInvalidError("toolCallState.pendingToolCallId must be a string or null")
        return cls(data["inFlight"], pending or None)


@dataclass(frozen=True)
class SessionSnapshot:
    """One saved session.

    Attributes:
        run_id: the run (``[A-Za-z0-9._-]{1,128}``).
        session_id: the agent session within the run.
        messages: the history, as sent to the provider (JSON values).
        tool_call_state: in-flight call, if any.
        agent_config: provider, model, workspace as plain values (anything else, and a
            nested object or array under those keys, is dropped on save).
        node_id: the workflow node the session belongs to, if any.
        format: ``openai-chat`` (default), ``anthropic``, ``openai-responses``, or
            ``gemini-chat`` (``messages`` are then the records of a Gemini CLI session
            file, one per line, each a JSON object: :data:`SNAPSHOT_FORMATS`).
        timestamp: ISO 8601 UTC time of the snapshot.
        schema_version: :data:`SNAPSHOT_SCHEMA_VERSION`.
    """

    run_id: str
    session_id: str
    messages: list[Any]
    tool_call_state: ToolCallState = field(default_factory=ToolCallState)
    agent_config: dict[str, Any] = field(default_factory=dict)
    node_id: str | None = None
    format: FormatName = "openai-chat"
    timestamp: str = field(default_factory=_now)
    schema_version: int = SNAPSHOT_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """The on-disk document (camelCase keys, see docs/resume.md)."""
        return {
            "schemaVersion": self.schema_version,
            "runId": self.run_id,
            "sessionId": self.session_id,
            "nodeId": self.node_id,
            "timestamp": self.timestamp,
            "format": self.format,
            "toolCallState": self.tool_call_state.to_dict(),
            "agentConfig": self.agent_config,
            "messages": self.messages,
        }

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "snapshot") -> SessionSnapshot:
        """Parse and check an on-disk document.

        Raises:
            SnapshotInvalidError: a missing or mistyped field, an unknown schema version or
                format, an invalid run id, or messages that do not fit the format.
        """
        if not isinstance(data, dict):
            raise SnapshotInvalidError(f"{source} is not a JSON object")
        version = data.get("schemaVersion")
        if version != SNAPSHOT_SCHEMA_VERSION:
            raise SnapshotInvalidError(
                f"{source} has schemaVersion {version!r}; this agc reads {SNAPSHOT_SCHEMA_VERSION}"
            )
        for key, kind in (("runId", str), ("sessionId", str), ("timestamp", str)):
            if not isinstance(data.get(key), kind):
                raise SnapshotInvalidError(f"{source}: {key} must be a string")
        if data.get("nodeId") is not None and not isinstance(data.get("nodeId"), str):
            raise SnapshotInvalidError(f"{source}: nodeId must be a string or null")
        if not isinstance(data.get("messages"), list):
            raise SnapshotInvalidError(f"{source}: messages must be an array")
        if not isinstance(data.get("agentConfig"), dict):
            raise SnapshotInvalidError(f"{source}: agentConfig must be an object")
        format_name = data.get("format")
        if format_name not in SNAPSHOT_FORMATS:
            raise SnapshotInvalidError(
                f"{source}: format {format_name!r} is not one of {', '.join(SNAPSHOT_FORMATS)}"
            )
        spec = get_spec(format_name)
        if spec.line_based and not all(isinstance(record, dict) for record in data["messages"]):
            raise SnapshotInvalidError(
                f"{source}: a {format_name} snapshot's messages are the records of a session "
                "file, each a JSON object"
            )
        try:
            validate_run_id(data["runId"])
            spec.read(data["messages"])
        except HistoryFormatError as exc:
            raise SnapshotInvalidError(f"{source}: {exc.message}") from exc
        except RunIdInvalidError as exc:
            raise SnapshotInvalidError(f"{source}: {exc.message}") from exc
        return cls(
            run_id=data["runId"],
            session_id=data["sessionId"],
            messages=data["messages"],
            tool_call_state=ToolCallState.from_dict(data.get("toolCallState")),
            agent_config=data["agentConfig"],
            node_id=data.get("nodeId"),
            format=format_name,
            timestamp=data["timestamp"],
        )


@dataclass(frozen=True)
class SnapshotSaveResult:
    """Outcome of :func:`save_snapshot`.

    Attributes:
        path: the snapshot file.
        sidecar: its checksum sidecar.
        algorithm: digest algorithm of the seal.
        digest: hex digest of the file's bytes.
        bytes: file length in bytes.
        compressed: True for ``.json.zst``.
        redactions: secrets replaced, by kind (never the secrets).
        dropped_config_keys: agent-config keys dropped by the allow-list.
        signature: its signature file (``<file>.sig``), ``None`` when saved unsigned.
        key_id: the key id of the signing key, ``None`` when saved unsigned.
    """

    path: Path
    sidecar: Path
    algorithm: Algorithm
    digest: str
    bytes: int
    compressed: bool
    redactions: dict[str, int]
    dropped_config_keys: tuple[str, ...]
    signature: Path | None = None
    key_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "path": str(self.path),
            "sidecar": str(self.sidecar),
            "algorithm": self.algorithm,
            "digest": self.digest,
            "bytes": self.bytes,
            "compressed": self.compressed,
            "redactions": self.redactions,
            "dropped_config_keys": list(self.dropped_config_keys),
            "signature": None if self.signature is None else str(self.signature),
            "key_id": self.key_id,
        }


def sanitize_snapshot(
    snapshot: SessionSnapshot,
) -> tuple[SessionSnapshot, RedactionStats, tuple[str, ...]]:
    """Return the secret-free copy that is written, the redaction counts, dropped keys (pure).

    The agent config keeps only :data:`ALLOWED_CONFIG_KEYS`; every string of the
    messages, the kept config, the session id, the node id and the pending tool call's
    id is redacted by :func:`agc._core.redact.redact_value` (a call id redacted in the
    messages is redacted the same way in ``toolCallState``).
    """
    # The detector compiles a few hundred patterns at import: loaded here, on first use,
    # so that commands which never write a snapshot (``agc resume --check``) skip it.
    from agc._core.redact import RedactionStats, redact_value  # noqa: PLC0415

    stats = RedactionStats()
    # Only plain values: a credential nested under an allowed key ({"provider": {"apiKey":
    # …}}) is not on the allow-list either.
    config = {
        k: v
        for k, v in snapshot.agent_config.items()
        if k in ALLOWED_CONFIG_KEYS and (v is None or isinstance(v, str | int | float | bool))
    }
    dropped = tuple(sorted(k for k in snapshot.agent_config if k not in config))
    messages = redact_value(snapshot.messages, stats)
    renamed = _keep_call_ids_distinct(snapshot.messages, messages, snapshot.format)
    state = _redact_state(snapshot.tool_call_state, stats)
    if snapshot.tool_call_state.pending_tool_call_id in renamed:
        state = ToolCallState(
            state.in_flight, renamed[snapshot.tool_call_state.pending_tool_call_id]
        )
    clean = SessionSnapshot(
        run_id=snapshot.run_id,
        session_id=redact_value(snapshot.session_id, stats),
        messages=messages,
        tool_call_state=state,
        agent_config=redact_value(config, stats),
        node_id=None if snapshot.node_id is None else redact_value(snapshot.node_id, stats),
        format=snapshot.format,
        timestamp=snapshot.timestamp,
    )
    return clean, stats, dropped


# The key of the call id in each native call and result (Chat, Anthropic, Responses);
# a Responses ``local_shell_call_output`` names its call in ``id``. Gemini: see _set_call_id.
_ID_KEYS: Final[dict[tuple[str, str], str]] = {
    ("chat", "call"): "id",
    ("chat", "result"): "tool_call_id",
    ("anthropic", "call"): "id",
    ("anthropic", "result"): "tool_use_id",
    ("responses", "call"): "call_id",
    ("responses", "result"): "call_id",
}


def _keep_call_ids_distinct(
    original: list[Any], redacted: list[Any], format: str
) -> dict[str, str]:
    """Give back distinct ids to calls whose ids only the redaction made equal.

    Two call ids holding different secrets of one kind (``call_ghp_A…``, ``call_ghp_B…``)
    are both redacted to ``call_[REDACTED:github-token]``: the saved history would hold
    two calls with one id, and its repair would drop the second call and its real
    result. Each such id becomes ``<redacted id>-<n>`` (n = 1, 2 … in order of first
    appearance, skipping ids the history holds: :func:`agc._core.redact.distinct_names`,
    the rule that names an object's keys apart too), in its calls and results alike.
    ``redacted`` is changed in place (it is the redaction's own copy).

    Returns:
        original id -> the id it is saved as, for the ids renamed.
    """
    try:
        spec = get_spec(format)
        before = spec.read(original).messages
        after = spec.read(redacted).messages
    except HistoryFormatError:
        return {}  # refused by the format check that follows
    pairs = [
        (old, new)
        for old_message, new_message in zip(before, after, strict=True)
        for old, new in zip(old_message.blocks, new_message.blocks, strict=True)
        if new.kind in {"call", "result"} and old.call_id is not None and new.call_id is not None
    ]
    from agc._core.redact import distinct_names  # noqa: PLC0415 - see sanitize_snapshot

    renamed = distinct_names((old.call_id or "", new.call_id or "") for old, new in pairs)
    for old, new in pairs:
        if old.call_id in renamed:
            _set_call_id(new.raw, spec.family, new.kind, renamed[old.call_id])
    return renamed


def _set_call_id(raw: Any, family: str, kind: str, call_id: str) -> None:
    """Write ``call_id`` into a native call or result (changed in place)."""
    if family == "gemini":
        # A ``functionCall``/``functionResponse`` part, or a ``toolCalls`` entry (its
        # ``result`` parts are results of their own; a plain-text result has no id).
        if not isinstance(raw, dict):
            return
        for part in ("functionCall", "functionResponse"):
            if isinstance(raw.get(part), dict):
                raw[part]["id"] = call_id
                return
        raw["id"] = call_id
        return
    key = _ID_KEYS[(family, kind)]
    if key not in raw:  # local_shell_call_output
        key = "id"
    raw[key] = call_id


def _redact_state(state: ToolCallState, stats: RedactionStats) -> ToolCallState:
    pending = state.pending_tool_call_id
    if pending is None:
        return state
    from agc._core.redact import redact_value  # noqa: PLC0415 - see sanitize_snapshot

    return ToolCallState(state.in_flight, redact_value(pending, stats))


def encode_snapshot(snapshot: SessionSnapshot, *, compress: bool = False) -> bytes:
    """The file bytes of a (sanitized) snapshot: compact UTF-8 JSON, optionally zstd.

    Raises:
        SnapshotInvalidError: a value is not JSON (NaN, Infinity, a non-JSON type).
    """
    try:
        text = json.dumps(
            snapshot.to_dict(), ensure_ascii=False, separators=(",", ":"), allow_nan=False
        )
        try:
            data = (text + "\n").encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate (valid JSON as an escape, not UTF-8): keep it escaped.
            text = json.dumps(snapshot.to_dict(), separators=(",", ":"), allow_nan=False)
            data = (text + "\n").encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise SnapshotInvalidError(f"snapshot of run {snapshot.run_id} is not JSON: {exc}") from exc
    if compress:
        data = zstandard.ZstdCompressor(level=3, write_content_size=True).compress(data)
    return data


def decode_snapshot(data: bytes, *, source: str) -> SessionSnapshot:
    """Parse snapshot file bytes (zstd detected by its magic number).

    Raises:
        SnapshotInvalidError: not zstd/UTF-8/JSON, too large, or not a snapshot.
    """
    if data.startswith(_ZSTD_MAGIC):
        try:
            reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data))
            data = reader.read(MAX_SNAPSHOT_BYTES + 1)
        except zstandard.ZstdError as exc:
            raise SnapshotInvalidError(f"{source} is not valid zstd: {exc}") from exc
        if len(data) > MAX_SNAPSHOT_BYTES:
            raise SnapshotInvalidError(f"{source} expands to more than {MAX_SNAPSHOT_BYTES} bytes")
    try:
        # A lone surrogate from the history is kept escaped by encode_snapshot().
        document = strict_json.loads(data, allow_lone_surrogates=True)
    except JsonInvalidError as exc:
        raise SnapshotInvalidError(f"{source} is not valid JSON: {exc.message}") from exc
    return SessionSnapshot.from_dict(document, source=source)


def snapshot_path(
    run_id: str, store: str | os.PathLike[str] | None = None, *, compressed: bool = False
) -> Path:
    """``<store>/sessions/<runId>.json`` or ``….json.zst`` (pure).

    Raises:
        RunIdInvalidError: the run id is invalid.
    """
    return FolderSnapshots.at(store, RunId(run_id)).path(compressed=compressed)


def has_snapshot(run_id: str, store: StoreArg | Store = None) -> bool:
    """Whether the store a ``--store`` value names holds a snapshot of the run
    (``sessions/<runId>.json`` or ``.json.zst`` in a folder; any object under
    ``sessions/<runId>/`` in a store written object by object). Nothing is read or
    judged.

    Raises:
        RunIdInvalidError: the run id is invalid.
        UsageError: an ``s3://`` URL that is not valid.
        StoreError: the store cannot be listed.
    """
    return snapshot_place(store, RunId(run_id)).exists()


def save_snapshot(
    snapshot: SessionSnapshot,
    store: StoreArg | Store = None,
    *,
    compress: bool = False,
    algorithm: Algorithm = DEFAULT_ALGORITHM,
    signing_key: SigningKey | None = None,
) -> SnapshotSaveResult:
    """Make the snapshot secret-free, write it atomically (mode 0600), seal and sign it.

    Replaces an earlier snapshot of the same run (compressed or not), its sidecar and
    its signature.

    Args:
        snapshot: the session to save (sanitized first: :func:`sanitize_snapshot`).
        store: the store folder or ``s3://bucket/prefix`` (default: ``$AGC_HOME`` or
            ``~/.agc``).
        compress: write ``<runId>.json.zst`` (zstd) instead of ``<runId>.json``.
        algorithm: the digest of the sidecar and the signature (``blake3``, ``sha256``).
        signing_key: when given, a detached signature ``<file>.sig`` is written last,
            after the snapshot and its sidecar (:mod:`agc.resume._snapshot_sig`:
            Ed25519, RFC 8032, over the RFC 8785 form of its file name, algorithm,
            digest and length).

    Raises:
        RunIdInvalidError: the run id is invalid or begins with "-".
        SnapshotInvalidError: the snapshot is not JSON, its format is not one of
            :data:`SNAPSHOT_FORMATS`, or its messages do not fit that format (a
            ``gemini-chat`` record that is not a JSON object).
        UnsafePathError: the snapshot path is a symlink.
        FileWriteError: disk full, read-only … (the earlier snapshot is unchanged).
        StoreError: the store cannot be written (permissions).
    """
    if snapshot.format not in SNAPSHOT_FORMATS:
        raise SnapshotInvalidError(
            f"snapshot format {snapshot.format!r} is not one of {', '.join(SNAPSHOT_FORMATS)}"
        )
    run_id = validate_new_run_id(snapshot.run_id)
    # The document nests the messages two levels down; deeper than agc's JSON reader
    # reads, it could be sealed but never loaded.
    if strict_json.exceeds_depth(snapshot.messages, strict_json.MAX_DEPTH - 2):
        raise SnapshotInvalidError(
            f"snapshot of run {snapshot.run_id}: its messages nest deeper than "
            f"{strict_json.MAX_DEPTH} levels, which no snapshot can be read back with"
        )
    place = snapshot_place(store, run_id)
    clean, stats, dropped = sanitize_snapshot(snapshot)
    data = encode_snapshot(clean, compress=compress)
    # What loading checks (messages fit the format …), so no unloadable snapshot is sealed.
    SessionSnapshot.from_dict(clean.to_dict(), source=f"snapshot of run {snapshot.run_id}")
    digest = digest_bytes(data, algorithm)
    name = place.file_name(digest, compressed=compress)
    signed = None
    if signing_key is not None:
        signed, _ = encode_signature(name, data, algorithm, signing_key)
    saved = place.write(
        name, data, (SIDECAR_SUFFIXES[algorithm], format_sidecar(digest, name)), signed
    )
    return SnapshotSaveResult(
        saved.path,
        saved.sidecar,
        algorithm,
        digest,
        len(data),
        compress,
        stats.to_dict(),
        dropped,
        saved.signature,
        None if signing_key is None else signing_key.key_id,
    )


def load_snapshot(
    run_id: str,
    store: StoreArg | Store = None,
    *,
    insecure_skip_verify: bool = False,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
    allow_unsigned: bool = False,
    on_note: Callable[[str], None] | None = None,
) -> SessionSnapshot:
    """Load a run's snapshot from the store after checking its seal and signature.

    Args:
        run_id: the run.
        store: the store folder (default: ``$AGC_HOME`` or ``~/.agc``).
        insecure_skip_verify: check neither the sidecar nor the signature (a tampered or
            truncated snapshot is then read as it is, and only its JSON shape is
            checked).
        trusted_keys: Ed25519 public keys by key id. With any, the snapshot must carry
            a valid signature by one of them over exactly its sealed bytes.
        require_signature: require a signature without trusted keys too (a signed
            snapshot then fails as ``unknown-key``: nothing to check it against).
        allow_unsigned: with trusted keys, let an unsigned snapshot load (a signed one
            is still checked). The only way to relax the rule.
        on_note: called with a one-line note when a signature is present but not
            checked (no trusted key given, none required).

    Raises:
        RunIdInvalidError, SnapshotNotFoundError, SnapshotUnsealedError,
        SnapshotTamperedError, SnapshotInvalidError, UnsafePathError, StoreError;
        UnsignedError, BadSignatureError, UnknownKeyError (see
        :func:`load_snapshot_file`); UsageError: ``require_signature`` and
        ``allow_unsigned`` together.

    In an object store (``s3://…``) the run's newest snapshot is loaded
    (:mod:`agc.resume._snapshot_store`), with the same checks.
    """
    required = signature_required(
        trusted_keys, require_signature=require_signature, allow_unsigned=allow_unsigned
    )
    run_id = RunId(run_id)
    found = snapshot_place(store, run_id).newest(max_bytes=MAX_SNAPSHOT_BYTES)
    snapshot = _judge(found, insecure_skip_verify, trusted_keys, required, on_note)
    if snapshot.run_id != run_id:
        raise SnapshotInvalidError(f"{found.where} holds run {snapshot.run_id}, not {run_id}")
    return snapshot


def load_snapshot_file(
    path: Path,
    *,
    insecure_skip_verify: bool = False,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
    allow_unsigned: bool = False,
    on_note: Callable[[str], None] | None = None,
) -> SessionSnapshot:
    """Load a snapshot file, checking the sidecar beside it (``.b3``, else ``.sha256``)
    and then its signature ``<file>.sig`` (arguments as :func:`load_snapshot`).

    Raises:
        SnapshotNotFoundError: the file does not exist.
        SnapshotUnsealedError: no sidecar beside it.
        SnapshotTamperedError: the sidecar is not a usable sidecar (malformed, a symlink
            or not a regular file, too large: :mod:`agc._core.sidecar`), names another
            file, or its digest differs from the file's bytes (tampering, truncation).
        UnsignedError: no signature, and one is required (a trusted key was given, or
            ``require_signature``; ``allow_unsigned`` relaxes it).
        BadSignatureError: the signature is not a regular file, malformed, does not
            verify, or signs another file name or other bytes
            (:func:`agc.resume._snapshot_sig.judge_signature`).
        UnknownKeyError: signed by a key that is not trusted, or ``require_signature``
            without trusted keys.
        SnapshotInvalidError: the bytes are not a snapshot.
        UnsafePathError: the file is a symlink.
        StoreError: the file, its sidecar or its signature is unreadable.
        UsageError: ``require_signature`` and ``allow_unsigned`` together.
    """
    required = signature_required(
        trusted_keys, require_signature=require_signature, allow_unsigned=allow_unsigned
    )
    return _load_file(path, insecure_skip_verify, trusted_keys, required, on_note)


def _load_file(
    path: Path,
    insecure_skip_verify: bool,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None,
    required: bool,
    on_note: Callable[[str], None] | None,
) -> SessionSnapshot:
    found = snapshot_file(path, max_bytes=MAX_SNAPSHOT_BYTES)
    return _judge(found, insecure_skip_verify, trusted_keys, required, on_note)


def _judge(
    found: FoundSnapshot,
    insecure_skip_verify: bool,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None,
    required: bool,
    on_note: Callable[[str], None] | None,
) -> SessionSnapshot:
    """Check a snapshot's seal, then its signature (unless ``insecure_skip_verify``),
    and decode it."""
    if not insecure_skip_verify:
        _check_seal(found)
        judge_signature(
            found.read_signature,
            where=found.where + SIGNATURE_SUFFIX,
            file_name=found.name,
            data=found.data,
            trusted_keys=trusted_keys,
            required=required,
            on_note=on_note,
        )
    return decode_snapshot(found.data, source=found.where)


def _check_seal(found: FoundSnapshot) -> None:
    """Refuse a snapshot whose sidecar (``.b3``, else ``.sha256``) is missing, unusable,
    names another file or differs from its bytes."""
    for algorithm in ALGORITHMS:
        where = found.sidecar_where(algorithm)
        try:
            parsed = found.sidecar(algorithm)
        except SidecarInvalidError as exc:
            raise SnapshotTamperedError(f"{where} is not a valid sidecar: {exc.message}") from exc
        if parsed is None:
            continue
        if parsed.file_name is not None and parsed.file_name != found.name:
            raise SnapshotTamperedError(f"{where} seals {parsed.file_name}, not {found.name}")
        if not digests_equal(parsed.digest, digest_bytes(found.data, algorithm)):
            raise SnapshotTamperedError(
                f"{found.where} does not match its seal "
                f"{found.name}{SIDECAR_SUFFIXES[algorithm]}: it was changed or truncated "
                f"({len(found.data)} bytes now)"
            )
        return
    raise SnapshotUnsealedError(f"{found.where} has no checksum sidecar (.b3 or .sha256)")
