"""``agc._core.orjson_loader``: orjson imported with SIGINT and SIGTERM held (a
KeyboardInterrupt inside orjson's initialisation crashes the interpreter; the
end-to-end case is in tests/cli/test_verify_main.py)."""

from __future__ import annotations

import signal
from types import FrameType

import pytest

from agc._core import orjson_loader
from agc._core.orjson_loader import _stops_held


def test_it_is_orjson() -> None:
    assert orjson_loader.orjson.dumps({"a": 1}) == b'{"a":1}'


def test_a_stop_while_held_reaches_the_handler_afterwards_and_the_handler_is_back() -> None:
    seen: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        seen.append(signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        with _stops_held():
            signal.raise_signal(signal.SIGTERM)
            signal.raise_signal(signal.SIGTERM)
            assert seen == []
        assert seen == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGTERM) is handler
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_ctrl_c_while_held_is_a_keyboard_interrupt_after_the_block() -> None:
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finished = False

    def held_ctrl_c() -> None:
        nonlocal finished
        with _stops_held():
            signal.raise_signal(signal.SIGINT)
            finished = True

    with pytest.raises(KeyboardInterrupt):
        held_ctrl_c()
    assert finished
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
