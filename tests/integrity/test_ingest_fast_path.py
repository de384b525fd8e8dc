"""Ingest's fast path (a canonical line kept as it is) seals the bytes of the old path.

Differential: every input is ingested twice into two stores with the same clock, once
as agc does and once with the fast path switched off (every line parsed by the strict
reader and written from its value, as before the fast path existed); the two stores
must hold the same files byte for byte (transcripts, sidecars, manifests, chain).
Inputs: drawn lines in every spelling ``tests.spellings`` makes (whitespace, escapes,
key order, duplicate members, big integers, number forms, surrogate pairs), lines
that are not JSON or not objects, and the real public transcripts.
"""

from __future__ import annotations

import io
import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc._core import json as strict_json
from agc.integrity import _ingest, ingest_stream
from agc.integrity import _writer as run_writer
from tests.conftest import (
    REAL_FIXTURES,
    examples,
    real_fixture_files,
    require_shared,
    steady_checkpoint_timer,
)
from tests.spellings import spellings

REACHES_INSIDE = {
    "agc.integrity._ingest": "the fast path's body builder and counters, against the writer",
    "agc.integrity._writer": "pins the writer's clock, to compare both paths byte for byte",
}

REAL = real_fixture_files() or [REAL_FIXTURES / "absent.jsonl"]

_OTHER_LINES = st.sampled_from(
    [
        b"",
        b"   ",
        b"[1,2]",
        b"42",
        b'"text"',
        b"null",
        b"{oops",
        b'{"a":NaN}',
        b'{"a":1e400}',
        b'{"a":"\\ud800"}',
        b"\xff\xfe",
        b"\xef\xbb\xbf{}",
        b'{"a":1}\r',
        b'{"a":"\xe2\x80\xa8"}',
    ]
)
_LINES = st.lists(spellings() | _OTHER_LINES, min_size=1, max_size=8)


def _files(store: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(store)): path.read_bytes()
        for path in sorted(store.rglob("*"))
        if path.is_file()
    }


def _ingest_both(
    monkeypatch: pytest.MonkeyPatch, data: bytes, root: Path, *, kind: str = "transcript"
) -> tuple[dict[str, bytes], dict[str, bytes]]:
    stores = []
    for fast in (True, False):
        store = root / ("fast" if fast else "old")
        # Both runs must see the same clock ticks: no checkpoint from a pause.
        with monkeypatch.context() as patch, steady_checkpoint_timer():
            patch.setattr(run_writer, "unix_ms", itertools.count(1_764_460_800_000).__next__)
            if not fast:
                patch.setattr(strict_json, "canonical", lambda raw: None)
            summary = ingest_stream(io.BytesIO(data), "r1", store=store, kind=kind)  # type: ignore[arg-type]
        unterminated = bool(data) and not data.endswith(b"\n")
        assert summary.records == data.count(b"\n") + unterminated
        stores.append(_files(store))
    return stores[0], stores[1]


@given(lines=_LINES, kind=st.sampled_from(["transcript", "tool-events"]), end=st.booleans())
@settings(max_examples=examples(120), suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_fast_and_old_paths_seal_the_same_bytes(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    lines: list[bytes],
    kind: str,
    end: bool,
) -> None:
    data = b"\n".join(lines) + (b"\n" if end else b"")
    fast, old = _ingest_both(monkeypatch, data, tmp_path_factory.mktemp("s"), kind=kind)
    assert fast == old


def test_the_fast_path_is_taken_for_compact_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[bytes] = []
    real = strict_json.canonical

    def spy(raw: bytes) -> strict_json.Canonical | None:
        found = real(raw)
        if found is not None:
            taken.append(raw)
        return found

    monkeypatch.setattr(strict_json, "canonical", spy)
    bodies = list(
        _ingest._bodies(
            io.BytesIO(b'{"a":1}\n{"b": 2}\n[3]\n'), _ingest._Counts(), lambda: None, None
        )
    )
    assert taken == [b'{"a":1}', b"[3]"]  # [3] is canonical, but not an object
    assert type(bodies[0]["payload"]) is strict_json.Canonical
    assert bodies[1] == {"line": 2, "payload": {"b": 2}}
    assert bodies[2]["invalid"].startswith("not a JSON object")


@pytest.mark.parametrize("fixture", REAL, ids=lambda p: p.name)
def test_real_transcripts_seal_the_same_bytes_on_both_paths(
    fixture: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_shared(fixture)
    fast, old = _ingest_both(monkeypatch, fixture.read_bytes(), tmp_path)
    assert fast == old


def test_the_real_transcript_mix_seals_the_same_bytes_on_both_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = [require_shared(path) for path in REAL]
    data = b"".join(p.read_bytes().rstrip(b"\n") + b"\n" for p in files)
    fast, old = _ingest_both(monkeypatch, data, tmp_path, kind="tool-events")
    assert fast == old


@pytest.mark.parametrize("depth", [253, 254, 255, 511, 512])
def test_an_object_nested_to_the_readers_limit_is_kept_as_a_record(depth: int, store: Path) -> None:
    """An object nested 512 deep is JSON under the rule; as a payload it would nest 513
    deep, beyond what the writer writes: it is kept as an invalid record (with its
    text), never a failed ingest."""
    line = b'{"k":' * depth + b"1" + b"}" * depth
    summary = ingest_stream(io.BytesIO(line + b"\n" + b'{"after":1}\n'), "r1", store=store)
    assert summary.records == 2
    assert summary.invalid_lines == (depth == 512)
