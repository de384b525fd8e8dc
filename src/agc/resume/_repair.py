"""Repair of broken tool-call histories, and ``resume_session``.

Removing only the message that holds ``pendingToolCallId`` and any result for it
drops the *whole* assistant message, orphaning the results of parallel calls
answered in it, and it leaves every other broken pair in place. Here the whole history
is repaired, for the provider's rules that :mod:`agc.resume._validate` checks:

* each call without a result (the pending one, a parallel sibling, one in the middle of
  the history) is **stripped** (``strip``, the default) or answered with an explicit
  "interrupted, may have executed" error result placed directly after it
  (``synthesize``). A call whose arguments are not valid JSON is always stripped;
* under ``strip`` the pending call is removed together with any partial result; under
  ``synthesize`` a recorded result for it is kept (reported as possibly partial);
* results that answer no call and second results for one call are dropped; a real
  result is moved next to its call when it is elsewhere, never replaced;
* a later call reusing an id is dropped (under ``synthesize`` too: providers refuse two
  calls with one id), with a key of its own (:func:`idempotency_key`); Anthropic text
  after ``tool_use`` is moved before it; a Responses ``reasoning`` item left without its
  following item is dropped; a message left empty is dropped.

Every change is reported (:class:`Change`), with the call's tool name, arguments and an
idempotency key derived from its call id, so the caller decides whether to run it again.
The repaired history is checked as its provider will read it (the written records read
back from memory, not by parsing the output again): a repair whose output breaks a
rule raises :class:`~agc.errors.RepairIncompleteError` instead of returning it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeAlias

from agc._core import json as strict_json
from agc._core.digest import new_hasher
from agc._core.report import JsonItems, Report
from agc._core.spill import SpilledItems
from agc.errors import JsonInvalidError, RepairIncompleteError, UsageError
from agc.resume._formats.claude_code import LinePlan
from agc.resume._formats.detect import _read_one, dump_history, get_spec, history_from_lines
from agc.resume._formats.model import (
    Block,
    FormatName,
    FormatSpec,
    History,
    Message,
    RawRef,
    Settled,
    SpilledLines,
    SpilledMap,
    arguments_are_json,
    resolve,
)
from agc.resume._formats.stream import (
    LineSequence,
    ScanStart,
    check_part,
    parse_line,
    part_tallies,
    scan_session,
    tail_start,
)
from agc.resume._formats.torn import describe_torn
from agc.resume._gc import collector_paused
from agc.resume._snapshot import ToolCallState, load_snapshot
from agc.resume._validate import (
    FINDING_CODES,
    HistoryFinding,
    HistoryFindingCode,
    HistoryReport,
    check_loaded,
    pending_warnings,
    torn_tail_finding,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from agc.resume._formats.gemini_chat import GeminiHistory

__all__ = [
    "ACTIONS",
    "STRATEGIES",
    "ByteSink",
    "Change",
    "RepairReport",
    "RepairResult",
    "ResumeResult",
    "RewindableSink",
    "Strategy",
    "ToolCallState",
    "idempotency_key",
    "repair_history",
    "repair_loaded",
    "repair_session",
    "repair_streamed",
    "resume_session",
    "session_identity",
]

Strategy = Literal["strip", "synthesize"]
STRATEGIES: Final[tuple[Strategy, ...]] = ("strip", "synthesize")

ACTIONS: Final[tuple[str, ...]] = (
    "stripped",
    "synthesized",
    "kept-partial-result",
    "dropped-partial-result",
    "dropped-orphan-result",
    "dropped-duplicate-result",
    "dropped-duplicate-call",
    "moved-result",
    "moved-text",
    "dropped-reasoning",
    "dropped-empty-message",
    "dropped-torn-line",
)
"""Every kind of change a repair makes (``Change.action``)."""

_IDEMPOTENCY_DOMAIN: Final = b"agc-idempotency-key-v2\x00"


def idempotency_key(call_id: str, *, session: str, occurrence: int = 1) -> str:
    """A stable key for re-running a call: ``idem-`` + 32 hex characters.

    It is BLAKE3 over ``agc-idempotency-key-v2\\0<session>\\0<call id>`` (agc's own
    digest machinery), where ``session`` is the session's identity
    (:func:`session_identity`), so the same call of the same session gets the same key
    however it is resumed (a session file, the run it was recorded into, a snapshot) and
    a tool that honours idempotency keys can refuse to run it twice.

    ``occurrence``: the call's number among the history's calls with this id, in
    history order (1 for the first). A later call that reuses an earlier call's id is
    another call: from the second on, ``\\0<occurrence>`` (decimal) is appended to the
    digested bytes, so it gets a key of its own; the first call's key is unchanged.

    Raises:
        ValueError: ``occurrence`` is below 1.
    """
    if occurrence < 1:
        raise ValueError(f"occurrence counts from 1, not {occurrence}")
    hasher = new_hasher("blake3")
    # surrogatepass: a lone surrogate in an id (valid JSON as an escape) still gets a key;
    # any other id is plain UTF-8, so its key is unchanged.
    hasher.update(
        _IDEMPOTENCY_DOMAIN
        + session.encode("utf-8", "surrogatepass")
        + b"\x00"
        + call_id.encode("utf-8", "surrogatepass")
        + (b"\x00" + str(occurrence).encode("ascii") if occurrence > 1 else b"")
    )
    return "idem-" + hasher.hexdigest()[:32]


def session_identity(history: History) -> str:
    """The session's identity in idempotency keys.

    The session id the client wrote in the file (Claude Code: the first ``sessionId``
    of its lines; Codex: the ``id`` of its ``session_meta`` line); else ``record:`` and
    the BLAKE3 hex digest of the first record: a session file's first line as written
    (UTF-8), a JSON array's first element as compact JSON (:func:`agc._core.json.dumps`).
    An empty history has the empty identity.
    """
    if history.session_id:
        return history.session_id
    if history.lines is not None and len(history.lines):
        first = history.lines[0].encode("utf-8", "surrogatepass")
    elif len(history.records):
        value = resolve(history.records[0])
        try:
            first = strict_json.dumps(value)
        except (TypeError, ValueError):  # what the rule cannot write: its text
            first = repr(value).encode("utf-8", "surrogatepass")
    else:
        return ""
    hasher = new_hasher("blake3")
    hasher.update(first)
    return "record:" + hasher.hexdigest()


@dataclass(frozen=True)
class Change:
    """One change the repair made.

    Attributes:
        action: one of :data:`ACTIONS`.
        message_index: index of the message (or item) in the *input* history's view.
        record: index of the input's native record, 0-based (for session files the line
            number minus one; the report's ``to_dict`` adds ``line``, 1-based).
        call_id: the call concerned, if any.
        tool_name: the call's tool name, if known.
        arguments: the call's arguments as stored (a JSON string or an object), with
            every secret the shared detector finds replaced (the report is printed and
            logged; the repaired history itself keeps what the input held).
        idempotency_key: :func:`idempotency_key` of the call id, for calls.
        reason: why, in one sentence.
    """

    action: str
    message_index: int
    record: int | None
    call_id: str | None
    tool_name: str | None
    arguments: Any
    idempotency_key: str | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "message_index": self.message_index,
            "record": self.record,
            "call_id": self.call_id,
            "tool_name": self.tool_name,
            "arguments": self.arguments,
            "idempotency_key": self.idempotency_key,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class RepairReport(Report[HistoryFindingCode]):
    """What was wrong and what changed.

    Its findings are those of the repaired history (``after``), so its verdict
    :attr:`valid` says whether the provider accepts the output; ``before`` holds what was
    wrong with the input and :attr:`changed` whether anything was changed.

    Attributes:
        format: the history's format.
        strategy: ``strip`` or ``synthesize``.
        tool_call_state: the snapshot's state the repair was given; ``None`` when there
            was none (a session file or a JSON array: nothing says what was in flight,
            :attr:`was_interrupted` says what the history shows).
        before: :func:`~agc.resume._validate.check_history` of the input.
        after: the same check of the repaired history (always valid).
        changes: every change, in history order; with ``change_counts``, only the
            first ones (the first of each action among them). A tuple, or for a report
            that keeps every change of a long session repaired in parts a read-only
            :class:`~agc._core.spill.SpilledItems` (most of them in a temporary file).
        was_interrupted: the snapshot said a call was in flight, or the history holds a
            call without a result (a crash can come before ``inFlight`` is saved).
        notices: what the repair noticed but could not act on, one sentence each (a
            ``pendingToolCallId`` that matches no call of the history).
        change_counts: ``None`` when ``changes`` holds every change; else how many
            changes of each action the repair made (a long session repaired in parts:
            :func:`repair_session`).
    """

    CODES = frozenset(FINDING_CODES)

    format: FormatName
    strategy: Strategy
    tool_call_state: ToolCallState | None
    before: HistoryReport
    after: HistoryReport
    changes: Sequence[Change]
    was_interrupted: bool
    notices: tuple[str, ...] = ()
    change_counts: Mapping[str, int] | None = None

    @property
    def change_total(self) -> int:
        """How many changes the repair made (``changes`` may hold only the first)."""
        if self.change_counts is None:
            return len(self.changes)
        return sum(self.change_counts.values())

    def action_counts(self) -> dict[str, int]:
        """How many changes of each action the repair made."""
        if self.change_counts is not None:
            return dict(self.change_counts)
        counts: dict[str, int] = {}
        for change in self.changes:
            counts[change.action] = counts.get(change.action, 0) + 1
        return counts

    @property
    def findings(self) -> Sequence[HistoryFinding]:
        """The rules the repaired history still breaks (none in a returned report)."""
        return self.after.findings

    @property
    def valid(self) -> bool:
        """True when the repaired history breaks no rule."""
        return not self.errors

    @property
    def changed(self) -> bool:
        """True when the repair changed anything."""
        return bool(self.changes)

    def ids(self, action: str) -> list[str]:
        """Call ids of the changes with ``action``, in order."""
        return [c.call_id for c in self.changes if c.action == action and c.call_id is not None]

    def _members(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "strategy": self.strategy,
            "tool_call_state": (
                self.tool_call_state.to_dict() if self.tool_call_state is not None else None
            ),
            "was_interrupted": self.was_interrupted,
            "changed": self.changed,
            "before": self.before.to_streamed(),
            "after": self.after.to_streamed(),
            "changes": JsonItems(
                self.changes,
                self.change_dict,
                escapes=self.changes.marked if isinstance(self.changes, SpilledItems) else None,
            ),
            "warnings": list(self.notices),
        }

    def change_dict(self, change: Change) -> dict[str, Any]:
        """A change as the report's JSON lists it: :meth:`Change.to_dict`, with ``line``
        (1-based) beside ``record`` for a session file."""
        return _with_line(change.to_dict(), change.record, self.format)


class RepairResult:
    """Output of :func:`repair_history`.

    Attributes:
        messages: the repaired history's native records (messages or items; for session
            files, the lines' text). For a long JSON array read from a file they are
            parsed from the output's records on first access (a list of its own then).
        data: the repaired history as file bytes (JSON array, or JSONL).
        report: the :class:`RepairReport`.
    """

    __slots__ = ("_messages", "_native", "data", "report")

    def __init__(self, messages: list[Any], data: bytes, report: RepairReport) -> None:
        self._native = messages
        self._messages: list[Any] | None = None
        self.data = data
        self.report = report

    @property
    def messages(self) -> list[Any]:
        if self._messages is None:
            native = self._native
            lazy = any(type(record) is RawRef for record in native)
            self._messages = [resolve(record) for record in native] if lazy else native
        return self._messages

    def __repr__(self) -> str:
        return f"RepairResult({len(self._native)} records, {len(self.data)} bytes)"


@dataclass(frozen=True)
class ResumeResult:
    """Output of :func:`resume_session`.

    Attributes:
        context: the snapshot's agent config with ``apiKey`` and ``baseUrl`` set to
            ``""``: the caller injects credentials again.
        messages: the repaired messages.
        was_interrupted: see :attr:`RepairReport.was_interrupted`.
        report: every change made.
    """

    context: dict[str, Any]
    messages: list[Any]
    was_interrupted: bool
    report: RepairReport


@collector_paused
def repair_history(
    messages: Sequence[Any],
    format: FormatName,
    *,
    strategy: Strategy = "strip",
    tool_call_state: ToolCallState | None = None,
    session_id: str | None = None,
) -> RepairResult:
    """Repair a history so its provider accepts it (pure).

    Args:
        messages: the messages/items (or, for session files, the parsed lines).
        format: the format name.
        strategy: ``strip`` (default) or ``synthesize``.
        tool_call_state: the snapshot's ``{inFlight, pendingToolCallId}``, if known.
        session_id: the session's identity in idempotency keys (a snapshot's
            ``sessionId``); default: :func:`session_identity` of the history.

    Raises:
        UsageError: an unknown strategy.
        HistoryFormatError: the messages do not fit the format.
        RepairIncompleteError: the repaired history would still be rejected (a bug).
    """
    history = get_spec(format).read(messages)
    return repair_loaded(
        history, strategy=strategy, tool_call_state=tool_call_state, session_id=session_id
    )


@collector_paused
def repair_loaded(
    history: History,
    *,
    strategy: Strategy = "strip",
    tool_call_state: ToolCallState | None = None,
    session_id: str | None = None,
) -> RepairResult:
    """:func:`repair_history` on a history already read (keeps session lines' text)."""
    repair = _repaired(history, strategy, tool_call_state, session_id)
    spec = get_spec(history.format)
    whole, repaired, changes = repair.whole, repair.messages, repair.changes
    native = spec.write(whole, repaired) if repair.rewritten else _unchanged(whole)
    data = dump_history(whole, native)
    # The output is checked as the provider reads it, without parsing it again: the
    # repaired records are read back from memory (see _written_history; a test reads
    # the bytes back and compares).
    after = check_loaded(_written_history(whole, repaired if changes else whole.messages, native))
    return RepairResult(native, data, repair.report(after))


class ByteSink(Protocol):
    """Where :func:`repair_streamed` writes: a binary file, or a wrapper of one."""

    def write(self, data: bytes, /) -> int: ...

    def flush(self) -> None: ...


@collector_paused
def repair_streamed(
    history: History,
    sink: ByteSink,
    read_back: Callable[[], History],
    *,
    strategy: Strategy = "strip",
    tool_call_state: ToolCallState | None = None,
    session_id: str | None = None,
    read_tail: Callable[[ScanStart], History] | None = None,
) -> RepairReport:
    """:func:`repair_loaded` of a session file, written to ``sink`` line by line.

    The repaired lines are written as they are made (the input's lines read from its
    file again when written: see :mod:`agc.resume._formats.stream`), never held; the
    output is then checked as the provider reads it: ``read_back()`` reads what was
    written (flushed first) and that history is checked. ``history`` is consumed: its
    ``messages`` are emptied once the output is written (so that the input's view and the
    output's are never held together).

    ``read_tail(start)``, when given, reads the output from a line on instead
    (:func:`~agc.resume._formats.stream.scan_tail`): used when ``history`` was read
    with ``settle`` and the output's lines up to the first message it still held are
    copies of the input's, so the messages before are those the input's read let go of
    (they broke no rule) and only the rest is read and checked again.

    Raises:
        UsageError, RepairIncompleteError: as :func:`repair_loaded` (the output written
            so far is the caller's to discard).
        OSError: ``sink`` cannot be written.
    """
    repair = _repaired(history, strategy, tool_call_state, session_id)
    spec = get_spec(history.format)
    whole = repair.whole
    write_lines = spec.write_lines
    if write_lines is None or whole.lines is None:
        raise UsageError(f"{history.format} is not a session file: it is written whole")
    lines: Iterable[str | int | range] = (
        write_lines(whole, repair.messages) if repair.rewritten else range(len(whole.lines))
    )
    same = _write_lines(lines, whole.lines, sink)
    start = tail_start(history, same) if read_tail is not None else None
    # The view is consumed: released before the output's own view is read back, so the
    # two are never held together.
    repair.messages.clear()
    whole.messages.clear()
    history.messages.clear()
    if start is not None and read_tail is not None:
        return repair.report(check_loaded(read_tail(start)))
    return repair.report(check_loaded(read_back()))


def _write_lines(
    lines: Iterable[str | int | range],
    source: Sequence[str],
    sink: ByteSink,
    each: Callable[[str | int | range], object] | None = None,
) -> int:
    """Write each line (a text, or the index of a line of ``source`` written as it is,
    or a range of them) and a line break to ``sink``, a MiB or so at a time; a run of
    consecutive lines of a streamed file is copied from the file's bytes. ``each`` is
    given every item first. Returns how many lines the output starts with that are the
    first lines of ``source``."""
    buffer: list[bytes] = []
    size = 0
    first = stop = 0  # the run of source lines not written yet
    same = 0
    diverged = False

    def put(data: bytes) -> None:
        nonlocal buffer, size
        buffer.append(data)
        size += len(data)
        if size >= _FLUSH_BYTES:
            sink.write(b"".join(buffer))
            buffer, size = [], 0

    def flush() -> None:
        nonlocal first, stop
        if first < stop:
            if isinstance(source, LineSequence):
                source.copy(first, stop, put)
            else:
                for index in range(first, stop):
                    put(source[index].encode("utf-8") + b"\n")
            first = stop = 0

    for line in lines:
        if each is not None:
            each(line)
        if isinstance(line, range):  # lines line.start to line.stop - 1, as they are
            assert line.step == 1  # a run of lines
            if not line:
                continue
            if not diverged:
                if line.start == same:
                    same = line.stop
                else:
                    diverged = True
            if line.start == stop and first < stop:
                stop = line.stop
                continue
            if first < stop:
                flush()
            first, stop = line.start, line.stop
            continue
        if not diverged:
            if line == same and isinstance(line, int):
                same += 1
            else:
                diverged = True
        if isinstance(line, int):
            if line == stop and first < stop:
                stop += 1
                continue
            if first < stop:
                flush()
            first, stop = line, line + 1
            continue
        if first < stop:
            flush()
        put(line.encode("utf-8") + b"\n")
    flush()
    sink.write(b"".join(buffer))
    sink.flush()
    return same


_FLUSH_BYTES: Final = 1 << 20
_NEXT_MESSAGE: Final = frozenset({"anthropic", "gemini"})
"""Families whose results answer the calls of the message before (Messages, Gemini)."""


@dataclass
class _Repair:
    """A repair before its output is checked: the parts :func:`repair_loaded` and
    :func:`repair_streamed` share."""

    history: History
    whole: History
    strategy: Strategy
    tool_call_state: ToolCallState | None
    state: ToolCallState
    before: HistoryReport
    messages: list[Message]
    changes: list[Change] | SpilledItems[Change]  # spilled: a Codex rollout's runs'
    rewritten: bool  # the repair changed the history (a torn line alone does not)
    warnings: tuple[str, ...]

    def report(self, after: HistoryReport, earlier: _ChangeTally | None = None) -> RepairReport:
        """The report, given the check of the output; ``earlier``: the changes of the
        parts repaired before (:func:`repair_session`), which come first.

        Raises:
            RepairIncompleteError: the output still breaks a rule.
        """
        history, changes = self.history, self.changes
        interrupted = self.state.in_flight or any(_interrupting(c) for c in changes)
        counts: Mapping[str, int] | None = None
        held: Sequence[Change]
        if isinstance(changes, SpilledItems):
            changes.freeze()
            held = changes
        else:
            held = tuple(changes)
        if earlier is not None:
            interrupted = interrupted or earlier.interrupted
            earlier.extend(changes)
            held, counts = earlier.held(), earlier.counts_if_cut()
        report = RepairReport(
            history.format,
            self.strategy,
            self.tool_call_state,
            self.before,
            after,
            held,
            interrupted,
            self.warnings,
            counts,
        )
        if not after.valid:
            codes = ", ".join(sorted({finding.code for finding in after.findings}))
            raise RepairIncompleteError(
                f"the repaired {history.format} history still breaks: {codes}", report=report
            )
        return report


def _interrupting(change: Change) -> bool:
    """Whether a change says a call was interrupted (see ``was_interrupted``)."""
    return _interrupting_action(change.action, change.idempotency_key is not None)


def _interrupting_action(action: str, keyed: bool) -> bool:
    """:func:`_interrupting` of a change of ``action``, with an idempotency key or not."""
    return action in {"stripped", "synthesized", "kept-partial-result"} or (
        action == "dropped-torn-line" and keyed
    )


def _change_escapes(change: Change) -> bool:
    """Whether the change's JSON holds a lone surrogate (a call id, a tool name or
    arguments read from the file as they were)."""
    texts = (change.call_id, change.tool_name, change.reason, change.idempotency_key)
    if any(
        text is not None and not text.isascii() and strict_json.has_lone_surrogate(text)
        for text in texts
    ):
        return True
    arguments = change.arguments
    if arguments is None or (isinstance(arguments, str) and arguments.isascii()):
        return False
    return strict_json.has_lone_surrogate(arguments)


class _ChangeTally:
    """Changes gathered part by part: counts per action and the first ``keep`` (and the
    first of each action; ``None``: every one, held in a
    :class:`~agc._core.spill.SpilledItems` whose memory is bounded), as
    :class:`~agc.resume._validate.FindingTally` holds findings.

    Raises:
        FileWriteError: (as changes are added) the temporary file of the changes cannot
            be written (disk full …).
    """

    __slots__ = ("_actions", "counts", "examples", "interrupted", "keep")

    def __init__(self, keep: int | None) -> None:
        self.keep = keep
        self.counts: dict[str, int] = {}
        self.examples: list[Change] | SpilledItems[Change] = (
            [] if keep is not None else SpilledItems(what="changes", mark=_change_escapes)
        )
        self.interrupted = False
        self._actions: set[str] = set()

    def extend(self, changes: Iterable[Change]) -> None:
        keep = self.keep
        for change in changes:
            action = change.action
            self.counts[action] = self.counts.get(action, 0) + 1
            self.interrupted = self.interrupted or _interrupting(change)
            if keep is None or len(self.examples) < keep or action not in self._actions:
                self.examples.append(change)
                self._actions.add(action)

    def extend_noted(self, noted: Iterable[_Noted], make: Callable[[_Noted], Change]) -> None:
        """:meth:`extend` with the changes as noted, each made (``make``) only when it is
        held."""
        keep, counts, examples, actions = self.keep, self.counts, self.examples, self._actions
        for item in noted:
            action, call = item[2], item[4]
            counts[action] = counts.get(action, 0) + 1
            # _interrupting, from what is noted: a change has a key when its call has an id.
            self.interrupted = self.interrupted or _interrupting_action(
                action, call is not None and bool(call.call_id)
            )
            if keep is None or len(examples) < keep or action not in actions:
                examples.append(make(item))
                actions.add(action)

    def held(self) -> Sequence[Change]:
        """The changes held, for the report: a tuple, or the
        :class:`~agc._core.spill.SpilledItems` (frozen) of every change."""
        if isinstance(self.examples, SpilledItems):
            self.examples.freeze()
            return self.examples
        return tuple(self.examples)

    def counts_if_cut(self) -> dict[str, int] | None:
        """The counts when some changes were let go of, else ``None``."""
        return None if len(self.examples) == sum(self.counts.values()) else dict(self.counts)


class RewindableSink(ByteSink, Protocol):
    """A :class:`ByteSink` that can be emptied to be written again from its start."""

    def seek(self, offset: int, whence: int = 0, /) -> int: ...

    def truncate(self, size: int | None = None, /) -> int: ...


class _PartRepair:
    """Repairs each part of a Gemini CLI session read in parts and writes it to
    ``sink`` (:class:`~agc.resume._formats.stream.Parts`), checking what it writes as
    it writes it: each line written is replayed as the client reads it
    (:class:`~agc.resume._formats.gemini_chat.Replay`), and the part's view checked
    (``output``: the output's parts so far; ``reread``: one broke a rule, or the
    parts' views are not the output's: the output is then read again whole)."""

    def __init__(
        self,
        sink: RewindableSink,
        strategy: Strategy,
        state: ToolCallState,
        session_id: str | None,
        keep: int | None,
    ) -> None:
        self.sink = sink
        self.strategy = strategy
        self.state = state
        self.session_id = session_id
        self.keep = keep
        self.changes = _ChangeTally(keep)
        self.session: str | None = None
        self.written = False
        self.output = part_tallies()
        self.lines = 0  # the output's lines written
        self.reread = False
        self.role: str | None = None  # the role of the output's last message so far

    def restart(self) -> None:
        self.sink.seek(0)
        self.sink.truncate()
        self.changes = _ChangeTally(self.keep)
        self.session = None
        self.written = False
        self.output = part_tallies()
        self.lines = 0
        self.reread = False
        self.role = None

    def write(self, history: GeminiHistory, lines: Iterable[str | int | range]) -> GeminiHistory:
        """Write a part's output ``lines`` (as :func:`_write_lines`); returns the view
        they replay to (numbered after the output's parts before)."""
        from agc.resume._formats.gemini_chat import Replay  # noqa: PLC0415 - loaded

        assert history.lines is not None  # a session file's
        replay = Replay(history, self.lines, parse_line)
        _write_lines(lines, history.lines, self.sink, replay.feed)
        self.lines = replay.line
        written = replay.history(self.output.messages)
        messages = written.messages
        if messages:
            # The parts' views are the output's when no turn of one role spans a cut
            # (a repair that removes the model turn after a cut joins the user turns on
            # both sides of it) and no new record names a message of another part.
            if messages[0].role == self.role or not replay.apart:
                self.reread = True
            self.role = messages[-1].role
        elif not replay.apart:
            self.reread = True
        return written

    def part(self, history: History) -> None:
        spec = get_spec(history.format)
        from agc.resume._formats.gemini_chat import GeminiHistory  # noqa: PLC0415 - loaded

        assert isinstance(history, GeminiHistory)  # only Gemini CLI sessions are read in parts
        assert history.lines is not None  # a session file's
        if self.session is None:  # the session's identity is told before the first part
            self.session = self.session_id or session_identity(history)
        repairer = _Repairer(
            history.messages, spec, self.strategy, self.state, self.session, history.settled
        )
        repaired, noted = repairer.run_noted()
        write_lines = spec.write_lines
        assert write_lines is not None  # a session file's
        lines: Iterable[str | int | range] = (
            write_lines(history, repaired)
            if noted
            else range(history.first_line, len(history.lines))
        )
        written = self.write(history, lines)
        if not check_part(written, self.output):
            self.reread = True
        # Made while the part's lines can still be read (a call's arguments).
        self.changes.extend_noted(noted, repairer.change)
        self.written = True


def _ends_in_reasoning(view: list[Message], format: FormatName) -> bool:
    """A Codex run whose last item is reasoning: what follows it is in the next run."""
    return format == "codex-rollout" and bool(view) and view[-1].blocks[0].kind == "reasoning"


_HAZARDS: Final = frozenset({"stripped", "synthesized"})
"""Changes whose call id, met again after their run, may be paired otherwise by the
whole history's repair (a call answered late): the read then falls back
(:class:`_Planner`); so does a result dropped as answering no call (recorded before a
call that may come later)."""


class _CallCounts:
    """How many calls each id had in the runs a :class:`_Planner` repaired, for the ids
    used more than once (an id used once is only in ``Settled.call_ids``), in a
    :class:`~agc.resume._formats.model.SpilledMap` (spilled to disk past
    :data:`~agc.resume._formats.model.SPILL_AT` ids), so memory stays bounded however
    many ids are used again."""

    __slots__ = ("_counts",)

    def __init__(self) -> None:
        self._counts = SpilledMap()

    def get(self, call_id: str) -> int:
        """The calls with ``call_id`` so far; 1 when it was never set."""
        count: int = self._counts.get(call_id, 1)
        return count

    def set(self, call_id: str, count: int) -> None:
        """Note that ``call_id`` had ``count`` calls so far (2 or more)."""
        self._counts[call_id] = count

    def close(self) -> None:
        self._counts.close()


class _Planner:
    """Decides the repair of a Codex rollout run by run as a check reads it
    (:class:`~agc.resume._formats.stream.Plan`): each run of messages let go of is
    repaired as the whole history's repair repairs it (after the runs before, through
    their call ids and the count of calls of each id used again: :class:`_CallCounts`)
    and only what the writer needs is kept: the lines dropped (spilled to a file past a
    bound), the new items after a line, and the changes. Reasoning items at the end of
    a run whose following item is in a later run are decided with that run (the
    messages from the first of them on are repaired again with it). A run that names
    a call id of an earlier run's call left unanswered, or of a result that answered no
    call (:data:`_HAZARDS`), is refused: the whole repair could pair it otherwise."""

    def __init__(self, strategy: Strategy, state: ToolCallState, session_id: str | None) -> None:
        self.strategy = strategy
        self.state = state
        self.session_id = session_id
        self.counts = _CallCounts()
        self.lines = LinePlan()
        self.restart()

    def restart(self) -> None:
        self.dropped = SpilledLines()  # a Codex rollout's
        self.inserted: dict[int, list[Message]] = {}
        self.anchor: int | None = None
        self.lines.close()
        self.lines = LinePlan()  # a Claude Code session's
        # Every change (the report's: a tally, as a Gemini CLI repair in parts keeps them).
        self.changes = _ChangeTally(None)
        self.hazards: set[str] = set()
        self.parts = 0
        self.read_session: str | None = None  # the reader's session id at the first run
        self.session = ""
        self.counts.close()
        self.counts = _CallCounts()
        self.tail: list[Message] = []  # the last run's messages left undecided

    def part(
        self,
        messages: list[Message],
        settled: Settled,
        session_id: str | None,
        format: FormatName,
        records: Sequence[Any] = (),
        *,
        last: bool = False,
        clean: bool = False,
    ) -> None:
        """Decide the repair of a run of a history of ``format`` (``codex-rollout`` or
        ``claude-code``; ``records``: its parsed lines so far, read for the lines a
        Claude Code repair drops; ``last``: the history's last run, nothing after it;
        ``clean``: its check after the runs before found nothing, so its repair keeps
        it as it is, unless reasoning items end it, which the run after decides).

        Raises:
            ReachBackError: the run's repair may not be the whole one's.
        """
        from agc.resume._formats import claude_code, codex_rollout  # noqa: PLC0415 - loaded
        from agc.resume._formats.stream import ReachBackError  # noqa: PLC0415 - loaded

        self.refuse_reach_back(messages)
        if not self.parts:
            self.read_session = session_id
            given = self.session_id
            self.session = given if given is not None else (session_id or "")
        spec = get_spec(format)
        tail = self.tail
        view = [*tail, *messages] if tail else messages
        # The tail's messages were counted in ``settled``: the view is numbered from
        # the first of them, after the runs decided before.
        before = Settled(settled.messages - len(tail), call_ids=settled.call_ids)
        repairer = _Repairer(
            view,
            spec,
            self.strategy,
            self.state,
            self.session,
            before,
            prior_counts=self.counts,
            open_end=not last,
        )
        if clean and not tail and not _ends_in_reasoning(view, format):
            # A run that breaks no rule is its own repair (the repair of a valid
            # history changes nothing): the repair's own pass is not needed.
            repaired, noted = view, list[_Noted]()
            decided = len(view)
        else:
            repaired, noted = repairer.run_noted()
            decided = len(view) if repairer.open_from is None else repairer.open_from
        if decided < len(view) and any(
            id(call) not in repairer.dropped_calls
            for message in view[decided:]
            for call in message.calls()
        ):
            # A first call of its id left undecided: the runs' ids already hold it.
            raise ReachBackError
        noted = [item for item in noted if item[0] < decided]
        if noted and self.session_id is None and self.read_session is None:
            raise ReachBackError  # the identity is the first line's: from the whole read
        if format == "codex-rollout":
            dropped, inserted, self.anchor = codex_rollout.plan_lines(
                view[:decided], repaired, self.anchor
            )
            self.dropped.extend(dropped)
            for line, items in inserted.items():
                self.inserted.setdefault(line, []).extend(items)
        else:
            claude_code.plan_lines(view, repaired, records, self.lines)
            self._note_unnumbered(view)
        self.changes.extend_noted(noted, repairer.change)
        for item in noted:
            action, call, key_of = item[2], item[4], item[5]
            if call is None or call.call_id is None:
                continue
            if action in _HAZARDS or (action == "dropped-orphan-result" and key_of is None):
                self.hazards.add(call.call_id)
        occurrence = repairer.occurrence
        for message in view[:decided]:
            for call in message.calls():
                number = occurrence.get(id(call))
                if number is not None and call.call_id is not None:
                    self.counts.set(call.call_id, number)
        self.tail = view[decided:]
        self.parts += 1

    def _note_unnumbered(self, view: list[Message]) -> None:
        """Claude Code: the ids whose calls the counts do not number as the whole
        repair does (a ``tool_use`` outside an assistant message, not a call of the
        history but numbered among its id's calls; an id used twice in one message,
        whose later use is in the first's message) are hazards."""
        for message in view:
            seen: set[str] = set()
            for call in message.calls():
                call_id = call.call_id
                if call_id is None:
                    continue
                if message.role != "assistant" or call_id in seen:
                    self.hazards.add(call_id)
                seen.add(call_id)

    def refuse_reach_back(self, messages: list[Message]) -> None:
        """Raise :class:`~agc.resume._formats.stream.ReachBackError` when a message
        names a call id of an earlier run's change (see :data:`_HAZARDS`)."""
        from agc.resume._formats.stream import ReachBackError  # noqa: PLC0415 - loaded

        hazards = self.hazards
        if hazards and any(
            block.call_id in hazards for message in messages for block in message.blocks
        ):
            raise ReachBackError


def _repair_planned(
    history: History,
    planner: _Planner,
    sink: RewindableSink,
    read_back: Callable[[], History],
    path: Path,
    *,
    source: str,
    settle: int,
    read_tail: Callable[[ScanStart], History] | None = None,
) -> tuple[History, RepairReport | None]:
    """The repair of a Codex rollout whose runs ``planner`` decided as it was read
    (the messages ``history`` still holds are the last run): written in a second pass
    over the file, each line copied, dropped or followed by new items as decided; the
    output then checked as :func:`repair_streamed` checks it (from the last run on
    with ``read_tail`` when the runs before were written as they were read and broke
    no rule; else whole, ``read_back()``). Returns the history read
    again holding its messages and ``None`` when the last run reaches back to an
    earlier one, or the session's identity differs from the one the runs used."""
    from agc.resume._formats import claude_code, codex_rollout  # noqa: PLC0415 - loaded
    from agc.resume._formats.stream import ReachBackError  # noqa: PLC0415 - loaded

    settled = history.settled
    assert settled is not None  # runs were let go of
    try:
        if history.session_id != planner.read_session and planner.session_id is None:
            raise ReachBackError  # a session_meta after the first run: another identity
        if history.torn is not None and history.lines is not None:
            # A torn last line's call is keyed after the calls with its id before it,
            # which the runs may number otherwise (a call a run named as unnumbered).
            torn_id = describe_torn(history.lines[history.torn]).call_id
            if torn_id is not None and torn_id in planner.hazards:
                raise ReachBackError
        planner.part(
            history.messages,
            settled,
            history.session_id,
            history.format,
            history.records,
            last=True,
        )
    except ReachBackError:
        sink.seek(0)
        sink.truncate()
        again = scan_session(path, source=source, format=history.format, settle=settle)
        return again, None
    before = check_loaded(history)
    whole = _without_torn_line(history)
    assert whole.lines is not None  # a session file's
    changes = planner.changes
    rewritten = bool(changes.counts)
    lines: Iterable[str | int] = range(len(whole.lines))
    if rewritten and history.format == "codex-rollout":
        lines = codex_rollout.write_plan(whole, planner.dropped, planner.inserted)
    elif rewritten:
        lines = claude_code.write_plan(whole, planner.lines)
    same = _write_lines(lines, whole.lines, sink)
    start = tail_start(history, same) if read_tail is not None else None
    session = planner.session
    if planner.session_id is None and planner.read_session is None:
        # No run noted a change (else the file is read whole): no key was made yet. A
        # torn last line's call is keyed by the first line's digest, as the whole's.
        session = session_identity(history)
    torn = _torn_change(history, session, planner.counts)
    planner.restart()  # the plan is written: let go of it
    repair = _Repair(
        history,
        whole,
        planner.strategy,
        None,
        planner.state,
        before,
        [],
        [] if torn is None else [torn],
        rewritten,
        pending_warnings(history.messages, None),
    )
    history.messages = []  # released before the output is read back
    whole.messages = []
    if start is not None and read_tail is not None:
        # The runs before the last were written as they were read and broke no rule.
        return history, repair.report(check_loaded(read_tail(start)), changes)
    return history, repair.report(check_loaded(read_back()), changes)


@collector_paused
def repair_session(
    path: os.PathLike[str],
    sink: RewindableSink,
    read_back: Callable[[], History],
    *,
    read_tail: Callable[[ScanStart], History] | None = None,
    source: str,
    format: FormatName | None = None,
    strategy: Strategy = "strip",
    session_id: str | None = None,
    keep: int | None = None,
    settle: int,
    progress: Callable[[int], None] | None = None,
) -> tuple[History, RepairReport | None]:
    """Repair a Gemini CLI session file as it is read, one part at a time: each part of
    its replayed messages that pairs with nothing after it is checked, repaired and
    written to ``sink`` once it is read, then let go of
    (:func:`~agc.resume._formats.stream.scan_session` with ``parts``), so memory holds
    one part, not the session. What is written is what :func:`repair_streamed` writes
    of the whole file (each part is repaired as the whole history repairs it: a record
    that reaches back to a message let go of makes the file read whole, ``sink``
    emptied). The output is checked as the provider reads it as it is written: each
    line written is replayed as the client replays it (a line written as it was read
    from what the read noted of it, a new line parsed), and each part's view checked;
    when one breaks a rule, ``read_back()`` reads the whole output again for the
    report that refuses it. A Codex rollout or a Claude Code session is decided run by
    run as it is read and written in a second pass; its output is read back whole
    (``read_back()``), or from its last run on (``read_tail``, as
    :func:`repair_streamed` reads it) when the lines before it were written as they
    were read and the runs they hold broke no rule.

    Returns:
        The history read (its last part, the parts before in ``History.settled``) and
        the report, whose ``changes`` hold the first ``keep`` changes beside their
        counts (``None``: all); or the history read whole and ``None`` when it was not
        read in parts (not a Gemini CLI session, too short, or reaching back): nothing
        is written then, repair it with :func:`repair_streamed`.

    Raises:
        As :func:`~agc.resume._formats.stream.scan_session` and :func:`repair_streamed`.
    """
    from agc.resume._formats.gemini_chat import GeminiHistory  # noqa: PLC0415 - its own reader

    state = ToolCallState()
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {strategy!r}; choose strip or synthesize")
    parts = _PartRepair(sink, strategy, state, session_id, keep)
    planner = _Planner(strategy, state, session_id)
    history = scan_session(
        Path(path),
        source=source,
        format=format,
        progress=progress,
        settle=settle,
        checked=True,
        keep=keep,
        parts=parts,
        plan=planner,
    )
    if planner.parts and history.format in {"codex-rollout", "claude-code"}:
        return _repair_planned(
            history,
            planner,
            sink,
            read_back,
            Path(path),
            source=source,
            settle=settle,
            read_tail=read_tail,
        )
    if not parts.written or history.settled is None:
        if parts.written:
            parts.restart()
        return history, None
    repair = _repaired(history, strategy, None, parts.session, keep=keep)
    spec = get_spec(history.format)
    whole = repair.whole
    assert isinstance(whole, GeminiHistory)  # read in parts
    assert whole.lines is not None  # a session file's
    write_lines = spec.write_lines
    assert write_lines is not None  # a session file's
    lines: Iterable[str | int | range] = (
        write_lines(whole, repair.messages)
        if repair.rewritten
        else range(whole.first_line, len(whole.lines))
    )
    written = parts.write(whole, lines)
    if whole.seen is not None and whole.seen.settle():
        parts.reread = True  # a new record of the last part names a message of another
    held = history.messages
    repair.messages.clear()
    whole.messages.clear()
    written.settled = parts.output
    after = check_loaded(written)
    if parts.reread or not after.valid:
        history.messages = []  # released before the output is read back, as is
        whole.id_hashes = ()  # what only the writer reads
        if isinstance(history, GeminiHistory):
            history.id_hashes = ()
        after = check_loaded(read_back())
    report = repair.report(after, parts.changes)
    history.messages = held
    return history, report


def _repaired(
    history: History,
    strategy: Strategy,
    tool_call_state: ToolCallState | None,
    session_id: str | None,
    *,
    keep: int | None = None,
) -> _Repair:
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {strategy!r}; choose strip or synthesize")
    state = tool_call_state or ToolCallState()
    spec = get_spec(history.format)
    before = check_loaded(history, keep=keep)
    whole = _without_torn_line(history)
    session = session_id if session_id is not None else session_identity(history)
    repaired, changes = _Repairer(
        whole.messages, spec, strategy, state, session, history.settled
    ).run()
    rewritten = bool(changes)
    torn = _torn_change(history, session)
    if torn is not None:
        changes.append(torn)
    warnings = pending_warnings(history.messages, tool_call_state)
    return _Repair(
        history,
        whole,
        strategy,
        tool_call_state,
        state,
        before,
        repaired,
        changes,
        rewritten,
        warnings,
    )


def _written_history(whole: History, written: list[Message], native: list[Any]) -> History:
    """The history the written ``native`` records are when read back (as
    :func:`load_history` of their bytes reads them), built without parsing those bytes.

    JSON arrays: record ``i`` of the output is what ``written[i]`` was written as; a
    record the writer kept as it was read (the same object, or the same
    :class:`~agc.resume._formats.model.RawRef`) reads back as that message's blocks
    (each reader is a function of the record alone), any other is read by the format's
    reader from memory. A JSON value written and read back is the same value, so this is
    the view of the output file. Session files: each output line that is a line of the
    input keeps that line's parsed record; new lines are parsed (they are few).
    """
    spec = get_spec(whole.format)
    if spec.line_based:
        return _written_session(whole, native)
    read_one = _read_one(whole.format)
    messages: list[Message] = []
    for position, (message, record) in enumerate(zip(written, native, strict=True)):
        if not message.dirty and record is message.native():
            messages.append(Message(message.role, message.blocks, origin=position))
        else:
            messages.append(read_one(resolve(record), position))
    return History(whole.format, messages, native)


def _written_session(whole: History, native: list[Any]) -> History:
    lines = [str(line) for line in native]
    known = {id(line): index for index, line in enumerate(whole.lines or [])}
    records: list[Any] = []
    for line in lines:
        index = known.get(id(line))
        if index is not None:
            records.append(whole.records[index])
            continue
        text = line[:-1] if line.endswith("\r") else line
        try:
            records.append(strict_json.loads(text, allow_lone_surrogates=True))
        except JsonInvalidError:
            records.append(text)
    return history_from_lines(records, lines, True, source="repaired history", format=whole.format)


def _with_line(entry: dict[str, Any], record: int | None, format: FormatName) -> dict[str, Any]:
    """A change or finding as JSON with ``line`` (1-based) beside ``record`` (0-based) for
    session files, so the JSON and the text (``line N``) agree."""
    if get_spec(format).line_based:
        entry["line"] = record + 1 if record is not None else None
    return entry


def _without_torn_line(history: History) -> History:
    """The history without its torn last line (the line is not part of the history)."""
    if history.torn is None or history.lines is None:
        return history
    torn = history.torn
    return replace(
        history,
        records=history.records[:torn],
        lines=history.lines[:torn],
        skipped=SpilledLines(index for index in history.skipped if index != torn),
        final_newline=True,
        torn=None,
    )


def _torn_change(
    history: History, session: str, counts: _CallCounts | None = None
) -> Change | None:
    """The change that drops a torn last line; ``counts``: the calls of each id used
    again up to the last message (a repair in runs, its last run decided)."""
    finding = torn_tail_finding(history)
    if (
        finding is None
        or finding.message_index is None
        or history.lines is None
        or history.torn is None
    ):
        return None
    held = describe_torn(history.lines[history.torn])
    key = None
    if held.call_id:
        # The torn line comes after every message read: a call there reusing an id is
        # numbered after the calls before it (see idempotency_key, occurrence).
        settled = history.settled
        if counts is not None and settled is not None and held.call_id in settled.call_ids:
            # The runs' counts number the calls of the last run (the messages held) too.
            earlier = counts.get(held.call_id)
        else:
            earlier = sum(
                1
                for message in history.messages
                for call in message.calls()
                if call.call_id == held.call_id
            )
            if settled is not None and held.call_id in settled.call_ids:
                earlier += 1
        key = idempotency_key(held.call_id, session=session, occurrence=earlier + 1)
    return Change(
        action="dropped-torn-line",
        message_index=finding.message_index,
        record=finding.record,
        call_id=finding.call_id,
        tool_name=held.tool_name,
        arguments=None,
        idempotency_key=key,
        reason=f"the last line was cut off by a crash (not JSON, no final line break); it "
        f"held {held.describe()}, which is lost and removed with the line",
    )


def _unchanged(history: History) -> list[Any]:
    if history.lines is not None:
        return list(history.lines)
    return get_spec(history.format).write(history, history.messages)


@collector_paused
def resume_session(
    run_id: str,
    store: str | os.PathLike[str] | None = None,
    *,
    strategy: Strategy = "strip",
    insecure_skip_verify: bool = False,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
    allow_unsigned: bool = False,
) -> ResumeResult:
    """Load a run's snapshot, verify its seal (and, with ``trusted_keys`` or
    ``require_signature``, its signature: :func:`~agc.resume._snapshot.load_snapshot`),
    and repair its history.

    Raises:
        RunIdInvalidError, SnapshotNotFoundError, SnapshotUnsealedError,
        SnapshotTamperedError, SnapshotInvalidError, UnsignedError, BadSignatureError,
        UnknownKeyError, UsageError: from :func:`~agc.resume._snapshot.load_snapshot`.
        RepairIncompleteError: the repair failed its own check (a bug).
    """
    snapshot = load_snapshot(
        run_id,
        store,
        insecure_skip_verify=insecure_skip_verify,
        trusted_keys=trusted_keys,
        require_signature=require_signature,
        allow_unsigned=allow_unsigned,
    )
    result = repair_history(
        snapshot.messages,
        snapshot.format,
        strategy=strategy,
        tool_call_state=snapshot.tool_call_state,
        session_id=snapshot.session_id,
    )
    context = {**snapshot.agent_config, "apiKey": "", "baseUrl": ""}
    return ResumeResult(context, result.messages, result.report.was_interrupted, result.report)


def _synthetic_text(key: str) -> str:
    return (
        "agc resume: this tool call was interrupted before its result was recorded. It may "
        "or may not have executed: check its effects before running it again "
        f"(idempotency key {key})."
    )


_Noted: TypeAlias = tuple[int, int, str, str, "Block | None", "Block | None"]
"""A change as :meth:`_Repairer._note` notes it: ``(message index in the view, order
noted, action, reason, call, the call whose key it takes or None)``."""


def _noted_order(noted: _Noted) -> tuple[int, int]:
    return noted[0], noted[1]


@dataclass
class _Repairer:
    """One repair pass over a neutral view (pure; see the module docstring)."""

    view: list[Message]
    spec: FormatSpec
    strategy: Strategy
    state: ToolCallState
    session: str
    # Messages before the view that a streamed read let go of: they break no rule and
    # need no change; the view is numbered after them, and their call ids, each
    # answered, stand for one call already answered (``_prior``).
    settled: Settled | None = None
    changes: list[_Noted] = field(default_factory=list)
    dropped_calls: set[int] = field(default_factory=set)
    call_message: dict[int, int] = field(default_factory=dict)
    answer: dict[int, Block] = field(default_factory=dict)  # id(call) -> result
    owner: dict[int, Block] = field(default_factory=dict)  # id(result) -> call
    result_message: dict[int, int] = field(default_factory=dict)
    dropped_results: set[int] = field(default_factory=set)
    fate: dict[int, str] = field(default_factory=dict)  # id(call) -> keep|strip|synth
    synthetic: dict[int, Block] = field(default_factory=dict)
    unmovable: set[int] = field(default_factory=set)  # id(call) whose real result was dropped
    tool_messages: dict[int, Message] | None = None  # id(result) -> its Chat tool message
    calls_by_id: dict[str, list[tuple[int, Block]]] = field(default_factory=dict)
    occurrence: dict[int, int] = field(default_factory=dict)  # id(call) -> 2, 3 … (reused id)
    # A run of a Codex rollout repaired after the runs before it (:class:`_Planner`): how
    # many calls each id had before the view, for the ids used more than once there
    # (an id of ``settled.call_ids`` not in it had one call, the first, kept).
    prior_counts: _CallCounts | None = None
    # The view is a run with more after it: reasoning items at the end of the output
    # are left undecided (the run after says whether an item follows them), and
    # ``open_from`` is the view index from which every message is undecided.
    open_end: bool = False
    open_from: int | None = None

    def __post_init__(self) -> None:
        self._offset = self.settled.messages if self.settled is not None else 0
        self._prior_ids: Container[str] = (
            self.settled.call_ids if self.settled is not None else frozenset()
        )
        self._prior = Block("call", None)  # any settled call: answered, before the view
        self.call_message[id(self._prior)] = -1
        self.answer[id(self._prior)] = self._prior
        self._prior_latest: dict[str, Block] = {}  # call id -> its latest settled call

    def _earlier(self, calls: dict[str, Block], call_id: str) -> Block | None:
        """The latest call with ``call_id`` in ``calls``, else a settled one, else None."""
        call = calls.get(call_id)
        if call is None and call_id in self._prior_ids:
            return self._prior
        return call

    def _latest(self, calls: dict[str, Block], call_id: str) -> Block | None:
        """The latest call with ``call_id`` in ``calls``, also one dropped as reusing
        an id; else the latest settled one (the first, :attr:`_prior`, unless a later
        call reused its id there); else None."""
        call = calls.get(call_id)
        if call is not None:
            return call
        before = self._count_before(call_id)
        if before < 2:
            return self._prior if before else None
        latest = self._prior_latest.get(call_id)
        if latest is None:
            # A call reusing the id, dropped: its own message, numbered ``before``.
            latest = Block("call", None, call_id=call_id)
            self.call_message[id(latest)] = -2
            self.occurrence[id(latest)] = before
            self._prior_latest[call_id] = latest
        return latest

    def _count_before(self, call_id: str) -> int:
        """How many calls had ``call_id`` before the view (settled): 0, 1 (the first,
        kept), or more with :attr:`prior_counts`."""
        if call_id not in self._prior_ids:
            return 0
        counts = self.prior_counts
        return 1 if counts is None else counts.get(call_id)

    def run(self) -> tuple[list[Message], list[Change]]:
        out, noted = self.run_noted()
        return out, [self.change(item) for item in noted]

    def run_noted(self) -> tuple[list[Message], list[_Noted]]:
        """:meth:`run`, each change as noted (:meth:`change` makes it): a long session
        read in parts makes only the changes its report holds (:class:`_ChangeTally`)."""
        self._index_calls()
        self._attribute_results()
        self._decide()
        flat = self.spec.family == "responses"
        out = self._rebuild_flat() if flat else self._rebuild_turns()
        self.changes.sort(key=_noted_order)
        return out, self.changes

    # -- bookkeeping ---------------------------------------------------------------

    def _note(
        self,
        action: str,
        index: int,
        reason: str,
        call: Block | None = None,
        *,
        key_of: Block | None = None,
    ) -> None:
        """Note a change about ``call`` (its key: ``key_of``'s, when given); made into a
        :class:`Change` by :meth:`change` only when the report keeps it."""
        self.changes.append((index, len(self.changes), action, reason, call, key_of))

    def change(self, noted: _Noted) -> Change:
        """The change noted (its call's arguments read, redacted, and its key made)."""
        index, _, action, reason, call, key_of = noted
        message = self.view[index]
        record = message.origin
        if call is not None and call.origin is not None:
            record = call.origin
        key = self._key(call, key_of) if call is not None and call.call_id else None
        return Change(
            action=action,
            message_index=index + self._offset,
            record=record,
            call_id=call.call_id if call is not None else None,
            tool_name=call.name if call is not None else None,
            # The report is printed and logged: never a secret the arguments hold.
            arguments=_redacted(call.arguments) if call is not None else None,
            idempotency_key=key,
            reason=reason,
        )

    def _key(self, call: Block, numbered_as: Block | None = None) -> str:
        """The idempotency key of ``call``'s id, numbered as ``numbered_as`` (default:
        ``call``) among the calls with that id (a call reusing an id: a key of its own)."""
        occurrence = self.occurrence.get(id(numbered_as or call), 1)
        return idempotency_key(call.call_id or "", session=self.session, occurrence=occurrence)

    def _kept(self, call: Block) -> bool:
        return self.fate.get(id(call)) in {"keep", "synth"}

    def _result_kept(self, result: Block) -> bool:
        call = self.owner.get(id(result))
        return call is not None and self._kept(call) and id(result) not in self.dropped_results

    # -- analysis ------------------------------------------------------------------

    def _index_calls(self) -> None:
        seen_anywhere: set[str] = set()
        # The number of each call reusing an id, for its key: the ids of the view's
        # calls (the messages let go of held each id once: a settled run breaks no
        # rule), and the count of each id seen more than once (few).
        ids: set[str] = set()
        repeats: dict[str, int] = {}
        for index, message in enumerate(self.view):
            if message.role != "assistant":
                for call in message.calls():
                    self._number(call, ids, repeats)
                    self.call_message[id(call)] = index
                    self.dropped_calls.add(id(call))
                    self._note("stripped", index, "a tool call outside an assistant message", call)
                continue
            seen_here: set[str] = set()
            for call in message.calls():
                self.call_message[id(call)] = index
                if call.call_id is None:
                    self.dropped_calls.add(id(call))
                    self._note(
                        "stripped", index, "the call has no id, so it cannot be answered", call
                    )
                    continue
                self._number(call, ids, repeats)
                scope = seen_here if self.spec.family == "chat" else seen_anywhere
                if call.call_id in scope or call.call_id in self._prior_ids:
                    self.dropped_calls.add(id(call))
                    self._note(
                        "dropped-duplicate-call",
                        index,
                        "an earlier call has the same id; providers require unique ids",
                        call,
                    )
                    continue
                seen_here.add(call.call_id)
                seen_anywhere.add(call.call_id)

    def _number(self, call: Block, ids: set[str], repeats: dict[str, int]) -> None:
        """Note ``call``'s number among the calls with its id when it is the 2nd or a
        later one (:attr:`occurrence`); ``ids`` and ``repeats``: the ids seen so far
        and the count of each id seen twice or more."""
        call_id = call.call_id
        if call_id is None:
            return
        if call_id in ids:
            number = repeats.get(call_id, 1) + 1
        else:
            ids.add(call_id)
            before = self._count_before(call_id)
            if not before:
                return
            number = before + 1
        repeats[call_id] = number
        self.occurrence[id(call)] = number

    def _attribute_results(self) -> None:
        latest: dict[str, Block] = {}
        latest_any: dict[str, Block] = {}  # also calls dropped as a duplicate id
        early: list[tuple[Block, int]] = []  # results with no call before them
        for index, message in enumerate(self.view):
            for block in message.blocks:
                if block.kind == "call" and id(block) not in self.dropped_calls:
                    latest[block.call_id or ""] = block
                if block.kind == "call" and block.call_id is not None:
                    latest_any[block.call_id] = block
                if block.kind != "result":
                    continue
                self.result_message[id(block)] = index
                call = self._earlier(latest, block.call_id) if block.call_id is not None else None
                nearest = (
                    self._latest(latest_any, block.call_id) if block.call_id is not None else None
                )
                if (
                    call is not None
                    and nearest is not None
                    and nearest is not call
                    and self.call_message[id(nearest)] != self.call_message[id(call)]
                ):
                    # It answers a later call of another turn that reused the id and was
                    # dropped as a duplicate: never the earlier call's result.
                    self._drop_result(
                        block,
                        index,
                        "dropped-orphan-result",
                        "its call was dropped: an earlier call in another turn has the same id",
                        nearest,
                    )
                elif call is None:
                    early.append((block, index))
                elif id(call) in self.answer:
                    self._drop_result(
                        block,
                        index,
                        "dropped-duplicate-result",
                        "the call already has a result; the first one is kept",
                        call,
                    )
                elif not self.spec.can_move and not self._in_place(call, index):
                    self.unmovable.add(id(call))
                    self._drop_result(
                        block,
                        index,
                        "dropped-orphan-result",
                        "it is not where the provider looks for its call's result, and a "
                        "session-file line is never moved",
                    )
                else:
                    self.answer[id(call)] = block
                    self.owner[id(block)] = call
        if early:
            for message_index, message in enumerate(self.view):
                for call in message.calls():
                    if call.call_id is not None and id(call) not in self.dropped_calls:
                        self.calls_by_id.setdefault(call.call_id, []).append((message_index, call))
        for block, index in early:
            self._attribute_early(block, index)

    def _attribute_early(self, result: Block, index: int) -> None:
        """A result recorded before its call (records out of order): the first later call
        with its id that has no result of its own gets it, moved after the call."""
        candidates = self.calls_by_id.get(result.call_id or "", [])
        call = next(
            (block for at, block in candidates if at > index and id(block) not in self.answer),
            None,
        )
        if call is None:
            self._drop_result(result, index, "dropped-orphan-result", "it answers no call")
        elif not self.spec.can_move:
            self.unmovable.add(id(call))
            self._drop_result(
                result,
                index,
                "dropped-orphan-result",
                "it was recorded before its call, and a session-file line is never moved",
            )
        else:
            self.answer[id(call)] = result
            self.owner[id(result)] = call

    def _drop_result(
        self, result: Block, index: int, action: str, reason: str, answers: Block | None = None
    ) -> None:
        """Drop ``result``; its change carries the key of the call it ``answers`` (a call
        reusing an id: that call's own key), else of the id's first call, and the tool
        name the result gives, if any (a Gemini ``functionResponse`` names its tool; the
        call's name is not looked up: the call may be one a repair in runs let go of)."""
        self.dropped_results.add(id(result))
        named = Block(
            "result", None, call_id=result.call_id, name=result.name, origin=result.origin
        )
        self._note(action, index, reason, named, key_of=answers)

    def _in_place(self, call: Block, result_index: int) -> bool:
        call_index = self.call_message[id(call)]
        if self.spec.family == "responses":
            return result_index > call_index
        if self.spec.family in _NEXT_MESSAGE:
            return result_index == call_index + 1 and self.view[result_index].role == "user"
        return all(m.role == "tool" for m in self.view[call_index + 1 : result_index])

    def _decide(self) -> None:
        pending = self.state.pending_tool_call_id if self.state.in_flight else None
        for index, message in enumerate(self.view):
            for call in message.calls():
                if id(call) in self.dropped_calls:
                    continue
                result = self.answer.get(id(call))
                is_pending = pending is not None and call.call_id == pending
                if is_pending and self.strategy == "strip":
                    self.fate[id(call)] = "strip"
                    self._note(
                        "stripped",
                        index,
                        "it was in flight when the snapshot was saved (pendingToolCallId)",
                        call,
                    )
                    if result is not None:
                        self.dropped_results.add(id(result))
                        self._note(
                            "dropped-partial-result",
                            self.result_message[id(result)],
                            "a result recorded for the in-flight call may be partial",
                            call,
                        )
                    continue
                if result is not None:
                    self.fate[id(call)] = "keep"
                    if is_pending:
                        self._note(
                            "kept-partial-result",
                            index,
                            "it was in flight when the snapshot was saved, but a result was "
                            "recorded; the real result is kept and may be partial",
                            call,
                        )
                    continue
                why = (
                    "it was in flight when the snapshot was saved"
                    if is_pending
                    else "it has no result in the history"
                )
                self._unanswered(call, index, why)

    def _unanswered(self, call: Block, index: int, why: str) -> None:
        if id(call) in self.unmovable:
            # A real result is never replaced by a synthetic one.
            self.fate[id(call)] = "strip"
            self._note(
                "stripped",
                index,
                "its real result is not where the provider looks for it and a session-file "
                "line is never moved; it is never answered as interrupted instead",
                call,
            )
            return
        if self.strategy == "strip":
            self.fate[id(call)] = "strip"
            self._note("stripped", index, why, call)
            return
        if not arguments_are_json(call.arguments):
            self.fate[id(call)] = "strip"
            self._note(
                "stripped",
                index,
                why + "; its arguments are not valid JSON, so it is never kept",
                call,
            )
            return
        key = self._key(call)
        block = self.spec.synthesize(call, _synthetic_text(key))
        if block is None:
            self.fate[id(call)] = "strip"
            self._note("stripped", index, why + "; its call type cannot be answered", call)
            return
        self.fate[id(call)] = "synth"
        self.synthetic[id(call)] = block
        self._note("synthesized", index, why + "; answered as interrupted", call)

    # -- rebuilding ----------------------------------------------------------------

    def _rebuild_flat(self) -> list[Message]:
        out: list[Message] = []
        origin_index: dict[int, int] = {}
        for index, message in enumerate(self.view):
            block = message.blocks[0]
            if block.kind == "call" and not self._kept(block):
                continue
            if block.kind == "result" and not self._result_kept(block):
                continue
            if block.kind == "result" and self._is_early(block, index):
                continue  # placed after its call below
            origin_index[id(message)] = index
            out.append(message)
            if block.kind == "call" and id(block) in self.synthetic:
                out.extend(self.spec.wrap_results([self.synthetic[id(block)]]))
            result = self.answer.get(id(block)) if block.kind == "call" else None
            if result is not None and self._is_early(result, self.result_message[id(result)]):
                self._note(
                    "moved-result",
                    self.result_message[id(result)],
                    "its real result was recorded before the call; it is placed right after it",
                    block,
                )
                out.extend(self.spec.wrap_results([result]))
        final: list[Message] = []
        undecided = len(out)  # from here on, reasoning only: the run after decides
        if self.open_end:
            while undecided and out[undecided - 1].blocks[0].kind == "reasoning":
                undecided -= 1
            if undecided < len(out):
                self.open_from = origin_index[id(out[undecided])]
        for position, message in enumerate(out):
            if position >= undecided:
                break
            if message.blocks[0].kind == "reasoning" and not _followed(out, position):
                self._note(
                    "dropped-reasoning",
                    origin_index[id(message)],
                    "a reasoning item must be followed by the item it produced, and that "
                    "item is gone (a dropped call) or never existed",
                )
                continue
            final.append(message)
        return final

    def _rebuild_turns(self) -> list[Message]:
        anthropic = self.spec.family in _NEXT_MESSAGE
        out: list[Message] = []
        consumed: set[int] = set()
        handled: set[int] = set()
        for index, message in enumerate(self.view):
            if index in handled:
                continue
            calls = message.calls() if message.role == "assistant" else None
            if calls:
                # A result in an assistant message is never where the provider looks: it
                # goes with its call's results (moved) or was dropped as an orphan.
                blocks = [
                    b
                    for b in message.blocks
                    if b.kind != "result" and (b.kind != "call" or self._kept(b))
                ]
                if anthropic:
                    blocks = self._calls_last(blocks, index)
                rebuilt = _with_blocks(message, blocks)
                if rebuilt.blocks:
                    out.append(rebuilt)
                else:
                    self._note("dropped-empty-message", index, "nothing is left in it")
                kept = [call for call in calls if self._kept(call)]
                if not kept:
                    continue
                region = self._region(index, kept, consumed)
                following = self.view[index + 1] if index + 1 < len(self.view) else None
                if anthropic and following is not None and following.role == "user":
                    handled.add(index + 1)
                    rest = [b for b in following.blocks if b.kind not in {"result", "call"}]
                    self._note_results_first(index + 1, following, region)
                    out.append(_with_blocks(following, region + rest))
                elif anthropic:
                    out.extend(self.spec.wrap_results(region))
                else:
                    out.extend(self._chat_region(region))
                continue
            if message.results() or message.calls():
                blocks = [b for b in message.blocks if b.kind not in {"result", "call"}]
                if blocks:
                    out.append(_with_blocks(message, blocks))
                continue
            out.append(message)
        return out

    def _is_early(self, result: Block, index: int) -> bool:
        call = self.owner.get(id(result))
        return call is not None and self.call_message[id(call)] > index

    def _note_results_first(self, index: int, message: Message, region: list[Block]) -> None:
        """Report real results that sat after other content in their user message."""
        seen_other = False
        for block in message.blocks:
            if block.kind != "result":
                seen_other = True
            elif seen_other and any(block is placed for placed in region):
                self._note(
                    "moved-result",
                    index,
                    "tool_result blocks must come first in the user message; moved before "
                    "the other content",
                    self.owner[id(block)],
                )

    def _chat_region(self, region: list[Block]) -> list[Message]:
        """Tool messages for ``region``, reusing each existing tool message as read."""
        if self.tool_messages is None:  # built once: a region per call message
            self.tool_messages = {
                id(message.blocks[0]): message for message in self.view if message.role == "tool"
            }
        by_result = self.tool_messages
        out: list[Message] = []
        for block in region:
            existing = by_result.get(id(block))
            out.extend([existing] if existing is not None else self.spec.wrap_results([block]))
        return out

    def _region(self, index: int, kept: list[Block], consumed: set[int]) -> list[Block]:
        """Result blocks for the kept calls of message ``index``, in the provider's place."""
        kept_ids = {id(call) for call in kept}
        in_place: list[Block] = []
        if self.spec.family in _NEXT_MESSAGE:
            following = self.view[index + 1] if index + 1 < len(self.view) else None
            candidates = following.results() if following and following.role == "user" else []
        else:
            candidates = []
            # Walk by position: slicing the rest of the view here made repair quadratic.
            position = index + 1
            while position < len(self.view) and self.view[position].role == "tool":
                candidates.extend(self.view[position].results())
                position += 1
        for candidate in candidates:
            owner = self.owner.get(id(candidate))
            if owner is not None and id(owner) in kept_ids and self._result_kept(candidate):
                in_place.append(candidate)
        placed = {id(result) for result in in_place}
        moved: list[Block] = []
        for call in kept:
            result = self.answer.get(id(call))
            if result is not None and id(result) not in placed and self._result_kept(result):
                moved.append(result)
                self._note(
                    "moved-result",
                    self.result_message[id(result)],
                    "its real result was not where the provider looks for it; it is placed "
                    "with the other results right after the call",
                    call,
                )
        synthetic = [self.synthetic[id(call)] for call in kept if id(call) in self.synthetic]
        region = in_place + moved + synthetic
        consumed.update(id(result) for result in region)
        return region

    def _calls_last(self, blocks: list[Block], index: int) -> list[Block]:
        first = next((i for i, b in enumerate(blocks) if b.kind == "call"), None)
        if first is None:
            return blocks
        tail = blocks[first:]
        moving = [b for b in tail if b.kind in {"text", "other"}]
        if not moving:
            return blocks
        self._note(
            "moved-text",
            index,
            "content after a tool_use block is moved before the tool_use blocks",
        )
        return blocks[:first] + moving + [b for b in tail if b.kind not in {"text", "other"}]


def _with_blocks(message: Message, blocks: list[Block]) -> Message:
    if blocks == message.blocks:  # the same blocks (a block equals only itself)
        return message
    return Message(message.role, blocks, raw=message.native(), origin=message.origin, dirty=True)


def _followed(messages: Sequence[Message], index: int) -> bool:
    for position in range(index + 1, len(messages)):  # by position: see _reasoning_followed
        kind = messages[position].blocks[0].kind
        if kind == "reasoning":
            continue
        return messages[position].role == "assistant" and kind in {"call", "text", "other"}
    return False


def _redacted(value: object) -> object:
    """``value`` with secrets replaced (:func:`agc._core.redact.redact_value`), the
    detector loaded on first use."""
    from agc._core.redact import redact_value  # noqa: PLC0415 - ~10 ms import

    return redact_value(value)
