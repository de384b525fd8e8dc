"""A kill -9 at any step of a signed ``ledger record`` never leaves a turn file that
verifies with the key while an attempt is cut short.

The child process below records a second, signed attempt and is killed right before
its k-th mutating system call (``write``, ``open(O_CREAT)``, ``rename`` …), for every
k, and once more with that call's write cut in half. What it leaves must either fail
``check`` with the trusted key or verify whole: every attempt with its ``turn_end``
and signed seal record. The next writer then continues the file; the cut attempt is
reported (``attempt-unsealed``) under a seal that verifies.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agc._core.signing import SigningKey
from agc.integrity import generate_keypair, load_signing_key, load_trusted_keys
from agc.ledger import check_turn_file, read_turn_file
from tests.faults import kill_at_step
from tests.ledger.helpers import command, mcp, record_turn

# Kills and disk faults: os.fsync stays real here (tests/conftest.py, _fsync_off).
pytestmark = pytest.mark.real_fsync

_EVENTS = [
    command("c1", "ls", [{"type": "listFiles", "path": "assets/uploads"}]),
    mcp("m1", "taonier_prepare_game_art", {"brief": "collect"}),
]


def _record_in_child(project: Path, key: SigningKey, step: int, *, torn: bool) -> int:
    """Fork; the child records a signed attempt with a kill at ``step``; its exit code
    (0: the attempt finished before ``step``; otherwise the number of steps it took,
    up to 250, when ``step`` is huge)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 0
        try:
            counter = kill_at_step(step, torn=torn)
            record_turn(project, _EVENTS, signing_key=key)
            code = min(counter(), 250)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _project(root: Path) -> Path:
    project = root / "proj"
    (project / "assets" / "uploads").mkdir(parents=True)
    return project


@pytest.fixture(scope="module")
def record_steps(tmp_path_factory: pytest.TempPathFactory) -> int:
    """How many mutating calls a signed second attempt makes (measured)."""
    root = tmp_path_factory.mktemp("steps")
    key = load_signing_key(generate_keypair(root / "keys")[0])
    project = _project(root)
    record_turn(project, _EVENTS, signing_key=key)
    steps = _record_in_child(project, key, 10**9, torn=False)
    assert 4 <= steps < 250, steps
    return steps


@pytest.mark.parametrize("torn", [False, True], ids=["kill", "torn-write"])
def test_a_kill_at_every_step_of_a_signed_attempt_never_verifies_cut_short(
    tmp_path: Path, record_steps: int, torn: bool
) -> None:
    private, public, _ = generate_keypair(tmp_path / "keys")
    key, trusted = load_signing_key(private), load_trusted_keys([public])
    wrong: list[tuple[object, ...]] = []
    for step in range(1, record_steps + 1):
        project = _project(tmp_path / f"s{step}")
        path = record_turn(project, _EVENTS, signing_key=key).turn_file
        assert _record_in_child(project, key, step, torn=torn) == 9, f"step {step}"
        report = check_turn_file(path, trusted_keys=trusted)
        cut = {f.code for f in report.findings} & {"attempt-unsealed", "turn-end-missing"}
        if report.ok and (report.signature != "signature-valid" or cut):
            wrong.append((step, "after the kill", report.signature, sorted(cut)))
        if report.ok and report.attempts not in {1, 2}:
            wrong.append((step, "after the kill", report.attempts))
        # The next writer continues the file (or refuses it): never a silent verdict.
        record_turn(project, _EVENTS, signing_key=key)
        after = check_turn_file(path, trusted_keys=trusted)
        if after.ok:
            codes = {f.code for f in after.findings}
            cut_short = after.attempts > len(read_turn_file(path).seals)
            if after.signature != "signature-valid" or cut_short != ("attempt-unsealed" in codes):
                wrong.append((step, "after the next writer", after.signature, sorted(codes)))
    assert not wrong, wrong
