"""The commands' consoles write a plain line without rich where rich would write it as
it is (a stream that is not a terminal), and the very bytes rich would write."""

from __future__ import annotations

import io
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from agc.cli.common import PlainFirstConsole
from tests.conftest import examples

# Text as commands print it: any characters, control characters and wide ones included.
_TEXT = st.text(
    st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(["\t", "\r", "\x07", "\x08", "\x0b", "\x0c", "\x1b", "漢", "\n"]),
    ),
    max_size=60,
)
_OPTIONS = st.sampled_from([{}, {"end": ""}, {"style": "bold"}, {"highlight": True}, {"sep": "-"}])


def _rich_writes(objects: tuple[Any, ...], options: dict[str, Any]) -> str:
    out = io.StringIO()
    console = Console(file=out, highlight=False, soft_wrap=True, emoji=False)
    console.print(*objects, markup=False, **options)
    return out.getvalue()


@settings(max_examples=examples(300), deadline=None)
@given(text=_TEXT, options=_OPTIONS, twice=st.booleans())
def test_a_line_is_written_as_rich_writes_it_to_a_pipe(
    text: str, options: dict[str, Any], twice: bool
) -> None:
    objects = (text, text) if twice else (text,)
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("FORCE_COLOR", raising=False)
        patch.delenv("TTY_COMPATIBLE", raising=False)
        patch.setattr(sys, "stdout", out)
        PlainFirstConsole("out_console").print(*objects, markup=False, **options)
    assert out.getvalue() == _rich_writes(objects, options)


def test_a_plain_line_to_a_pipe_needs_no_rich_console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    console = PlainFirstConsole("err_console")
    console.print("note: plain\r", markup=False)
    assert not console.is_terminal
    assert console._rich is None
    assert err.getvalue() == "note: plain\n"
    console.print("[bold]marked up[/bold]")  # markup: rich's own rendering
    assert console._rich is not None
    assert err.getvalue().endswith("marked up\n")


def test_a_forced_terminal_goes_to_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    console = PlainFirstConsole("out_console")
    assert console.is_terminal
    console.print("x", markup=False, style="bold")
    assert "\x1b[" in out.getvalue()  # rich styled it, as for a terminal


@pytest.mark.parametrize("name", ["out_console", "err_console"])
def test_a_stream_closed_at_start_is_written_nowhere_as_by_rich(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Python sets ``sys.stdout``/``sys.stderr`` to ``None`` when the process starts
    with that descriptor closed (``2>&-``); rich then writes to no file, and so does the
    plain path, never failing on the missing stream."""
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    monkeypatch.setattr(sys, "stderr" if name == "err_console" else "stdout", None)
    console = PlainFirstConsole(name)
    console.print("a line", markup=False)
    assert not console.is_terminal
