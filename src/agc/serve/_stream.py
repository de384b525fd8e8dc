"""Streamed text held per item, so that a secret split over deltas is redacted whole.

The agent streams an item's text in pieces: the Codex app-server protocol (v2) sends
``item/agentMessage/delta``, ``item/plan/delta``, ``item/reasoning/summaryTextDelta``,
``item/reasoning/textDelta``, ``item/commandExecution/outputDelta`` and
``item/fileChange/outputDelta`` notifications (``{threadId, turnId, itemId, delta}``,
plus ``summaryIndex`` / ``contentIndex`` for reasoning) before the item's
``item/completed``; ``codex mcp-server`` sends ``codex/event`` notifications whose
``msg.type`` ends in ``_delta`` (``agent_message_delta`` …, text in ``msg.delta``)
before the message they build (``agent_message`` …), and a command's output as base64
bytes (``exec_command_output_delta``, ``msg.chunk``) before its ``exec_command_end``.
A key cut in two by a read boundary, or printed by the model a few characters at a
time, is in no single piece: redacting each piece on its own would seal the key in
clear across consecutive records (and a key in base64 is not seen at all).

:class:`DeltaHold` therefore holds a stream's pieces (a stream: one item's text of one
delta method and index) and hands on, in their place, **one joined delta event**: the
first piece's params with the text replaced by the secret detector's output over the
joined text, and ``agcJoined: {"deltas", "release", "part"}``. A stream is released

* ``completed``: when its item completes (``item/completed`` with its ``itemId``, the
  message its ``codex/event`` deltas build, ``item_completed`` or an ``…_end`` event
  with its ``item_id`` / ``call_id``), just before that event. A base64 stream is
  redacted as text (its bytes read as UTF-8, other bytes kept as they are) and recorded
  as base64 again;
* ``turn-end``: when the turn completes (``turn/completed``, ``task_complete``,
  ``turn_aborted``) or ends in any other way (:meth:`DeltaHold.drain`: a dead agent, a
  timeout, a cancel), so the accepted text is never lost;
* ``bound``: when it holds more than :data:`HOLD_BYTES` (UTF-8) or the turn's streams
  together more than :data:`TURN_HOLD_BYTES`, each counting :data:`STREAM_BYTES` more
  (then the largest stream, dropped from the hold once it holds nothing; one of at most
  twice :data:`TAIL_CHARS` characters keeps half of its text held). Only text up to
  a *clean cut* is released: a position at least :data:`TAIL_CHARS` characters before
  the end that no secret the detector finds crosses (see :func:`clean_cut`). The rest
  stays held and is redacted again with what follows. A secret of at most
  :data:`TAIL_CHARS` characters (with up to twice that of the context its kind needs
  before it), and a private key block shorter than :data:`FORCE_BYTES`, is thus never
  cut.
  When no clean cut is found among the candidates (detected secrets cover all of
  them), the stream is held further, up to :data:`FORCE_BYTES`, where everything held
  is released redacted (``bound-forced``).

Every other event is handed on unchanged, in order. Only held text is lost when the
process itself is killed (at most :data:`HOLD_BYTES` per open stream, :data:`FORCE_BYTES`
while no clean cut is found, about :data:`TURN_HOLD_BYTES` per turn): what was handed on
was written at once.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from agc._core.redact import DEFAULT_MARKER, RedactionStats, redact_text

__all__ = [
    "FORCE_BYTES",
    "HOLD_BYTES",
    "STREAM_BYTES",
    "TAIL_CHARS",
    "TURN_HOLD_BYTES",
    "DeltaHold",
    "HeldEvent",
    "clean_cut",
]

HOLD_BYTES: Final = 65_536
"""A stream holding more UTF-8 bytes than this is released up to a clean cut."""
TAIL_CHARS: Final = 8_192
"""Characters kept held after a bound release (the longest secret never cut)."""
FORCE_BYTES: Final = 4 * HOLD_BYTES
"""A stream with no clean cut is released whole, redacted, past this many bytes."""
TURN_HOLD_BYTES: Final = 1_048_576
"""All streams of a turn together hold at most about this many bytes."""
STREAM_BYTES: Final = 1_024
"""What each open stream counts toward :data:`TURN_HOLD_BYTES` besides its text (its
bookkeeping), so that many small streams (a delta for each of many item ids that never
complete) are bounded too: at most about a thousand are held at once."""

_CUT_TRIES: Final = 8
# The detector's replacement (DEFAULT_MARKER, any kind) at the end of a text, but spaces.
_ENDS_IN_MARKER: Final = re.compile(
    re.escape(DEFAULT_MARKER).replace(re.escape("{kind}"), "[a-z0-9-]+") + r"\s*\Z"
)
_TURN_END_METHODS: Final = frozenset({"turn/completed"})
_MCP_TURN_END: Final = frozenset({"task_complete", "turn_aborted"})

#: ``(method, params, kind)``: an event to record, in the supervisor's terms.
HeldEvent = tuple[str, Mapping[str, Any], str]


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


@dataclass
class _Stream:
    method: str
    params: Mapping[str, Any]  # the first held piece's params
    item_id: str | None
    mcp_type: str | None  # msg.type of a codex/event delta
    binary: bool = False  # base64 chunks of bytes (codex/event ``msg.chunk``)
    pieces: list[str] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)
    held_bytes: int = 0
    deltas: int = 0
    part: int = 0
    retry_at: int = HOLD_BYTES

    @property
    def text(self) -> str:
        """What is held, as text (bytes read as UTF-8, any other byte kept escaped)."""
        if self.binary:
            return b"".join(self.raw).decode("utf-8", "surrogateescape")
        return "".join(self.pieces)

    def add(self, piece: str | bytes) -> None:
        if isinstance(piece, bytes):
            self.raw.append(piece)
            self.held_bytes += len(piece)
        else:
            self.pieces.append(piece)
            self.held_bytes += _utf8_len(piece)
        self.deltas += 1

    def keep(self, rest: str) -> None:
        """Hold only ``rest`` (the end of :attr:`text`) from now on."""
        if self.binary:
            self.raw = [rest.encode("utf-8", "surrogateescape")] if rest else []
            self.held_bytes = len(self.raw[0]) if rest else 0
        else:
            self.pieces = [rest] if rest else []
            self.held_bytes = _utf8_len(rest)
        self.deltas = 0
        self.part += 1
        self.retry_at = HOLD_BYTES


def _chunk(msg: Mapping[str, Any]) -> bytes | None:
    """The bytes of a ``codex/event`` delta's base64 ``chunk`` (RFC 4648), or ``None``."""
    chunk = msg.get("chunk")
    if not isinstance(chunk, str):
        return None
    try:
        return base64.b64decode(chunk, validate=True)
    except (binascii.Error, ValueError):
        return None


def _delta_key(method: str, params: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The stream a delta notification belongs to, or ``None`` for any other event."""
    if method == "codex/event":
        msg = params.get("msg")
        if not isinstance(msg, Mapping):
            return None
        kind = msg.get("type")
        if not (isinstance(kind, str) and kind.endswith("_delta")):
            return None
        if not isinstance(msg.get("delta"), str) and _chunk(msg) is None:
            return None
        item = msg.get("item_id", msg.get("call_id"))
        text = isinstance(msg.get("delta"), str)  # else base64 bytes: a stream of its own
        return (method, kind, str(item), str(msg.get("stream")), str(params.get("id")), text)
    if not (method.startswith("item/") and method.lower().endswith("delta")):
        return None
    if not isinstance(params.get("delta"), str) or not isinstance(params.get("itemId"), str):
        return None
    return (
        method,
        params.get("itemId"),
        str(params.get("summaryIndex")),
        str(params.get("contentIndex")),
        str(params.get("turnId")),
    )


def _with_text(stream: _Stream, text: str, release: str, deltas: int) -> HeldEvent:
    params = dict(stream.params)
    if stream.binary:
        chunk = base64.b64encode(text.encode("utf-8", "surrogateescape")).decode("ascii")
        params["msg"] = {**dict(params["msg"]), "chunk": chunk}
    elif stream.mcp_type is not None:
        params["msg"] = {**dict(params["msg"]), "delta": text}
    else:
        params["delta"] = text
    params["agcJoined"] = {"deltas": deltas, "release": release, "part": stream.part}
    return (stream.method, params, "notification")


def _candidates(text: str, target: int) -> list[int]:
    """Cut positions to try, latest first: ``target``, the line breaks and spaces just
    before it, then steps back over one more tail."""
    found: list[int] = [target]
    for sep in ("\n", " "):
        at = text.rfind(sep, 0, target)
        if at >= 0:
            found.append(at + 1)
    step = max(TAIL_CHARS // _CUT_TRIES, 1)
    found += [target - k * step for k in range(1, _CUT_TRIES + 1)]
    return sorted({c for c in found if 0 < c <= target}, reverse=True)


def clean_cut(
    text: str, tail: int = TAIL_CHARS, stats: RedactionStats | None = None
) -> tuple[int, str] | None:
    """A clean cut of ``text``: a position ``c`` at least ``tail`` characters before its
    end that no secret the detector finds crosses, with the detector's output over
    ``text[:c]`` (counted in ``stats``); ``None`` when no candidate is clean.

    Two tests, both needed: around ``c`` (``2 * tail`` characters before it, ``tail``
    after), the detector's output over the two sides equals its output over the whole
    window, so no secret of at most ``tail`` characters crosses ``c``, nor needs context
    from the other side; and the output over ``text[:c]`` does not end in a replacement,
    (but white space), so no longer secret (a private key block, found up to where it
    is cut off) runs on across ``c``.
    """
    for cut in _candidates(text, len(text) - tail):
        start = max(cut - 2 * tail, 0)
        window = text[start : cut + tail]
        split = cut - start
        if redact_text(window[:split]) + redact_text(window[split:]) != redact_text(window):
            continue
        counted = RedactionStats()
        head = redact_text(text[:cut], counted)
        if _ENDS_IN_MARKER.search(head):
            continue
        if stats is not None:
            stats.by_kind.update(counted.by_kind)
        return cut, head
    return None


@dataclass
class DeltaHold:
    """One turn's held streams (see the module docstring).

    :meth:`accept` takes each event as the agent sent it and returns the events to
    record now, in order; :meth:`drain` returns the rest at the turn's end. ``stats``
    counts the secrets replaced in released text.
    """

    stats: RedactionStats = field(default_factory=RedactionStats)
    _streams: dict[tuple[Any, ...], _Stream] = field(default_factory=dict)
    _text_bytes: int = 0  # the streams' held_bytes, summed as they change

    @property
    def held_bytes(self) -> int:
        """UTF-8 bytes held now, over every stream, plus :data:`STREAM_BYTES` for each."""
        return self._text_bytes + STREAM_BYTES * len(self._streams)

    def accept(self, method: str, params: Mapping[str, Any], kind: str) -> list[HeldEvent]:
        """The events to record for one event of the agent (``kind`` as the trace's)."""
        key = None if kind != "notification" else _delta_key(method, params)
        if key is None:
            return [*self._closed_by(method, params), (method, params, kind)]
        stream = self._streams.get(key)
        if stream is None:
            mcp_type = key[1] if method == "codex/event" else None
            item = params.get("itemId") if mcp_type is None else key[2]
            binary = mcp_type is not None and not isinstance(params["msg"].get("delta"), str)
            stream = _Stream(method, params, item, mcp_type, binary)
            self._streams[key] = stream
        before = stream.held_bytes
        if stream.binary:
            stream.add(_chunk(params["msg"]) or b"")
        else:
            stream.add(params["msg"]["delta"] if stream.mcp_type is not None else params["delta"])
        self._text_bytes += stream.held_bytes - before
        out: list[HeldEvent] = []
        if stream.held_bytes > stream.retry_at:
            out += self._bound(stream)
        while self.held_bytes > TURN_HOLD_BYTES:
            largest_key = max(self._streams, key=lambda k: self._streams[k].held_bytes)
            largest = self._streams[largest_key]
            out += self._bound(largest, force=True)
            if not largest.held_bytes:
                del self._streams[largest_key]  # all it held is out: its bookkeeping too
        return out

    def drain(self) -> list[HeldEvent]:
        """Every stream still held, released whole (the turn ended)."""
        return [event for key in list(self._streams) for event in self._release(key, "turn-end")]

    # -- releases ----------------------------------------------------------------------

    def _closed_by(self, method: str, params: Mapping[str, Any]) -> list[HeldEvent]:
        if not self._streams:
            return []
        if method in _TURN_END_METHODS:
            return self.drain()
        if method == "item/completed":
            item = params.get("item")
            item_id = item.get("id") if isinstance(item, Mapping) else None
            keys = [
                key
                for key, stream in self._streams.items()
                if stream.mcp_type is None and stream.item_id == item_id
            ]
        elif method == "codex/event":
            msg = params.get("msg")
            if not isinstance(msg, Mapping):
                return []
            kind = msg.get("type")
            if kind in _MCP_TURN_END:
                return self.drain()
            ends = isinstance(kind, str) and (kind == "item_completed" or kind.endswith("_end"))
            done = str(msg.get("item_id", msg.get("call_id"))) if ends else None
            keys = [
                key
                for key, stream in self._streams.items()
                if stream.mcp_type is not None
                and (stream.mcp_type == f"{kind}_delta" or stream.item_id == done)
            ]
        else:
            return []
        return [event for key in keys for event in self._release(key, "completed")]

    def _release(self, key: tuple[Any, ...], release: str) -> list[HeldEvent]:
        stream = self._streams.pop(key)
        self._text_bytes -= stream.held_bytes
        text = stream.text
        if not text and not stream.deltas:
            return []  # everything it held went out at a bound already
        return [_with_text(stream, redact_text(text, self.stats), release, stream.deltas)]

    def _bound(self, stream: _Stream, *, force: bool = False) -> list[HeldEvent]:
        """Release a stream over its bound up to a clean cut (see the module docstring)."""
        text = stream.text
        found = clean_cut(text, stats=self.stats) if len(text) > TAIL_CHARS else None
        if found is None and force and 1 < len(text) <= 2 * TAIL_CHARS:
            # The turn's bound took a stream too short for a tail of TAIL_CHARS: keep
            # half of it held, so a secret at its end is not cut where it stops now.
            found = clean_cut(text, len(text) // 2, self.stats)
        if found is None and stream.held_bytes <= FORCE_BYTES and not force:
            stream.retry_at = stream.held_bytes + HOLD_BYTES // 4
            return []
        if found is None:
            cut, release = len(text), "bound-forced"
            head = redact_text(text, self.stats)
        else:
            (cut, head), release = found, "bound"
        event = _with_text(stream, head, release, stream.deltas)
        before = stream.held_bytes
        stream.keep(text[cut:])
        self._text_bytes -= before - stream.held_bytes
        return [event]
