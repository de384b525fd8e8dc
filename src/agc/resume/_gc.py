"""Pause Python's cyclic garbage collector while a long history is processed.

Reading and repairing a history allocates millions of small objects (dicts, lists,
blocks) and frees almost none of them until the end. Each full collection walks the
whole heap, so the collector's work grows with the square of the history's length:
measured on 100k-message Chat histories, validation took 0.77 s with the collector
and 0.28 s without it (`python -m benchmarks --only history`). None of this code
creates reference cycles that need collecting, so the collector is paused for the call
and restored afterwards (to its previous state, so nested calls are harmless).
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["collector_paused"]

P = ParamSpec("P")
R = TypeVar("R")


def collector_paused(function: Callable[P, R]) -> Callable[P, R]:
    """Decorate ``function`` so the cyclic collector is off while it runs."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return function(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return wrapper
