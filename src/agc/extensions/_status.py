"""Startup status from Codex: ``mcpServer/startupStatus/updated`` applied to the items.

The app-server sends ``{"method": "mcpServer/startupStatus/updated", "params": {"name",
"status": "starting"|"ready"|"failed"|"cancelled", "error"}}`` while it connects the
servers of ``config.toml``. The events of one app-server connection are read (JSON
lines, as the app-server writes them) and mapped through the projection record of
that connection: server name -> item id, as they were when the connection was made.

A notification is applied only while its connection is current: its projection is the
repository's latest one, and the item still exists, is enabled and has the name and
content it had when projected. Anything else (a late notification of an older
projection, an item disabled, renamed, removed or re-imported since) is stale and
ignored, as is a notification for a server agc did not project (``agc_tools``).
``failed``/``cancelled`` set ``lastError`` (status ``failed``); ``ready`` clears a
startup error.

The error text is the server's own output relayed by Codex (a stack trace, a key it
printed, paths of the machine): before it is kept it is passed through agc's one secret
detector (:func:`agc._core.redact.redact_text`), the user's home folder is written
``~``, its whitespace runs made one space, and it is cut to
:data:`MAX_STARTUP_ERROR_CHARS` characters (the middle left out, marked ``…``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Final, Protocol, cast, runtime_checkable

from agc._core.digest import digest_fd, digests_equal
from agc._core.fs import describe_os_error, open_nofollow, read_small_file
from agc._core.json import MAX_DEPTH
from agc._core.redact import redact_text
from agc._core.sidecar import parse_sidecar, sidecar_name
from agc.errors import (
    ExtensionNotFoundError,
    FileUnreadableError,
    InputError,
    SidecarMismatchError,
)
from agc.extensions._documents import MAX_DOCUMENT_DEPTH, load_json
from agc.extensions._model import ExtensionIndex, ExtensionItem, StartupStatus, is_projection_id
from agc.extensions._repo import ExtensionRepository

__all__ = [
    "STARTUP_STATUS_METHOD",
    "ProjectionRecord",
    "StatusResult",
    "apply_startup_events",
    "read_projection_record",
]

STARTUP_STATUS_METHOD: Final = "mcpServer/startupStatus/updated"
_STATES: Final = ("starting", "ready", "failed", "cancelled")
_MAX_RECORD_BYTES: Final = 64 * 1024 * 1024
_MAX_LINE_BYTES: Final = 1024 * 1024
_RECORD_DEPTH: Final = MAX_DOCUMENT_DEPTH + 8
MAX_STARTUP_ERROR_CHARS: Final = 1000
"""Longest startup error text kept in an item's ``lastError``, in characters."""


@dataclass(frozen=True)
class ProjectionRecord:
    """A verified projection record: its header and ``server name -> (item id,
    fingerprint)`` for the MCP servers it projected."""

    projection_id: str
    header: dict[str, Any]
    servers: dict[str, tuple[str, str]]
    builtin: frozenset[str]


@dataclass(frozen=True)
class StatusResult:
    """What applying a stream of events did.

    Attributes:
        projection_id: the projection (connection) the events were read against.
        current: whether it is the repository's latest projection.
        applied: items whose status changed, after the change.
        notifications: startup-status notifications read.
        stale: ignored as stale (older connection, item changed since).
        unmatched: ignored: for a server agc did not project.
        malformed: lines that are not JSON objects or not a valid notification.
    """

    projection_id: str
    current: bool
    applied: tuple[ExtensionItem, ...]
    notifications: int
    stale: int
    unmatched: int
    malformed: int

    def to_dict(self, index: ExtensionIndex) -> dict[str, Any]:
        return {
            "projectionId": self.projection_id,
            "current": self.current,
            "applied": [
                {**item.dto(index.source_name(item)), "startupStatus": item.startup_status}
                for item in self.applied
            ],
            "notifications": self.notifications,
            "ignored": {
                "stale": self.stale,
                "unmatched": self.unmatched,
                "malformed": self.malformed,
            },
        }


def read_projection_record(repo: ExtensionRepository, projection_id: str) -> ProjectionRecord:
    """Read and verify ``projections/<id>.jsonl`` against its ``.b3`` seal.

    Raises:
        ExtensionNotFoundError: no such projection, or it was never sealed.
        SidecarMismatchError: the record does not match its seal (exit 1).
        InputError: the record is not of the documented shape.
    """
    if not is_projection_id(projection_id):
        raise ExtensionNotFoundError(f"{projection_id!r} is not a projection id")
    path = repo.projections_dir / f"{projection_id}.jsonl"
    sidecar = path.with_name(sidecar_name(path.name, "blake3"))
    try:
        seal = parse_sidecar(read_small_file(sidecar, max_bytes=4096), algorithm="blake3")
        fd = open_nofollow(path, 0)
    except FileNotFoundError as exc:
        raise ExtensionNotFoundError(
            f"projection {projection_id} has no sealed record in {repo.projections_dir}"
        ) from exc
    try:
        digest, _ = digest_fd(fd, "blake3", threads=1)
    finally:
        os.close(fd)
    if seal.file_name != path.name or not digests_equal(seal.digest, digest):
        raise SidecarMismatchError(
            f"projection record {path} does not match its seal {sidecar.name}"
        )
    try:
        lines = read_small_file(path, max_bytes=_MAX_RECORD_BYTES).splitlines()
        records = [load_json(line, limit=_RECORD_DEPTH) for line in lines if line]
        if (
            not records
            or not isinstance(records[0], dict)
            or records[0].get("record") != "projection"
        ):
            raise ValueError("it does not start with its header")
        servers: dict[str, tuple[str, str]] = {}
        builtin: set[str] = set()
        for entry in records[1:]:
            kind = entry.get("record") if isinstance(entry, dict) else None
            if kind == "mcp":
                servers[str(entry["name"])] = (str(entry["id"]), str(entry["fingerprint"]))
            elif kind == "builtin":
                builtin.add(str(entry["name"]))
    except (ValueError, KeyError, UnicodeDecodeError) as exc:
        raise InputError(
            f"projection record {path} is not of the documented shape ({exc})"
        ) from exc
    return ProjectionRecord(projection_id, records[0], servers, frozenset(builtin))


_MALFORMED: Final = "malformed"


def _notification(line: bytes) -> tuple[str, StartupStatus, str | None] | str | None:
    """``(name, status, error)``, ``None`` for another message, ``"malformed"``."""
    if len(line) > _MAX_LINE_BYTES:
        return _MALFORMED
    try:
        message = load_json(line, limit=MAX_DEPTH)
    except (UnicodeDecodeError, ValueError):
        return _MALFORMED
    if not isinstance(message, dict):
        return _MALFORMED
    if message.get("method") != STARTUP_STATUS_METHOD:
        return None
    params = message.get("params")
    if not isinstance(params, dict):
        return _MALFORMED
    name, status, error = params.get("name"), params.get("status"), params.get("error")
    if not isinstance(name, str) or status not in _STATES:
        return _MALFORMED
    if error is not None and not isinstance(error, str):
        return _MALFORMED
    return name, cast(StartupStatus, status), error


def _current_item(
    index: ExtensionIndex, record: ProjectionRecord, name: str
) -> ExtensionItem | None:
    """The item ``name`` still names for this connection, or ``None`` if stale."""
    if index.last_projection_id != record.projection_id:
        return None
    item_id, fingerprint = record.servers[name]
    for item in index.items:
        if item.id == item_id:
            fresh = item.enabled and item.name == name and item.fingerprint == fingerprint
            return item if fresh else None
    return None


@runtime_checkable
class _Readable(Protocol):
    def readline(self, size: int = -1, /) -> bytes: ...


def _bounded_lines(stream: _Readable) -> Iterator[bytes]:
    """Lines of ``stream``, none longer than ``_MAX_LINE_BYTES + 1`` bytes: the rest of
    a longer line is read in chunks and dropped (the line stays too long: malformed).

    Raises:
        FileUnreadableError: a read failed (an I/O error: exit 3), naming the stream.
    """

    def readline(size: int) -> bytes:
        try:
            return stream.readline(size)
        except OSError as exc:
            name = getattr(stream, "name", None)
            where = "stdin" if name in {0, "<stdin>"} else f"events file {name}"
            raise FileUnreadableError(f"cannot read {where}: {describe_os_error(exc)}") from exc

    while line := readline(_MAX_LINE_BYTES + 1):
        if len(line) > _MAX_LINE_BYTES and not line.endswith(b"\n"):
            while (rest := readline(_MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                pass
        yield line


def apply_startup_events(
    repo: ExtensionRepository, lines: Iterable[bytes], *, projection_id: str | None = None
) -> StatusResult:
    """Apply the startup notifications in ``lines`` (one JSON message per line).

    Args:
        repo: the repository.
        lines: the app-server's messages of one connection: an iterable of lines, or a
            binary stream (anything with ``readline``), which is read at most
            1 MiB + 1 byte a line: a longer line (a stream without newlines, such as
            ``/dev/zero``) is skipped in chunks and counted malformed, never held whole.
        projection_id: the projection that connection was started with (default: the
            latest one).

    Raises:
        ExtensionNotFoundError: no projection yet, or no such projection.
        SidecarMismatchError: its record does not match its seal.
        FileUnreadableError: reading the stream failed (an I/O error; exit 3).
    """
    chosen = projection_id or repo.load().last_projection_id
    if chosen is None:
        raise ExtensionNotFoundError(
            "nothing was projected yet", hint="Run `agc ext project --codex-home DIR` first."
        )
    record = read_projection_record(repo, chosen)
    latest: dict[str, tuple[str, StartupStatus, str | None]] = {}
    seen: dict[str, int] = {}
    notifications = unmatched = malformed = 0
    if isinstance(lines, _Readable):
        lines = _bounded_lines(lines)
    for line in lines:
        if not line.strip():
            continue
        parsed = _notification(line)
        if parsed is None:
            continue
        if isinstance(parsed, str):
            malformed += 1
            continue
        notifications += 1
        name = parsed[0]
        if name not in record.servers:
            unmatched += 1
            continue
        latest[name] = parsed
        seen[name] = seen.get(name, 0) + 1
    stale = 0
    applied: list[ExtensionItem] = []
    with repo.locked() as index:
        updated: dict[str, ExtensionItem] = {}
        for name, (_, status, error) in latest.items():
            item = _current_item(index, record, name)
            if item is None:
                stale += seen[name]
                continue
            changed = _with_status(item, status, error)
            if changed != item:
                updated[item.id] = changed
                applied.append(changed)
        if updated:
            repo.save(
                replace(index, items=tuple(updated.get(item.id, item) for item in index.items))
            )
        current = index.last_projection_id == record.projection_id
    return StatusResult(
        projection_id=record.projection_id,
        current=current,
        applied=tuple(applied),
        notifications=notifications,
        stale=stale,
        unmatched=unmatched,
        malformed=malformed,
    )


def startup_error_text(error: str, home: str | None = None) -> str:
    """``error`` as an item keeps it (see the module docstring): secrets redacted, the
    home folder (``home``, default ``$HOME``) as ``~``, one line, at most
    :data:`MAX_STARTUP_ERROR_CHARS` characters."""
    # Redacted whole before it is cut: a cut could split a secret where no rule finds it.
    # (A line is at most 1 MiB: _MAX_LINE_BYTES.)
    keep = MAX_STARTUP_ERROR_CHARS
    text = " ".join(redact_text(error).split())
    home = os.path.expanduser("~") if home is None else home
    if len(home) > 1:
        text = text.replace(home.rstrip("/") + "/", "~/").replace(home.rstrip("/"), "~")
    if len(text) > keep:
        half = (keep - 3) // 2
        text = f"{text[:half]} … {text[-half:]}"
    return text


def _with_status(item: ExtensionItem, status: StartupStatus, error: str | None) -> ExtensionItem:
    if status in {"failed", "cancelled"}:
        error = startup_error_text(error) if error else None
        message = f"startup {status}: {error}" if error else f"startup {status}"
        return replace(item.with_error(message, "startup"), startup_status=status)
    if item.error_origin == "startup":
        item = item.with_error(None, None)
    return replace(item, startup_status=status)
