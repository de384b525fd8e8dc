"""Process-level plumbing shared by the typer commands and ``agc-verify``'s quick entry.

Imports neither typer nor rich: :mod:`agc.cli.verify_main` serves its common cases
without them.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["discard_stdout", "sigterm_raises"]


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
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield
        return
    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
