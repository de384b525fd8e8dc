"""Ingest JSONL from an agent (stdin or a file) into a run, losing nothing.

Each input line becomes one record. A line that is a JSON object is kept as
``{"line": n, "payload": <object>}``; any other line (not JSON, not an object,
NaN/Infinity, duplicate keys, invalid UTF-8, blank) is kept as
``{"line": n, "invalid": <reason>, "text": <line>}`` (``"text_b64"`` when the bytes are
not UTF-8). An object the writer could not write (a number out of float range, a lone
surrogate escape) is kept the same way, so that nothing the agent wrote is dropped. A
UTF-8 byte-order mark before the first line is removed and flagged with ``"bom": true``.
Lines split only on ``\\n``: U+2028/U+2029 inside a line are content.

A line already spelled as the writer would write its object (compact JSON, what most
agents write; :func:`agc._core.json.canonical` proves it) is not encoded again from its
parsed value: its own bytes become the payload, which gives the same file.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import os
import re
import select
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO, Final, Protocol

from agc._core import json as strict_json
from agc._core.digest import DEFAULT_ALGORITHM, Algorithm
from agc._core.fs import describe_os_error, open_regular_file
from agc._core.jsonl import FsyncPolicy, JsonlFileWriter
from agc._core.report import SCHEMA_VERSION
from agc._core.storage import Store
from agc._core.store import ARTIFACT_KINDS, ArtifactKind, RunId, StoreArg, StoreLayout
from agc.errors import AgcError, EmptyInputError, FileUnreadableError, JsonInvalidError
from agc.integrity._manifest import ArtifactSeal
from agc.integrity._signing import SigningKey
from agc.integrity._target import RunTarget, recorded_copies, run_target
from agc.integrity._writer import RunWriters, ToolEventWriter, TranscriptWriter, open_run

__all__ = ["Companion", "IngestSummary", "ingest_lines", "ingest_stream", "line_to_record"]


class Companion(Protocol):
    """Tool-event records derived from a transcript while it is ingested.

    ``feed`` is given every transcript line that is a JSON object with its 1-based line
    number, in order, and returns the tool-event record bodies it gives (written as they
    come, so a stopped ingest keeps them unsealed like the transcript); ``attributes`` is
    asked once at the end, before the seal, for the run's manifest ``attributes``
    (``None``: none).
    """

    def feed(self, line: Mapping[str, Any], number: int) -> Iterable[Mapping[str, Any]]: ...

    def attributes(self) -> Mapping[str, Any] | None: ...


_BOM: Final = b"\xef\xbb\xbf"
# The reasons records carry (a documented part of the record format).
_REASONS: Final = {
    "surrogate": "JSON string with a lone surrogate escape (not encodable as UTF-8)",
    "depth": "JSON nested too deeply",
}
_READ_CHUNK: Final = 1 << 20
_PROGRESS_BYTES: Final = 1 << 20


def line_to_record(raw: bytes, line_no: int) -> dict[str, Any]:
    """Turn one input line (without its ``\\n``) into a record body. Pure.

    Returns ``{"line", "payload"}`` for a JSON object, else
    ``{"line", "invalid", "text"|"text_b64"}``; adds ``"bom": true`` if a BOM was removed.
    """
    record: dict[str, Any] = {"line": line_no}
    if line_no == 1 and raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
        record["bom"] = True
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        record["invalid"] = f"not UTF-8 ({exc.reason} at byte {exc.start})"
        record["text_b64"] = base64.b64encode(raw).decode("ascii")
        return record
    reason: str
    try:
        # agc's one rule: a lone surrogate escape is refused too, since the writer
        # could not write it as UTF-8.
        value = strict_json.loads(text)
    except JsonInvalidError as exc:
        reason = _REASONS.get(exc.problem) or (
            "blank line" if not text.strip() else f"not JSON ({exc.message})"
        )
        if exc.problem == "duplicate":
            reason = f"JSON object with a {exc.message}"
    else:
        if not isinstance(value, dict):
            reason = f"not a JSON object (a JSON {type(value).__name__})"
        elif text.count("{") + text.count("[") >= strict_json.MAX_DEPTH and (
            strict_json.exceeds_depth(value, strict_json.MAX_DEPTH - 1)
        ):
            # As a payload it would be one level deeper than the writer writes.
            reason = _REASONS["depth"]
        else:
            record["payload"] = value
            return record
    record["invalid"] = reason
    record["text"] = text
    return record


def iter_lines(
    stream: BinaryIO, *, before_wait: Callable[[], None] | None = None
) -> Iterable[tuple[bytes, int]]:
    """Yield ``(line without its \\n, bytes consumed)``, split on ``\\n`` only.

    A final unterminated line is yielded too.

    Args:
        before_wait: for a stream that is not seekable (a pipe: a live agent), called
            before every read that may block waiting for input, i.e. whenever no complete
            line is left in hand. ``agc record`` flushes its writer there, so that what
            was read from the pipe is on disk while the agent is quiet.
    """
    if before_wait is None or stream.seekable():
        try:
            for line in stream:
                yield (line[:-1] if line.endswith(b"\n") else line), len(line)
        except OSError as exc:  # raised by the read only: the consumer runs outside
            raise _unreadable(stream, exc) from exc
        return
    read = getattr(stream, "read1", stream.read)
    poller = select.poll()
    waiter: select.poll | None = poller
    try:
        poller.register(stream.fileno(), select.POLLIN)
    except (OSError, ValueError):  # no file descriptor (an in-memory stream)
        waiter = None
    pending = bytearray()
    while True:
        before_wait()
        if waiter is not None:
            # Wait for data or end of input: on a stdin with O_NONBLOCK set, a read
            # with nothing to read yet returns b"" just like the end of input.
            waiter.poll()
        try:
            chunk: bytes = read(_READ_CHUNK)
        except OSError as exc:
            raise _unreadable(stream, exc) from exc
        if not chunk:
            break
        scan, start = len(pending), 0
        pending += chunk
        while (end := pending.find(b"\n", scan)) != -1:
            yield bytes(pending[start:end]), end + 1 - start
            start = scan = end + 1
        del pending[:start]
    if pending:
        yield bytes(pending), len(pending)


def _unreadable(stream: BinaryIO, exc: OSError) -> FileUnreadableError:
    """The input could not be read (an I/O error, ``EIO``): exit 3, naming the input
    (its path, or ``stdin``) and the cause."""
    name = getattr(stream, "name", None)
    if name in {0, "<stdin>"}:
        where = "stdin"
    else:
        where = "the input" if name is None else f"the input {name}"
    return FileUnreadableError(f"cannot read {where}: {describe_os_error(exc)}")


@dataclass(frozen=True)
class IngestSummary:
    """What one ingest wrote.

    Attributes:
        run_id: the run.
        kind: the artifact the input went to.
        records: records written (= input lines).
        invalid_lines: lines kept as ``invalid`` records.
        bytes_in: input bytes read.
        seals: the seals of both artifacts (the input's and the empty other one).
        unchanged: the store held this very run already (the same records under the
            same run id): nothing was written, and ``seals`` are the run's own.
    """

    run_id: str
    kind: ArtifactKind
    records: int
    invalid_lines: int
    bytes_in: int
    seals: tuple[ArtifactSeal, ...]
    object_store: Mapping[str, Any] | None = None
    """For a run written to an object store: its upload (store, position, objects)."""
    unchanged: bool = False

    def to_dict(self) -> dict[str, Any]:
        upload = {} if self.object_store is None else {"object_store": dict(self.object_store)}
        return {
            "schema_version": SCHEMA_VERSION,
            "run_id": self.run_id,
            "kind": self.kind,
            "records": self.records,
            "invalid_lines": self.invalid_lines,
            "bytes_in": self.bytes_in,
            "seals": [{"kind": s.kind, **s.to_dict()} for s in self.seals],
            "unchanged": self.unchanged,
            **upload,
        }


def ingest_stream(
    stream: BinaryIO,
    run_id: str,
    *,
    kind: ArtifactKind = "transcript",
    store: StoreArg | Store = None,
    algorithm: Algorithm = DEFAULT_ALGORITHM,
    fsync: FsyncPolicy = "close",
    progress: Callable[[int], None] | None = None,
    signing_key: SigningKey | None = None,
    allow_empty: bool = True,
    companion: Callable[[], Companion] | None = None,
) -> IngestSummary:
    """Write every line of ``stream`` as a record of ``kind`` and seal the run.

    A run id the store chain links already is refused (``RunExistsError``), except
    when the input is that run's own: the same records, in the same order, as a
    complete run of the store holds (a retried import). Then nothing is written and
    the summary says ``unchanged`` (in a folder and in an object store alike).

    A run always has both artifacts: the other kind is sealed as an
    empty file. If reading or writing fails or the process is interrupted (Ctrl-C,
    SIGTERM raised as an exception), both files are released unsealed with a last
    checkpoint (the run then verifies as unsealed, never as complete, and
    ``agc recover`` seals it); files this call created and that hold no record are
    removed again, so the run id stays free.

    Args:
        progress: called with the number of input bytes consumed so far (about every
            MiB, and once at the end).
        signing_key: sign the run manifest (Ed25519) when sealing.
        allow_empty: seal a run whose input holds no line; if False, such an input is
            refused before anything is sealed (``EmptyInputError``).
        companion: makes the :class:`Companion` that fills the run's tool-events (and
            its manifest ``attributes``) from the transcript's lines; only with
            ``kind="transcript"`` (else the tool-events are sealed empty as without).

    For an object store (``s3://…``) the run is written in a local staging store and
    uploaded once sealed; the summary's ``object_store`` describes the upload.

    Raises:
        EmptyInputError: the input is empty and ``allow_empty`` is False.
        RunExistsError: the chain links ``run_id`` and the input is not that run's.
        FileUnreadableError: reading the input failed (an I/O error; exit 3), naming it
            (``stream.name``, ``stdin``); the lines read before stay, unsealed.
        as :func:`agc.integrity._writer.open_run` and :meth:`JsonlWriter.write`.
    """
    run_id = RunId(run_id)
    target = run_target(store)
    if target.linked(run_id):
        same = _already_recorded(
            stream,
            run_id,
            target,
            kind=kind,
            algorithm=algorithm,
            signing_key=signing_key,
            companion=companion,
        )
        if same is not None:
            return same
        # Otherwise the run id is refused as the writers open (RunExistsError).
    policy = target.policy()
    with target.staging(run_id) as folder:
        summary = _ingest_into(
            stream,
            run_id,
            folder,
            kind=kind,
            algorithm=algorithm,
            fsync=fsync,
            progress=progress,
            signing_key=signing_key,
            allow_empty=allow_empty,
            companion=None if companion is None or kind != "transcript" else companion(),
        )
    upload = target.publish(run_id, signing_key=signing_key, policy=policy)
    return summary if upload is None else replace(summary, object_store=upload.to_dict())


def ingest_lines(
    stream: BinaryIO, writer: JsonlFileWriter, *, skip: int = 0, lines_before: int = 0
) -> tuple[int, int]:
    """Write each line of ``stream`` after its first ``skip`` lines as one record of the
    open ``writer``, by the ingest rule (``{"line", "payload"}`` or an ``invalid``
    record; see the module docstring), for a caller that holds the writer (a run whose
    other artifact is written elsewhere). The writer is neither flushed nor sealed.

    Args:
        lines_before: the lines of the input before ``stream`` begins (a caller that
            continues an input from a byte offset): the first line is numbered
            ``lines_before + skip + 1``.

    Returns:
        ``(records written, of which invalid)``.

    Raises:
        FileUnreadableError: reading the input failed (exit 3).
        as :meth:`~agc._core.jsonl.JsonlFileWriter.write_many`.
    """
    for _ in range(skip):  # read past, not parsed: an earlier seal holds them
        if not stream.readline():
            return 0, 0
    counts = _Counts(records=lines_before + skip)
    written = writer.write_many(_bodies(stream, counts, writer.flush, None))
    return len(written), counts.invalid


def _ingest_into(
    stream: BinaryIO,
    run_id: str,
    folder: Path,
    *,
    kind: ArtifactKind,
    algorithm: Algorithm,
    fsync: FsyncPolicy,
    progress: Callable[[int], None] | None,
    signing_key: SigningKey | None,
    allow_empty: bool,
    companion: Companion | None = None,
) -> IngestSummary:
    """:func:`ingest_stream` into the store folder ``folder``, where the run is sealed."""
    layout = StoreLayout(folder)
    created = {k: not os.path.lexists(layout.artifact_path(run_id, k)) for k in ARTIFACT_KINDS}
    run = open_run(run_id, store=folder, algorithm=algorithm, fsync=fsync, signing_key=signing_key)
    writer: TranscriptWriter | ToolEventWriter = (
        run.transcript if kind == "transcript" else run.tool_events
    )
    counts = _Counts()
    events = run.tool_events

    def flush_both() -> None:
        # While a live agent is quiet, what was read is on disk: its tool events too.
        writer.flush()
        events.flush()

    bodies = _bodies(stream, counts, writer.flush if companion is None else flush_both, progress)
    if companion is not None:
        bodies = _with_companion(bodies, companion, run.tool_events)
    try:
        writer.write_many(bodies)
        writer.flush()  # a full disk fails here, while an empty run can still be undone
        attributes = None if companion is None else companion.attributes()
        if attributes is not None:
            run.transcript.set_attributes(attributes)
            run.tool_events.set_attributes(attributes)
    except BaseException:
        _release_unsealed(run, created)
        raise
    records, invalid = counts.records, counts.invalid
    if records == 0 and not allow_empty:
        _release_unsealed(run, created)
        raise EmptyInputError(
            f"the input is empty: nothing was recorded, and run id {run_id} stays free"
        )
    run.close()
    seals = (run.transcript.seal, run.tool_events.seal)
    return IngestSummary(
        run_id=run_id,
        kind=kind,
        records=records,
        invalid_lines=invalid,
        bytes_in=counts.consumed,
        seals=tuple(s for s in seals if s is not None),
    )


@dataclass
class _Counts:
    records: int = 0
    invalid: int = 0
    consumed: int = 0


def _bodies(
    stream: BinaryIO,
    counts: _Counts,
    before_wait: Callable[[], None],
    progress: Callable[[int], None] | None,
) -> Iterator[dict[str, Any]]:
    """The record body of each input line, counted in ``counts`` as it is read.

    A line that is already a JSON object spelled exactly as the writer would write it
    (:func:`agc._core.json.canonical`: the common case, agents write compact JSON) is
    kept as it is: its record holds the line's own bytes as the payload, which the
    writer copies (the same bytes as writing the parsed object). Any other line goes
    through :func:`line_to_record`. ``progress`` is called about every MiB and at the end.
    """
    canonical = strict_json.canonical
    next_report = 0
    for raw, size in iter_lines(stream, before_wait=before_wait):
        counts.records += 1
        counts.consumed += size
        line_no = counts.records
        value = None if line_no == 1 and raw.startswith(_BOM) else canonical(raw)
        if value is not None and type(value.value) is dict:
            yield {"line": line_no, "payload": value}
        else:
            body = line_to_record(raw, line_no)
            counts.invalid += "invalid" in body
            yield body
        if progress is not None and counts.consumed >= next_report:
            progress(counts.consumed)
            next_report = counts.consumed + _PROGRESS_BYTES
    if progress is not None and counts.consumed:
        progress(counts.consumed)


def _with_companion(
    bodies: Iterator[dict[str, Any]], companion: Companion, events: ToolEventWriter
) -> Iterator[dict[str, Any]]:
    """``bodies`` unchanged; each JSON-object line is given to ``companion`` first and
    the tool-event records it returns are written to ``events``."""
    for body in bodies:
        payload = body.get("payload")
        if payload is not None:
            line = payload.value if isinstance(payload, strict_json.Canonical) else payload
            for record in companion.feed(line, body["line"]):
                events.write(record)
        yield body


def _release_unsealed(run: RunWriters, created: dict[ArtifactKind, bool]) -> None:
    """Release both writers unsealed. When neither holds a record, remove the files this
    ingest created (while their locks are held, so no other writer has them): the run
    id stays free. Otherwise both stay, for ``agc recover`` to seal."""
    writers = [w for w in (run.transcript, run.tool_events) if not w.closed]
    for writer in writers:
        with contextlib.suppress(AgcError):
            writer.flush()
    if all(w.bytes_written == 0 and w.next_seq == 0 for w in writers):
        for writer in writers:
            if created[writer.kind]:
                with contextlib.suppress(OSError):
                    os.unlink(writer.path)
    run.abort()


# ``{"seq":N,"ts":T`` opens every record the writer writes (stamp members first): the
# rest of the line is the record's body, byte for byte.
_STAMP: Final = re.compile(rb'\{"seq":([0-9]+),"ts":-?[0-9]+')


def _already_recorded(
    stream: BinaryIO,
    run_id: str,
    target: RunTarget,
    *,
    kind: ArtifactKind,
    algorithm: Algorithm,
    signing_key: SigningKey | None = None,
    companion: Callable[[], Companion] | None = None,
) -> IngestSummary | None:
    """The summary of the run the store holds when ``stream`` is its very input, else
    ``None`` (the stream may be consumed either way).

    The input is written through the same writer into a temporary store, so its
    records are exactly the bytes a new import would write; it is the run's input when
    the store's run verifies complete (with ``signing_key``: signed by that key), each
    artifact (as the check read it) holds those records, line for line, but for their
    ``ts`` (the time of writing), and each is sealed with ``algorithm``.

    Raises:
        as :func:`ingest_stream` for the input; StoreError when the store's run cannot
        be read.
    """
    with recorded_copies(target.store, run_id, _trusted(signing_key)) as copies:
        if copies is None:
            return None  # differs, or not signed by the key this import would sign with
        with tempfile.TemporaryDirectory(prefix="agc-reimport-") as scratch:
            again = ingest_stream(
                stream,
                run_id,
                kind=kind,
                store=scratch,
                algorithm=algorithm,
                companion=companion,
            )
            fresh = StoreLayout.at(scratch)
            for other in ARTIFACT_KINDS:
                if other not in copies or not _same_lines(
                    fresh.artifact_path(run_id, other), copies[other][1]()
                ):
                    return None
        seals = tuple(seal for seal, _ in copies.values())
    if any(seal.algorithm != algorithm for seal in seals):
        return None
    return replace(again, seals=seals, unchanged=True)


def _trusted(signing_key: SigningKey | None) -> dict[str, Any] | None:
    """The public key of ``signing_key`` as the one trusted key (``None``: no key)."""
    if signing_key is None:
        return None
    return {signing_key.key_id: signing_key.private_key.public_key()}


def _same_lines(fresh: Path, kept: Iterable[bytes]) -> bool:
    """Whether a record file and the lines of the store's copy hold the same records
    but for their ``ts`` (a file gone meanwhile holds none)."""
    try:
        with open_regular_file(fresh) as left:
            return _same_stamped(left, kept)
    except FileNotFoundError:
        return False


def _same_stamped(left: Iterable[bytes], right: Iterable[bytes]) -> bool:
    for ours, theirs in itertools.zip_longest(left, right):
        if ours is None or theirs is None:
            return False
        if _STAMP.sub(rb"{\1", ours, count=1) != _STAMP.sub(rb"{\1", theirs, count=1):
            return False
    return True
