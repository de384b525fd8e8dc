"""Claude Code session files (``~/.claude/projects/<cwd>/<session>.jsonl``).

A message line is ``{"type": "user"|"assistant", "uuid", "parentUuid", "message":
{"role", "content"}, …}``. Claude Code writes one line per content block (one
``tool_use`` per line, one ``tool_result`` per line); as the Messages API does with
consecutive turns of one role, consecutive message lines of one role form one message
of the history. Lines that are not main-chain messages (``summary``, ``progress``,
``system``, ``file-history-snapshot``, sidechain lines, lines that are not JSON
objects, messages whose content is not a list of typed blocks) are kept verbatim.

Writing back keeps unchanged lines byte for byte, rewrites a line whose blocks
changed, drops a line left without blocks (re-pointing its children's ``parentUuid``
to its parent), and adds a synthetic ``tool_result`` as a new user line after the
assistant's last line, chained by ``parentUuid`` so Claude Code loads it.
"""

from __future__ import annotations

import itertools
import re
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from agc.resume._formats import anthropic
from agc.resume._formats.jsonl import dump_line, source_lines
from agc.resume._formats.model import (
    Block,
    FormatSpec,
    History,
    Message,
    SpilledLines,
    SpilledMap,
    texts,
)

__all__ = [
    "SPEC",
    "LinePlan",
    "LineReader",
    "is_message_line",
    "plan_lines",
    "read",
    "write",
    "write_lines",
    "write_plan",
]

_ABSENT: Final = object()  # a uuid that is no dropped line's
_NAMESPACE: Final = uuid.UUID("6f1b1c8e-4d1e-5a0c-9b7e-61676372736d")
_COPIED_KEYS: Final = ("isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch")


def _type(record: dict[str, Any]) -> str | None:
    value = record.get("type")
    return value if isinstance(value, str) else None


def is_message_line(record: Any) -> bool:
    """True for a main-chain user/assistant line whose content the API would accept."""
    return _message_blocks(record, 0) is not None


_ROLES: Final = frozenset({"user", "assistant"})


def _message_blocks(record: Any, origin: int) -> list[Block] | None:
    """The blocks of a message line (:func:`is_message_line`), else ``None``."""
    if not isinstance(record, dict) or _type(record) not in _ROLES:
        return None
    if record.get("isSidechain") is True:
        return None
    message = record.get("message")
    if not isinstance(message, dict) or message.get("role") != record.get("type"):
        return None
    return anthropic.content_blocks(message.get("content"), origin)


class LineReader:
    """Reads session lines one at a time, in order (the rule of :func:`read`): a
    streaming reader keeps only the view, never the lines."""

    __slots__ = ("messages", "session_id", "skipped", "unread")

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.skipped = SpilledLines()
        self.unread = SpilledLines()  # lines that are not JSON objects
        self.session_id: str | None = None

    def feed(self, index: int, record: Any) -> list[Block] | None:
        """Read line ``index``; return its blocks, or ``None`` when it is no message line."""
        if self.session_id is None and isinstance(record, dict):
            session = record.get("sessionId")
            self.session_id = session if isinstance(session, str) and session else None
        blocks = _message_blocks(record, index)
        if blocks is None:
            self.skipped.append(index)
            if not isinstance(record, dict):
                self.unread.append(index)
            return None
        role = record["type"]
        messages = self.messages
        if messages and messages[-1].role == role:
            messages[-1].blocks.extend(blocks)
        else:
            messages.append(Message(role, blocks, raw=None, origin=index))
        return blocks


def read(records: Sequence[Any]) -> History:
    """Read session lines (parsed JSON, or a line's text when it is not JSON)."""
    reader = LineReader()
    for index, record in enumerate(records):
        reader.feed(index, record)
    return History(
        "claude-code",
        reader.messages,
        list(records),
        skipped=list(reader.skipped),
        unread=reader.unread,
        session_id=reader.session_id,
    )


def _line_blocks(messages: list[Message]) -> dict[int, list[Block]]:
    by_line: dict[int, list[Block]] = {}
    for message in messages:
        for block in message.blocks:
            if block.origin is not None:
                by_line.setdefault(block.origin, []).append(block)
    return by_line


def write(history: History, messages: list[Message]) -> list[Any]:
    """Return the repaired file's lines (text); see the module docstring."""
    return texts(history, write_lines(history, messages))


def write_lines(history: History, messages: list[Message]) -> Iterator[str | int]:
    """:func:`write`, one line at a time: the text of a new or changed line, or the
    index of an input line written as it is (``history.lines[index]``, its bytes
    copied).

    What depends on the whole file is settled first from the view (:func:`plan_lines`):
    which lines are dropped (their ``uuid`` and ``parentUuid`` are read out of turn)
    and where new lines go. Then the lines are written (:func:`write_plan`)."""
    yield from write_plan(history, plan_lines(history.messages, messages, history.records))


@dataclass
class LinePlan:
    """What :func:`write_plan` does to a session's lines, decided from the view
    (:func:`plan_lines`), a run of messages at a time for a history repaired in runs.

    What grows with the lines a repair drops is spilled to disk past
    :data:`~agc.resume._formats.model.SPILL_AT` entries.

    Attributes:
        changed: line index -> the blocks it holds now, for the lines whose blocks
            changed and that still hold some.
        gone: the lines left without blocks (dropped), ascending.
        inserted: line index (``-1``: before the first) -> the new blocks written as
            new lines after it, in order.
        dropped: the ``uuid`` of each dropped line -> its ``parentUuid`` (a line that
            pointed at it is re-pointed past it).
        last_assistant_line: the last line of the last assistant message planned (new
            results go after it).
    """

    changed: dict[int, list[Block]] = field(default_factory=dict)
    gone: SpilledLines = field(default_factory=SpilledLines)
    inserted: dict[int, list[Block]] = field(default_factory=dict)
    dropped: SpilledMap = field(default_factory=SpilledMap)
    last_assistant_line: int | None = None

    def close(self) -> None:
        """Let go of the spilled uuids (the plan is written)."""
        self.dropped.close()


def plan_lines(
    view: list[Message],
    messages: list[Message],
    records: Sequence[Any],
    plan: LinePlan | None = None,
) -> LinePlan:
    """What :func:`write_lines` does to the lines of ``view`` (a run of the history's
    messages, its lines parsed in ``records``) to write ``messages``, its repair, added
    to ``plan`` (the runs before it: a history repaired in runs)."""
    plan = plan if plan is not None else LinePlan()
    original = _line_blocks(view)
    new_blocks: dict[int, list[Block]] = {}
    inserted = plan.inserted
    last_assistant_line = plan.last_assistant_line
    for message in messages:
        targets = _assign_lines(message.blocks)
        written = [target for target in targets if target is not None]
        if message.role == "assistant" and written:
            last_assistant_line = max(written)
        for block, target in zip(message.blocks, targets, strict=True):
            if target is not None:
                new_blocks.setdefault(target, []).append(block)
            else:
                at = last_assistant_line if last_assistant_line is not None else -1
                inserted.setdefault(at, []).append(block)
    plan.last_assistant_line = last_assistant_line
    gone_lines: list[int] = []
    for index, blocks in original.items():
        now = new_blocks.get(index, [])
        if [id(b) for b in now] == [id(b) for b in blocks]:
            continue
        if now:
            plan.changed[index] = now
            continue
        gone_lines.append(index)
        gone = records[index]
        if isinstance(gone.get("uuid"), str):
            plan.dropped[gone["uuid"]] = gone.get("parentUuid")
    gone_lines.sort()
    if gone_lines and len(plan.gone):
        # The runs of a history are planned in order, on lines of their own.
        assert plan.gone[-1] < gone_lines[0], "runs planned out of order"
    plan.gone.extend(gone_lines)
    return plan


def write_plan(history: History, plan: LinePlan) -> Iterator[str | int]:
    """The lines of ``history`` written as ``plan`` says (see :func:`write_lines`): an
    input line is read (through ``history.lines``/``history.records``) only when it may
    change, and parsed only when it does or may: its blocks changed, a new line follows
    it, or it may point at a dropped or re-parented line."""
    verbatim = history.lines is not None
    lines = source_lines(history.lines, history.records)
    records = history.records
    changed_lines = plan.changed
    inserted = plan.inserted
    dropped = plan.dropped
    repoint: dict[str, str] = {}  # uuid of a line a new line follows -> the new parent
    watch = _Watch(dropped.keys())
    gone = iter(plan.gone)
    next_gone = next(gone, -1)
    for index in itertools.chain((-1,), range(len(lines))):  # no list of every index
        record: Any = None
        if index >= 0:
            if index == next_gone:
                next_gone = next(gone, -1)  # a line left without blocks is dropped
            elif index in changed_lines:
                record = records[index]
                edited = dict(record)
                edited["message"] = dict(record["message"])
                edited["message"]["content"] = [
                    anthropic.block_to_raw(b) for b in changed_lines[index]
                ]
                yield _emit(None, edited, dropped, repoint)
            elif verbatim and index not in inserted and not watch.watching:
                yield index  # nothing it may point at changed
            else:
                text = lines[index]
                if index in inserted or watch.may_point(text):
                    record = records[index]
                    emitted = _emit(text, record, dropped, repoint)
                    yield index if verbatim and emitted is text else emitted
                else:
                    yield index if verbatim else text
        new = inserted.get(index)
        if not new:
            continue
        anchor = records[index] if index >= 0 and record is None else record
        anchor = anchor if isinstance(anchor, dict) else {}
        anchor_uuid = anchor.get("uuid")
        parent = anchor_uuid
        for block in new:
            line = _synthetic_line(block, anchor, parent)
            yield _emit(None, line, dropped, {})
            parent = line["uuid"]
        if isinstance(anchor_uuid, str) and isinstance(parent, str) and parent != anchor_uuid:
            # Lines that hung below the anchor now hang below the last new line.
            repoint.setdefault(anchor_uuid, parent)
            watch.add(anchor_uuid)


class _Watch:
    """Which input lines may need their ``parentUuid``/``leafUuid`` re-pointed: those
    whose text holds a uuid of a dropped or re-parented line. A uuid of plain ASCII
    letters, digits and ``-_.:`` is in a line's JSON text as it is, or ``\\u``-escaped:
    a line with such an escape is parsed. A uuid of other characters (which JSON may
    spell in more ways), or many uuids to look for (more than ``_MAX``: then none is
    held), make every line parsed."""

    __slots__ = ("many", "plain", "uuids")

    _MAX: Final = 16
    _PLAIN: Final = re.compile(r"[A-Za-z0-9_.:-]+")

    def __init__(self, uuids: Iterable[str]) -> None:
        self.uuids: set[str] = set()
        self.many = False
        self.plain = True
        for value in uuids:
            self.add(value)

    def add(self, uuid_text: str) -> None:
        if self._PLAIN.fullmatch(uuid_text) is None:
            self.plain = False
        if not self.many:
            self.uuids.add(uuid_text)
            if len(self.uuids) > self._MAX:
                self.many = True
                self.uuids = set()

    @property
    def watching(self) -> bool:
        """Whether any uuid is looked for."""
        return self.many or bool(self.uuids)

    def may_point(self, text: str) -> bool:
        if not self.watching:
            return False
        if not self.plain or self.many or "\\u" in text:
            return True
        return any(value in text for value in self.uuids)


def _assign_lines(blocks: list[Block]) -> list[int | None]:
    """The line each block of one message is written to, so file order is block order.

    A block moved before blocks of earlier lines (text moved before ``tool_use``, a
    ``tool_result`` moved before text) joins the earliest of those lines; a line left
    without blocks is dropped. New blocks (no origin) get ``None``.
    """
    assigned: list[int | None] = [None] * len(blocks)
    floor: int | None = None
    for position in range(len(blocks) - 1, -1, -1):
        origin = blocks[position].origin
        if origin is None:
            continue
        floor = origin if floor is None else min(origin, floor)
        assigned[position] = floor
    return assigned


def _emit(
    text: str | None, record: Any, dropped: SpilledMap | dict[str, Any], repoint: dict[str, str]
) -> str:
    """The line's text, with ``parentUuid``/``leafUuid`` re-pointed: below the last new
    line when it hung below that line's anchor (``repoint``), and past dropped lines."""
    if not isinstance(record, dict):
        return text if text is not None else dump_line(record)
    changed = dict(record)
    parent_uuid = record.get("parentUuid")
    if isinstance(parent_uuid, str) and parent_uuid in repoint:
        changed["parentUuid"] = repoint[parent_uuid]
    for key in ("parentUuid", "leafUuid"):
        value = changed.get(key)
        seen: set[str] = set()
        while isinstance(value, str) and value not in seen:
            parent = dropped.get(value, _ABSENT)
            if parent is _ABSENT:
                break
            seen.add(value)
            value = parent
        if key in changed:
            changed[key] = value
    if text is not None and changed == record:
        return text
    return dump_line(changed)


def _synthetic_line(block: Block, anchor: dict[str, Any], parent: Any) -> dict[str, Any]:
    session = anchor.get("sessionId")
    line: dict[str, Any] = {"parentUuid": parent}
    for key in _COPIED_KEYS:
        if key in anchor:
            line[key] = anchor[key]
    line["type"] = "user"
    line["message"] = {"role": "user", "content": [block.raw]}
    line["uuid"] = str(uuid.uuid5(_NAMESPACE, f"agc-synthetic-result:{session}:{block.call_id}"))
    if "timestamp" in anchor:
        line["timestamp"] = anchor["timestamp"]
    return line


def wrap_results(blocks: list[Block]) -> list[Message]:
    return anthropic.wrap_results(blocks)


SPEC = FormatSpec(
    name="claude-code",
    family="anthropic",
    line_based=True,
    can_move=False,
    read=read,
    write=write,
    synthesize=anthropic.synthesize,
    wrap_results=wrap_results,
    write_lines=write_lines,
)
