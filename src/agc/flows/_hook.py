"""A client session captured as it happens: each hook event appended to its run.

``agc hook`` runs once per hook event, as a short-lived process the client starts
(Claude Code, the Codex CLI, the Gemini CLI). :func:`capture_hook_event` does its work:

1. the event JSON is read (:func:`agc.capture.parse_hook_event`) and names the run
   (:func:`agc.capture.run_id_for`: ``<client>-<session id>``);
2. the run's tool-events file is opened as it is (``resume``: a new run, a run left
   unsealed by the previous event, or a sealed run of a resumed session continued as a
   new segment), the record appended, and a crash checkpoint written that vouches for
   every byte; the file is released unsealed. A ``kill -9`` at any point leaves either
   the previous state or the new record, and an ``unsealed`` run that ``agc recover``
   seals. Hooks that fire in parallel take the file's writer lock in turn (each holds it
   for one append), waiting at most ``lock_wait_ms``;
3. at the end of every turn (``Stop``; the Gemini CLI's ``AfterAgent``) the client's
   own session file (``transcript_path``) is written into the run as its transcript,
   one record per complete line as ``agc import`` writes it, and both artifacts are
   sealed: a session whose end never comes (a client killed after its turn, a session
   end whose session file is already gone, as Claude Code's can be when many sessions
   cycle) is sealed as of its last turn. A turn's end whose session file is gone, or
   that names none, is a capture failure kept (the run stays unsealed), as at the
   session's end. The next event (the next turn, a resumed session) continues the run
   as a new segment, and the next seal adds the session file's new lines;
4. at the session's end (``SessionEnd``, sent by all three) the same seal takes the
   whole session file, and the run's :class:`~agc.capture.SessionFacts` become its
   manifest ``attributes`` (fixed by the first session end). A session killed in the
   middle of a turn stays ``unsealed`` from that turn on, every event vouched for by a
   checkpoint, until ``agc recover RUN`` seals it.

Capture is best effort and never stops the client: whatever fails (the event, the store
missing, full, read-only, locked, a file where the folder should be) becomes a
:class:`CaptureFailure`, kept as one JSON line in ``<store>/capture/failures.jsonl`` or,
when the store cannot take it, in ``$XDG_STATE_HOME/agc/capture-failures.jsonl``
(``~/.local/state/agc/…``), where ``agc hooks status`` and ``agc-verify`` find it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import itertools
import os
import stat
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from agc._core.capture_failures import (
    CAPTURE_FAILURES,
    failure_lines,
    fallback_failures_path,
)
from agc._core.fs import (
    append_whole,
    atomic_write_bytes,
    ensure_dirs,
    last_line_end,
    lines_from_end,
    open_nofollow,
    open_regular_file,
    read_small_file,
    write_error,
)
from agc._core.json import dumps, loads
from agc._core.jsonl import unix_ms
from agc._core.redact import redact_value
from agc._core.store import StoreLayout, resolve_store
from agc.capture import (
    CLIENTS,
    ClientName,
    HookEvent,
    SessionFacts,
    ToolEvent,
    parse_hook_event,
    run_id_for,
)
from agc.errors import (
    AgcError,
    ArtifactSealedError,
    HookEventsUnheardError,
    InputError,
    RunLockedError,
    SessionFileChangedError,
    SessionFileMissingError,
    StoreError,
    TornTailError,
    UnsealedRunError,
)
from agc.integrity import ToolEventWriter, TranscriptWriter, read_manifest

__all__ = [
    "CaptureFailure",
    "HookOutcome",
    "capture_failures",
    "capture_hook_event",
    "captured_session",
    "record_capture_failure",
    "recorded_session_file",
    "session_file_diverges",
]

_LOCK_WAIT_MS: Final = 700
_FIRST_PAUSE_S: Final = 0.002
_MAX_PAUSE_S: Final = 0.05
_MAX_MESSAGE: Final = 2000


@dataclass(frozen=True)
class CaptureFailure:
    """One hook event agc could not capture whole.

    Attributes:
        ts: when it failed, Unix ms.
        store: the store folder the event was for (absolute).
        client: the client that ran the hook.
        run_id: the run the event belongs to, ``None`` when the event named none.
        hook: the client's name of the event, when known.
        code: the error's code (``hook-event-invalid``, ``file-write-failed``,
            ``run-locked``, ``store-unreadable``, ``unsealed`` …; ``internal`` for a bug).
        message: what happened, in words.
        line: for a session file changed where it had been sealed
            (``session-file-changed``), the first line that differs; else ``None``.
    """

    ts: int
    store: str
    client: str
    run_id: str | None
    hook: str | None
    code: str
    message: str
    line: int | None = None

    def to_record(self) -> dict[str, Any]:
        record = {
            "ts": self.ts,
            "store": self.store,
            "client": self.client,
            "run_id": self.run_id,
            "hook": self.hook,
            "code": self.code,
            "message": self.message[:_MAX_MESSAGE],
        }
        if self.line is not None:
            record["line"] = self.line
        return record

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> CaptureFailure | None:
        """The failure a line holds, ``None`` when the line is not one."""
        try:
            failure = cls(
                ts=int(record["ts"]),
                store=str(record["store"]),
                client=str(record["client"]),
                run_id=None if record.get("run_id") is None else str(record["run_id"]),
                hook=None if record.get("hook") is None else str(record["hook"]),
                code=str(record["code"]),
                message=str(record["message"]),
                line=record["line"] if isinstance(record.get("line"), int) else None,
            )
        except (KeyError, TypeError, ValueError):
            return None
        return failure


@dataclass(frozen=True)
class HookOutcome:
    """What one ``agc hook`` did.

    Attributes:
        client: the client.
        run_id: the run the event went to (``None``: the event named none).
        event: the record's kind (``call``, ``result`` …), ``None`` when unread.
        appended: the record is in the run, vouched for by a checkpoint.
        sealed: the session ended and the run was sealed.
        failure: what failed, ``None`` when nothing did.
        kept_at: where the failure was kept, ``None`` when nowhere could take it.
    """

    client: str
    run_id: str | None
    event: str | None
    appended: bool
    sealed: bool
    failure: CaptureFailure | None = None
    kept_at: Path | None = None


def capture_hook_event(
    client: ClientName,
    data: bytes,
    *,
    store: str | os.PathLike[str] | None = None,
    lock_wait_ms: int = _LOCK_WAIT_MS,
    clock: Callable[[], int] = unix_ms,
    environ: Mapping[str, str] | None = None,
    retry: bool = False,
    unheard: str | None = None,
) -> HookOutcome:
    """Append one hook event to its session's run; seal the run at the session's end.

    Args:
        client: the client that ran the hook.
        data: the event JSON as the hook got it on stdin.
        store: the store folder (``--store`` / ``$AGC_HOME`` / ``~/.agc``).
        lock_wait_ms: how long to wait for a hook of the same run that holds its file.
        clock: Unix ms, for the failure's ``ts``.
        environ: the environment for the fallback failure file (default ``os.environ``).
        retry: the event may be in the run already (a resident capture process took it
            and stopped before it answered): it is not appended again when the run's
            last record is this same record (every member but the writer's ``seq``,
            ``ts`` and ``run_id`` equal).
        unheard: why events the client sent over HTTP since the session's previous
            event may not have been heard (no listener was up throughout), ``None``
            when one was. For an event that is not a tool call or result, in a session
            whose turn was running (its last event was not its start, a stop or its
            end), a ``hook-events-unheard`` failure is kept and written into the run
            before the event, so the run is never complete and a call its transcript
            holds that the hooks never saw reads as unheard, not as an edit.

    Returns:
        What was done. Never raises on the event or the store (see the module
        docstring); a failure is kept and described in the outcome.
    """
    state = _State(client)
    try:
        folder = resolve_store(store).absolute()
    except AgcError as exc:
        folder = Path(str(store))
        return _failed(state, folder, exc.code, exc.message, clock, environ)
    try:
        return _capture(
            client, state, data, folder, lock_wait_ms, retry=retry, unheard=unheard, clock=clock
        )
    except SessionFileChangedError as exc:  # already recorded in the run, and sealed
        return _failed(state, folder, exc.code, exc.message, clock, environ, in_run=True)
    except AgcError as exc:
        return _failed(state, folder, exc.code, exc.message, clock, environ)
    except OSError as exc:
        return _failed(state, folder, "store-unreadable", f"{exc}", clock, environ)
    except Exception as exc:  # best effort: a bug is kept, never the client's end
        return _failed(state, folder, "internal", f"{type(exc).__name__}: {exc}", clock, environ)


@dataclass
class _State:
    """What is known so far about the event being captured (for its failure)."""

    client: str
    run_id: str | None = None
    session_id: str | None = None
    hook: str | None = None
    event: str | None = None
    appended: bool = False


def _capture(
    client: ClientName,
    state: _State,
    data: bytes,
    folder: Path,
    lock_wait_ms: int,
    *,
    retry: bool = False,
    unheard: str | None = None,
    clock: Callable[[], int] = unix_ms,
) -> HookOutcome:
    event = parse_hook_event(client, data)
    record = event.record
    state.hook, state.event = record.hook, record.event
    state.run_id = run_id = run_id_for(client, record.session_id)
    if not folder.is_dir():
        _make_store(folder)
    state.session_id = record.session_id
    if event.transcript_path is not None and record.event not in _TOOL_KINDS:
        _note_session_file(folder, run_id, event.transcript_path, event.cwd)
    writer, lost = _open_tool_events(run_id, folder, lock_wait_ms)
    gap = None
    try:
        fields = record.to_record()
        # Asked before any pending failure is carried in: a retried event already appended
        # is the run's last record until something else is written after it.
        already = retry and _is_last_record(writer.path, fields)
        _carry_pending(writer, run_id, client, record.session_id, folder)
        if unheard is not None and record.event not in _TOOL_KINDS and _in_turn(writer.path):
            gap = CaptureFailure(
                ts=clock(),
                store=str(folder),
                client=client,
                run_id=run_id,
                hook=record.hook,
                code=HookEventsUnheardError.code,
                message=f"{unheard}: tool events of the session before this "
                f"{record.hook or record.event} event may be lost",
            )
            writer.write(_failure_record(gap, client, record.session_id))
            writer.checkpoint()
            # Kept at once: a seal that fails below (a turn's end naming no session
            # file) must not take this failure with it.
            gap_kept = _keep(gap, folder / CAPTURE_FAILURES)
        if not already:
            writer.write(fields)
            writer.checkpoint()
        state.appended = True
        final = event.ends_session
        sealed = False
        # A turn's end seals as the session's end does: a session file it names that is
        # gone (or none named) is a failure kept, never a turn silently left unsealed.
        if final or record.event == "stop":
            try:
                sealed = _seal_session(writer, event, run_id, folder, final=final)
            except _LEFT_BY_A_KILL:
                # An earlier seal was stopped half-way (the transcript holds what no
                # checkpoint vouches for, or a sidecar its manifest does not list):
                # `agc recover` finishes it, then this seal adds the rest.
                writer.abort()
                lost = _recover(run_id, folder) or lost
                writer, again = _open_tool_events(run_id, folder, lock_wait_ms)
                lost = lost or again
                sealed = _seal_session(writer, event, run_id, folder, final=final)
        if lost:
            raise UnsealedRunError(
                f"run {run_id} held bytes no crash checkpoint vouched for (a hook was "
                "stopped between a write and its checkpoint): `agc recover` sealed them "
                "as recovered, and capture went on in a new segment"
            )
    finally:
        writer.abort()  # releases it unsealed; nothing after a seal
    if gap is not None:
        return HookOutcome(
            state.client,
            run_id,
            record.event,
            appended=True,
            sealed=sealed,
            failure=gap,
            kept_at=gap_kept,
        )
    return HookOutcome(state.client, run_id, record.event, appended=True, sealed=sealed)


_TOOL_KINDS: Final = frozenset({"call", "result"})
_AT_REST: Final = frozenset({"session-start", "stop", "session-end"})
"""The events after which no tool event fires before the next synchronous one."""


def _in_turn(path: Path) -> bool:
    """Whether the session's last event in the tool-events file ``path`` (agc's own
    ``sealed`` and ``capture-failed`` records aside) leaves a turn running: one that is
    not the session's start, a stop or its end; ``False`` when it holds none."""
    last = _last_client_line(path)
    if last is None:
        return False
    try:
        stored = loads(last)
    except AgcError:
        return True
    return not (isinstance(stored, dict) and stored.get("event") in _AT_REST)


def _last_client_line(path: Path) -> bytes | None:
    """The last line of the tool-events file ``path`` that is not one of agc's own
    ``sealed`` and ``capture-failed`` records (which a seal or a failure writes after a
    client's event); ``None`` when there is none. Read from the file's end: what it
    costs is the records after that line, not the session's length."""
    for line in lines_from_end(path):
        if b'"event":"sealed"' not in line and b'"event":"capture-failed"' not in line:
            return line
    return None


def _is_last_record(path: Path, fields: Mapping[str, Any]) -> bool:
    """Whether the last client event of the tool-events file ``path`` (its last record
    but agc's own ``sealed`` and ``capture-failed`` records, which a seal or a failure
    writes after it) holds ``fields`` (each member equal); ``False`` when there is none
    or the line is not a record."""
    last = _last_client_line(path)
    if last is None:
        return False
    try:
        stored = loads(last)
    except AgcError:
        return False
    return isinstance(stored, dict) and all(stored.get(k) == v for k, v in fields.items())


def _make_store(folder: Path) -> None:
    """Create a missing store folder whose parent folder exists (the first event of the
    default ``~/.agc``); never its parents: a store on a volume that is not mounted must
    not become a new store on the disk beneath.

    Raises:
        StoreError: ``folder`` is not a folder, or neither it nor its parent exists.
        FileWriteError: it cannot be created (a read-only or full disk).
    """
    if os.path.lexists(folder):
        raise StoreError(f"store {folder} is not a folder; the event was not captured")
    if not folder.parent.is_dir():
        raise StoreError(
            f"store {folder} does not exist, nor does {folder.parent}; the event was not captured"
        )
    try:
        folder.mkdir(mode=0o755)
    except FileExistsError:
        pass  # a parallel hook made it
    except OSError as exc:
        raise write_error(folder, exc, doing="create the store") from exc


_LEFT_BY_A_KILL: Final = (UnsealedRunError, ArtifactSealedError, TornTailError)
"""What a writer refuses in a file a killed hook left: bytes no checkpoint vouches for,
a sidecar the manifest does not list yet, a torn last line."""


def _open_tool_events(run_id: str, folder: Path, lock_wait_ms: int) -> tuple[ToolEventWriter, bool]:
    """The run's tool-events writer, continued as it is, and whether bytes no crash
    checkpoint vouched for had to be sealed first; waits for a parallel hook.

    A file a killed hook left (see :data:`_LEFT_BY_A_KILL`) is sealed first by ``agc
    recover`` (``recovered``, never silently adopted), then continued as a new segment.

    Raises:
        RunLockedError: another hook held the file for longer than ``lock_wait_ms``.
        StoreError, FileWriteError: the store cannot be written.
    """
    deadline = time.monotonic() + lock_wait_ms / 1000
    pause = _FIRST_PAUSE_S
    recovered = lost = False
    while True:
        try:
            return ToolEventWriter(run_id, store=folder, resume=True), lost
        except RunLockedError:
            if time.monotonic() + pause > deadline:
                raise
        except _LEFT_BY_A_KILL:
            if recovered:
                raise
            lost = _recover(run_id, folder)
            recovered = True
            continue
        time.sleep(pause)  # another hook of the run appends: it takes milliseconds
        pause = min(pause * 2, _MAX_PAUSE_S)


def _recover(run_id: str, folder: Path) -> bool:
    """``agc recover`` the run; whether it sealed bytes no checkpoint vouched for (or
    moved a torn line aside).

    Raises:
        as :func:`agc.integrity.recover_run`.
    """
    from agc.integrity import recover_run  # noqa: PLC0415 - only after a killed hook

    report = recover_run(run_id, folder)
    return any(a.verified_bytes < a.bytes or a.quarantined_bytes for a in report.artifacts)


def _seal_session(
    writer: ToolEventWriter, event: HookEvent, run_id: str, folder: Path, *, final: bool
) -> bool:
    """Write the client's session file as the run's transcript, then seal both;
    ``writer`` is open and holds the run's tool events.

    The transcript continues what earlier seals of the run hold, and only after that
    prefix of the session file is shown to be the one they sealed
    (:func:`_continue_at`): then the lines after it are a new segment. A session file
    changed where it had been sealed adds nothing: a ``capture-failed`` record of code
    ``session-file-changed`` is written into the tool events, which are sealed, and
    :class:`SessionFileChangedError` is raised (``agc-verify`` reports the record as
    ``transcript-diverges``). Unless ``final`` (the session ended), a last line without
    its ``\\n`` is left for the next seal (the client may be writing it) and no facts are
    set: the session's facts become the manifest's ``attributes`` at its end. After the
    transcript's seal a ``sealed`` record says how many lines and bytes of the session
    file the transcript now holds, with the SHA-256 of those bytes.

    Raises:
        InputError: the event names no session file (the run stays unsealed).
        SessionFileMissingError: the session file is gone (the run stays unsealed;
            ``agc recover`` seals what it holds).
        SessionFileChangedError: see above (the tool events are sealed).
        as the writers.
    """
    path = event.transcript_path
    if path is None:
        raise InputError(
            f"the {event.record.client} {event.record.hook or 'session end'} event names "
            "no session file (transcript_path); the run stays unsealed"
        )
    # Read only at the session's end (a scan of the whole run): a turn's end sets none.
    facts = _facts(writer.path, event, Path(path)) if final else None
    try:
        session = open_regular_file(Path(path))
    except FileNotFoundError as exc:
        raise SessionFileMissingError(
            f"the session file {path} the {event.record.hook or 'session end'} event names "
            "is gone; the run stays unsealed"
        ) from exc
    with session:
        fd = session.fileno()
        size = os.fstat(fd).st_size
        limit = size if final else last_line_end(fd, size)
        layout = StoreLayout(folder)
        manifest = read_manifest(layout, run_id)
        sealed = manifest.artifacts.get("transcript") if manifest else None
        attributes = None if not final or (manifest and manifest.attributes) else facts
        at: int | None = None
        hashed: Any = None  # SHA-256 of the file's first `at` bytes, when computed
        if sealed is not None and sealed.closed:
            # Checked before the transcript is re-opened: a file that diverges adds
            # nothing, not even an empty segment.
            at, hashed = _checked_prefix(writer, event, fd, limit, run_id, folder, sealed.records)
        from agc.integrity import ingest_lines  # noqa: PLC0415 - only at a seal

        transcript = TranscriptWriter(run_id, store=folder, resume=True, attributes=attributes)
        try:
            done = transcript.next_seq
            if at is None:
                at, hashed = _checked_prefix(
                    writer, event, fd, limit, run_id, folder, done, transcript
                )
            lines = io.BufferedReader(_Prefix(fd, limit, at))
            ingest_lines(lines, transcript, lines_before=done)
            total = transcript.next_seq
            transcript.close()
        finally:
            transcript.abort()
        writer.write(_sealed_record(event, fd, total, limit, at, hashed))
    writer.close()
    return True


def _checked_prefix(
    writer: ToolEventWriter,
    event: HookEvent,
    fd: int,
    limit: int,
    run_id: str,
    folder: Path,
    records: int,
    transcript: TranscriptWriter | None = None,
) -> tuple[int, Any]:
    """Where the session file's lines after the ``records`` its run's transcript holds
    begin (a byte offset, at most ``limit``), once the file is shown to begin with the
    lines those records were sealed from (:func:`_continue_at`), and the SHA-256 of the
    bytes before it when it was computed (``hashlib`` object, else ``None``).

    Raises:
        SessionFileChangedError: it does not; a ``capture-failed`` record saying so is
            written into ``writer``, and the tool events (and ``transcript``, when open)
            are sealed first.
    """
    at, differs, hashed = _continue_at(writer.path, fd, limit, run_id, folder, records)
    if differs is None:
        return at, hashed
    message = (
        f"the session file no longer begins with the {records} line(s) earlier seals "
        f"of run {run_id} took from it (first difference: line {differs}); its new "
        "lines were not sealed"
    )
    failure = CaptureFailure(
        ts=unix_ms(),
        store=str(folder),
        client=event.record.client,
        run_id=run_id,
        hook=event.record.hook,
        code=SessionFileChangedError.code,
        message=message,
        line=differs,
    )
    writer.write(_failure_record(failure, event.record.client, event.record.session_id))
    if transcript is not None:
        transcript.close()
    writer.close()
    raise SessionFileChangedError(message)


def _continue_at(
    events: Path, fd: int, limit: int, run_id: str, folder: Path, records: int
) -> tuple[int, int | None, Any]:
    """``(offset, None, hashed)``: the first ``records`` lines of the session file ``fd``
    (of its first ``limit`` bytes) are the lines the run's transcript sealed, and end
    at ``offset`` (``hashed``: the SHA-256 of those bytes when it was computed, else
    ``None``); ``(0, line, None)``: they are not, ``line`` (1-based) the first that
    differs.

    The run's last ``sealed`` record names the lines, bytes and SHA-256 of the prefix
    it sealed: when it names ``records`` lines and the file's first bytes hash to it
    (the digest compared with :func:`hmac.compare_digest`), the file goes on after
    them. Otherwise (a transcript continued by ``agc import`` of the file, one sealed
    before these records were written, or bytes that differ) the first ``records``
    lines are ingested again and compared with the sealed records, as ``agc import``
    compares a grown file (:func:`agc.integrity.sealed_prefix_differs`): the same
    records (a line written again with the same JSON) go on, others differ.
    """
    if records == 0:
        return 0, None, hashlib.sha256()
    from agc._core.digest import digests_equal  # noqa: PLC0415 - only at a seal

    last = _last_sealed(events)
    if last is not None and last.get("lines") == records:
        size, digest = last.get("bytes"), last.get("sha256")
        if isinstance(size, int) and isinstance(digest, str) and 0 < size <= limit:
            hashed = hashlib.sha256()
            if _hash_range(fd, hashed, 0, size) == size and digests_equal(
                digest, hashed.hexdigest()
            ):
                return size, None, hashed
    # No digest to go by, or other bytes: the records decide, as for `agc import` (a
    # line written again with the same JSON is the same record).
    return (*_compare_records(fd, run_id, folder, records, limit), None)


def session_file_diverges(run_id: str, folder: Path, path: Path) -> int | None:
    """The first line (1-based) at which the session file ``path`` no longer holds what
    the run's sealed transcript took from it (:func:`_continue_at`), so that the next
    seal of the run keeps a ``session-file-changed`` failure; ``None`` when it still
    begins with those lines (the next seal adds what follows), when nothing is sealed
    yet, or when the run or the file cannot be read. Never raises."""
    try:
        layout = StoreLayout(folder)
        manifest = read_manifest(layout, run_id)
        sealed = manifest.artifacts.get("transcript") if manifest else None
        if sealed is None or not sealed.closed or not sealed.records:
            return None
        events = layout.artifact_path(run_id, "tool-events")
        with open_regular_file(path) as session:
            fd = session.fileno()
            limit = last_line_end(fd, os.fstat(fd).st_size)
            return _continue_at(events, fd, limit, run_id, folder, sealed.records)[1]
    except (OSError, AgcError):
        return None


_HASH_CHUNK: Final = 1 << 20


def _hash_range(fd: int, hashed: Any, start: int, end: int) -> int:
    """Feed bytes ``[start, end)`` of ``fd`` to ``hashed`` (read with ``pread``, 1 MiB
    at a time); the bytes fed (fewer when the file is shorter)."""
    at = start
    while at < end:
        data = os.pread(fd, min(_HASH_CHUNK, end - at), at)
        if not data:
            break
        hashed.update(data)
        at += len(data)
    return at - start


def _compare_records(
    fd: int, run_id: str, folder: Path, records: int, limit: int
) -> tuple[int, int | None]:
    """:func:`_continue_at` by a record-for-record comparison of the first ``records``
    lines of the file with the sealed transcript."""
    from agc.integrity import sealed_prefix_differs  # noqa: PLC0415 - rare: no digest

    stream = io.BufferedReader(_Prefix(fd, limit))
    head = b"".join(itertools.islice(stream, records))
    differs = sealed_prefix_differs(io.BytesIO(head), run_id, folder, records=records)
    return (len(head), None) if differs is None else (0, differs)


def _last_sealed(events: Path) -> dict[str, Any] | None:
    """The ``sealed`` member of the last ``sealed`` record of the run's tool-events
    file, ``None`` when it holds none (read from the file's end)."""
    for line in lines_from_end(events):
        if b'"event":"sealed"' not in line:
            continue
        try:
            record = loads(line)
        except AgcError:
            continue
        if isinstance(record, dict) and record.get("event") == "sealed":
            member = record.get("sealed")
            return member if isinstance(member, dict) else None
    return None


def _sealed_record(
    event: HookEvent, fd: int, lines: int, size: int, at: int, hashed: Any
) -> dict[str, Any]:
    """The tool-events record of a seal: the transcript holds the session file's first
    ``lines`` lines, its first ``size`` bytes, whose SHA-256 it gives (``hashed`` holds
    that of the first ``at`` bytes already, when not ``None``)."""
    if hashed is None:
        hashed, at = hashlib.sha256(), 0
    read = at + _hash_range(fd, hashed, at, size)
    record = ToolEvent(
        event="sealed",
        source="hook",
        client=event.record.client,
        session_id=event.record.session_id,
        hook=event.record.hook,
    ).to_record()
    record["sealed"] = {"lines": lines, "bytes": read, "sha256": hashed.hexdigest()}
    return record


def _failure_record(failure: CaptureFailure, client: ClientName, session_id: str) -> dict[str, Any]:
    """The tool-events record of a capture failure of the session
    (``event: "capture-failed"``; ``failure``: its ``ts``, ``code``, ``message`` and,
    for a session file changed where it was sealed, the first ``line`` that differs)."""
    record = ToolEvent(
        event="capture-failed",
        source="hook",
        client=client,
        session_id=session_id,
        hook=failure.hook,
    ).to_record()
    kept = failure.to_record()
    record["failure"] = {
        key: redact_value(kept[key]) for key in ("ts", "code", "message", "line") if key in kept
    }
    return record


class _Prefix(io.RawIOBase):
    """The bytes ``[start, limit)`` of an open file, read with ``pread`` (the file may
    grow meanwhile: its client is still writing)."""

    def __init__(self, fd: int, limit: int, start: int = 0) -> None:
        super().__init__()
        self._fd, self._limit, self._at = fd, limit, start

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        want = min(len(buffer), self._limit - self._at)
        if want <= 0:
            return 0
        data = os.pread(self._fd, want, self._at)
        buffer[: len(data)] = data
        self._at += len(data)
        return len(data)


def _facts(path: Path, event: HookEvent, session: Path | None) -> dict[str, Any]:
    """The session's facts (manifest ``attributes``): the tool calls and failures the
    run's tool-events file holds; the model and the agent's first and last timestamps
    from the client's ``session`` file when given and it names them (Claude Code's and
    the Gemini CLI's hooks name no model, Claude Code's and Codex's no time), else from
    the events."""
    record = event.record
    calls = failures = 0
    first = last = None
    for line in _lines(path):
        try:
            stored = ToolEvent.from_record(loads(line))
        except (AgcError, ValueError):
            continue
        calls += stored.event == "call"
        failures += stored.event == "result" and stored.status == "error"
        if stored.agent_ts is not None:
            # Earliest and latest, not first and last: background hooks append out of
            # order (one client's timestamps share one ISO 8601 form, so text order is
            # time order).
            first = stored.agent_ts if first is None else min(first, stored.agent_ts)
            last = stored.agent_ts if last is None else max(last, stored.agent_ts)
    told = _session_facts(session) if session is not None else None
    facts = SessionFacts(
        client=record.client,
        session_id=record.session_id,
        model=event.model or (told.model if told else None),
        project=None if event.cwd is None else SessionFacts.project_of(event.cwd),
        first_agent_ts=(told.first_agent_ts if told else None) or first,
        last_agent_ts=(told.last_agent_ts if told else None) or last,
        tool_calls=calls,
        tool_failures=failures,
        thread_id=told.thread_id if told else None,
    )
    return facts.to_attributes()


def _session_facts(path: Path) -> SessionFacts | None:
    """What the client's session file says of the session (as
    :func:`agc.capture.parse_session` reads it), ``None`` when it cannot be read or is
    of no known format."""
    from agc.capture import SessionParser  # noqa: PLC0415 - only at a session's end

    parser = SessionParser()
    try:
        with open_regular_file(path) as handle:
            for raw in handle:
                try:
                    line = loads(raw, allow_lone_surrogates=True)
                except AgcError:
                    line = None
                parser.feed(line)
    except (OSError, AgcError):
        return None
    return parser.facts()


def _lines(path: Path) -> Iterator[bytes]:
    with path.open("rb") as handle:
        yield from handle


def record_capture_failure(
    *,
    store: str | os.PathLike[str] | None,
    code: str,
    message: str,
    client: str = "unknown",
    run_id: str | None = None,
    clock: Callable[[], int] = unix_ms,
    environ: Mapping[str, str] | None = None,
) -> HookOutcome:
    """Keep a failure that happened before any event could be read (``agc hook`` was
    started with bad arguments; the hook process was stopped while it handed the event
    to the resident capture process: ``run_id`` when the bytes that came name it), as
    :func:`capture_hook_event` keeps its own. Never raises."""
    try:
        folder = resolve_store(store).absolute()
    except AgcError:
        folder = Path(str(store))
    state = _State(client, run_id=run_id)
    return _failed(state, folder, code, message, clock, environ)


def _failed(
    state: _State,
    folder: Path,
    code: str,
    message: str,
    clock: Callable[[], int],
    environ: Mapping[str, str] | None,
    *,
    in_run: bool = False,
) -> HookOutcome:
    """Keep the failure (see the module docstring) and, when it names a run of a store
    that took it, carry it into that run (:func:`_carry_now`) unless ``in_run`` (the
    run holds it already)."""
    failure = CaptureFailure(
        ts=clock(),
        store=str(folder),
        client=state.client,
        run_id=state.run_id,
        hook=state.hook,
        code=code,
        message=message,
    )
    kept = None
    if folder.is_dir():
        kept = _keep(failure, folder / CAPTURE_FAILURES)
        if kept is not None and state.run_id is not None and not in_run:
            _keep(failure, _pending_path(folder, state.run_id))
            _carry_now(state, folder)
    if kept is None:
        kept = _keep(failure, fallback_failures_path(environ))
    return HookOutcome(
        state.client,
        state.run_id,
        state.event,
        appended=state.appended,
        sealed=False,
        failure=failure,
        kept_at=kept,
    )


_SESSION_FILES: Final = "capture/session-files"
"""Where a store keeps, per run (``<run id>.json``), the session file its hooks last
named (relative to the store folder): ``{"transcript_path": "/abs/path"}``."""
_MAX_NOTE_BYTES: Final = 1 << 16


def _session_file_note(folder: Path, run_id: str) -> Path:
    return folder / _SESSION_FILES / f"{run_id}.json"


def _note_session_file(folder: Path, run_id: str, path: str, cwd: str | None) -> None:
    """Keep the session file a session's hook event names (``transcript_path``, made
    absolute against the event's ``cwd``) for ``agc recover`` of a run whose seal never
    came; written only when it changed (the session's first synchronous event), never
    into the run's records (a host path is no evidence). Best effort: a store that
    cannot take it loses only this note, never the event. Never raises."""
    named = os.path.join(cwd, path) if cwd is not None and not os.path.isabs(path) else path
    data = dumps({"transcript_path": named}) + b"\n"
    target = _session_file_note(folder, run_id)
    with contextlib.suppress(OSError, AgcError):
        if read_small_file(target, max_bytes=_MAX_NOTE_BYTES) == data:
            return
    with contextlib.suppress(OSError, AgcError):
        ensure_dirs(target.parent)
        atomic_write_bytes(target, data, overwrite=True)


def recorded_session_file(run_id: str, store: str | os.PathLike[str] | None = None) -> Path | None:
    """The session file the hooks of ``run_id`` last named (their ``transcript_path``,
    kept in ``<store>/capture/session-files/<run id>.json``), ``None`` when they named
    none, the run was captured before agc kept it, or the note cannot be read. Never
    raises."""
    try:
        target = _session_file_note(resolve_store(store), run_id)
        note = loads(read_small_file(target, max_bytes=_MAX_NOTE_BYTES))
    except (OSError, AgcError):
        return None
    named = note.get("transcript_path") if isinstance(note, dict) else None
    return Path(named) if isinstance(named, str) and named else None


_PENDING: Final = "capture/pending"
"""Where a store keeps, per run (``<run id>.jsonl``), the failures not yet written into
the run's own tool events (relative to the store folder)."""


def _pending_path(folder: Path, run_id: str) -> Path:
    return folder / _PENDING / f"{run_id}.jsonl"


def _carry_now(state: _State, folder: Path) -> None:
    """Write the run's pending failures into its tool events at once, when the run is
    being captured (its tool events are not sealed) and its file can be taken now;
    otherwise the next event of the run carries them (:func:`_carry_pending`): a sealed
    run is not re-opened for a failure alone. Never raises."""
    run_id, session_id = state.run_id, state.session_id
    if run_id is None or session_id is None or state.client not in CLIENTS:
        return
    with contextlib.suppress(AgcError, OSError):
        manifest = read_manifest(StoreLayout(folder), run_id)
        entry = manifest.artifacts.get("tool-events") if manifest else None
        if entry is not None and entry.closed:
            return
        writer = ToolEventWriter(run_id, store=folder, resume=True)
        try:
            _carry_pending(writer, run_id, state.client, session_id, folder)
        finally:
            writer.abort()


def _carry_pending(
    writer: ToolEventWriter, run_id: str, client: ClientName, session_id: str, folder: Path
) -> None:
    """Append a ``capture-failed`` record to the open ``writer`` for each failure kept
    for the run and not yet in it (``capture/pending/<run id>.jsonl``), checkpoint them,
    then remove the pending file. Sealed with the run, a failure can no longer be
    removed without the seal saying so. A crash before the removal writes them again at
    the next event: the verifier counts a failure once (by its ``ts``, ``code`` and
    ``hook``).

    Raises:
        as the writer.
    """
    path = _pending_path(folder, run_id)
    try:
        with open_regular_file(path) as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        return  # the common case: one failed open
    except (OSError, AgcError):
        return
    for line in lines:
        try:
            failure = CaptureFailure.from_record(loads(line))
        except AgcError:
            failure = None
        if failure is not None and failure.run_id == run_id:
            writer.write(_failure_record(failure, client, session_id))
    writer.checkpoint()
    with contextlib.suppress(OSError):
        path.unlink()


def _keep(failure: CaptureFailure, path: Path) -> Path | None:
    """Append ``failure`` to ``path`` as one JSON line; ``path`` when it was kept, else
    ``None`` (never raises: the caller tries the next place)."""
    with contextlib.suppress(OSError, AgcError):
        ensure_dirs(path.parent)
        # O_NONBLOCK: a FIFO put where the file goes must not hold the hook (opening
        # one for writing without a reader fails at once); only a regular file is kept.
        fd = open_nofollow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o644)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            append_whole(fd, dumps(failure.to_record()) + b"\n", path=path, fsync=False)
        finally:
            os.close(fd)
        return path
    return None


def capture_failures(
    store: str | os.PathLike[str] | None = None,
    *,
    run_id: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[CaptureFailure]:
    """The capture failures kept for a store folder (in the store and in the fallback
    file, those naming this store), oldest first; only those of ``run_id`` when given.
    Unreadable files and lines that are not failures are skipped. Never raises."""
    try:
        folder = resolve_store(store).absolute()
    except AgcError:
        return []
    found = [
        failure
        for line in failure_lines(folder, environ)
        if (failure := CaptureFailure.from_record(line)) is not None
        and (run_id is None or failure.run_id == run_id)
    ]
    found.sort(key=lambda f: f.ts)
    return found


def captured_session(
    run_id: str,
    attributes: Mapping[str, Any] | None,
    store: str | os.PathLike[str] | None = None,
) -> tuple[str | None, str | None]:
    """``(client, session id)`` of a run that captured a client session, else
    ``(None, None)``.

    From the manifest's ``attributes`` (:class:`~agc.capture.SessionFacts`, set when the
    run was sealed); for a run not sealed yet, from the first record of its tool-events
    file in a folder store (a hook record names both). Never raises."""
    if attributes is not None:
        client, session = attributes.get("client"), attributes.get("session_id")
        if isinstance(client, str) and isinstance(session, str):
            return client, session
    if not any(run_id.startswith(f"{client}-") for client in CLIENTS):
        return None, None
    try:
        path = StoreLayout(resolve_store(store)).artifact_path(run_id, "tool-events")
        with open_regular_file(path) as handle:
            first = handle.readline(1 << 20)
        stored = ToolEvent.from_record(loads(first))
    except (OSError, AgcError, ValueError, TypeError):
        return None, None
    if run_id_for(stored.client, stored.session_id) != run_id:
        return None, None
    return stored.client, stored.session_id
