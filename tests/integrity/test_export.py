"""Tests for agc.integrity._export: ingested records back to the input lines."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc._core.store import StoreLayout
from agc.errors import InputError, RunNotFoundError
from agc.integrity import export_copy, export_session, ingest_stream, iter_session_lines
from tests.conftest import examples, write_run


def test_lines_come_back_with_their_bom_and_bytes(store: Path) -> None:
    data = b'\xef\xbb\xbf{"a":1}\nnot json\n\xff\xfe\n{"b":"\xc3\xa9"}\n'
    ingest_stream(io.BytesIO(data), "r", store=store)
    assert export_session("r", store) == data


def test_a_torn_last_line_stays_torn(store: Path) -> None:
    data = b'{"a":1}\n{"b":"cut'
    ingest_stream(io.BytesIO(data), "r", store=store)
    assert list(iter_session_lines("r", store)) == [b'{"a":1}\n', b'{"b":"cut']


def test_a_run_of_the_python_writers_is_not_exportable(store: Path) -> None:
    write_run(store, "w")
    with pytest.raises(InputError, match="only ingested runs can be exported"):
        export_session("w", store)


def test_missing_run_and_size_limit(store: Path) -> None:
    with pytest.raises(RunNotFoundError):
        export_session("nope", store)
    ingest_stream(io.BytesIO(b'{"a":1}\n' * 10), "big", store=store)
    with pytest.raises(InputError, match="larger than 20 bytes"):
        export_session("big", store, max_bytes=20)


@settings(max_examples=examples(30), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.binary(max_size=24).filter(lambda b: b"\n" not in b), max_size=6))
def test_a_copy_exports_as_the_store_file_does(
    lines: list[bytes], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """export_copy over the artifact's bytes gives what export_session gives (or the
    same error), whatever the lines were."""
    store = tmp_path_factory.mktemp("copy")
    data = b"".join(line + b"\n" for line in lines) + b'{"last":1}'
    ingest_stream(io.BytesIO(data), "r", store=store)
    records = StoreLayout(store).artifact_path("r", "transcript").read_bytes()
    expected = export_session("r", store)
    assert export_copy(io.BytesIO(records), "r") == expected
    limit = len(expected) - 1
    with pytest.raises(InputError, match=f"larger than {limit} bytes"):
        export_copy(io.BytesIO(records), "r", max_bytes=limit)


def test_a_copy_of_records_not_ingested_is_refused(store: Path) -> None:
    write_run(store, "w")
    records = StoreLayout(store).artifact_path("w", "transcript").read_bytes()
    with pytest.raises(InputError, match="only ingested runs can be exported"):
        export_copy(io.BytesIO(records), "w")
