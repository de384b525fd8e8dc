"""Process-level plumbing shared by the typer commands and ``agc-verify``'s quick entry.

Imports neither typer nor rich: :mod:`agc.cli.verify_main` serves its common cases
without them.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, NoReturn, TextIO, cast

from agc.exitcodes import ExitCode

__all__ = [
    "STOP",
    "StopState",
    "Terminated",
    "discard_stdout",
    "encode_as_given",
    "notes_unraisable_stops",
    "passes_undecodable_bytes",
    "raise_unraisable_stop",
    "sigterm_raises",
    "stderr_never_fails",
]

# The error handler that writes a name's undecodable bytes back as they were.
_AS_GIVEN_BYTES = "agc-as-given-bytes"


def discard_stdout() -> None:
    """The reader of stdout is gone (``agc-verify --all | head -1``): send the rest of
    the output to /dev/null and let the command return its own exit code. rich and
    click would exit 1 here, which reads as "findings" even for a complete run."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


@contextmanager
def sigterm_raises(handler: Callable[[int, FrameType | None], None]) -> Iterator[None]:
    """While a command runs, SIGTERM calls ``handler`` (which raises, like Ctrl-C's
    ``KeyboardInterrupt``, so that ``with`` blocks and ``finally`` release files on the
    way out). Only when the process has the default handler and this is the main
    thread, where signals are delivered; the default is put back afterwards."""
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (no import of threading to ask it)
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


class _NowhereToSayIt:
    """stderr whose write failures end its output instead of the command: a message
    that cannot be written (``2>/dev/full``, an I/O error) is nowhere to say it, and
    the rest goes to /dev/null so the process's last flush does not fail either.
    Everything else is the stream's own."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError:
            self._discard()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError:
            self._discard()

    def _discard(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self._stream.fileno())
            finally:
                os.close(devnull)
            self._stream.flush()  # what was buffered, to /dev/null now

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def stderr_never_fails() -> Iterator[None]:
    """While a command runs, a message on stderr that cannot be written never changes
    its outcome (was: OSError out of the error report itself, Python's exit 1, which
    reads as "findings"): see :class:`_NowhereToSayIt`. The stream is put back
    afterwards."""
    stream = sys.stderr
    if stream is None:  # started with stderr closed
        yield
        return
    wrapper = cast(TextIO, _NowhereToSayIt(stream))
    sys.stderr = wrapper
    try:
        yield
    finally:
        if sys.stderr is wrapper:
            sys.stderr = stream


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's ``KeyboardInterrupt``, so that
    writers release their files on the way out (``with`` blocks, ``finally``)."""


class StopState:
    """What stopped the current command: one per process (:data:`STOP`), reset as each
    command starts, since a stop's exception may be swallowed on its way (typer turns
    any ``KeyboardInterrupt`` into a silent exit code 130; a library's at-fork hook or
    ``__del__`` prints "Exception ignored in …")."""

    def __init__(self) -> None:
        self.terminated = False
        """SIGTERM arrived (its handler ran) while the command ran."""
        self.reported = False
        """The command printed its own line about the stop (see :meth:`code`)."""

    def reset(self) -> None:
        self.terminated = self.reported = False

    def raise_terminated(self, signum: int, frame: FrameType | None) -> NoReturn:  # noqa: ARG002
        """The SIGTERM handler (:func:`sigterm_raises`): note it and raise
        :class:`Terminated`."""
        self.terminated = True
        raise Terminated

    def raise_if_stopped(self) -> None:
        """Raise a stop again whose exception was swallowed on its way (noted by
        :func:`notes_unraisable_stops`, or SIGTERM caught by an ``except
        BaseException``), so the command stops instead of going on as if no one had
        asked it to."""
        raise_unraisable_stop()
        if self.terminated:
            raise Terminated

    def code(self, exc: KeyboardInterrupt) -> tuple[ExitCode, str]:
        """Exit code and word for a stop: ``(130, "interrupted")`` or ``(143,
        "terminated")``; the stop counts as reported from then on."""
        self.reported = True
        if isinstance(exc, Terminated) or self.terminated:
            return ExitCode.TERMINATED, "terminated"
        return ExitCode.INTERRUPTED, "interrupted"


STOP: StopState = StopState()
"""The stop state of the command running in this process."""


# Stops that Python could not raise while the current command ran (see below).
_unraisable_stops: list[KeyboardInterrupt] = []


@contextmanager
def notes_unraisable_stops() -> Iterator[None]:
    """While a command runs, a stop that Python cannot raise is noted for
    :func:`raise_unraisable_stop` instead of printed and lost.

    Ctrl-C's ``KeyboardInterrupt`` (or SIGTERM's exception) raised by a signal handler
    in an at-fork hook, a ``__del__`` or a weakref callback cannot leave it: Python
    prints "Exception ignored in …" with a traceback (``sys.unraisablehook``) and goes
    on, and the command ended as if no one had asked it to stop (logging's at-fork hook
    when the stop lands while a worker process is forked). Other unraisable exceptions
    go to the hook in place; it is put back afterwards.
    """
    previous = sys.unraisablehook

    def note(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            _unraisable_stops.append(unraisable.exc_value)
        else:
            previous(unraisable)

    _unraisable_stops.clear()
    sys.unraisablehook = note
    try:
        yield
    finally:
        sys.unraisablehook = previous


def raise_unraisable_stop() -> None:
    """Raise the first stop noted by :func:`notes_unraisable_stops`, if any (once)."""
    if _unraisable_stops:
        stop = _unraisable_stops[0]
        _unraisable_stops.clear()
        raise stop


def _as_given_bytes(exc: UnicodeError) -> tuple[str | bytes, int]:
    """A lone surrogate U+DC80..U+DCFF (an undecodable byte of a POSIX name, PEP 383)
    becomes that byte again; any other character the encoding lacks becomes a
    ``\\x``/``\\u`` escape, as Python's ``backslashreplace`` spells it.

    UTF-16 and UTF-32 take no single byte (their code units are 2 and 4 bytes, and
    CPython refuses a replacement of another length): there the name is escaped too."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    if exc.encoding.lower().replace("_", "-").startswith(("utf-16", "utf-32")):
        escaped = exc.object[exc.start : exc.end].encode("ascii", "backslashreplace")
        return escaped.decode("ascii"), exc.end
    out = bytearray()
    for char in exc.object[exc.start : exc.end]:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(code - 0xDC00)
        else:
            out += char.encode("ascii", "backslashreplace")
    return bytes(out), exc.end


codecs.register_error(_AS_GIVEN_BYTES, _as_given_bytes)


def encode_as_given(text: str) -> bytes:
    """``text`` as UTF-8 for a file, a name that is not UTF-8 (lone surrogates
    U+DC80..U+DCFF, PEP 383) as its own bytes: the bytes a strict UTF-8 stdout gets
    from :func:`passes_undecodable_bytes`, so ``--csv FILE`` and ``--csv - > FILE``
    write the same file. Never raises :class:`UnicodeEncodeError`."""
    return text.encode("utf-8", _AS_GIVEN_BYTES)


@contextmanager
def passes_undecodable_bytes() -> Iterator[None]:
    """While a command runs, text on stdout that holds a name which is not valid UTF-8
    (a store folder ``st\\xff``: Python decodes it with lone surrogates, PEP 383) is
    written with the name's own bytes, as ``ls`` writes them to a pipe, instead of
    failing with ``UnicodeEncodeError`` (a command that ends "internal error"). On
    stderr such a name is escaped (``st\\udcff``), as Python's own stderr always
    does (``backslashreplace``): a strict stderr is an in-process caller's (pytest's
    capsys), where the message naming the file raised instead.

    Only a strict text stream is changed (Python's stdout in a UTF-8 locale other than
    C.UTF-8); its error handler is put back afterwards. JSON output never needs it:
    it escapes such names."""
    with _errors_while(sys.stdout, _AS_GIVEN_BYTES), _errors_while(sys.stderr, "backslashreplace"):
        yield


@contextmanager
def _errors_while(stream: object, errors: str) -> Iterator[None]:
    """``stream`` with the error handler ``errors`` while the block runs, if it is a
    strict :class:`io.TextIOWrapper`; put back to strict afterwards."""
    if not isinstance(stream, io.TextIOWrapper) or stream.errors != "strict":
        yield
        return
    try:
        stream.reconfigure(errors=errors)
    except (OSError, ValueError):
        # A closed stream (an in-process caller's), or what was buffered before the
        # command cannot be written: left as it is, for the command's own rule when it
        # writes (a command that writes nothing to stdout still runs).
        yield
        return
    try:
        yield
    finally:
        # Putting it back flushes the stream: a reader gone or a full disk there is
        # the command's own rule, already applied to what it wrote.
        with contextlib.suppress(OSError, ValueError):
            stream.reconfigure(errors="strict")
