"""One sidecar reader, one error policy, for every caller.

Absent is ``None``; present but unusable (a symlink, FIFO, socket, folder, too large,
malformed) is ``SidecarInvalidError``: a finding for checkers, a refusal for writers and
loaders; present but unreadable (permission denied, an I/O error) is ``StoreError``
(exit 3) everywhere, never a finding and never a pass.
"""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agc._core.digest import Algorithm
from agc._core.fs import read_small_file
from agc._core.sidecar import (
    MAX_SIDECAR_BYTES,
    Sidecar,
    format_sidecar,
    read_sidecar,
    read_sidecars,
    sidecar_path,
    sidecar_paths,
)
from agc.errors import (
    RecoveryRefusedError,
    SidecarInvalidError,
    SidecarMismatchError,
    SnapshotTamperedError,
    StoreError,
)
from agc.exitcodes import ExitCode
from agc.integrity import ArtifactSeal, check_run, seal_file
from agc.integrity._recover import _existing_sidecar_agrees
from agc.ledger import check_turn_file
from agc.ledger._writer import TurnLedgerFile
from agc.resume import SessionSnapshot, load_snapshot_file, save_snapshot
from tests.integrity.evidence_helpers import write_run
from tests.ledger.helpers import command, record_turn

REACHES_INSIDE = {
    "agc.integrity._recover": "the sidecar agreement check recover uses, on a hostile sidecar",
    "agc.ledger._writer": "the turn file writer, on a hostile sidecar",
}

HEX = "ab" * 32


def test_sidecar_paths_sit_beside_the_file() -> None:
    path = Path("/s/audit/transcripts/r1.jsonl")
    assert sidecar_path(path, "blake3") == Path("/s/audit/transcripts/r1.jsonl.b3")
    assert sidecar_paths(path) == {
        "blake3": Path("/s/audit/transcripts/r1.jsonl.b3"),
        "sha256": Path("/s/audit/transcripts/r1.jsonl.sha256"),
    }


def test_an_absent_sidecar_is_none(tmp_path: Path) -> None:
    assert read_sidecar(tmp_path / "x.jsonl", "blake3") is None
    assert read_sidecars(tmp_path / "x.jsonl") == {}


def test_a_good_and_a_legacy_sidecar_are_read(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    sidecar_path(path, "blake3").write_bytes(format_sidecar(HEX, "x.jsonl"))
    sidecar_path(path, "sha256").write_bytes(HEX.encode() + b"\n")
    assert read_sidecars(path) == {
        "blake3": Sidecar(HEX, "x.jsonl"),
        "sha256": Sidecar(HEX, None, legacy=True),
    }


def _symlink(where: Path) -> None:
    target = where.with_name("elsewhere")
    target.write_bytes(format_sidecar(HEX, "x.jsonl"))
    where.symlink_to(target)


def _fifo(where: Path) -> None:
    os.mkfifo(where)


def _folder(where: Path) -> None:
    where.mkdir()


def _socket(where: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(where))
    server.close()


def _too_large(where: Path) -> None:
    where.write_bytes(b"0" * (MAX_SIDECAR_BYTES + 1))


def _malformed(where: Path) -> None:
    where.write_bytes(HEX.upper().encode() + b"  x.jsonl\n")


UNUSABLE: dict[str, Callable[[Path], None]] = {
    "symlink": _symlink,
    "fifo": _fifo,
    "folder": _folder,
    "socket": _socket,
    "too-large": _too_large,
    "malformed": _malformed,
}


@pytest.mark.parametrize("kind", sorted(UNUSABLE))
def test_an_unusable_sidecar_is_invalid(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "x.jsonl"
    UNUSABLE[kind](sidecar_path(path, "blake3"))
    with pytest.raises(SidecarInvalidError) as info:
        read_sidecar(path, "blake3")
    assert info.value.message.startswith("sidecar ")
    problem = read_sidecars(path)["blake3"]
    assert isinstance(problem, str)
    assert not problem.startswith("sidecar ")


def _unreadable(monkeypatch: pytest.MonkeyPatch, error: int) -> None:
    """Make every sidecar read fail as if the OS refused it (tests run as root, for
    whom chmod does not make a file unreadable)."""
    original = read_small_file

    def read(path: Path, *, max_bytes: int) -> bytes:
        if path.name.endswith((".b3", ".sha256")) and os.path.lexists(path):
            raise OSError(error, os.strerror(error), str(path))
        return original(path, max_bytes=max_bytes)

    monkeypatch.setattr("agc._core.sidecar.read_small_file", read)
    # ... and a folder store's read of one (the run reader reads through the store)
    os_read = os.read

    def read_fd(fd: int, size: int) -> bytes:
        if os.readlink(f"/proc/self/fd/{fd}").endswith((".b3", ".sha256")):
            raise OSError(error, os.strerror(error))
        return os_read(fd, size)

    monkeypatch.setattr(os, "read", read_fd)


@pytest.mark.parametrize("error", [errno.EACCES, errno.EPERM, errno.EIO])
def test_an_unreadable_sidecar_is_a_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: int
) -> None:
    path = tmp_path / "x.jsonl"
    sidecar_path(path, "blake3").write_bytes(format_sidecar(HEX, "x.jsonl"))
    _unreadable(monkeypatch, error)
    with pytest.raises(StoreError) as info:
        read_sidecar(path, "blake3")
    assert info.value.exit_code == ExitCode.UNREADABLE
    with pytest.raises(StoreError):
        read_sidecars(path)


# -- every caller follows the rule ---------------------------------------------------------


def _verify_run(tmp_path: Path) -> tuple[Path, Callable[[], Any]]:
    store = tmp_path / "store"
    store.mkdir()
    write_run(store, "r1")
    path = store / "audit" / "transcripts" / "r1.jsonl"
    return path, lambda: check_run("r1", store)


def _ledger_check(tmp_path: Path) -> tuple[Path, Callable[[], Any]]:
    project = tmp_path / "proj"
    project.mkdir()
    path = record_turn(project, [command("c1", "ls")]).turn_file
    return path, lambda: check_turn_file(path)


def _ledger_writer(tmp_path: Path) -> tuple[Path, Callable[[], Any]]:
    project = tmp_path / "proj"
    project.mkdir()
    path = record_turn(project, [command("c1", "ls")]).turn_file

    def reopen() -> None:
        TurnLedgerFile(path).abort()

    return path, reopen


def _seal(tmp_path: Path) -> tuple[Path, Callable[[], Any]]:
    path = tmp_path / "out.jsonl"
    path.write_bytes(b'{"a":1}\n')
    seal_file(path)
    return path, lambda: seal_file(path)


def _snapshot(tmp_path: Path) -> tuple[Path, Callable[[], Any]]:
    snapshot = SessionSnapshot(
        run_id="r1",
        session_id="s1",
        messages=[{"role": "user", "content": "hi"}],
    )
    result = save_snapshot(snapshot, tmp_path / "store")
    return result.path, lambda: load_snapshot_file(result.path)


def _recover(tmp_path: Path) -> tuple[Path, Callable[[], Any]]:
    path = tmp_path / "r1.jsonl"
    path.write_bytes(b'{"a":1}\n')
    sidecar_path(path, "blake3").write_bytes(format_sidecar(HEX, "r1.jsonl"))
    seal = ArtifactSeal(
        kind="transcript",
        file="r1.jsonl",
        algorithm="blake3",
        digest=HEX,
        bytes=8,
        records=1,
        last_seq=0,
        sealed_at_ms=1,
    )
    return path, lambda: _existing_sidecar_agrees(sidecar_path(path, "blake3"), path, seal)


CALLERS: dict[str, Callable[[Path], tuple[Path, Callable[[], Any]]]] = {
    "verify": _verify_run,
    "ledger-check": _ledger_check,
    "ledger-writer": _ledger_writer,
    "seal": _seal,
    "snapshot": _snapshot,
    "recover": _recover,
}
# What an unusable sidecar gives each caller: a finding (checkers) or a refusal.
REFUSALS: dict[str, type[Exception] | None] = {
    "verify": None,
    "ledger-check": None,
    "ledger-writer": SidecarMismatchError,
    "seal": SidecarMismatchError,
    "snapshot": SnapshotTamperedError,
    "recover": RecoveryRefusedError,
}


def _algorithm_of(path: Path) -> Algorithm:
    return "blake3" if sidecar_path(path, "blake3").exists() else "sha256"


@pytest.mark.parametrize("caller", sorted(CALLERS))
@pytest.mark.parametrize("error", [errno.EACCES, errno.EIO])
def test_every_caller_exits_3_on_an_unreadable_sidecar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caller: str, error: int
) -> None:
    _, action = CALLERS[caller](tmp_path)
    _unreadable(monkeypatch, error)
    with pytest.raises(StoreError) as info:
        action()
    assert info.value.exit_code == ExitCode.UNREADABLE


@pytest.mark.parametrize("caller", sorted(CALLERS))
@pytest.mark.parametrize("kind", ["symlink", "too-large", "fifo", "malformed"])
def test_every_caller_reports_or_refuses_an_unusable_sidecar(
    tmp_path: Path, caller: str, kind: str
) -> None:
    path, action = CALLERS[caller](tmp_path)
    where = sidecar_path(path, _algorithm_of(path))
    where.unlink()
    UNUSABLE[kind](where)
    refusal = REFUSALS[caller]
    if refusal is not None:
        with pytest.raises(refusal, match="not a valid sidecar"):
            action()
        return
    report = action()
    assert "sidecar-invalid" in {f.code for f in report.findings}
    assert not getattr(report, "complete", getattr(report, "ok", True))
