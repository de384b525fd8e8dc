"""The recorded hook payloads in ``tests/fixtures/hooks/`` are what the pinned clients send.

Each client is run again through the recording session (:mod:`tests.e2e.record_hooks`)
into a temporary folder; the events must fire in the recorded order with the recorded
fields. A changed pin that changes its hooks fails here, and ``python -m
tests.e2e.record_hooks CLIENT`` re-records the fixtures.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.record_hooks import FIXTURES, record


def _shape(folder: Path) -> list[tuple[str, list[str]]]:
    """(fixture name, sorted top-level fields) in the order the events fired."""
    sequence = json.loads((folder / "sequence.json").read_text(encoding="utf-8"))
    shape = []
    for name in sequence:
        payload = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
        shape.append((name, sorted(payload)))
    return shape


@pytest.mark.parametrize(
    ("client", "fixture"),
    [("claude-code", "claude_bin"), ("codex", "codex_bin"), ("gemini", "gemini_bin")],
)
def test_recorded_payloads_match_the_pinned_client(
    client: str, fixture: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    request.getfixturevalue(fixture)  # installs the client, or skips without node/npm
    fresh = record(client, tmp_path / client)
    assert _shape(fresh) == _shape(FIXTURES / client)
    session = json.loads((fresh / "SessionStart.json").read_text(encoding="utf-8"))
    assert session["session_id"] == "00000000-0000-4000-8000-000000000001"
    assert session["cwd"] == "/home/user/project"
    assert (fresh / "session-file.jsonl").stat().st_size > 0
