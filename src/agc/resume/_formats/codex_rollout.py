"""Codex CLI rollout files (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is ``{"timestamp", "type", "payload"}``. The history Codex resumes from is
the ``payload`` of the ``response_item`` lines: Responses API items. A ``compacted``
line replaces everything before it, so only items after the last one are checked.
Other lines (``session_meta``, ``event_msg``, ``turn_context``) are kept verbatim.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from agc.resume._formats import openai_responses
from agc.resume._formats.jsonl import dump_line
from agc.resume._formats.model import Block, FormatSpec, History, Message

__all__ = ["SPEC", "is_rollout_line", "read", "write"]

_ROLLOUT_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)


def is_rollout_line(record: Any) -> bool:
    """True for a ``{"timestamp", "type", "payload"}`` line of a known rollout type."""
    return (
        isinstance(record, dict)
        and isinstance(record.get("type"), str)
        and record["type"] in _ROLLOUT_TYPES
        and isinstance(record.get("payload"), dict)
    )


def read(records: Sequence[Any]) -> History:
    """Read rollout lines (parsed JSON, or a line's text when it is not JSON)."""
    messages: list[Message] = []
    skipped: list[int] = []
    for index, record in enumerate(records):
        if isinstance(record, dict) and record.get("type") == "compacted":
            skipped.extend(message.origin for message in messages if message.origin is not None)
            messages = []
            skipped.append(index)
            continue
        message = None
        if isinstance(record, dict) and record.get("type") == "response_item":
            message = openai_responses.item_message(record.get("payload"), index)
        if message is None:
            skipped.append(index)
        else:
            messages.append(message)
    return History("codex-rollout", messages, list(records), skipped=sorted(skipped))


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
    lines = history.lines or [dump_line(record) for record in history.records]
    kept: set[int] = set()
    inserted: dict[int, list[Message]] = {}
    anchor: int | None = None
    for message in messages:
        if message.origin is not None:
            kept.add(message.origin)
            anchor = message.origin
            continue
        inserted.setdefault(anchor if anchor is not None else -1, []).append(message)
    history_lines = {m.origin for m in history.messages if m.origin is not None}
    paginated = any(_ordinal(record) is not None for record in history.records)
    sequenced = any(_history_sequence(record) is not None for record in history.records)
    # (index of the input line or None for a new one, the line's record)
    entries: list[tuple[int | None, Any]] = []
    removed_sequences: list[int] = []
    for index in [-1, *range(len(lines))]:
        if index >= 0:
            record = history.records[index]
            if index not in history_lines or index in kept:
                entries.append((index, record))
            elif (sequence := _history_sequence(record)) is not None:
                removed_sequences.append(sequence)
        for message in inserted.get(index, []):
            entries.append((None, _new_line(history, index, message.raw, paginated, sequenced)))
    return _numbered(lines, entries, removed_sequences)


def _new_line(
    history: History, at: int, payload: Any, paginated: bool, sequenced: bool
) -> dict[str, Any]:
    """A new ``response_item`` line after line ``at``, in Codex's key order.

    ``ordinal`` and ``metadata.history_sequence`` are placeholders that
    :func:`_numbered` fills in.
    """
    record = history.records[at] if at >= 0 else {}
    anchor = record if isinstance(record, dict) else {}
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


def _numbered(
    lines: list[str], entries: list[tuple[int | None, Any]], removed_sequences: list[int]
) -> list[str]:
    """The output lines, renumbered where a line was inserted or removed before them."""
    renumber = _Renumber(sorted(removed_sequences))
    out: list[str] = []
    for index, record in entries:
        if index is not None and not isinstance(record, dict):
            out.append(lines[index])  # a damaged line: kept as it is
            continue
        changed = renumber.apply(record, new=index is None)
        if index is None:
            out.append(dump_line(changed if changed is not None else record))
        elif changed is None:
            out.append(lines[index])
        else:
            out.append(_with_ordinal(lines[index], record, changed))
    return out


def _with_ordinal(text: str, record: dict[str, Any], changed: dict[str, Any]) -> str:
    """``changed`` as a line: when only the ordinal differs and the line is in Codex's own
    key order, only the number is replaced, so the rest stays byte for byte."""
    if all(changed[key] == value for key, value in record.items() if key != "ordinal"):
        replaced, count = _ORDINAL_PREFIX.subn(rf"\g<1>{changed['ordinal']}", text, count=1)
        if count:
            return replaced
    return dump_line(changed)


@dataclass
class _Renumber:
    """Running state of the renumbering walk over the output lines."""

    removed: list[int]  # history_sequence values of dropped items, ascending
    next_ordinal: int | None = None
    shift: int = 0
    last_sequence: int = 0
    old_sequences: list[int] = field(default_factory=list)  # ascending
    new_sequences: dict[int, int] = field(default_factory=dict)

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
            while self.removed and self.removed[0] < old:
                self.removed.pop(0)
                self.shift -= 1
            sequence = old + self.shift
            sampled = self._mapped(sampled)
            bisect.insort(self.old_sequences, old)
            self.new_sequences[old] = sequence
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

    def _mapped(self, sampled: Any) -> Any:
        """``sampled_through_sequence`` renumbered: the new number of the last item at or
        before it that is still in the history."""
        if not _is_count(sampled):
            return sampled
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
)
