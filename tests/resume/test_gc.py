"""The cyclic collector is paused during a call and restored to its previous state."""

from __future__ import annotations

import gc

import pytest

from agc.resume._gc import collector_paused

REACHES_INSIDE = {
    "agc.resume._gc": "the garbage-collector pause around a repair",
}


@collector_paused
def _observe() -> bool:
    return gc.isenabled()


@pytest.mark.parametrize("enabled_before", [True, False])
def test_collector_is_off_during_the_call_and_restored_after(enabled_before: bool) -> None:
    was = gc.isenabled()
    try:
        (gc.enable if enabled_before else gc.disable)()
        assert _observe() is False
        assert gc.isenabled() is enabled_before
    finally:
        (gc.enable if was else gc.disable)()


def test_collector_is_restored_when_the_call_raises() -> None:
    @collector_paused
    def boom() -> None:
        raise ValueError("boom")

    assert gc.isenabled()
    with pytest.raises(ValueError, match="boom"):
        boom()
    assert gc.isenabled()
