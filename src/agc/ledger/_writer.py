"""Writing one turn: the per-turn file, its seals, and the ``agent.db`` summary.

:class:`TurnRecorder` records one attempt: ``start`` writes ``turn_start``,
``observe`` writes one ``item`` per completed item, ``finish`` writes ``turn_end``,
seals the attempt and appends the summary to ``agent.db``. It is fail-open (an audit
must never fail the agent's turn): no write failure ever raises out of
``start``/``observe``/``finish``; it sets ``auditWriteFailed`` and keeps the message in
:attr:`TurnOutcome.errors`. :func:`agc.ledger.record_turn` runs the whole loop over an
event stream.

Sealing an append-only file that gets a second attempt (docs/ledger.md, "Sealing"):

1. Opening the file for a new attempt hashes its existing bytes once. If a sidecar
   exists, that digest must equal the sidecar's (the previous sealed prefix is intact),
   else the attempt is refused and nothing is appended. A file without a sidecar (an
   attempt that died before sealing) is continued, and so is one whose sidecar seals
   the file up to a seal record followed by a ``turn_start`` (a later attempt died
   before its seal); ``check`` reports that attempt. The existing lines are read as
   ``check`` reads them (:mod:`agc.ledger._lines`): a line over 1 MiB is hashed in
   pieces and is no record, so memory does not grow with a line's length.
2. Each attempt ends with a ``direct.codex.seal`` record holding the digest, length
   and record count of every byte before it.
3. The sidecar is then replaced (atomically) by the digest of the whole file, so
   ``b3sum --check`` verifies the latest seal and each seal record verifies the prefix
   it closed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agc._core import json as strict_json
from agc._core.digest import (
    ALGORITHMS,
    DEFAULT_ALGORITHM,
    Algorithm,
    digests_equal,
    new_hasher,
)
from agc._core.fs import open_nofollow
from agc._core.jsonl import FileSeal, JsonlFileWriter, Prefix, SidecarSeal, unix_ms
from agc._core.redact import redact_value
from agc._core.report import SCHEMA_VERSION
from agc._core.sidecar import read_sidecar, sidecar_path
from agc.errors import (
    AgcError,
    JsonInvalidError,
    SidecarInvalidError,
    SidecarMismatchError,
    StoreError,
)
from agc.ledger._classify import Attempt, db_summary, derive_turn_end
from agc.ledger._contract import (
    MAX_ITEMS,
    RECORD_SEAL,
    RECORD_TURN_END,
    RECORD_TURN_START,
    TURNS_DIR_PARTS,
    turn_log_relpath,
    validate_client_turn_id,
)
from agc.ledger._db import AgentDb
from agc.ledger._events.decode import DecodeStats, EventDecoder
from agc.ledger._events.item import SKIPPED_ITEM_TYPES, CompletedItem
from agc.ledger._guard import guard_record
from agc.ledger._lines import iter_line_pieces
from agc.ledger._policy import LedgerPolicy, default_policy
from agc.ledger._project import Project
from agc.ledger._records import (
    RecordContext,
    item_record,
    items_truncated_record,
    seal_record,
    turn_start_record,
)
from agc.ledger._sanitize import SECRET_MARK, PathSanitizer

if TYPE_CHECKING:  # cryptography is imported only when a seal is signed
    from agc._core.signing import SigningKey

__all__ = ["TurnFileSeal", "TurnLedgerFile", "TurnOutcome", "TurnRecorder"]


class TurnFileSeal:
    """The seal policy of a turn file (steps 1 and 3 of the module docstring).

    An existing sealed file is continued only after its sealed prefix is verified
    against its sidecar, under the writer's lock; sealing replaces the sidecar. The
    algorithm of an existing sidecar wins over the one asked for.

    Args:
        path: the turn file.
        algorithm: digest algorithm for a file without a sidecar.

    Raises:
        SidecarMismatchError: the file has two sidecars.
    """

    def __init__(self, path: Path, algorithm: Algorithm) -> None:
        sidecars = [a for a in ALGORITHMS if os.path.lexists(sidecar_path(path, a))]
        if len(sidecars) > 1:
            raise SidecarMismatchError(f"{path} has two sidecars; not appended to")
        self.algorithm: Algorithm = sidecars[0] if sidecars else algorithm
        self.previous_sealed = bool(sidecars)
        self._sidecar = SidecarSeal(reseal=True)

    def describe(self, path: Path) -> str:
        return str(path)

    def before_open(self, path: Path) -> None:
        """A sealed turn file is continued after its prefix is verified (not refused)."""

    def adopt(self, fd: int, path: Path, algorithm: Algorithm) -> Prefix:
        prefix = self._sidecar.adopt(fd, path, algorithm)  # hashed once; torn tail refused
        if self.previous_sealed:
            self._verify_sealed_prefix(fd, path, prefix)
        return prefix

    def publish(self, seal: FileSeal) -> None:
        self._sidecar.publish(seal)

    def _verify_sealed_prefix(self, fd: int, path: Path, prefix: Prefix) -> None:
        algorithm = prefix.algorithm
        where = sidecar_path(path, algorithm)
        try:
            sidecar = read_sidecar(path, algorithm)
        except SidecarInvalidError as exc:
            raise SidecarMismatchError(
                f"{where} is not a valid sidecar ({exc.message}); not appended to"
            ) from exc
        if sidecar is None:
            raise SidecarMismatchError(f"{where} disappeared while opening; not appended to")
        if sidecar.file_name not in {None, path.name} or not (
            digests_equal(sidecar.digest, prefix.hasher.hexdigest())
            or _sealed_then_new_attempt(fd, sidecar.digest, algorithm)
        ):
            raise SidecarMismatchError(
                f"{path} does not match its sidecar: the sealed turn file changed; not appended to",
                hint="Run `agc ledger check` on the file to see what changed.",
            )


def _sealed_then_new_attempt(fd: int, digest: str, algorithm: Algorithm) -> bool:
    """True when ``digest`` (the sidecar's) is the file's digest up to the end of a
    seal record and the next line is a ``turn_start``: a later attempt died before
    its own seal, and nothing was changed or added inside a sealed attempt.

    Lines are read as ``agc ledger check`` reads them (:func:`iter_line_pieces`): one
    longer than :data:`~agc.ledger._lines.MAX_READ_LINE_BYTES` is hashed in pieces and
    is no record (not a seal, not a ``turn_start``), so memory does not grow with a
    line's length.

    Raises:
        OSError: reading failed.
    """
    hasher = new_hasher(algorithm)
    sealed = False
    with os.fdopen(os.dup(fd), "rb") as handle:
        handle.seek(0)
        for raw, whole, _ in iter_line_pieces(handle):
            record_type = _record_type(raw) if whole else None
            if sealed:
                return record_type == RECORD_TURN_START
            hasher.update(raw)
            sealed = record_type == RECORD_SEAL and digests_equal(digest, hasher.hexdigest())
    return False


class TurnLedgerFile(JsonlFileWriter):
    """The per-turn JSONL file, opened for one more attempt (see the module docstring).

    Records are written at once (no buffering) so that ``seq`` counts only records
    that reached the file. The seal policy is :class:`TurnFileSeal`.

    Args:
        path: the turn file.
        algorithm: digest algorithm for a new file; an existing sidecar's wins.
        signing_key: sign each seal record with this Ed25519 key (its ``signature``
            member, :mod:`agc._core.signing`); ``None`` writes unsigned seal records.

    Raises:
        SidecarMismatchError: the file changed since its last seal, or has two sidecars.
        TornTailError, RunLockedError, UnsafePathError, StoreError: as the base writer.
    """

    def __init__(
        self,
        path: Path,
        *,
        algorithm: Algorithm = DEFAULT_ALGORITHM,
        signing_key: SigningKey | None = None,
    ) -> None:
        policy = TurnFileSeal(path, algorithm)
        self._signing_key = signing_key
        super().__init__(
            path, algorithm=policy.algorithm, fsync="close", buffer_bytes=0, seal_policy=policy
        )
        self.previous_sealed = policy.previous_sealed

    def seal_attempt(self, *, client_turn_id: str, attempt: int, recorded_at_ms: int) -> FileSeal:
        """Write the attempt's seal record, then seal the whole file (sidecar).

        Raises:
            WriteFailedError, WriterClosedError, StoreError: the seal could not be written.
        """
        prefix = self.current_digest()
        record = seal_record(
            client_turn_id,
            attempt=attempt,
            algorithm=self.algorithm,
            prefix_digest=prefix,
            prefix_bytes=self.bytes_written,
            prefix_records=self.records_written,
            recorded_at_ms=recorded_at_ms,
        )
        if self._signing_key is not None:
            from agc._core.signing import sign_document  # noqa: PLC0415 - cryptography

            record = sign_document(record, self._signing_key)
        self.write(record)
        return self.finish()


@dataclass(frozen=True)
class TurnOutcome:
    """What :meth:`TurnRecorder.finish` did.

    Attributes:
        client_turn_id: the turn.
        turn_file: the per-turn file on this host.
        turn_log: its project-relative POSIX path (as in ``agent.db``).
        attempt: this attempt's number (1 for the first).
        item_count: items written; ``items_truncated``: the 256 limit was hit.
        completed: the turn's outcome as given to ``finish``.
        audit_write_failed: some ledger write failed (fail-open: the turn went on).
        db_written: the ``agent.db`` summary was appended.
        seal: the file's seal, when the attempt was sealed.
        summary: the ``direct.codex.turn`` record (as stored, when stored).
        errors: one message per failed write.
        input: the decoder's counts, when the turn was recorded from a stream
            (:func:`~agc.ledger.record_turn`).
    """

    client_turn_id: str
    turn_file: Path
    turn_log: str
    attempt: int
    item_count: int
    items_truncated: bool
    completed: bool
    audit_write_failed: bool
    db_written: bool
    seal: FileSeal | None
    summary: Mapping[str, Any]
    errors: tuple[str, ...] = ()
    input: DecodeStats | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "clientTurnId": self.client_turn_id,
            "turnLog": self.turn_log,
            "attempt": self.attempt,
            "itemCount": self.item_count,
            "itemsTruncated": self.items_truncated,
            "completed": self.completed,
            "auditWriteFailed": self.audit_write_failed,
            "dbWritten": self.db_written,
            "seal": None
            if self.seal is None
            else {
                "algorithm": self.seal.algorithm,
                "digest": self.seal.digest,
                "bytes": self.seal.bytes,
                "records": self.seal.records,
            },
            "errors": list(self.errors),
        }
        if self.input is not None:
            out["input"] = self.input.to_dict()
        return out


@dataclass
class _State:
    attempt: int = 0
    start: dict[str, Any] | None = None
    items: list[dict[str, Any]] = field(default_factory=list)
    truncated: bool = False
    truncated_written: bool = False
    failed: bool = False
    errors: list[str] = field(default_factory=list)


class TurnRecorder:
    """Records one attempt of one turn (see the module docstring). Use :meth:`start`."""

    def __init__(
        self,
        project: Project,
        client_turn_id: str,
        *,
        policy: LedgerPolicy,
        agent_roots: Sequence[str] = (),
        clock: Callable[[], int] = unix_ms,
        algorithm: Algorithm = DEFAULT_ALGORITHM,
        signing_key: SigningKey | None = None,
    ) -> None:
        self.project = project
        self._signing_key = signing_key
        self.client_turn_id = validate_client_turn_id(client_turn_id)
        self.policy = policy
        self.turn_file = project.turn_file(self.client_turn_id)
        self.turn_log = turn_log_relpath(self.client_turn_id)
        self._clock = clock
        self._algorithm = algorithm
        self._ctx = RecordContext(
            client_turn_id=self.client_turn_id,
            sanitizer=PathSanitizer([*project.host_roots, *agent_roots]),
            hash_file=project.hash_file,
            policy=policy,
        )
        self._state = _State()
        self._file: TurnLedgerFile | None = None
        self._finished: TurnOutcome | None = None
        self._notifications = EventDecoder("app-server")

    @classmethod
    def start(
        cls,
        project_root: str | os.PathLike[str],
        client_turn_id: str,
        *,
        prompt: str,
        attachments: Sequence[object] = (),
        policy: LedgerPolicy | None = None,
        agent_roots: Sequence[str] = (),
        clock: Callable[[], int] = unix_ms,
        algorithm: Algorithm = DEFAULT_ALGORITHM,
        signing_key: SigningKey | None = None,
        ledger_root: str | os.PathLike[str] | None = None,
    ) -> TurnRecorder:
        """Open the turn file for a new attempt and write ``turn_start``.

        Args:
            project_root: the project folder.
            client_turn_id: the client's turn id (6-160 of ``A-Z a-z 0-9 -``, the
                first a letter or digit; trimmed).
            prompt: the user's original text (not the text with the sidecar).
            attachments: the client's attachment objects (``name``, ``localPath``,
                ``mediaType``, ``size``, ``status``); the first 8 are kept.
            policy: the ledger policy (default: the ``generic`` preset).
            agent_roots: absolute paths the agent had as its project root, if other
                than ``project_root`` (auditing a run after the fact).
            signing_key: sign the attempt's seal record (Ed25519; ``None``: unsigned).
            ledger_root: where ``.agent/`` (the turn file, ``agent.db``) is written
                (default: ``project_root``); files are still hashed in the project.

        Raises:
            TurnIdInvalidError: the id breaks the rule (nothing is written).
            UsageError: an agent root is not an absolute path (nothing is written).
            StoreError: the project (or ledger) folder does not exist.
            (Write failures never raise: see :class:`TurnOutcome`.)
        """
        recorder = cls(
            Project(project_root, ledger_root=ledger_root),
            client_turn_id,
            policy=policy or default_policy(),
            agent_roots=agent_roots,
            clock=clock,
            algorithm=algorithm,
            signing_key=signing_key,
        )
        recorder._begin(prompt=prompt, attachments=attachments)
        return recorder

    # -- start, observe, finish ---------------------------------------------------------

    def _begin(self, *, prompt: str, attachments: Sequence[object]) -> None:
        state = self._state
        try:
            self.project.ensure_dirs(TURNS_DIR_PARTS)
            self._file = TurnLedgerFile(
                self.turn_file, algorithm=self._algorithm, signing_key=self._signing_key
            )
            state.attempt = _count_attempts(self.turn_file) + 1
        except (AgcError, OSError) as exc:
            self._fail("opening the turn file", exc)
            # The summary still names this attempt, not an earlier one.
            state.attempt = max(state.attempt, _count_attempts(self.turn_file) + 1)
        record = turn_start_record(
            self._ctx,
            prompt=prompt,
            attachments=attachments,
            attempt=state.attempt,
            recorded_at_ms=self._clock(),
        )
        written = self._append(record, "turn_start")
        if written is not None:
            state.start = written

    @property
    def saturated(self) -> bool:
        """True when no later item can change the ledger: the attempt is finished, or
        it holds :data:`MAX_ITEMS` items and its ``items_truncated`` marker is written
        (:meth:`observe` then only ignores items)."""
        return self._finished is not None or self._state.truncated_written

    def observe(self, item: CompletedItem) -> None:
        """Record one completed item (skipped types are ignored). Never raises."""
        state = self._state
        if self._finished is not None or item.item_type in SKIPPED_ITEM_TYPES:
            return
        if len(state.items) >= MAX_ITEMS:
            state.truncated = True
            if not state.truncated_written:
                marker = items_truncated_record(self._ctx, recorded_at_ms=self._clock())
                state.truncated_written = self._append(marker, "items_truncated") is not None
            return
        try:
            record = item_record(
                self._ctx, item, seq=len(state.items) + 1, recorded_at_ms=self._clock()
            )
        except Exception as exc:  # fail-open: a hostile item never fails the turn
            self._fail("building an item record", exc)
            return
        written = None if record is None else self._append(record, "item")
        if written is not None:
            state.items.append(written)

    def observe_notification(self, message: Mapping[str, Any]) -> None:
        """Record an app-server notification as a live client receives it:
        ``item/completed`` records its item; an ``item/started`` item that has not
        completed by :meth:`finish` is recorded then as ``incomplete``; other methods
        are ignored. Never raises."""
        for item in self._notifications.feed_message(message):
            self.observe(item)

    def finish(self, *, completed: bool, input_stats: DecodeStats | None = None) -> TurnOutcome:
        """Write ``turn_end``, seal the attempt and append the ``agent.db`` summary.

        Call it whether the turn succeeded or not. Never raises; calling it again
        returns the same outcome. ``input_stats`` is kept in :attr:`TurnOutcome.input`.
        """
        if self._finished is not None:
            return self._finished
        for item in self._notifications.finish():
            self.observe(item)
        state = self._state
        start = state.start or {"clientTurnId": self.client_turn_id, "attempt": state.attempt}
        attempt = Attempt(number=state.attempt, start=start, items=list(state.items))
        if state.truncated_written:
            attempt.truncated = {}
        derived = derive_turn_end(attempt, self.policy)
        derived["itemsTruncated"] = state.truncated
        turn_end = {
            "recordType": RECORD_TURN_END,
            "clientTurnId": self.client_turn_id,
            "attempt": state.attempt,
            "completed": completed,
            **derived,
            "recordedAtMs": self._clock(),
        }
        seal: FileSeal | None = None
        if state.start is not None and self._append(turn_end, "turn_end") is not None:
            seal = self._seal()
        elif self._file is not None:
            self._file.abort()
        summary = db_summary(
            turn_end=turn_end,
            start=start,
            turn_log=self.turn_log,
            audit_write_failed=state.failed,
        )
        db_written = False
        try:
            self.project.ensure_dirs(TURNS_DIR_PARTS[:1])
            summary = AgentDb(self.project.agent_db).append(
                guard_record(redact_value(summary, marker=SECRET_MARK), self._ctx.sanitizer),
                key=self.client_turn_id,
                updated_at_ms=self._clock(),
            )
            db_written = True
        except (AgcError, OSError) as exc:
            state.errors.append(f"writing the agent.db summary failed: {_message(exc)}")
        self._finished = TurnOutcome(
            client_turn_id=self.client_turn_id,
            turn_file=self.turn_file,
            turn_log=self.turn_log,
            attempt=state.attempt,
            item_count=len(state.items),
            items_truncated=state.truncated,
            completed=completed,
            audit_write_failed=state.failed,
            db_written=db_written,
            seal=seal,
            summary=summary,
            errors=tuple(state.errors),
            input=input_stats,
        )
        return self._finished

    # -- internals ----------------------------------------------------------------------

    def _append(self, record: Mapping[str, Any], what: str) -> dict[str, Any] | None:
        """Write ``record`` after the last look for host paths; the record as written,
        or ``None`` when the write failed (recorded as a failure)."""
        if self._file is None:
            if not self._state.failed:
                self._fail(f"writing {what}", StoreError("the turn file is not open"))
            return None
        # Last guards: every string through the one secret detector, then the host-path
        # rules `check` uses; the record kept for turn_end is the one written.
        scrubbed = redact_value(dict(record), marker=SECRET_MARK)
        guarded = guard_record(scrubbed, self._ctx.sanitizer)
        try:
            self._file.write(guarded)
        except (AgcError, OSError) as exc:
            self._fail(f"writing {what}", exc)
            return None
        return guarded

    def _seal(self) -> FileSeal | None:
        assert self._file is not None
        try:
            return self._file.seal_attempt(
                client_turn_id=self.client_turn_id,
                attempt=self._state.attempt,
                recorded_at_ms=self._clock(),
            )
        except (AgcError, OSError) as exc:
            self._fail("sealing the turn file", exc)
            self._file.abort()
            return None

    def _fail(self, what: str, exc: BaseException) -> None:
        self._state.failed = True
        self._state.errors.append(f"{what} failed: {_message(exc)}")


def _message(exc: BaseException) -> str:
    return exc.message if isinstance(exc, AgcError) else str(exc)


def _record_type(line: bytes) -> object:
    try:
        record = strict_json.loads(line)
    except JsonInvalidError:
        return None
    return record.get("recordType") if isinstance(record, dict) else None


def _count_attempts(path: Path) -> int:
    """How many ``turn_start`` records the file holds; 0 when it is missing, a symlink
    (never followed) or not a regular file (a FIFO is never waited on). A line longer
    than :data:`~agc.ledger._lines.MAX_READ_LINE_BYTES` is no record (read in pieces,
    never whole)."""
    count = 0
    try:
        fd = open_nofollow(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (AgcError, OSError):
        return 0
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return 0
        try:
            for raw, whole, _ in iter_line_pieces(handle):
                if whole and _record_type(raw) == RECORD_TURN_START:
                    count += 1
        except OSError:
            return count
    return count
