"""Tests for ``agc record``: JSONL on stdin becomes a sealed run, no line lost."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agc._core.store import StoreLayout
from agc.cli.app import main
from agc.exitcodes import ExitCode
from agc.integrity import TranscriptWriter, check_run
from tests._core.test_store import BAD_RUN_IDS
from tests.conftest import (
    REAL_FIXTURES,
    assert_keeps_every_line,
    feed_stdin,
    finding_codes,
    read_records,
    real_fixture_files,
    require_shared,
    tree,
    write_run,
)

REAL = real_fixture_files() or [REAL_FIXTURES / "absent.jsonl"]


def _record(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    data: bytes,
    *argv: str,
) -> tuple[int, str, str]:
    feed_stdin(monkeypatch, data)
    code = main(["record", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_record_writes_seals_and_counts_invalid_lines(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = b'{"type":"thread.started"}\nnot json\n{"type":"turn.completed"}\n'
    code, out, err = _record(monkeypatch, capsys, data, "--run-id", "r1", "--store", str(store))
    assert code == ExitCode.OK
    assert out == (
        "run r1: 3 records written to transcript "
        "(1 non-object line kept as 'invalid' records), sealed\n"
    )
    assert err == ""
    stored = read_records(StoreLayout(store).artifact_path("r1", "transcript"))
    assert_keeps_every_line(data, stored)
    assert stored[1]["text"] == "not json"
    assert check_run("r1", store).complete


def test_record_json_summary_and_tool_events_kind(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--run-id", "r1", "--kind", "tool-events", "--store", str(store), "--json"]
    code, out, _ = _record(monkeypatch, capsys, b'{"event":"x"}\n', *argv)
    assert code == 0
    summary = json.loads(out)
    assert summary["schema_version"] == 1
    assert (summary["kind"], summary["records"], summary["invalid_lines"]) == ("tool-events", 1, 0)
    assert [s["kind"] for s in summary["seals"]] == ["transcript", "tool-events"]
    # The transcript was sealed empty: the run is never complete without one.
    assert finding_codes(check_run("r1", store)) == {"empty"}


def test_record_sha256(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--run-id", "r1", "--store", str(store), "--algorithm", "sha256"]
    assert _record(monkeypatch, capsys, b"{}\n", *argv)[0] == 0
    assert (
        StoreLayout(store).artifact_path("r1", "transcript").with_suffix(".jsonl.sha256").exists()
    )
    assert check_run("r1", store).complete


@pytest.mark.parametrize("run_id", BAD_RUN_IDS)
def test_bad_run_id_exits_2_and_creates_nothing(
    run_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "new-store"
    code, out, err = _record(
        monkeypatch, capsys, b"{}\n", "--run-id", run_id, "--store", str(store)
    )
    assert code == ExitCode.USAGE
    assert out == ""
    assert "error: run id" in err
    assert not store.exists()
    assert not Path(os.environ["AGC_HOME"]).exists()


def test_record_on_a_linked_run_exits_2_and_changes_nothing(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(store)
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    code, _, err = _record(monkeypatch, capsys, b"{}\n", "--run-id", "r1", "--store", str(store))
    assert code == ExitCode.USAGE
    assert "run r1 is already linked" in err
    # A run id used again: the hint is to check that run and choose a new id, not
    # about a failed write.
    # ... in the store it was recorded to (a hint without --store checks the default)
    assert f"hint: Check it with `agc-verify r1 --store {store}` (chain link 1)" in " ".join(
        err.split()
    )
    assert "new run id" in err
    assert "disk" not in err
    assert "agc recover" not in err
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before
    source = store.parent / "again.jsonl"
    source.write_bytes(b"{}\n")
    assert main(["import", str(source), "--run-id", "r1", "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert "new run id" in err
    assert "disk" not in err


def test_record_on_a_sealed_run_whose_link_is_pending_points_to_recover(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Sealed, but a link of the store is still pending (a disk that filled up or a kill
    # while the run was linked): `agc recover` completes it, so the hint says so.
    write_run(store)
    for name in ("chain.jsonl", "chain-head.json"):  # killed before its link was appended
        (StoreLayout(store).audit_dir / name).unlink()
    (StoreLayout(store).audit_dir / "chain-pending.json").write_text(
        '{"run_id": "r1", "position": 1, "prev": null}'
    )
    code, _, err = _record(monkeypatch, capsys, b"{}\n", "--run-id", "r1", "--store", str(store))
    assert code == ExitCode.UNREADABLE
    assert f"agc recover r1 --store {store}" in err
    assert "write a new run id" not in err


def test_record_while_another_writer_holds_the_run_exits_3(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    holder = TranscriptWriter("r1", store=store)
    code, _, err = _record(monkeypatch, capsys, b"{}\n", "--run-id", "r1", "--store", str(store))
    holder.abort()
    assert code == ExitCode.UNREADABLE
    assert "already open in another writer" in err


def test_unwritable_store_exits_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Running as root, chmod cannot make a folder unwritable; a store path under a
    # regular file cannot be created by anyone.
    blocker = tmp_path / "file"
    blocker.write_bytes(b"x")
    argv = ["--run-id", "r1", "--store", str(blocker / "store")]
    code, out, err = _record(monkeypatch, capsys, b"{}\n", *argv)
    assert code == ExitCode.UNREADABLE
    assert out == ""
    assert "error:" in err
    assert "Traceback" not in err
    assert tree(tmp_path) == ["file"]


@pytest.mark.parametrize("fixture", REAL, ids=lambda p: p.name)
def test_real_transcripts_through_record(
    fixture: Path,
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = require_shared(fixture).read_bytes()
    code, out, _ = _record(monkeypatch, capsys, data, "--run-id", "real", "--store", str(store))
    assert code == 0, out
    assert check_run("real", store).complete
    stored = read_records(StoreLayout(store).artifact_path("real", "transcript"))
    assert_keeps_every_line(data, stored)


def test_record_without_standard_input_is_a_usage_error_and_creates_nothing(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # `agc record … <&-`: Python then has no sys.stdin at all.
    monkeypatch.setattr("sys.stdin", None)
    code = main(["record", "--run-id", "r1", "--store", str(store)])
    _, err = capsys.readouterr()
    assert code == ExitCode.USAGE
    assert "standard input" in err
    assert "Traceback" not in err
    assert tree(store) == []
