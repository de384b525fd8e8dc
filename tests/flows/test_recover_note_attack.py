"""Attacks on the session file ``agc recover`` seals: the note beside the run
(``capture/session-files/<run>.json``) is store data, which whoever can write the store
can rewrite; the victim's recovery then reads, seals and signs the file it names."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from agc.cli.app import main as agc
from agc.flows import capture_hook_event, import_recorded_session_file
from agc.integrity import iter_records
from tests.flows.test_crosscheck_flow import CALLS, RUN, _hook, _lines

REACHES_INSIDE = {"agc.flows._import_sessions": "the file read between check and import"}


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (tmp_path / "store").mkdir()
    return tmp_path / "store"


def _killed_session(store: Path, session: Path) -> None:
    """A session whose hooks saw one call, killed before its first turn's end."""
    capture_hook_event("claude-code", _hook("SessionStart", session, source="startup"), store=store)
    for name in ("PreToolUse", "PostToolUse"):
        event = _hook(name, session, tool_name="Bash", tool_input={}, tool_use_id="toolu_1")
        assert capture_hook_event("claude-code", event, store=store).failure is None


def _rewrite_note(store: Path, target: Path) -> None:
    note = store / "capture" / "session-files" / f"{RUN}.json"
    assert note.is_file()  # the hooks kept it
    note.write_text(json.dumps({"transcript_path": str(target)}) + "\n")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a file another user owns")
@pytest.mark.xfail(
    strict=True,
    reason="recover seals (and signs with the victim's key) whatever file the store's "
    "note names, though another user owns it: a store writer swaps the killed "
    "session's transcript for lines of their own",
)
def test_recover_never_seals_a_file_another_user_wrote(store: Path, tmp_path: Path) -> None:
    real = tmp_path / "home" / "real.jsonl"  # the victim's session file (not there yet)
    real.parent.mkdir()
    _killed_session(store, real)
    # the attacker: forged lines naming the same session, in a file of their own
    forged = tmp_path / "attacker" / "s.jsonl"
    forged.parent.mkdir()
    lines = _lines(CALLS[:1])
    lines[0] = lines[0].replace('"go"', '"rm -rf / was what the user asked"')
    forged.write_text("".join(line + "\n" for line in lines))
    os.chown(forged, 65534, 65534)
    os.chown(forged.parent, 65534, 65534)
    _rewrite_note(store, forged)
    assert agc(["recover", RUN, "--store", str(store)]) == 0
    sealed = [line for line, _ in iter_records(RUN, store)]
    assert not any(b"rm -rf" in line for line in sealed), "the attacker's lines are sealed"


@pytest.mark.xfail(
    strict=True,
    reason="recover checks the named file by one read and imports it by another open of "
    "the path: a file swapped for a FIFO between the two is opened (blocking, "
    "unbounded): agc recover hangs, or reads what the FIFO's writer feeds it",
)
def test_recover_never_opens_a_fifo_swapped_in_after_its_check(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agc.flows import _import_sessions  # noqa: PLC0415 - patched below

    session = tmp_path / "shared" / "s.jsonl"
    session.parent.mkdir()
    _killed_session(store, session)
    session.write_text("".join(line + "\n" for line in _lines(CALLS[:1])))
    checked = _import_sessions._named_session
    swapped = threading.Event()

    def check_then_swap(data: bytes):  # type: ignore[no-untyped-def]
        found = checked(data)
        if not swapped.is_set():  # the attacker's inotify on the first read's close
            swapped.set()
            session.unlink()
            os.mkfifo(session)
        return found

    monkeypatch.setattr(_import_sessions, "_named_session", check_then_swap)
    opened = threading.Event()

    def writer() -> None:  # blocks until a reader opens the FIFO
        with open(session, "wb") as fifo:
            opened.set()
            fifo.write(b"{}\n")

    thread = threading.Thread(target=writer, daemon=True)
    import_started = threading.Event()

    def start_writer_after_swap() -> None:
        swapped.wait()
        thread.start()
        import_started.set()

    helper = threading.Thread(target=start_writer_after_swap, daemon=True)
    helper.start()
    try:
        import_recorded_session_file(RUN, store)
    finally:
        helper.join(5)
        if not opened.is_set():  # release the writer: open the FIFO ourselves
            fd = os.open(session, os.O_RDONLY | os.O_NONBLOCK)
            thread.join(5)
            os.close(fd)
    assert not opened.is_set(), "recover opened the FIFO put where the session file was"


def test_recover_reads_no_file_that_is_no_regular_file(store: Path, tmp_path: Path) -> None:
    """A note naming a FIFO, a device or a folder: nothing read, no hang, recovery stands."""
    _killed_session(store, tmp_path / "s.jsonl")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target in (fifo, Path("/dev/zero"), tmp_path):
        _rewrite_note(store, target)
        assert import_recorded_session_file(RUN, store) is None
    assert agc(["recover", RUN, "--store", str(store)]) == 0


@pytest.mark.xfail(
    strict=True,
    reason="recover reads the whole named file into memory (twice: the session check of "
    "its first lines, then the import), with no bound: a note naming a large sparse "
    "file that names the session makes agc recover die of MemoryError (exit 4, a bug) "
    "after it sealed the run, its report never said",
)
def test_recover_of_a_note_naming_a_huge_file_reports_and_stands(
    store: Path, tmp_path: Path
) -> None:
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    _killed_session(store, tmp_path / "s.jsonl")
    huge = tmp_path / "huge.jsonl"
    huge.write_text(_lines(CALLS[:1])[0] + "\n")
    os.truncate(huge, 3 << 30)  # a hole: no disk used
    _rewrite_note(store, huge)
    script = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29))\n"
        "from agc.cli.app import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "recover", RUN, "--store", str(store)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-800:]


@pytest.mark.parametrize(
    "note",
    ["not json", "[1]", '{"transcript_path": 7}', '{"transcript_path": ""}', "huge", "other"],
)
def test_a_malformed_huge_or_other_session_s_note_seals_nothing(
    store: Path, tmp_path: Path, note: str
) -> None:
    """A note that is no note, is larger than agc reads, or names another session's
    file: nothing is added, and the recovery stands."""
    _killed_session(store, tmp_path / "s.jsonl")
    path = store / "capture" / "session-files" / f"{RUN}.json"
    if note == "huge":
        text = json.dumps({"transcript_path": str(tmp_path / "s.jsonl"), "pad": "x" * (1 << 17)})
        (tmp_path / "s.jsonl").write_text("".join(line + "\n" for line in _lines(CALLS[:1])))
    elif note == "other":  # another session's file
        other = tmp_path / "other.jsonl"
        lines = [line.replace("5a1c0b7e", "0ther0ne") for line in _lines(CALLS[:1])]
        other.write_text("".join(line + "\n" for line in lines))
        text = json.dumps({"transcript_path": str(other)})
    else:
        text = note
    path.write_text(text)
    assert import_recorded_session_file(RUN, store) is None
    assert agc(["recover", RUN, "--store", str(store)]) == 0
    assert list(iter_records(RUN, store)) == []


@pytest.mark.xfail(
    strict=True,
    reason="agc import routes a file by the store's note alone: a note naming a "
    "subagent's sidechain file (its lines name the parent's sessionId) sends it to the "
    "parent's run, where it diverges and is never imported (its own run is never made)",
)
def test_a_note_never_keeps_a_sidechain_out_of_its_own_run(store: Path, tmp_path: Path) -> None:
    from tests.flows.test_crosscheck_flow import _capture  # noqa: PLC0415

    main = tmp_path / "main.jsonl"
    _capture(store, main, CALLS[:1], _lines(CALLS[:1]))
    sidechain = tmp_path / "agent-1234.jsonl"  # Claude Code: another stem, the same sessionId
    lines = [line.replace('"go"', '"subagent task"') for line in _lines(CALLS[1:2])]
    sidechain.write_text("".join(line + "\n" for line in lines))
    _rewrite_note(store, sidechain)  # the store writer
    assert agc(["import", str(sidechain), "--store", str(store)]) == 0
    own = RUN + ".agent-1234"
    assert len(list(iter_records(own, store))) == len(lines)


@pytest.mark.parametrize("planted", ["fifo", "folder", "symlink"])
def test_a_thing_planted_where_the_note_goes_never_holds_the_hook(
    store: Path, tmp_path: Path, planted: str
) -> None:
    """A store writer puts a FIFO, a folder or a link where the session's note goes: the
    hook's events are still captured at once, and a link's target is never written."""
    note = store / "capture" / "session-files" / f"{RUN}.json"
    note.parent.mkdir(parents=True)
    target = tmp_path / "victim-file"
    target.write_text("mine\n")
    if planted == "fifo":
        os.mkfifo(note)
    elif planted == "folder":
        note.mkdir()
    else:
        note.symlink_to(target)
    _killed_session(store, tmp_path / "s.jsonl")  # asserts each event is captured
    assert target.read_text() == "mine\n"
