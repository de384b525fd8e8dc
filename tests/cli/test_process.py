"""``agc.cli._process``: the stdout plumbing shared by the typer commands and the quick
``agc-verify`` entry."""

from __future__ import annotations

import io
import os
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc.cli._process import (
    notes_unraisable_stops,
    passes_undecodable_bytes,
    raise_unraisable_stop,
)


def _strict(encoding: str = "utf-8") -> tuple[io.BytesIO, io.TextIOWrapper]:
    raw = io.BytesIO()
    return raw, io.TextIOWrapper(raw, encoding=encoding, errors="strict")


@given(st.binary(max_size=64))
def test_any_posix_name_reaches_a_strict_utf8_stdout_as_its_own_bytes(name: bytes) -> None:
    # A POSIX name is bytes; Python decodes what is not UTF-8 to lone surrogates
    # (os.fsdecode, PEP 383). Written while the command runs, the name comes out as it
    # is on disk, whatever the bytes.
    raw, stream = _strict()
    saved = sys.stdout
    sys.stdout = stream
    try:
        with passes_undecodable_bytes():
            stream.write(f"store {os.fsdecode(name)}\n")
            stream.flush()
    finally:
        sys.stdout = saved
    assert raw.getvalue() == b"store " + name + b"\n"


def test_characters_the_encoding_lacks_are_escaped_and_the_handler_is_put_back() -> None:
    raw, stream = _strict("ascii")
    saved = sys.stdout
    sys.stdout = stream
    try:
        with passes_undecodable_bytes():
            stream.write("st\udcff-\u00e9-\ud800\n")
            stream.flush()
    finally:
        sys.stdout = saved
    assert raw.getvalue() == b"st\xff-\\xe9-\\ud800\n"
    assert stream.errors == "strict"
    with pytest.raises(UnicodeEncodeError):
        stream.write("st\udcff")


def test_a_stream_that_is_not_strict_is_left_alone() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
    saved = sys.stdout
    sys.stdout = stream
    try:
        with passes_undecodable_bytes():
            assert stream.errors == "replace"
            stream.write("st\udcff\n")
            stream.flush()
    finally:
        sys.stdout = saved
    assert raw.getvalue() == b"st?\n"


def test_a_closed_stdout_is_left_alone_for_the_command_to_meet() -> None:
    # An in-process caller may hand over a closed stdout; a command that never writes
    # to it (a report to a file) must still run. Reconfiguring a closed stream raises
    # ValueError, which made every such command "internal error" (exit 4).
    _, stream = _strict()
    stream.close()
    saved = sys.stdout
    sys.stdout = stream
    try:
        with passes_undecodable_bytes():
            ran = True
    finally:
        sys.stdout = saved
    assert ran


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32", "utf-32-be"])
def test_an_encoding_with_wide_units_escapes_the_name_instead_of_failing(encoding: str) -> None:
    # UTF-16/32 take no raw byte from an error handler (a unit is 2 or 4 bytes): the
    # name's bytes raised UnicodeEncodeError there. Such a stream gets the escape.
    raw, stream = _strict(encoding)
    saved = sys.stdout
    sys.stdout = stream
    try:
        with passes_undecodable_bytes():
            stream.write("st\udcff\n")
            stream.flush()
    finally:
        sys.stdout = saved
    assert raw.getvalue().decode(encoding) == "st\\udcff\n"


class _RaisesInDel:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __del__(self) -> None:
        raise self.exc


def test_a_stop_python_cannot_raise_is_noted_not_printed_and_raised_once() -> None:
    seen: list[BaseException | None] = []
    saved = sys.unraisablehook

    def recorder(unraisable: Any) -> None:
        seen.append(unraisable.exc_value)

    sys.unraisablehook = recorder
    try:
        with notes_unraisable_stops():
            _RaisesInDel(KeyboardInterrupt("stop"))  # collected at once
            _RaisesInDel(ValueError("other"))
            with pytest.raises(KeyboardInterrupt, match="stop"):
                raise_unraisable_stop()
            raise_unraisable_stop()  # once: nothing left
        assert [type(exc) for exc in seen] == [ValueError]  # other ones still reported
        assert sys.unraisablehook is recorder  # the hook in place is back
    finally:
        sys.unraisablehook = saved


def test_a_strict_stderr_gets_pythons_own_escapes_while_a_command_runs() -> None:
    # Python's own stderr escapes what it cannot encode (backslashreplace); a strict one
    # (an in-process caller's, pytest's capsys) raised UnicodeEncodeError out of the
    # error message that names a file which is not UTF-8.
    raw, stream = _strict()
    saved = sys.stderr
    sys.stderr = stream
    try:
        with passes_undecodable_bytes():
            stream.write("error: st\udcff\n")
            stream.flush()
    finally:
        sys.stderr = saved
    assert raw.getvalue() == b"error: st\\udcff\n"
    assert stream.errors == "strict"
