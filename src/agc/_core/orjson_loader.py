"""orjson, imported with Ctrl-C and SIGTERM held until its initialisation is done.

orjson's module initialisation imports parts of the standard library (``dataclasses``,
``enum``, ``uuid``, ``datetime`` …) and assumes that each import succeeds
(https://github.com/ijl/orjson/issues/310). A ``KeyboardInterrupt`` raised by a
signal handler in one of them crashes the interpreter (SIGSEGV, exit 139) instead of
stopping it. Every agc module imports orjson from here instead::

    from agc._core.orjson_loader import orjson

While orjson is initialised, SIGINT and SIGTERM are only noted; once it is done the
handlers in place are back and each noted signal is raised again for them, so a stop
arrives a few milliseconds late, never as a crash.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["orjson"]

_STOPS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def _stops_held() -> Iterator[None]:
    """While the block runs, SIGINT and SIGTERM are noted, not handled; afterwards the
    previous handlers are back and each noted signal is raised again for them.

    Only in the main thread, the one where Python runs signal handlers (elsewhere no
    handler can raise into the block). A handler installed outside Python
    (``signal.getsignal`` gives ``None``) is left alone.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []

    def note(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001
        noted.append(signum)

    # Blocked while the handlers are swapped: a stop between two swaps would leave one
    # of them noting signals for good.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    try:
        previous = {
            signum: signal.signal(signum, note)
            for signum in _STOPS
            if signal.getsignal(signum) is not None
        }
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    try:
        yield
    finally:
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
        try:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for stop in dict.fromkeys(noted):
            signal.raise_signal(stop)


with _stops_held():
    import orjson
