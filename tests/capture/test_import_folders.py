"""``agc import DIR`` and ``agc watch``: whole session folders, incrementally.

Each client session file becomes the run of its session; a file that grew since
becomes a new segment of its run when the sealed records are exactly its first ones,
and ``transcript-diverges`` (nothing written) when they are not.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agc._core.store import StoreLayout
from agc.capture import run_id_for
from agc.cli.app import main
from agc.flows import import_sessions
from agc.integrity import check_run, check_store
from tests.conftest import REAL_FIXTURES, require_shared

ROLLOUT = REAL_FIXTURES / "codex-rollout"
CLAUDE = REAL_FIXTURES / "claude-code" / "agentcmd-full-session.jsonl"


def _rollout() -> Path:
    found = sorted(require_shared(ROLLOUT).glob("rollout-2026-02-23T20-34-25-*.jsonl"))
    return found[0] if found else require_shared(ROLLOUT / "absent.jsonl")


def _session_folder(tmp_path: Path) -> Path:
    """A folder laid out as the clients lay theirs: a Codex rollout, a Claude Code
    session named by its session id, and a file that is no session."""
    folder = tmp_path / "sessions"
    (folder / "2026" / "02").mkdir(parents=True)
    rollout = _rollout()
    shutil.copy(rollout, folder / "2026" / "02" / rollout.name)
    claude = require_shared(CLAUDE)
    session = json.loads(claude.read_bytes().splitlines()[0])["sessionId"]
    (folder / "project").mkdir()
    shutil.copy(claude, folder / "project" / f"{session}.jsonl")
    (folder / "notes.jsonl").write_bytes(b'{"a":1}\n')
    return folder


def _files(store: Path) -> dict[str, bytes]:
    """Every file of a store and its bytes."""
    return {str(p.relative_to(store)): p.read_bytes() for p in store.rglob("*") if p.is_file()}


def _unstamped(path: Path) -> list[dict[str, object]]:
    records = [json.loads(line) for line in path.read_bytes().splitlines()]
    for record in records:
        record.pop("ts")
    return records


def test_a_folder_imports_each_session_under_its_session_run_id(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _session_folder(tmp_path)
    assert main(["import", str(folder), "--store", str(store), "--json"]) == 0
    outcomes = {Path(o["path"]).name: o for o in json.loads(capsys.readouterr().out)}
    rollout_id = json.loads(_rollout().read_bytes().splitlines()[0])["payload"]["id"]
    claude_id = json.loads(CLAUDE.read_bytes().splitlines()[0])["sessionId"]
    assert outcomes[_rollout().name]["run_id"] == run_id_for("codex", rollout_id)
    assert outcomes[f"{claude_id}.jsonl"]["run_id"] == run_id_for("claude-code", claude_id)
    assert outcomes["notes.jsonl"]["status"] == "skipped"
    assert {o["status"] for o in outcomes.values()} == {"imported", "skipped"}
    assert check_store(store).complete
    before = _files(store)
    assert main(["import", str(folder), "--store", str(store), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert {o["status"] for o in again} == {"unchanged", "skipped"}
    assert _files(store) == before


@pytest.mark.parametrize("split", [0.2, 0.5, 0.9])
def test_a_grown_file_becomes_a_new_segment_equal_to_importing_it_whole(
    tmp_path: Path, store: Path, split: float, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = _rollout().read_bytes()
    lines = whole.splitlines(keepends=True)
    folder = tmp_path / "live"
    folder.mkdir()
    live = folder / _rollout().name
    live.write_bytes(b"".join(lines[: int(len(lines) * split)]))
    assert main(["import", str(folder), "--store", str(store)]) == 0
    capsys.readouterr()
    live.write_bytes(whole)
    assert main(["import", str(folder), "--store", str(store), "--json"]) == 0
    (outcome,) = json.loads(capsys.readouterr().out)
    run_id = run_id_for("codex", json.loads(lines[0])["payload"]["id"])
    assert check_run(run_id, store).complete
    reference = tmp_path / "reference"
    reference.mkdir()
    assert main(["import", str(live), "--store", str(reference)]) == 0
    for kind in ("transcript", "tool-events"):
        assert _unstamped(StoreLayout(store).artifact_path(run_id, kind)) == _unstamped(
            StoreLayout(reference).artifact_path(run_id, kind)
        )
    manifest = json.loads(StoreLayout(store).manifest_path(run_id).read_bytes())
    assert len(manifest["artifacts"]["transcript"]["segments"]) == 1
    assert outcome["status"] == "appended"


def test_a_file_changed_where_it_was_sealed_diverges_and_nothing_is_written(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _session_folder(tmp_path)
    assert main(["import", str(folder), "--store", str(store)]) == 0
    before = _files(store)
    target = folder / "2026" / "02" / _rollout().name
    data = target.read_bytes().replace(b"task_started", b"task_startex", 1)
    target.write_bytes(data + b'{"timestamp":"t","type":"event_msg","payload":{}}\n')
    capsys.readouterr()
    assert main(["import", str(folder), "--store", str(store), "--json"]) == 1
    outcomes = json.loads(capsys.readouterr().out)
    (diverged,) = [o for o in outcomes if o["status"] == "diverges"]
    assert diverged["finding"] == "transcript-diverges"
    first = next(n for n, line in enumerate(data.splitlines(), 1) if b"task_startex" in line)
    assert diverged["line"] == first
    assert _files(store) == before


def test_a_line_still_being_written_waits_for_its_end(tmp_path: Path, store: Path) -> None:
    whole = _rollout().read_bytes()
    folder = tmp_path / "live"
    folder.mkdir()
    live = folder / _rollout().name
    cut = len(whole) // 2
    live.write_bytes(whole[:cut])  # ends inside a line
    (first,) = import_sessions([folder], store=store)
    assert first.status == "imported"
    assert first.records == whole[:cut].count(b"\n")
    live.write_bytes(whole)
    (second,) = import_sessions([folder], store=store)
    assert second.status == "appended"
    assert first.records + second.records == whole.count(b"\n")
    assert check_run(first.run_id or "", store).complete


def test_watch_looks_again_only_at_files_that_changed(tmp_path: Path, store: Path) -> None:
    folder = _session_folder(tmp_path)
    seen: dict[Path, tuple[int, int]] = {}
    first = import_sessions([folder], store=store, seen=seen)
    assert len(first) == 3
    assert import_sessions([folder], store=store, seen=seen) == []
    target = folder / "2026" / "02" / _rollout().name
    with target.open("ab") as handle:
        handle.write(b'{"timestamp":"t","type":"event_msg","payload":{"type":"x"}}\n')
    (grown,) = import_sessions([folder], store=store, seen=seen)
    assert (grown.status, grown.records) == ("appended", 1)


def test_watch_once_prints_what_it_wrote(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _session_folder(tmp_path)
    assert main(["watch", str(folder), "--once", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert out.count(": imported,") == 2
    assert "notes.jsonl" not in out


@pytest.mark.parametrize("argv", [["--run-id", "r1"], []])
def test_a_missing_folder_or_a_folder_with_a_run_id_is_a_usage_error(
    tmp_path: Path, store: Path, argv: list[str]
) -> None:
    folder = tmp_path / "sessions"
    if argv:
        folder.mkdir()
    assert main(["import", str(folder), "--store", str(store), *argv]) == 2
    assert main(["watch", str(tmp_path / "absent"), "--once", "--store", str(store)]) == 2
