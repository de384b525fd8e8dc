"""Re-opening a sealed run to append: verified first, then a new segment."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from agc.errors import RunExistsError, VerificationError
from agc.integrity import (
    RunManifest,
    TranscriptWriter,
    check_run,
    check_store,
    recover_run,
    recover_store,
)
from tests.conftest import sampled
from tests.faults import kill_at_step
from tests.integrity.evidence_helpers import transcript_path, write_run

# Kills and disk faults: os.fsync stays real here (tests/conftest.py, _fsync_off).
pytestmark = pytest.mark.real_fsync


def _manifest(store: Path, run_id: str) -> RunManifest:
    return RunManifest.from_bytes((store / f"audit/manifests/{run_id}.json").read_bytes())


def test_reopen_appends_a_new_segment_and_lists_it(store: Path) -> None:
    write_run(store, "r", count=3)
    first = _manifest(store, "r").artifacts["transcript"]
    with TranscriptWriter("r", store=store, reopen=True) as writer:
        seq = writer.write({"role": "user", "content": "resumed"})
        assert seq == 3
        mid = check_run("r", store)
        assert not mid.complete
        assert {f.code for f in mid.findings if f.artifact == "transcript"} == {"unsealed"}
    seal = _manifest(store, "r").artifacts["transcript"]
    assert seal.records == 4
    assert [s["digest"] for s in seal.segments] == [first.digest]
    assert check_run("r", store).complete


def test_reopen_refuses_tampered_sealed_content(store: Path) -> None:
    write_run(store, "r")
    path = transcript_path(store, "r")
    data = bytearray(path.read_bytes())
    data[2] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(VerificationError):
        TranscriptWriter("r", store=store, reopen=True)
    assert path.read_bytes() == bytes(data)


def test_plain_open_of_a_sealed_run_is_refused(store: Path) -> None:
    write_run(store, "r")
    with pytest.raises(RunExistsError):  # linked: continued only with reopen=True
        TranscriptWriter("r", store=store)


def _store_problems(store: Path) -> list[str]:
    # A recovery that sealed bytes no checkpoint vouched for fails the gate by design
    # (``recovered``); what these crash tests ask is whether the store healed.
    report = check_store(store, allow_recovered=True)
    return [f"{f.code}: {f.message}" for f in report.findings if f.severity == "error"] + [
        f"{r.run_id}: {m}" for r in report.runs for m in r.missing
    ]


def test_a_run_being_re_opened_has_no_store_finding_for_its_kept_manifest(store: Path) -> None:
    """The manifest kept as r@1.json is what link 1 names: not an unexpected file while
    the new segment is open (the run itself is reported unsealed)."""
    write_run(store, "r")
    writer = TranscriptWriter("r", store=store, reopen=True)
    writer.write({"role": "user", "content": "resumed"})
    writer.flush()
    problems = _store_problems(store)
    assert problems, "an open segment is never complete"
    assert all(p.startswith("r: transcript was re-opened") for p in problems), problems
    writer.close()
    assert _store_problems(store) == []


def test_a_forged_kept_manifest_at_the_latest_link_is_unexpected(store: Path) -> None:
    write_run(store, "r")
    manifest = store / "audit/manifests/r.json"
    (store / "audit/manifests/r@1.json").write_bytes(manifest.read_bytes().replace(b"3", b"4"))
    assert any("unexpected" in p and "r@1.json" in p for p in _store_problems(store))


def _reopen_in_child(store: Path, step: int, *, torn: bool, log: Path | None = None) -> int:
    """Fork; the child re-opens r, appends and seals, killed at mutating call ``step``.
    ``log``: the child writes there the name of each mutating call it made, a line each."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        calls: Callable[[], int] = lambda: 0  # noqa: E731
        names: list[str] = []
        try:
            calls = kill_at_step(step, torn=torn, names=names)
            writer = TranscriptWriter("r", store=store, reopen=True)
            for index in range(3):
                writer.write({"role": "user", "content": f"resumed {index}"})
                writer.flush()
            writer.close()
        finally:
            made = calls()
            if log is not None:
                log.write_text("".join(f"{name}\n" for name in names[:made]))
            os._exit(min(made, 250) if step > 10**6 else 0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.mark.parametrize("torn", [False, True], ids=["kill", "torn-write"])
def test_a_kill_at_every_step_of_a_re_open_heals_and_the_run_re_opens_again(
    tmp_path: Path, torn: bool
) -> None:
    """A kill between keeping r@1.json and marking the manifest re-opened left the copy
    'unexpected' for good and every later re-open refused (the copy 'already exists').

    Every step in the thorough profile; by default the first, the last and 16 more, and
    at least one step of each kind of mutating call (write, open, replace, …)."""
    probe = tmp_path / "probe"
    write_run(probe, "r")
    log = tmp_path / "calls.txt"
    steps = _reopen_in_child(probe, 10**9, torn=False, log=log)
    assert 10 <= steps < 250, steps
    names = log.read_text().splitlines()
    assert len(names) == steps
    chosen = sampled(
        range(1, steps + 1), keep=16, seed=f"re-open {torn}", cover=[lambda s: names[s - 1]]
    )
    damaged = []
    for step in chosen:
        store = tmp_path / f"s{step}"
        write_run(store, "r")
        sealed = transcript_path(store, "r").read_bytes()
        assert _reopen_in_child(store, step, torn=torn) == 9, f"step {step}"
        killed = check_run("r", store)  # honest right after the kill: never a crash
        assert not killed.complete or _manifest(store, "r").closed, f"step {step}"
        recover_run("r", store)
        recover_store(store)
        problems = _store_problems(store)
        assert transcript_path(store, "r").read_bytes().startswith(sealed), f"step {step}"
        with TranscriptWriter("r", store=store, reopen=True) as writer:
            writer.write({"role": "user", "content": "again"})
        problems += _store_problems(store)
        if problems:
            damaged.append((step, problems))
    assert not damaged, damaged
