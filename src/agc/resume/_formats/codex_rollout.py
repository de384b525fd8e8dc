"""Codex CLI rollout files (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is ``{"timestamp", "type", "payload"}``. The history Codex resumes from is
the ``payload`` of the ``response_item`` lines: Responses API items. A ``compacted``
line replaces everything before it, so only items after the last one are checked.
Other lines (``session_meta``, ``event_msg``, ``turn_context``) are kept verbatim.
"""

from __future__ import annotations

import bisect
import itertools
import re
from array import array
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from agc.resume._formats import openai_responses
from agc.resume._formats.jsonl import dump_line, source_lines
from agc.resume._formats.model import Block, FormatSpec, History, Message, SpilledLines, texts

__all__ = ["ROLLOUT_TYPES", "SPEC", "LineReader", "is_rollout_line", "read", "write", "write_lines"]

ROLLOUT_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)


def is_rollout_line(record: Any) -> bool:
    """True for a ``{"timestamp", "type", "payload"}`` line of a known rollout type."""
    return (
        isinstance(record, dict)
        and isinstance(record.get("type"), str)
        and record["type"] in ROLLOUT_TYPES
        and isinstance(record.get("payload"), dict)
    )


class LineReader:
    """Reads rollout lines one at a time, in order (the rule of :func:`read`), noting
    whether any line is numbered (``ordinal``, ``metadata.history_sequence``)."""

    __slots__ = (
        "compacted",
        "messages",
        "paginated",
        "sequenced",
        "session_id",
        "skipped",
        "unread",
    )

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.skipped = SpilledLines()
        self.unread = SpilledLines()  # lines that are not JSON objects
        self.compacted = False
        self.paginated = False
        self.sequenced = False
        self.session_id: str | None = None

    def feed(self, index: int, record: Any) -> Message | None:
        """Read line ``index``; return its message, or ``None`` when it holds none."""
        if not isinstance(record, dict):
            self.skipped.append(index)
            self.unread.append(index)
            return None
        if not self.paginated and "ordinal" in record:
            self.paginated = _ordinal(record) is not None
        if not self.sequenced and "metadata" in record:
            self.sequenced = _history_sequence(record) is not None
        kind = record.get("type")
        if kind == "response_item":
            message = openai_responses.item_message(record.get("payload"), index)
            if message is None:
                self.skipped.append(index)
            else:
                self.messages.append(message)
            return message
        if self.session_id is None and kind == "session_meta":
            payload = record.get("payload")
            session = payload.get("id") if isinstance(payload, dict) else None
            self.session_id = session if isinstance(session, str) and session else None
        if kind == "compacted":
            # Every line up to this one is now out of the history (each was skipped or
            # held a message), also messages a streamed read already let go of.
            self.skipped = SpilledLines(range(index + 1))
            self.messages = []
            self.compacted = True
            return None
        self.skipped.append(index)
        return None

    def notes(self) -> dict[str, bool]:
        """What the writer needs to know of every line (see :func:`write`)."""
        return {"paginated": self.paginated, "sequenced": self.sequenced}


def read(records: Sequence[Any]) -> History:
    """Read rollout lines (parsed JSON, or a line's text when it is not JSON)."""
    reader = LineReader()
    for index, record in enumerate(records):
        reader.feed(index, record)
    skipped = sorted(reader.skipped) if reader.compacted else list(reader.skipped)
    return History(
        "codex-rollout",
        reader.messages,
        list(records),
        skipped=skipped,
        unread=reader.unread,
        notes=reader.notes(),
        session_id=reader.session_id,
    )


def write(history: History, messages: list[Message]) -> list[Any]:
    """Return the repaired file's lines (text). Unchanged lines are kept byte for byte.

    A dropped item drops its line; a synthetic output becomes a new ``response_item``
    line right after the line of the call it answers, with that line's timestamp.

    Paginated rollouts (Codex 0.155 and later) number every line with a top-level
    ``ordinal`` (``session_meta`` is 0, then contiguous) and refuse to resume a file whose
    final line has none ("final paginated rollout record … is missing an ordinal"). When
    the input is numbered, the new line gets the next ordinal and every later line is
    renumbered so the sequence stays contiguous; ``metadata.history_sequence`` (the
    item's position in the history) and ``sampled_through_sequence`` are shifted the
    same way, and the new item carries ``metadata`` like the items Codex writes. A legacy
    rollout (no ordinals) gets neither.
    """
    return texts(history, write_lines(history, messages))


def write_lines(history: History, messages: list[Message]) -> Iterator[str | int]:
    """:func:`write`, one line at a time: the text of a new or changed line, or the
    index of an input line written as it is (``history.lines[index]``, its bytes
    copied), which is then not read at all when the file is not numbered; a numbered
    file's lines are parsed (renumbering may change them). The lines of dropped items
    and the lines new items follow are read out of turn."""
    dropped, inserted, _ = plan_lines(history.messages, messages)
    yield from write_plan(history, dropped, inserted)


def plan_lines(
    view: list[Message], messages: list[Message], anchor: int | None = None
) -> tuple[list[int], dict[int, list[Message]], int | None]:
    """What :func:`write_lines` does to the lines of ``view`` (a run of the history's
    messages) to write ``messages``, its repair: the lines it drops (ascending), the new
    items it writes after a line (``-1``: before the first), and the last line kept
    (``anchor``: the one before ``view``, for a history repaired in runs)."""
    kept: set[int] = set()
    inserted: dict[int, list[Message]] = {}
    for message in messages:
        if message.origin is not None:
            kept.add(message.origin)
            anchor = message.origin
            continue
        inserted.setdefault(anchor if anchor is not None else -1, []).append(message)
    history_lines = {m.origin for m in view if m.origin is not None}
    return sorted(history_lines - kept), inserted, anchor


def write_plan(
    history: History, dropped: Sequence[int], inserted: Mapping[int, list[Message]]
) -> Iterator[str | int]:
    """The lines of ``history`` written without the lines ``dropped`` (ascending) and
    with the new items ``inserted`` after a line (see :func:`plan_lines`), renumbered
    where the file is numbered: :func:`write_lines`, given what it does."""
    verbatim = history.lines is not None
    lines = source_lines(history.lines, history.records)
    records = history.records
    notes = history.notes
    paginated = notes.get("paginated")
    if paginated is None:
        paginated = any(_ordinal(record) is not None for record in records)
    sequenced = notes.get("sequenced")
    if sequenced is None:
        sequenced = any(_history_sequence(record) is not None for record in records)
    removed = [
        sequence for index in dropped if (sequence := _history_sequence(records[index])) is not None
    ]
    renumber = _Renumber(sorted(removed))
    numbered = paginated or sequenced
    gone = iter(dropped)
    next_gone = next(gone, -1)
    for index in itertools.chain((-1,), range(len(lines))):  # no list of every index
        if index >= 0 and index == next_gone:
            next_gone = next(gone, -1)
        elif index >= 0:
            if not numbered:
                # Without ordinals or sequence numbers nothing is renumbered.
                yield index if verbatim else lines[index]
            else:
                text = lines[index]
                written = _renumbered(text, records[index], renumber)
                yield index if verbatim and written is text else written
        new = inserted.get(index)
        if new:
            at = records[index] if index >= 0 else {}
            anchor_record = at if isinstance(at, dict) else {}
            for message in new:
                line = _new_line(anchor_record, message.raw, paginated, sequenced)
                changed = renumber.apply(line, new=True)
                yield dump_line(changed if changed is not None else line)


def _renumbered(text: str, record: Any, renumber: _Renumber) -> str:
    """An input line as written: renumbered where a line was inserted or removed before."""
    if not isinstance(record, dict):
        return text  # a damaged line: kept as it is
    changed = renumber.apply(record, new=False)
    return text if changed is None else _with_ordinal(text, record, changed)


def _new_line(
    anchor: dict[str, Any], payload: Any, paginated: bool, sequenced: bool
) -> dict[str, Any]:
    """A new ``response_item`` line after the line ``anchor``, in Codex's key order.

    ``ordinal`` and ``metadata.history_sequence`` are placeholders that
    :class:`_Renumber` fills in.
    """
    line: dict[str, Any] = {"timestamp": anchor.get("timestamp")}
    if paginated:
        line["ordinal"] = None
    line["type"] = "response_item"
    line["payload"] = payload
    if sequenced:
        metadata = anchor.get("metadata")
        sampled = metadata.get("sampled_through_sequence") if isinstance(metadata, dict) else None
        line["metadata"] = {
            "history_sequence": None,
            "sampled_through_sequence": sampled if _is_count(sampled) else 0,
            "client_authored": False,
        }
    return line


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _ordinal(record: Any) -> int | None:
    value = record.get("ordinal") if isinstance(record, dict) else None
    return value if _is_count(value) else None


def _history_sequence(record: Any) -> int | None:
    if not isinstance(record, dict) or record.get("type") != "response_item":
        return None
    metadata = record.get("metadata")
    value = metadata.get("history_sequence") if isinstance(metadata, dict) else None
    return value if _is_count(value) else None


_ORDINAL_PREFIX: Final = re.compile(r'^(\{"timestamp":"[^"\\]*","ordinal":)(\d+)(?=[,}])')


def _with_ordinal(text: str, record: dict[str, Any], changed: dict[str, Any]) -> str:
    """``changed`` as a line: when only the ordinal differs and the line is in Codex's own
    key order, only the number is replaced, so the rest stays byte for byte."""
    if all(changed[key] == value for key, value in record.items() if key != "ordinal"):
        replaced, count = _ORDINAL_PREFIX.subn(rf"\g<1>{changed['ordinal']}", text, count=1)
        if count:
            return replaced
    return dump_line(changed)


class _Renumber:
    """Running state of the renumbering walk over the output lines.

    The new number of each old ``history_sequence`` is held as runs of consecutive old
    numbers shifted alike (three 8-byte numbers a run: a run per item inserted or
    removed, not per line), so memory does not grow with the file; old numbers met out
    of order (a damaged file) are held one by one from then on."""

    __slots__ = (
        "_done",
        "_ends",
        "_shifts",
        "_starts",
        "last_sequence",
        "new_sequences",
        "next_ordinal",
        "old_sequences",
        "removed",
        "shift",
    )

    def __init__(self, removed: Sequence[int]) -> None:
        self.removed = array("q", removed)  # history_sequence of dropped items, ascending
        self._done = 0  # the removed ones passed
        self.next_ordinal: int | None = None
        self.shift = 0
        self.last_sequence = 0
        self._starts = array("q")  # run k: old numbers _starts[k] .. _ends[k], + _shifts[k]
        self._ends = array("q")
        self._shifts = array("q")
        self.old_sequences: list[int] | None = None  # ascending, once out of order
        self.new_sequences: dict[int, int] = {}

    def apply(self, record: dict[str, Any], *, new: bool) -> dict[str, Any] | None:
        """``record`` renumbered (a copy), or None when nothing changes."""
        changed: dict[str, Any] | None = dict(record) if new else None
        ordinal = _ordinal(record)
        if self.next_ordinal is None and ordinal is not None:
            self.next_ordinal = ordinal
        if self.next_ordinal is not None and (new or ordinal is not None):
            if ordinal != self.next_ordinal or new:
                changed = changed if changed is not None else dict(record)
                changed["ordinal"] = self.next_ordinal
            self.next_ordinal += 1
        metadata = record.get("metadata")
        if not isinstance(metadata, dict) or record.get("type") != "response_item":
            return changed
        sampled = metadata.get("sampled_through_sequence")
        if new:
            self.shift += 1
            sequence = self.last_sequence + 1
        else:
            old = _history_sequence(record)
            if old is None:
                return changed
            removed = self.removed
            while self._done < len(removed) and removed[self._done] < old:
                self._done += 1
                self.shift -= 1
            sequence = old + self.shift
            sampled = self._mapped(sampled)
            self._note(old, sequence)
        self.last_sequence = sequence
        if sequence != metadata.get("history_sequence") or sampled != metadata.get(
            "sampled_through_sequence"
        ):
            changed = changed if changed is not None else dict(record)
            changed["metadata"] = {
                **metadata,
                "history_sequence": sequence,
                "sampled_through_sequence": sampled,
            }
        return changed

    def _note(self, old: int, sequence: int) -> None:
        """The old number ``old`` is now ``sequence``."""
        if self.old_sequences is None:
            ends = self._ends
            shift = sequence - old
            if ends and old == ends[-1] + 1 and self._shifts[-1] == shift:
                ends[-1] = old
                return
            if not ends or old > ends[-1]:
                self._starts.append(old)
                ends.append(old)
                self._shifts.append(shift)
                return
            # Out of order: every old number held one by one from now on.
            self.old_sequences = []
            for start, end, run_shift in zip(self._starts, ends, self._shifts, strict=True):
                for number in range(start, end + 1):
                    self.old_sequences.append(number)
                    self.new_sequences[number] = number + run_shift
        bisect.insort(self.old_sequences, old)
        self.new_sequences[old] = sequence

    def _mapped(self, sampled: Any) -> Any:
        """``sampled_through_sequence`` renumbered: the new number of the last item at or
        before it that is still in the history."""
        if not _is_count(sampled):
            return sampled
        if self.old_sequences is None:
            run = bisect.bisect_right(self._starts, sampled) - 1
            if run < 0:
                return sampled
            return min(sampled, self._ends[run]) + self._shifts[run]
        if sampled in self.new_sequences:
            return self.new_sequences[sampled]
        position = bisect.bisect_right(self.old_sequences, sampled)
        if position == 0:
            return sampled
        return self.new_sequences[self.old_sequences[position - 1]]


def wrap_results(blocks: list[Block]) -> list[Message]:
    return openai_responses.wrap_results(blocks)


SPEC = FormatSpec(
    name="codex-rollout",
    family="responses",
    line_based=True,
    can_move=False,
    read=read,
    write=write,
    # Codex answers its shell tool with a plain function_call_output.
    synthesize=openai_responses.make_synthesizer("function_call_output"),
    wrap_results=wrap_results,
    write_lines=write_lines,
)
