"""``agc import DIR`` and ``agc watch``: whole session folders, incrementally.

Each client session file becomes the run of its session; a file that grew since
becomes a new segment of its run when the sealed records are exactly its first ones,
and ``transcript-diverges`` (nothing written) when they are not.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc._core.objstore import ObjectStore
from agc._core.store import StoreLayout
from agc.capture import run_id_for
from agc.cli.app import main
from agc.errors import RunLockedError
from agc.flows import _import_sessions as import_flows
from agc.flows import capture_hook_event, import_session_file, import_sessions
from agc.integrity import check_run, check_store, ingest_stream
from tests.conftest import REAL_FIXTURES, require_shared

REACHES_INSIDE = {"agc.flows._import_sessions": "a store failure for one session file"}

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


def _claude_lines(count: int) -> list[bytes]:
    """A Claude Code session of ``count`` lines: calls and their results in turn."""
    lines = []
    for n in range(count):
        block = (
            {"type": "tool_use", "id": f"t{n // 2}", "name": "Bash", "input": {"n": n}}
            if n % 2 == 0
            else {"type": "tool_result", "tool_use_id": f"t{n // 2}", "content": f"r{n}"}
        )
        line = {
            "type": "assistant" if n % 2 == 0 else "user",
            "sessionId": "s-prop",
            "timestamp": f"2026-12-01T10:00:{n:02d}Z",
            "message": {"content": [block]},
        }
        lines.append(json.dumps(line).encode() + b"\n")
    return lines


@given(
    count=st.integers(min_value=2, max_value=12),
    cut=st.floats(min_value=0.0, max_value=1.0),
    edit=st.none() | st.floats(min_value=0.0, max_value=0.999),
)
def test_a_grown_or_changed_session_is_appended_or_diverges_never_mixed(
    count: int, cut: float, edit: float | None
) -> None:
    lines = _claude_lines(count)
    sealed = max(1, int(count * cut))
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        store, reference, live = root / "store", root / "reference", root / "s-prop.jsonl"
        live.write_bytes(b"".join(lines[:sealed]))
        assert import_session_file(live, store=store).status == "imported"
        before = _files(store)
        grown = list(lines)
        changed = None if edit is None else int(sealed * edit)
        if changed is not None:
            grown[changed] = grown[changed].replace(b'"Bash"', b'"Bosh"').replace(b'"r', b'"x')
        live.write_bytes(b"".join(grown))
        outcome = import_session_file(live, store=store)
        if changed is not None:
            assert (outcome.status, outcome.line) == ("diverges", changed + 1)
            assert _files(store) == before
            return
        assert outcome.status == ("unchanged" if sealed == count else "appended")
        assert outcome.records == count - sealed
        assert check_run(outcome.run_id or "", store).complete
        import_session_file(live, store=reference)
        for kind in ("transcript", "tool-events"):
            assert _unstamped(StoreLayout(store).artifact_path(outcome.run_id or "", kind)) == (
                _unstamped(StoreLayout(reference).artifact_path(outcome.run_id or "", kind))
            )


def test_a_session_file_that_fails_fails_alone_and_is_tried_again(
    tmp_path: Path,
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = _session_folder(tmp_path)
    rollout_id = json.loads(_rollout().read_bytes().splitlines()[0])["payload"]["id"]
    locked = run_id_for("codex", rollout_id)
    real = ingest_stream  # what the import flow calls

    def ingest(stream: object, run_id: str, **kwargs: object) -> object:
        if run_id == locked:  # another writer holds this run's files
            raise RunLockedError(f"run {run_id} is locked by another writer")
        return real(stream, run_id, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(import_flows, "ingest_stream", ingest)
    seen: dict[Path, tuple[int, int]] = {}
    outcomes = {o.path.name: o for o in import_sessions([folder], store=store, seen=seen)}
    failed = outcomes[_rollout().name]
    assert failed.status == "failed"
    assert failed.error is not None
    assert failed.error.exit_code == 3
    assert {o.status for o in outcomes.values()} == {"imported", "skipped", "failed"}
    assert main(["import", str(folder), "--store", str(store)]) == 3
    assert "failed (run-locked)" in capsys.readouterr().out
    monkeypatch.setattr(import_flows, "ingest_stream", real)
    (again,) = import_sessions([folder], store=store, seen=seen)  # tried again
    assert (again.path.name, again.status) == (_rollout().name, "imported")


def test_an_object_store_takes_a_folder_and_recognizes_it_again(
    tmp_path: Path, s3_store: ObjectStore
) -> None:
    folder = _session_folder(tmp_path)
    first = import_sessions([folder], store=s3_store.url)
    assert {o.status for o in first} == {"imported", "skipped"}
    imported = [o for o in first if o.status == "imported"]
    assert all(o.tool_events > 0 for o in imported)
    for outcome in imported:
        assert check_run(outcome.run_id or "", s3_store.url).complete
    again = import_sessions([folder], store=s3_store.url)
    assert {o.status for o in again} == {"unchanged", "skipped"}


def test_a_session_its_hooks_captured_keeps_their_tool_events_when_imported_again(
    tmp_path: Path, store: Path
) -> None:
    """The hooks sealed the session file as the run's transcript and kept their own
    tool-events: importing the session folder compares the transcript only (not the
    hook records with the file's), and continues it when the session went on."""
    fixtures = Path(__file__).resolve().parent.parent / "fixtures" / "hooks" / "claude-code"
    folder = tmp_path / "projects"
    folder.mkdir()
    session = "00000000-0000-4000-8000-000000000001"
    live = folder / f"{session}.jsonl"
    live.write_bytes((fixtures / "session-file.jsonl").read_bytes())
    for name in json.loads((fixtures / "sequence.json").read_text()):
        event = json.loads((fixtures / f"{name}.json").read_bytes())
        event["transcript_path"] = str(live)
        capture_hook_event("claude-code", json.dumps(event).encode(), store=store)
    run_id = run_id_for("claude-code", session)
    assert check_run(run_id, store).complete
    events = StoreLayout(store).artifact_path(run_id, "tool-events").read_bytes()
    (same,) = import_sessions([folder], store=store)
    assert (same.run_id, same.status) == (run_id, "unchanged")
    with live.open("ab") as handle:
        handle.write(b'{"type":"system","sessionId":"%s","content":"later"}\n' % session.encode())
    (grown,) = import_sessions([folder], store=store)
    assert (grown.status, grown.records, grown.tool_events) == ("appended", 1, 0)
    assert StoreLayout(store).artifact_path(run_id, "tool-events").read_bytes() == events
    assert check_run(run_id, store).complete


def test_a_session_its_hooks_are_still_capturing_is_left_to_them(
    tmp_path: Path, store: Path
) -> None:
    fixtures = Path(__file__).resolve().parent.parent / "fixtures" / "hooks" / "claude-code"
    folder = tmp_path / "projects"
    folder.mkdir()
    session = "00000000-0000-4000-8000-000000000001"
    live = folder / f"{session}.jsonl"
    live.write_bytes((fixtures / "session-file.jsonl").read_bytes())
    for name in ("SessionStart", "PreToolUse"):  # the session goes on
        event = json.loads((fixtures / f"{name}.json").read_bytes())
        event["transcript_path"] = str(live)
        capture_hook_event("claude-code", json.dumps(event).encode(), store=store)
    run_id = run_id_for("claude-code", session)
    before = _files(store)
    (outcome,) = import_sessions([folder], store=store)
    assert (outcome.run_id, outcome.status) == (run_id, "unsealed")
    assert _files(store) == before
