"""A secret the agent streams in pieces is redacted whole (agc.serve._stream).

The agent's text reaches the service as delta notifications of an item (a few
characters of the model's reply each, 8 KiB reads of a command's output). The classes
of split tested: a key cut at every position across two deltas; streamed 5 and 1
characters at a time; split at arbitrary points into any number of deltas interleaved
with another item's deltas (a hypothesis property over every kind of the detector's
corpus); an item that never completes; a stream over the hold bound cut anywhere around
the release point; the MCP protocol's ``codex/event`` deltas. Each checks every record
released, and the concatenation of the released texts per item and over all items, for
any 12-character piece of the secret (as the detector's corpus does).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agc._core.redact import redact_text
from agc.serve._stream import (
    FORCE_BYTES,
    HOLD_BYTES,
    STREAM_BYTES,
    TAIL_CHARS,
    TURN_HOLD_BYTES,
    DeltaHold,
    HeldEvent,
)
from tests._core.secret_corpus import Secret, build_secrets, survivors
from tests.conftest import examples
from tests.serve.helpers import split_at

REACHES_INSIDE = {
    "agc.serve._stream": "the stream hold-back limits and the delta hold",
}

DELTA = "item/agentMessage/delta"
OUTPUT = "item/commandExecution/outputDelta"


def _found_whole(secret: Secret, carrier: str) -> bool:
    """The detector redacts this carrier when it is not split (the baseline)."""
    return all(
        survivors(secret.pieces(), redact_text(text)) == []
        for text in (
            f"said: {carrier}\nend",
            f"The key is {carrier}\n",
            f"Here it is: {carrier} — ok.",
        )
    )


CASES: list[tuple[Secret, str]] = [
    (secret, carrier)
    for secret in build_secrets(copies=1)
    for carrier in secret.carriers
    if _found_whole(secret, carrier)
]
ONE_PER_KIND = list({secret.detects_as: (secret, c) for secret, c in CASES}.values())


def _delta(item: str, text: str, method: str = DELTA) -> HeldEvent:
    return (
        method,
        {"threadId": "t", "turnId": "turn-1", "itemId": item, "delta": text},
        "notification",
    )


def _completed(item: str, text: str) -> HeldEvent:
    return (
        "item/completed",
        {"turnId": "turn-1", "item": {"id": item, "type": "agentMessage", "text": text}},
        "notification",
    )


def _feed(events: Iterable[HeldEvent], *, drain: bool = True) -> tuple[list[HeldEvent], DeltaHold]:
    hold = DeltaHold()
    out: list[HeldEvent] = []
    for method, params, kind in events:
        out += hold.accept(method, params, kind)
    if drain:
        out += hold.drain()
    return out, hold


def _texts(out: Sequence[HeldEvent], item: str | None = None) -> list[str]:
    """The delta texts released (of one item, or of all), in order."""
    found = []
    for method, params, _ in out:
        if method.endswith("elta") and (item is None or params.get("itemId") == item):
            text = params["msg"]["delta"] if method == "codex/event" else params["delta"]
            found.append(text)
    return found


def _leaks(secret: Secret, out: Sequence[HeldEvent], items: Iterable[str]) -> list[str]:
    """Pieces of the secret in any released delta record or any rebuilt concatenation
    (the other events are handed on unchanged: the trace redacts them)."""
    texts = [json.dumps(params) for method, params, _ in out if method.endswith("elta")]
    texts += ["".join(_texts(out, item)) for item in items]
    texts.append("".join(_texts(out)))
    return [piece for text in texts for piece in survivors(secret.pieces(), text)]


def _stream(text: str, pieces: list[str], item: str = "msg_1") -> list[HeldEvent]:
    return [
        ("item/started", {"item": {"id": item, "type": "agentMessage"}}, "notification"),
        *(_delta(item, piece) for piece in pieces),
        _completed(item, text),
        ("turn/completed", {"turn": {"id": "turn-1", "status": "completed"}}, "notification"),
    ]


def test_the_corpus_covers_the_detector_kinds() -> None:
    assert len(ONE_PER_KIND) >= 30  # every kind the detector finds without a split


@pytest.mark.parametrize(("secret", "carrier"), ONE_PER_KIND, ids=lambda v: getattr(v, "kind", ""))
def test_a_key_split_at_every_position_across_two_deltas_never_leaks(
    secret: Secret, carrier: str
) -> None:
    text = f"Here it is: {carrier} — ok."
    for cut in range(1, len(text)):
        out, _ = _feed(_stream(text, [text[:cut], text[cut:]]))
        assert _leaks(secret, out, ["msg_1"]) == [], (secret.kind, cut)
        assert "".join(_texts(out)) == redact_text(text)


@pytest.mark.parametrize("size", [1, 5])
@pytest.mark.parametrize(("secret", "carrier"), CASES, ids=lambda v: getattr(v, "kind", ""))
def test_a_key_streamed_a_few_characters_at_a_time_never_leaks(
    secret: Secret, carrier: str, size: int
) -> None:
    text = f"The key is {carrier}\n"
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    out, _ = _feed(_stream(text, pieces))
    assert _leaks(secret, out, ["msg_1"]) == []
    joined = [params for method, params, _ in out if method == DELTA]
    assert len(joined) == 1  # one record holds the item's text, and says how many deltas
    assert joined[0]["agcJoined"] == {"deltas": len(pieces), "release": "completed", "part": 0}
    assert joined[0]["delta"] == redact_text(text)


_FILLER = st.text(alphabet=st.sampled_from(list("abc xyz019_-=:./\"'\n\t{}()密ä")), max_size=30)


@st.composite
def _interleaved(draw: st.DrawFn) -> tuple[Secret, list[HeldEvent], str]:
    secret, carrier = draw(st.sampled_from(CASES))
    text = (
        draw(_FILLER)
        + draw(st.sampled_from([" ", "\n", ": "]))
        + carrier
        + draw(st.sampled_from([" ", "\n", "."]))
        + draw(_FILLER)
    )
    cuts = draw(st.lists(st.integers(0, len(text)), max_size=40))
    pieces = split_at(text, cuts)
    other = draw(_FILLER) + "ls -la\nREADME.md\n" + draw(_FILLER)
    others = split_at(other, draw(st.lists(st.integers(0, len(other)), max_size=10)))
    order = draw(st.permutations([0] * len(pieces) + [1] * len(others)))
    events: list[HeldEvent] = [
        ("item/started", {"item": {"id": "msg_1", "type": "agentMessage"}}, "notification"),
        ("item/started", {"item": {"id": "call_1", "type": "commandExecution"}}, "notification"),
    ]
    mine, theirs = iter(pieces), iter(others)
    for which in order:
        if which == 0:
            events.append(_delta("msg_1", next(mine)))
        else:
            events.append(_delta("call_1", next(theirs), OUTPUT))
    complete_first = draw(st.booleans())
    closing = [
        ("item/completed", {"item": {"id": "call_1", "type": "commandExecution"}}, "notification"),
        _completed("msg_1", text),
    ]
    events += closing if complete_first else closing[::-1]
    if draw(st.booleans()):  # the turn may die before anything completes
        events = events[: len(events) - draw(st.integers(0, 2))]
    return secret, events, text


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_interleaved())
def test_property_a_key_in_any_number_of_interleaved_deltas_never_leaks(
    case: tuple[Secret, list[HeldEvent], str],
) -> None:
    secret, events, text = case
    assume(survivors(secret.pieces(), redact_text(text)) == [])  # found when not split
    out, hold = _feed(events)
    assert _leaks(secret, out, ["msg_1", "call_1"]) == []
    assert "".join(_texts(out, "msg_1")) == redact_text(text)
    assert hold.held_bytes == 0
    # Every other event is handed on unchanged and in order; deltas only as joined.
    others = [e for e in events if not e[0].endswith("elta")]
    assert [e for e in out if not e[0].endswith("elta")] == others
    assert sum(p["agcJoined"]["deltas"] for _, p, _ in out if "agcJoined" in p) == len(
        [e for e in events if e[0].endswith("elta")]
    )
    # A joined record comes before its item's completion.
    for index, (method, params, _) in enumerate(out):
        if method == "item/completed":
            item = params["item"]["id"]
            assert not [p for _, p, _ in out[index + 1 :] if p.get("itemId") == item]


def test_an_item_that_never_completes_is_released_at_the_turns_end() -> None:
    secret, carrier = ONE_PER_KIND[0]
    text = f"partial {carrier} and then the agent died"
    pieces = [text[i : i + 3] for i in range(0, len(text), 3)]
    held, hold = _feed([_delta("msg_1", p) for p in pieces], drain=False)
    assert held == []  # nothing released while the item streams
    assert hold.held_bytes == len(text.encode()) + STREAM_BYTES  # one stream held
    out = hold.drain()
    assert [(m, p["agcJoined"]) for m, p, _ in out] == [
        (DELTA, {"deltas": len(pieces), "release": "turn-end", "part": 0})
    ]
    assert out[0][1]["delta"] == redact_text(text)
    assert _leaks(secret, out, ["msg_1"]) == []
    assert hold.drain() == []


def test_a_turn_completed_releases_every_stream_before_it() -> None:
    out, _ = _feed(
        [
            _delta("a", "one "),
            _delta("b", "two", OUTPUT),
            ("turn/completed", {"turn": {"id": "turn-1"}}, "notification"),
        ],
        drain=False,
    )
    assert [(m, p.get("delta")) for m, p, _ in out] == [
        (DELTA, "one "),
        (OUTPUT, "two"),
        ("turn/completed", None),
    ]


def test_events_of_other_kinds_pass_unchanged() -> None:
    events: list[HeldEvent] = [
        ("item/started", {"item": {"id": "x", "type": "agentMessage"}}, "notification"),
        ("item/mcpToolCall/progress", {"itemId": "x", "message": "halfway"}, "notification"),
        ("item/reasoning/summaryPartAdded", {"itemId": "x", "summaryIndex": 1}, "notification"),
        ("item/commandExecution/requestApproval", {"itemId": "x", "delta": "d"}, "server-request"),
        (DELTA, {"itemId": "x", "delta": 7}, "notification"),  # not text: not a stream
        ("warning", {"message": "slow"}, "notification"),
    ]
    out, _ = _feed(events)
    assert out == events


def test_reasoning_parts_are_separate_streams_of_one_item() -> None:
    method = "item/reasoning/summaryTextDelta"
    params = [{"itemId": "r", "summaryIndex": i % 2, "delta": f"p{i} "} for i in range(4)]
    out, _ = _feed([*((method, p, "notification") for p in params), _completed("r", "")])
    assert [(p["summaryIndex"], p["delta"]) for _, p, _ in out[:2]] == [
        (0, "p0 p2 "),
        (1, "p1 p3 "),
    ]


def _reads(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


_LINE = "building module %05d: ok, 142 files, no warnings\n"


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=st.sampled_from(CASES),
    read=st.sampled_from([8192, 8191, 4096, 1000, 65_537]),
    near=st.integers(-200, 10),
    anywhere=st.one_of(st.none(), st.integers(0, 2 * HOLD_BYTES)),
)
def test_property_a_key_anywhere_in_a_long_output_never_leaks_at_a_bound(
    case: tuple[Secret, str], read: int, near: int, anywhere: int | None
) -> None:
    secret, carrier = case
    # Where the first bound release would cut without a clean-cut search: the key is
    # put across it (``near``), or anywhere in the output.
    first_cut = (HOLD_BYTES // read + 1) * read - TAIL_CHARS
    where = max(first_cut + near, 0) if anywhere is None else anywhere
    log = "".join(_LINE % i for i in range(2 * HOLD_BYTES // len(_LINE) + 50))
    text = log[:where] + " " + carrier + "\n" + log[where:]
    hold = DeltaHold()
    out: list[HeldEvent] = []
    peak = 0
    for piece in _reads(text, read):
        out += hold.accept(*_delta("call_1", piece, OUTPUT))
        peak = max(peak, hold.held_bytes)
    out += hold.accept(*_completed("call_1", ""))
    assert _leaks(secret, out, ["call_1"]) == []
    assert "".join(_texts(out)) == redact_text(text)
    releases = [p["agcJoined"] for _, p, _ in out if "agcJoined" in p]
    assert [r["release"] for r in releases][:-1] == ["bound"] * (len(releases) - 1)
    assert [r["part"] for r in releases] == list(range(len(releases)))
    assert peak <= HOLD_BYTES + read  # the bound holds


def test_a_bound_release_keeps_a_tail_and_redacts_across_it() -> None:
    secret, carrier = next(c for c in CASES if c[0].detects_as == "openai-key")
    reads = HOLD_BYTES // 4096 + 1  # the read that takes the stream over its bound
    target = reads * 4096 - TAIL_CHARS  # where the cut would fall
    head = "x" * (target - 21) + "\n"  # the key starts 20 characters before it
    text = head + carrier + " " + "y" * (TAIL_CHARS + 100)
    out, _ = _feed([_delta("c", p, OUTPUT) for p in _reads(text, 4096)])
    assert _leaks(secret, out, ["c"]) == []
    first = out[0][1]
    assert (first["delta"], first["agcJoined"]["release"]) == (head, "bound")
    assert out[1][1]["delta"].startswith("[REDACTED:openai-key] yyy")


def test_a_stream_with_no_clean_cut_is_released_whole_at_the_force_bound() -> None:
    # A private key block of 300 KB: the detector's span covers every cut candidate.
    body = "\n".join("QUJDRGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo0NTY3ODkwKy8=" for _ in range(6500))
    text = "-----BEGIN PRIVATE KEY-----\n" + body + "\n-----END PRIVATE KEY-----\n"
    hold = DeltaHold()
    out: list[HeldEvent] = []
    peak = 0
    for piece in _reads(text, 8192):
        out += hold.accept(*_delta("c", piece, OUTPUT))
        peak = max(peak, hold.held_bytes)
    out += hold.drain()
    assert peak <= FORCE_BYTES + 8192
    assert out[0][1]["agcJoined"]["release"] == "bound-forced"
    assert "QUJDRGVm" not in out[0][1]["delta"]


def test_all_streams_of_a_turn_together_stay_under_the_turn_bound() -> None:
    hold = DeltaHold()
    out: list[HeldEvent] = []
    peak = 0
    piece = "z" * 4000 + "\n"
    for round_ in range(16):
        for item in range(40):
            out += hold.accept(*_delta(f"i{item}", piece, OUTPUT))
            peak = max(peak, hold.held_bytes)
        del round_
    assert peak <= TURN_HOLD_BYTES + len(piece)
    out += hold.drain()
    total = sum(len(t) for t in _texts(out))
    assert total == 16 * 40 * len(piece)  # nothing lost


def test_many_small_streams_that_never_complete_stay_under_the_turn_bound() -> None:
    # A delta for each of many item ids, none completed: the streams themselves (not
    # only their text) count toward the turn's bound, and nothing accepted is lost.
    hold = DeltaHold()
    out: list[HeldEvent] = []
    items = 3 * TURN_HOLD_BYTES // STREAM_BYTES
    most = 0
    for number in range(items):
        out += hold.accept(*_delta(f"i{number}", f"<{number}>"))
        most = max(most, len(hold._streams))
        assert hold.held_bytes <= TURN_HOLD_BYTES
    assert most <= TURN_HOLD_BYTES // STREAM_BYTES
    out += hold.drain()
    assert sum(p["agcJoined"]["deltas"] for _, p, _ in out) == items
    released: dict[str, str] = {}
    for _, params, _ in out:
        released[params["itemId"]] = released.get(params["itemId"], "") + params["delta"]
    assert released == {f"i{n}": f"<{n}>" for n in range(items)}


def _mcp(kind: str, **msg: Any) -> HeldEvent:
    return ("codex/event", {"id": "1", "msg": {"type": kind, **msg}}, "notification")


@pytest.mark.parametrize("size", [1, 5])
def test_mcp_server_deltas_are_joined_until_their_message(size: int) -> None:
    secret, carrier = next(c for c in CASES if c[0].detects_as == "github-token")
    text = f"token: {carrier}"
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    events = [
        *(_mcp("agent_message_delta", delta=p) for p in pieces),
        _mcp("agent_reasoning_delta", delta="thinking"),
        _mcp("agent_message", message=text),
        _mcp("task_complete"),
    ]
    out, _ = _feed(events, drain=False)
    assert [p["msg"]["type"] for _, p, _ in out] == [
        "agent_message_delta",
        "agent_message",
        "agent_reasoning_delta",
        "task_complete",
    ]
    assert out[0][1]["msg"]["delta"] == redact_text(text)
    assert out[0][1]["agcJoined"]["deltas"] == len(pieces)
    assert not survivors(secret.pieces(), json.dumps(out[0][1]))
    assert re.search(r"\[REDACTED:", out[0][1]["msg"]["delta"])


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _chunks_of(out: Sequence[HeldEvent]) -> bytes:
    """The bytes of every released base64 ``chunk``, in order."""
    return b"".join(
        base64.b64decode(p["msg"]["chunk"])
        for m, p, _ in out
        if m == "codex/event" and p["msg"]["type"] == "exec_command_output_delta"
    )


@pytest.mark.parametrize("size", [1, 7, 8192])
def test_mcp_server_command_output_in_base64_chunks_is_redacted_as_bytes(size: int) -> None:
    secret, carrier = next(c for c in CASES if c[0].detects_as == "openai-key")
    # A key, a character of two bytes and a byte that is not UTF-8, cut anywhere.
    data = b"x" * 9000 + f"\nkey: {carrier} \u00e9t\u00e9\n".encode() + b"\xff done\n"
    chunks = [data[i : i + size] for i in range(0, len(data), size)]
    events = [
        *(
            _mcp("exec_command_output_delta", call_id="c1", stream="stdout", chunk=_b64(c))
            for c in chunks
        ),
        _mcp("exec_command_end", call_id="c1", exit_code=0),
    ]
    out, _ = _feed(events, drain=False)
    assert [p["msg"]["type"] for _, p, _ in out] == [
        "exec_command_output_delta",
        "exec_command_end",
    ]
    assert out[0][1]["agcJoined"]["deltas"] == len(chunks)
    sealed = _chunks_of(out)
    assert secret.value.encode() not in sealed
    text = data.decode("utf-8", "surrogateescape")
    assert sealed == redact_text(text).encode("utf-8", "surrogateescape")  # every other byte kept


def test_mcp_server_base64_output_over_the_bound_never_leaks() -> None:
    secret, carrier = next(c for c in CASES if c[0].detects_as == "github-token")
    reads = HOLD_BYTES // 8192 + 1
    where = reads * 8192 - TAIL_CHARS - 10  # across where a naive cut would fall
    log = ("".join(_LINE % i for i in range(3000))).encode()
    data = log[:where] + b"\n" + carrier.encode() + b"\n" + log[where:]
    events = [
        _mcp("exec_command_output_delta", call_id="c2", stream="stdout", chunk=_b64(c))
        for c in (data[i : i + 8192] for i in range(0, len(data), 8192))
    ]
    out, _ = _feed(events)
    assert len(out) > 2  # released at the bound, in parts
    sealed = _chunks_of(out)
    assert survivors(secret.pieces(), sealed.decode()) == []
    assert sealed == redact_text(data.decode()).encode()


@pytest.mark.parametrize(("secret", "carrier"), ONE_PER_KIND, ids=lambda v: getattr(v, "kind", ""))
def test_a_key_in_a_short_stream_the_turn_bound_releases_never_leaks(
    secret: Secret, carrier: str
) -> None:
    # Many open streams fill the turn's bound; the stream that then crosses it is the
    # largest, shorter than a tail of TAIL_CHARS, and ends in the first part of a key.
    filler, head = "a " * 3950, "b " * 4050
    count = (TURN_HOLD_BYTES - len(head)) // len(filler) + 1
    for cut in sorted({1, len(carrier) // 2, len(carrier) - 1}):
        events = [_delta(f"f{i}", filler, OUTPUT) for i in range(count)]
        events += [_delta("key", head + carrier[:cut], OUTPUT)]
        events += [_delta("key", carrier[cut:] + " end", OUTPUT)]
        out, _ = _feed(events)
        releases = [p["agcJoined"]["release"] for _, p, _ in out if p.get("itemId") == "key"]
        assert releases[0] == "bound", releases  # the turn's bound took this stream
        assert _leaks(secret, out, ["key"]) == [], (secret.kind, cut)
        assert "".join(_texts(out, "key")) == redact_text(head + carrier + " end")


_NO_SURROGATES = st.characters(exclude_categories=["Cs"])


@given(
    st.lists(st.tuples(st.booleans(), st.text(_NO_SURROGATES, min_size=1, max_size=20)), min_size=1)
)
@settings(max_examples=examples(60), deadline=None)
def test_property_mixed_text_and_base64_pieces_of_one_output_are_all_kept(
    pieces: list[tuple[bool, str]],
) -> None:
    # One command's output whose pieces come as text (msg.delta) or as base64 bytes
    # (msg.chunk), in any order: no piece raises, none is dropped.
    events = [
        _mcp("exec_command_output_delta", call_id="c1", stream="stdout", chunk=_b64(t.encode()))
        if binary
        else _mcp("exec_command_output_delta", call_id="c1", stream="stdout", delta=t)
        for binary, t in pieces
    ]
    events.append(_mcp("exec_command_end", call_id="c1", exit_code=0))
    out, _ = _feed(events, drain=False)
    released = [p for m, p, _ in out if p["msg"]["type"] == "exec_command_output_delta"]
    assert sum(p["agcJoined"]["deltas"] for p in released) == len(pieces)
    text = "".join(t for binary, t in pieces if not binary)
    data = "".join(t for binary, t in pieces if binary)
    assert "".join(p["msg"]["delta"] for p in released if "delta" in p["msg"]) == redact_text(text)
    sealed = b"".join(base64.b64decode(p["msg"]["chunk"]) for p in released if "chunk" in p["msg"])
    assert sealed.decode("utf-8", "surrogateescape") == redact_text(data)
