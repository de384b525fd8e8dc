"""Client session files into runs: tool events and session facts filled on import.

Combines :mod:`agc.capture` (the pure parsers of the clients' session files) with the
evidence layer (:func:`agc.integrity.ingest_stream`): a Codex rollout, a ``codex exec
--json`` stream, a Claude Code session or a Gemini CLI chat recorded or imported as a
transcript gets one tool-events record per tool call and per result, and the run's
manifest ``attributes`` say what the session was (:class:`agc.capture.SessionFacts`).

Whole folders (``~/.codex/sessions``, ``~/.claude/projects``, ``~/.gemini/tmp``) are
imported incrementally (:func:`import_sessions`): each session file under the run id of
its session; a file that grew since becomes a new segment of its run when the sealed
records are exactly its first ones, and ``transcript-diverges`` when they are not. The
run of a session its hooks captured keeps their tool-events: only its transcript is
compared with the file (and continued).
"""

from __future__ import annotations

import io
import itertools
import os
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from agc._core.digest import DEFAULT_ALGORITHM, Algorithm
from agc._core.fs import describe_os_error, open_regular_file, read_at_most
from agc._core.json import loads as parse_json
from agc._core.store import (
    ARTIFACT_KINDS,
    StoreArg,
    StoreLayout,
    folder_store,
    manifest_path,
    open_store,
)
from agc.capture import CLIENTS, ClientName, SessionParser, run_id_for, session_folder
from agc.errors import AgcError, FileUnreadableError, InputError, InputMissingError
from agc.integrity import (
    Companion,
    RecoveryReport,
    SigningKey,
    extend_run,
    ingest_stream,
    iter_records,
    read_run_manifest,
    recover_run,
)

__all__ = [
    "SESSION_FOLDERS",
    "ExecRollout",
    "ImportOutcome",
    "SessionCompanion",
    "SessionFile",
    "codex_sessions_folder",
    "complete_lines",
    "identify_session",
    "import_recorded_session_file",
    "import_session_file",
    "import_sessions",
    "recover_session_run",
    "rollout_of_exec_run",
    "session_companion",
    "session_file_hint",
]


class SessionCompanion:
    """A :class:`agc.integrity.Companion` reading a client's session file as it is
    ingested: tool-event records (``source="session-file"``) and, at the end, the
    session's facts as manifest attributes (``None`` for a file of no known format)."""

    def __init__(self, session_id: str | None = None) -> None:
        self.parser = SessionParser(session_id=session_id)

    def feed(self, line: Mapping[str, Any], number: int) -> list[dict[str, Any]]:
        return [event.to_record() for event in self.parser.feed(line, number)]

    def attributes(self) -> dict[str, Any] | None:
        facts = self.parser.facts()
        return None if facts is None else facts.to_attributes()


def session_companion(session_id: str | None = None) -> Callable[[], Companion]:
    """What :func:`agc.integrity.ingest_stream` takes as ``companion`` to fill a session
    run's tool-events and attributes (a new :class:`SessionCompanion` per ingest)."""
    return lambda: SessionCompanion(session_id)


# -- whole folders -----------------------------------------------------------------

ImportStatus = Literal[
    "imported", "appended", "unchanged", "diverges", "unsealed", "skipped", "failed", "refused"
]

_SCAN_LINES: Final = 200
"""Lines read, at most, to find the session id a file gives (it is on the first line of
a rollout, an exec stream and a Gemini chat, and on nearly every Claude Code line)."""


@dataclass(frozen=True)
class SessionFile:
    """A client session file and the run it becomes.

    Attributes:
        client / session_id: what the file says. A Claude Code file whose name is not
            its ``sessionId`` (a subagent's sidechain file shares its parent's id) has
            the session id ``<sessionId>.<file stem>``, so that it gets its own run.
        run_id: :func:`agc.capture.run_id_for` of both.
    """

    client: ClientName
    session_id: str
    run_id: str


def identify_session(data: bytes, path: Path) -> SessionFile | None:
    """The session a file's bytes hold, ``None`` when it is no client session file."""
    client, session = _named_session(data)
    if client is None or session is None:
        return None
    return _session_file(client, session, path)


def _session_file(client: ClientName, session: str, path: Path) -> SessionFile:
    """The run of a file at ``path`` whose lines name ``client``'s ``session``: a Claude
    Code file not named ``<sessionId>.jsonl`` is a subagent's sidechain (Claude Code
    writes a subagent's lines, with its parent's ``sessionId``, to a file of another
    name), whose session id is ``<sessionId>.<file stem>``."""
    if client == "claude-code" and path.stem != session:
        session = f"{session}.{path.stem}"
    return SessionFile(client, session, run_id_for(client, session))


def _named_session(data: bytes) -> tuple[ClientName | None, str | None]:
    """``(client, session id)`` a session file's first lines name, each ``None`` when
    they name none."""
    parser = SessionParser()
    for raw in itertools.islice(data.splitlines(), _SCAN_LINES):
        try:
            parser.feed(parse_json(raw))
        except AgcError:
            continue
        if parser.named_session is not None:
            break
    return parser.client, parser.named_session


@dataclass(frozen=True)
class ImportOutcome:
    """What importing one session file did.

    Attributes:
        path: the file.
        status: ``imported`` (a new run), ``appended`` (a grown file: a new segment),
            ``unchanged``, ``diverges`` (the run's sealed records are not a prefix of
            the file's: the finding ``transcript-diverges``, nothing written),
            ``unsealed`` (the run is not sealed: ``agc recover`` first) or ``skipped``
            (not a client session file) or ``failed`` (an error, in ``error``: the
            other files are still imported) or, for ``agc recover`` only, ``refused``
            (the file its hooks' note names failed a check: ``error`` says which;
            nothing of it was read into the run).
        run_id: the run (``None`` when skipped).
        records / tool_events: transcript and tool-event records written.
        line: for ``diverges``, the first record that differs (1-based).
        error: for ``failed``, the error (its ``code``, ``message`` and ``exit_code``).
    """

    path: Path
    status: ImportStatus
    run_id: str | None = None
    records: int = 0
    tool_events: int = 0
    line: int | None = None
    error: AgcError | None = None

    @property
    def finding(self) -> str | None:
        """``transcript-diverges`` for a file changed where its run was sealed."""
        return "transcript-diverges" if self.status == "diverges" else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "status": self.status,
            "run_id": self.run_id,
            "records": self.records,
            "tool_events": self.tool_events,
            "line": self.line,
            "finding": self.finding,
            "error": None if self.error is None else self.error.to_dict(),
        }


def complete_lines(data: bytes) -> bytes:
    """``data`` up to its last ``\\n``: a line the client is still writing waits for
    the next import (sealed half-written, it would make the grown file diverge)."""
    return data[: data.rfind(b"\n") + 1]


def import_session_file(
    path: Path,
    *,
    store: StoreArg = None,
    algorithm: Algorithm = DEFAULT_ALGORITHM,
    signing_key: SigningKey | None = None,
) -> ImportOutcome:
    """Import one client session file under the run id of its session (see
    :class:`ImportOutcome`): a new run, a new segment of a grown file, or nothing. The
    session is the one its lines name, as :func:`identify_session` says (a run its hooks
    captured is the run of that session).

    Raises:
        FileUnreadableError: the file cannot be read.
        as :func:`agc.integrity.ingest_stream` and :func:`agc.integrity.extend_run`.
    """
    try:
        data = complete_lines(path.read_bytes())
    except OSError as exc:
        raise FileUnreadableError(f"{path} cannot be read: {describe_os_error(exc)}") from exc
    found = identify_session(data, path)
    if found is None:
        return ImportOutcome(path, "skipped")
    return _import_lines(path, data, found, store, algorithm, signing_key)


def _import_lines(
    path: Path,
    data: bytes,
    found: SessionFile,
    store: StoreArg,
    algorithm: Algorithm,
    signing_key: SigningKey | None,
) -> ImportOutcome:
    """:func:`import_session_file` of the complete lines ``data`` already read from
    ``path`` (never read again), into the run of ``found``.

    Raises:
        as :func:`agc.integrity.ingest_stream` and :func:`agc.integrity.extend_run`.
    """
    companion = session_companion(found.session_id)
    if _being_written(found.run_id, store):
        return ImportOutcome(path, "unsealed", found.run_id)
    if open_store(store).folder is None or not has_run(found.run_id, store):
        # In an object store a run is not continued: the same file again is
        # recognized (unchanged), a grown one is refused (run-exists).
        summary = ingest_stream(
            io.BytesIO(data),
            found.run_id,
            store=store,
            algorithm=algorithm,
            signing_key=signing_key,
            allow_empty=False,
            companion=companion,
        )
        if summary.unchanged:
            return ImportOutcome(path, "unchanged", found.run_id)
        events = sum(seal.records for seal in summary.seals if seal.kind == "tool-events")
        return ImportOutcome(path, "imported", found.run_id, summary.records, events)
    hooked = captured_by_hooks(found.run_id, store)
    extension = extend_run(
        io.BytesIO(data),
        found.run_id,
        store=store,
        algorithm=algorithm,
        signing_key=signing_key,
        companion=None if hooked else companion,
        kinds=("transcript",) if hooked else ("transcript", "tool-events"),
    )
    return ImportOutcome(
        path,
        extension.status,
        found.run_id,
        extension.added.get("transcript", 0),
        extension.added.get("tool-events", 0),
        extension.line,
    )


def recover_session_run(
    run_id: str, store: StoreArg = None, *, signing_key: SigningKey | None = None
) -> RecoveryReport:
    """:func:`agc.integrity.recover_run`, keeping what a session's run says of itself.

    A run recorded or imported from a client session file (``agc record`` of a
    ``codex exec --json`` stream, ``agc import`` of a rollout) gets its session's facts
    (:class:`agc.capture.SessionFacts`: client, session id, model …) as manifest
    ``attributes`` at its seal. Stopped before it, the run has none: they are read here
    from the records its transcript holds, as the recording would have read them, and
    stored by the recovery's seal. Nothing is read for a run that has attributes, whose
    transcript is sealed, that its hooks capture (its session's end sets them), or in a
    store written object by object.

    Raises:
        as :func:`agc.integrity.recover_run`.
    """
    return recover_run(
        run_id, store, signing_key=signing_key, attributes=_unsealed_session_facts(run_id, store)
    )


def _unsealed_session_facts(run_id: str, store: StoreArg) -> dict[str, Any] | None:
    """The session facts the unsealed transcript of a recorded or imported session's
    run gives (see :func:`recover_session_run`), ``None`` when none are to be set or
    they cannot be read (the recovery then reports what is wrong)."""
    try:
        folder = open_store(store).folder
        if folder is None or captured_by_hooks(run_id, store):
            return None
        manifest = read_run_manifest(run_id, folder)
        if manifest is not None and (
            manifest.attributes is not None or "transcript" in manifest.artifacts
        ):
            return None
        companion = SessionCompanion()
        for line, _ in iter_records(run_id, folder, kind="transcript"):
            record = parse_json(line)
            if isinstance(record, Mapping) and isinstance(record.get("payload"), Mapping):
                number = record.get("line")
                companion.feed(record["payload"], number if isinstance(number, int) else 0)
        return companion.attributes()
    except AgcError:
        return None


def _being_written(run_id: str, store: StoreArg) -> bool:
    """Whether a folder store holds files of a run that has no manifest yet: a run being
    written (a session its hooks are capturing) or left unsealed by a crash."""
    if open_store(store).folder is None or has_run(run_id, store):
        return False
    layout = StoreLayout.at(folder_store(store))
    return any(os.path.lexists(layout.artifact_path(run_id, k)) for k in ARTIFACT_KINDS)


def captured_by_hooks(run_id: str, store: StoreArg) -> bool:
    """Whether a run's tool-events are its client's hook records (its first record's
    ``source`` is ``hook``): its session file is then compared as its transcript only,
    the hooks keeping the tool-events."""
    try:
        for line, _ in iter_records(run_id, folder_store(store), kind="tool-events"):
            first = parse_json(line)
            return isinstance(first, Mapping) and first.get("source") == "hook"
    except AgcError:
        return False
    return False


def has_run(run_id: str, store: StoreArg) -> bool:
    """Whether the store holds a manifest for ``run_id`` (a folder or object store)."""
    return bool(open_store(store).exists(manifest_path(run_id)))


def session_files(folder: Path) -> list[Path]:
    """The ``*.jsonl`` regular files under ``folder`` (symlinks not followed), sorted."""
    return sorted(
        path for path in folder.rglob("*.jsonl") if path.is_file() and not path.is_symlink()
    )


def import_sessions(
    folders: Iterable[Path],
    *,
    store: StoreArg = None,
    algorithm: Algorithm = DEFAULT_ALGORITHM,
    signing_key: SigningKey | None = None,
    seen: dict[Path, tuple[int, int]] | None = None,
) -> list[ImportOutcome]:
    """:func:`import_session_file` for every session file under ``folders``.

    Args:
        seen: ``path -> (size, mtime_ns)`` of files already looked at, for a loop
            (``agc watch``): a file that did not change since is not read again (no
            outcome); updated in place.

    Raises:
        InputMissingError: a folder does not exist; InputError: it is a file.
    """
    outcomes: list[ImportOutcome] = []
    for folder in folders:
        if not folder.exists():
            raise InputMissingError(f"session folder {folder} does not exist")
        if not folder.is_dir():
            raise InputError(f"session folder {folder} is a file, not a folder")
        for path in session_files(folder):
            try:
                stat = path.stat()
            except OSError:
                continue  # removed meanwhile
            mark = (stat.st_size, stat.st_mtime_ns)
            if seen is not None and seen.get(path) == mark:
                continue
            try:
                outcome = import_session_file(
                    path, store=store, algorithm=algorithm, signing_key=signing_key
                )
            except AgcError as exc:  # this file only: e.g. its run is being written
                outcome = ImportOutcome(path, "failed", error=exc)
            if seen is not None and outcome.status != "failed":
                seen[path] = mark  # a failed file is tried again at the next look
            outcomes.append(outcome)
    return outcomes


# -- a `codex exec --json` run leads to its rollout -----------------------------------

_THREAD: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,99}")
_HEAD_BYTES: Final = 4 << 20


@dataclass(frozen=True)
class ExecRollout:
    """Where the history of a run recorded from ``codex exec --json`` is.

    Attributes:
        thread_id: the stream's thread id (the run's ``thread_id`` attribute).
        path: the rollout Codex wrote for that thread, under ``$CODEX_HOME/sessions``;
        run_id: else the run that captured that thread's session (its hooks, or an
            import of its rollout): ``codex-<thread id>``; both ``None`` when neither is
            there.
        looked_in: the sessions folder searched.
    """

    thread_id: str
    path: Path | None
    run_id: str | None
    looked_in: Path

    def describe(self) -> str:
        """Which history is used, for a person."""
        if self.path is not None:
            return f"the rollout {self.path}"
        return f"run {self.run_id}" if self.run_id else "nothing"


SESSION_FOLDERS: Final = (
    "Claude Code keeps them under ~/.claude/projects, Codex under ~/.codex/sessions, "
    "Gemini CLI under ~/.gemini/tmp"
)
"""Where each client keeps its session files, in words."""


_SESSION_FILE_OF: Final[Mapping[str, str]] = {
    "claude-code": "~/.claude/projects/*/{session}.jsonl",
    "codex": "~/.codex/sessions/*/*/*/rollout-*-{session}.jsonl",
    "gemini": "~/.gemini/tmp",
}
"""What ``agc import`` is given for a session's file, by client (a shell pattern naming
the one file where its name holds the session id; else the client's folder, whose new
files are all imported)."""


def session_file_hint(
    run_id: str,
    store: str | os.PathLike[str] | None = None,
    *,
    transcript_records: int,
    explain: bool = True,
) -> str | None:
    """What to do about a run its hooks captured whose transcript holds nothing
    (``transcript_records`` is 0): the hooks saw the session, but no turn's end sealed its
    session file into the run (the session was stopped before its first turn ended, or
    the file was gone). ``agc import`` of that file, once it is there, adds it to the run
    (an empty transcript is continued by the file's lines; the hooks keep their tool
    events). ``explain=False``: the command alone, for a caller that has said already
    that the transcript is empty and the run not complete. ``None`` for any other run.
    Never raises."""
    if transcript_records:
        return None
    from agc.flows._hook import (  # noqa: PLC0415 - an empty run only
        captured_session,
        recorded_session_file,
    )

    captured, session = captured_session(run_id, None, store)
    client = next((name for name in CLIENTS if name == captured), None)
    if client is None or session is None:
        return None
    named = recorded_session_file(run_id, store)
    if named is not None:  # store data: named only where the client keeps its files
        try:
            _session_folder_of(named, client, "the session file the note names")
        except AgcError:
            named = None
    where = (
        shlex.quote(str(named))
        if named is not None
        else _SESSION_FILE_OF[client].format(session=session)
    )
    words = f"agc import {where}"
    if store is not None:
        words += f" --store {shlex.quote(str(store))}"
    if not explain:
        return f"once {client} session {session}'s file is there, `{words}` adds it to the run"
    return (
        f"the transcript of run {run_id} is empty: its hooks saw {client} session "
        f"{session}, but no turn's end sealed the session file into it (the session was "
        "stopped before its first turn ended, or the file was gone), so the run is not "
        f"complete; once the file is there, `{words}` adds it to the run"
    )


def import_recorded_session_file(
    run_id: str, store: StoreArg = None, *, signing_key: SigningKey | None = None
) -> ImportOutcome | None:
    """Import into a run its hooks captured the session file they named
    (:func:`agc.flows.recorded_session_file`), as a turn's end would have sealed it: what
    ``agc recover`` does after sealing a run whose session was stopped before its seal.
    An empty transcript gets the file's lines; a transcript sealed at an earlier turn,
    the lines after it (a new segment); a file changed where it had been sealed adds
    nothing (``diverges``).

    The note is store data, so it is only a hint, checked on this machine
    (:func:`_read_noted_file`): a file that fails a check is ``refused`` (its ``error``
    says why) and nothing of it is read into the run.

    ``None`` when the store is not a folder, the run's tool events are not its hooks'
    records, its hooks named no file (or agc did not keep it: a run captured by an
    earlier release), or that file is not there; ``failed`` (with its error) when the
    import of the file failed. Never raises on the file or the store.
    """
    from agc.flows._hook import (  # noqa: PLC0415 - a recovery only
        captured_session,
        recorded_session_file,
    )

    folder = open_store(store).folder
    if folder is None or not captured_by_hooks(run_id, store):
        return None
    path = recorded_session_file(run_id, folder)
    captured, session = captured_session(run_id, None, folder)
    client = next((name for name in CLIENTS if name == captured), None)
    if path is None or client is None or session is None:
        return None
    try:
        data = _read_noted_file(path, client, session)
    except AgcError as exc:
        return ImportOutcome(path, "refused", run_id, error=exc)
    if data is None:
        return None
    found = _session_file(client, session, path)
    try:
        return _import_lines(path, data, found, store, DEFAULT_ALGORITHM, signing_key)
    except AgcError as exc:  # the recovery stands; what became of the file is said
        return ImportOutcome(path, "failed", run_id, error=exc)


def _session_folder_of(path: Path, client: ClientName, where: str) -> Path:
    """The folder of ``path``, every link resolved, when ``path`` is absolute and that
    folder is under ``client``'s session folder for this user
    (:func:`agc.capture.session_folder`, its links resolved too).

    Raises:
        InputError: it is not (the message starts with ``where``).
        UsageError: no home folder to find the client's session folder in.
    """
    folder = session_folder(client)
    if not path.is_absolute():
        raise InputError(f"{where} is no absolute path")
    parent = Path(os.path.realpath(path.parent))
    if not parent.is_relative_to(os.path.realpath(folder)):
        raise InputError(
            f"{where} is not under {folder}, where {client} keeps this user's session files"
        )
    return parent


_MAX_SESSION_FILE_BYTES: Final = 256 << 20
"""The largest session file ``agc recover`` reads from a note (bytes)."""


def _read_noted_file(path: Path, client: ClientName, session: str) -> bytes | None:
    """The complete lines of the session file a run's note names, read through one
    descriptor (never opened again by its path), when the file is this user's own
    session file of ``client``'s ``session``: an absolute path whose folder, every link
    resolved, is under the client's session folder for this user
    (:func:`agc.capture.session_folder`); the file itself no symlink and a regular file
    (opened without following a link, without waiting on a FIFO), owned by this user,
    at most :data:`_MAX_SESSION_FILE_BYTES`; its lines naming that session and the file
    that session's own, not a subagent's sidechain (:func:`identify_session`). ``None``
    when the file is not there.

    Raises:
        InputError: a check failed (the message names the file and the check).
        UsageError: no home folder to find the client's session folder in.
    """
    where = f"the session file {path} that the store's note names"
    parent = _session_folder_of(path, client, where)
    try:
        handle = open_regular_file(parent / path.name)
    except FileNotFoundError:
        return None
    except AgcError as exc:  # a symlink, a FIFO, a device, a folder
        raise InputError(f"{where} is not used: {exc.message}") from exc
    with handle:
        info = os.fstat(handle.fileno())
        if info.st_uid != os.geteuid():
            raise InputError(f"{where} is owned by another user (uid {info.st_uid}), not by you")
        data = b""
        if info.st_size <= _MAX_SESSION_FILE_BYTES:
            try:
                data = read_at_most(handle.fileno(), _MAX_SESSION_FILE_BYTES)
            except OSError as exc:
                raise InputError(f"{where} cannot be read: {describe_os_error(exc)}") from exc
        if info.st_size > _MAX_SESSION_FILE_BYTES or len(data) > _MAX_SESSION_FILE_BYTES:
            raise InputError(
                f"{where} is larger than the {_MAX_SESSION_FILE_BYTES >> 20} MiB agc recover "
                "reads; `agc import` it"
            )
    data = complete_lines(data)
    if _named_session(data) != (client, session):
        raise InputError(f"{where} holds no lines of {client} session {session}")
    if _session_file(client, session, path).session_id != session:
        raise InputError(f"{where} is a subagent's sidechain file, not the session's own file")
    return data


def codex_sessions_folder() -> Path:
    """``$CODEX_HOME/sessions``, else ``~/.codex/sessions`` (where Codex keeps rollouts)."""
    return session_folder("codex")


def rollout_of_exec_run(
    run_id: str, store: StoreArg = None, *, sessions: Path | None = None
) -> ExecRollout | None:
    """The rollout of the thread a run recorded from ``codex exec --json`` streamed.

    ``None`` when the run is no such run (its manifest has no ``thread_id`` attribute,
    or the store is an object store). Else the newest ``rollout-*-<thread id>.jsonl``
    under ``sessions`` (default :func:`codex_sessions_folder`) whose first line names
    that thread, else the run ``codex-<thread id>`` when the store holds it.

    Raises:
        as :func:`agc.integrity.read_run_manifest`.
    """
    folder_of_store = open_store(store).folder
    if folder_of_store is None:
        return None
    try:
        manifest = read_run_manifest(run_id, folder_of_store)
    except AgcError:
        return None  # a damaged manifest is the verifier's finding: resume checks the run
    attributes = manifest.attributes if manifest is not None else None
    thread = attributes.get("thread_id") if isinstance(attributes, Mapping) else None
    if not isinstance(thread, str) or _THREAD.fullmatch(thread) is None:
        return None
    folder = sessions if sessions is not None else codex_sessions_folder()
    found = sorted(folder.rglob(f"rollout-*{thread}.jsonl")) if folder.is_dir() else []
    for path in reversed(found):
        if _names_thread(path, thread):
            return ExecRollout(thread, path, None, folder)
    hooked = run_id_for("codex", thread)
    if hooked != run_id and has_run(hooked, store):
        return ExecRollout(thread, None, hooked, folder)
    return ExecRollout(thread, None, None, folder)


def _names_thread(path: Path, thread: str) -> bool:
    """Whether a rollout's first line (``session_meta``) names ``thread``."""
    try:
        with path.open("rb") as handle:
            head = handle.readline(_HEAD_BYTES)
    except OSError:
        return False
    found = identify_session(head, path)
    return found is not None and found.client == "codex" and found.session_id == thread
