"""Fingerprints spilled to a file (memory bounded however many ids a long session
lets go of): every repeat is found, at once among those held, at the latest by
``settle`` among those spilled; nothing is found that was not added."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agc.resume._formats.model as model
from tests.conftest import examples
from tests.resume.formats import test_gemini_parts_attack as attack

REACHES_INSIDE = {
    "agc.resume._formats.model": "the spilled fingerprints, and a spill every few ids",
}

_steps = st.lists(st.tuples(st.sampled_from(["add", "in"]), st.integers(1, 40)), max_size=200)


@settings(max_examples=examples(500, least=100), deadline=None)
@given(steps=_steps, spill_at=st.integers(1, 8))
def test_every_repeat_is_found_and_no_other(steps: list[tuple[str, int]], spill_at: int) -> None:
    prints = model.SpilledFingerprints(spill_at)
    held: set[int] = set()
    repeated = False
    told = False
    for action, key in steps:
        if action == "add":
            repeated = repeated or key in held
            told = prints.add(key) or told
            held.add(key)
        else:
            repeated = repeated or key in held
            told = (key in prints) or told
    assert (told or prints.settle()) == repeated


@settings(
    max_examples=examples(200, least=40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.one_of(attack._sessions, attack._planned()), settle=st.integers(1, 3))
def test_a_session_read_in_parts_with_ids_spilled_reads_as_the_whole(
    data: bytes, settle: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model, "SPILL_AT", 2)
    inner = attack.test_check_in_parts_is_the_whole_check.hypothesis.inner_test  # type: ignore[attr-defined]
    inner(data, settle, tmp_path)


@settings(
    max_examples=examples(200, least=40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    data=st.one_of(attack._sessions, attack._planned()),
    settle=st.integers(1, 3),
    strategy=st.sampled_from(["strip", "synthesize"]),
)
def test_a_session_repaired_in_parts_with_ids_spilled_is_the_whole_repair(
    data: bytes, settle: int, strategy: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model, "SPILL_AT", 2)
    inner = attack.test_repair_in_parts_is_the_whole_repair.hypothesis.inner_test  # type: ignore[attr-defined]
    inner(data, settle, strategy, tmp_path)
