"""write_many() is a loop of write(); a Canonical member is its value; the fast path is
the old rule.

Differential, against the writers' reference: a loop of ``write()`` for
``write_many()``, the parsed value for a :class:`~agc._core.json.Canonical`, and
:func:`agc._core.json.dumps` (the rule the writer has always applied: orjson, the
standard library when the line holds ``null`` or orjson refuses) for every line. Bad
records are mixed in anywhere: the batch stops there, with the same error, nothing
after it written and nothing before it lost.
"""

from __future__ import annotations

import math
from collections import UserDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc._core.json import canonical, dumps
from agc.errors import AgcError, RecordInvalidError
from agc.integrity import JsonlWriter, ToolEventWriter, TranscriptWriter
from tests.conftest import examples, fixed_clock
from tests.spellings import JSON_OBJECTS, JSON_VALUES, spellings

_BAD_RECORDS = st.sampled_from(
    [
        {"x": math.nan},
        {"x": [1, {"y": -math.inf}], "z": None},
        {"x": "\ud800"},
        {1: "int key"},
        {"seq": 1},
        {"ts": 2},
        {"run_id": "another run"},
        {"set": {1, 2}},
        ["not", "a", "mapping"],
        "text",
    ]
)
_RECORDS = st.lists(JSON_OBJECTS | _BAD_RECORDS | st.builds(UserDict, JSON_OBJECTS), max_size=12)
_WRITERS = st.sampled_from([TranscriptWriter, ToolEventWriter])
_SETTINGS = settings(
    max_examples=examples(150), suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _open(kind: type[JsonlWriter], store: Path, buffer_bytes: int) -> JsonlWriter:
    return kind(
        "r1",
        store=store,
        clock=fixed_clock(),
        buffer_bytes=buffer_bytes,
        checkpoint_records=3,
        checkpoint_interval_ms=0,
        fsync="none",
    )


def _state(writer: JsonlWriter) -> tuple[int, bytes, bytes]:
    """next_seq, the file's bytes and the checkpoints' bytes (after a flush)."""
    writer.flush()
    ckpt = writer.path.with_name(writer.path.name + ".ckpt")
    return writer.next_seq, writer.path.read_bytes(), ckpt.read_bytes() if ckpt.exists() else b""


@given(kind=_WRITERS, records=_RECORDS, buffer_bytes=st.sampled_from([0, 64, 1 << 16]))
@_SETTINGS
def test_write_many_is_a_loop_of_write(
    tmp_path_factory: pytest.TempPathFactory,
    kind: type[JsonlWriter],
    records: list[Any],
    buffer_bytes: int,
) -> None:
    loop_store, batch_store = tmp_path_factory.mktemp("loop"), tmp_path_factory.mktemp("batch")
    looped = _open(kind, loop_store, buffer_bytes)
    seqs: list[int] = []
    loop_error: AgcError | None = None
    for record in records:
        try:
            seqs.append(looped.write(record))
        except RecordInvalidError as exc:
            loop_error = exc
            break
    batched = _open(kind, batch_store, buffer_bytes)
    batch_error: AgcError | None = None
    try:
        got = batched.write_many(iter(records))
    except RecordInvalidError as exc:
        batch_error = exc
    else:
        assert list(got) == seqs
    if loop_error is None:
        assert batch_error is None
    else:
        assert type(batch_error) is type(loop_error)
        assert batch_error.message == loop_error.message
        assert batch_error.exit_code == loop_error.exit_code
        assert f"record {len(seqs)} of the batch" in "".join(batch_error.__notes__)
    # Nothing before the bad record lost, nothing after it written; the same checkpoints.
    assert _state(batched) == _state(looped)
    # Both stay usable and seal the same bytes.
    looped.write({"after": 1})
    batched.write_many([{"after": 1}])
    assert looped.close().digest == batched.close().digest
    assert looped.path.read_bytes() == batched.path.read_bytes()


def test_write_many_of_nothing_writes_nothing(store: Path) -> None:
    with TranscriptWriter("r1", store=store) as writer:
        assert writer.write_many([]) == range(0, 0)
        assert writer.write_many(iter([{"a": 1}, {"b": 2}])) == range(0, 2)
        assert writer.write_many({"c": n} for n in range(3)) == range(2, 5)
    assert writer.seal is not None
    assert writer.seal.records == 5


def test_a_generator_that_flushes_the_writer_keeps_the_batch_in_order(store: Path) -> None:
    """What ingest does: the input generator flushes the writer while it waits."""
    with TranscriptWriter("r1", store=store, clock=lambda: 7) as writer:

        def records() -> Iterator[dict[str, int]]:
            for n in range(2500):
                if n % 7 == 0:
                    writer.flush()
                yield {"n": n}

        assert writer.write_many(records()) == range(2500)
    lines = writer.path.read_bytes().splitlines()
    assert lines == [b'{"seq":%d,"ts":7,"n":%d}' % (n, n) for n in range(2500)]


# -- every line is the rule's line ------------------------------------------------------


@given(kind=_WRITERS, record=JSON_OBJECTS | st.builds(UserDict, JSON_OBJECTS))
@_SETTINGS
def test_each_line_is_the_rules_line(
    tmp_path_factory: pytest.TempPathFactory, kind: type[JsonlWriter], record: Any
) -> None:
    """The old writer's rule, as one call: orjson, or the standard library when the
    line holds "null" or orjson refuses (agc._core.json.dumps)."""
    for key in ("seq", "ts", "run_id"):  # reserved: refused (tested above)
        record.pop(key, None)
    store = tmp_path_factory.mktemp("store")
    with _open(kind, store, 0) as writer:
        writer.write(record)
        writer.write_many([record])
    stamp: dict[str, Any] = {"seq": 0, "ts": 1_764_460_800_000}
    if kind is ToolEventWriter:
        stamp["run_id"] = "r1"
    first = dumps({**stamp, **record}) + b"\n"
    second = dumps({**stamp, "seq": 1, "ts": stamp["ts"] + 1, **record}) + b"\n"
    assert writer.path.read_bytes() == first + second


# -- a Canonical member is written as its value ------------------------------------------


@given(
    kind=_WRITERS,
    raw=spellings(JSON_VALUES),
    others=st.dictionaries(st.sampled_from(["a", "n", "z"]), JSON_VALUES, max_size=3),
    nested=st.booleans(),
)
@_SETTINGS
def test_a_canonical_member_gives_the_line_of_its_value(
    tmp_path_factory: pytest.TempPathFactory,
    kind: type[JsonlWriter],
    raw: bytes,
    others: dict[str, Any],
    nested: bool,
) -> None:
    found = canonical(raw)
    if found is None:
        return
    as_value = {**others, "payload": [found.value] if nested else found.value}
    as_canonical = {**others, "payload": [found] if nested else found}
    store_a, store_b = tmp_path_factory.mktemp("a"), tmp_path_factory.mktemp("b")
    with _open(kind, store_a, 0) as plain, _open(kind, store_b, 0) as kept:
        outcomes: list[str | None] = []
        for writer, record in ((plain, as_value), (kept, as_canonical)):
            try:
                writer.write(record)
                writer.write_many([record, {"n": None, **record}])
                outcomes.append(None)
            except RecordInvalidError as exc:
                outcomes.append(exc.message)
        assert outcomes[0] == outcomes[1]
    assert plain.path.read_bytes() == kept.path.read_bytes()


@pytest.mark.parametrize("depth", range(250, 258))
def test_a_deeply_nested_canonical_member_gives_the_line_of_its_value(
    tmp_path_factory: pytest.TempPathFactory, depth: int
) -> None:
    """Near orjson's depth limit the record as a value may be written by the standard
    library (float 1e-07, not orjson's 1e-7); a kept member must not change that."""
    raw = b"[" * depth + b"]" * depth
    found = canonical(raw)
    member: Any = found if found is not None else None
    if member is None:
        return  # not kept: nothing to compare
    value = {"f": 1e-7, "deep": member.value}
    kept = {"f": 1e-7, "deep": member}
    lines = []
    for record in (value, kept):
        store = tmp_path_factory.mktemp("store")
        with _open(TranscriptWriter, store, 0) as writer:
            writer.write(record)
        lines.append(writer.path.read_bytes())
    assert lines[0] == lines[1]


def test_canonical_keeps_no_text_deep_enough_to_push_a_record_past_orjson() -> None:
    assert canonical(b"[" * 253 + b"]" * 253) is not None
    assert canonical(b"[" * 254 + b"]" * 254) is None


@pytest.mark.parametrize("stop", ["finish", "abort"])
def test_a_generator_that_closes_the_writer_stops_the_batch_as_write_would(
    store: Path, stop: str
) -> None:
    writer = TranscriptWriter("r1", store=store, clock=lambda: 7)

    def records() -> Iterator[dict[str, int]]:
        yield {"n": 0}
        getattr(writer, stop)()
        yield {"n": 1}

    with pytest.raises(AgcError) as caught:
        writer.write_many(records())
    assert caught.value.code == "writer-closed"
    written = writer.path.read_bytes() if writer.path.exists() else b""
    assert b'"n":1' not in written  # the record after the close is refused, not kept
