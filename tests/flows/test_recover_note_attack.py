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
from tests.flows.test_crosscheck_flow import CALLS, RUN, SESSION, _hook, _lines

REACHES_INSIDE = {"agc.flows._import_sessions": "the file read between check and import"}


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    (tmp_path / "store").mkdir()
    return tmp_path / "store"


def _own(tmp_path: Path, stem: str = SESSION, project: str = "-home-u-p") -> Path:
    """Where Claude Code writes a session's file for this user (``CLAUDE_CONFIG_DIR`` is
    ``<tmp_path>/claude``): its folder made."""
    path = tmp_path / "claude" / "projects" / project / f"{stem}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


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
def test_recover_never_seals_a_file_another_user_wrote(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = _own(tmp_path)  # the victim's session file (not there yet)
    _killed_session(store, real)
    # the attacker: forged lines naming the same session, in a file of their own, even
    # one in a folder of the client's (the location checks pass: only the owner differs)
    forged = _own(tmp_path, project="-tmp-attacker")
    lines = _lines(CALLS[:1])
    lines[0] = lines[0].replace('"go"', '"rm -rf / was what the user asked"')
    forged.write_text("".join(line + "\n" for line in lines))
    os.chown(forged, 65534, 65534)
    os.chown(forged.parent, 65534, 65534)
    _rewrite_note(store, forged)
    capsys.readouterr()
    assert agc(["recover", RUN, "--store", str(store)]) == 0
    sealed = [line for line, _ in iter_records(RUN, store)]
    assert not any(b"rm -rf" in line for line in sealed), "the attacker's lines are sealed"
    assert "owned by another user (uid 65534)" in capsys.readouterr().out


def test_recover_never_opens_a_fifo_swapped_in_after_its_check(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agc.flows import _import_sessions  # noqa: PLC0415 - patched below

    session = _own(tmp_path)
    _killed_session(store, session)
    session.write_text("".join(line + "\n" for line in _lines(CALLS[:1])))
    checked = _import_sessions._named_session
    swapped = threading.Event()

    def check_then_swap(data: bytes):  # type: ignore[no-untyped-def]
        found = checked(data)
        if not swapped.is_set():  # the attacker's inotify on the first read's close
            session.unlink()
            os.mkfifo(session)
            swapped.set()  # (after: the writer then opens the FIFO, never a new file)
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
        code = agc(["recover", RUN, "--store", str(store)])
    finally:
        helper.join(5)
        held = opened.is_set()  # before our own release below opens it too
        if not held:  # release the writer: open the FIFO ourselves
            fd = os.open(session, os.O_RDONLY | os.O_NONBLOCK)
            thread.join(5)
            os.close(fd)
    assert swapped.is_set()  # the swap happened, after the one read
    assert not held, "recover opened the FIFO put where the session file was"
    # what was checked is what was sealed: the file as it was read
    assert code == 0
    assert len(list(iter_records(RUN, store))) == len(_lines(CALLS[:1]))


def test_recover_reads_no_file_that_is_no_regular_file(store: Path, tmp_path: Path) -> None:
    """A note naming a FIFO, a device or a folder: nothing read, no hang, recovery stands
    and says why the note was not used."""
    _killed_session(store, _own(tmp_path))
    fifo = _own(tmp_path)
    os.mkfifo(fifo)
    folder = _own(tmp_path, project="-home-u-q")
    folder.mkdir()
    for target in (fifo, Path("/dev/zero"), folder):
        _rewrite_note(store, target)
        outcome = import_recorded_session_file(RUN, store)
        assert outcome is not None
        assert outcome.status == "refused"
    assert agc(["recover", RUN, "--store", str(store)]) == 0


def test_recover_of_a_note_naming_a_huge_file_reports_and_stands(
    store: Path, tmp_path: Path
) -> None:
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    huge = _own(tmp_path)
    _killed_session(store, huge)
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
    assert "larger than the 256 MiB agc recover reads" in done.stdout
    assert list(iter_records(RUN, store)) == []


@pytest.mark.parametrize(
    "note",
    ["not json", "[1]", '{"transcript_path": 7}', '{"transcript_path": ""}', "huge", "other"],
)
def test_a_malformed_huge_or_other_session_s_note_seals_nothing(
    store: Path, tmp_path: Path, note: str
) -> None:
    """A note that is no note, is larger than agc reads, or names another session's
    file: nothing is added, and the recovery stands."""
    own = _own(tmp_path)
    _killed_session(store, own)
    path = store / "capture" / "session-files" / f"{RUN}.json"
    if note == "huge":
        text = json.dumps({"transcript_path": str(own), "pad": "x" * (1 << 17)})
        own.write_text("".join(line + "\n" for line in _lines(CALLS[:1])))
    elif note == "other":  # another session's lines, at the session's own path
        other = own
        lines = [line.replace("5a1c0b7e", "0ther0ne") for line in _lines(CALLS[:1])]
        other.write_text("".join(line + "\n" for line in lines))
        text = json.dumps({"transcript_path": str(other)})
    else:
        text = note
    path.write_text(text)
    outcome = import_recorded_session_file(RUN, store)
    # the note is no note: nothing to say; another session's lines: said, not used
    assert (outcome.status if outcome else None) == ("refused" if note == "other" else None)
    assert agc(["recover", RUN, "--store", str(store)]) == 0
    assert list(iter_records(RUN, store)) == []


def test_a_note_never_keeps_a_sidechain_out_of_its_own_run(store: Path, tmp_path: Path) -> None:
    from tests.flows.test_crosscheck_flow import _capture  # noqa: PLC0415

    main = _own(tmp_path)
    _capture(store, main, CALLS[:1], _lines(CALLS[:1]))
    sidechain = _own(tmp_path, "agent-1234")  # Claude Code: another stem, the same sessionId
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


@pytest.mark.parametrize("where", ["outside", "symlink", "linked-folder", "sidechain", "relative"])
def test_a_note_naming_no_own_session_file_is_said_and_never_followed(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """The note names a file with the session's lines that is not this user's own file
    of the session in the client's session folder (a file elsewhere, a link to one, a
    file in a folder linked out of the client's, a subagent's sidechain, a relative
    path): `agc recover` seals the run without it and says why, exit 0."""
    own = _own(tmp_path)
    _killed_session(store, own)
    text = "".join(line + "\n" for line in _lines(CALLS[:1]))
    elsewhere = tmp_path / "elsewhere" / f"{SESSION}.jsonl"
    elsewhere.parent.mkdir()
    elsewhere.write_text(text)
    named = {
        "outside": elsewhere,
        "symlink": own,
        "linked-folder": _own(tmp_path, project="-linked").parent / "x" / f"{SESSION}.jsonl",
        "sidechain": _own(tmp_path, "agent-1"),
        "relative": Path(f"{SESSION}.jsonl"),
    }[where]
    if where == "symlink":
        own.symlink_to(elsewhere)
    elif where == "linked-folder":
        named.parent.symlink_to(elsewhere.parent)
    elif where == "sidechain":
        named.write_text(text)
    _rewrite_note(store, named)
    capsys.readouterr()
    assert agc(["recover", RUN, "--store", str(store), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)["session_file"]
    assert said["status"] == "refused"
    reason = {
        "outside": "is not under",
        "symlink": "symlink",
        "linked-folder": "is not under",
        "sidechain": "sidechain",
        "relative": "no absolute path",
    }[where]
    assert reason in said["error"]["message"]
    assert list(iter_records(RUN, store)) == []


def test_a_hint_never_names_a_file_outside_the_client_s_session_folder(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store writer points the note of a run with an empty transcript at a file of
    theirs: the hint to `agc import` names the client's usual place, not their file."""
    _killed_session(store, _own(tmp_path))
    planted = tmp_path / "attacker" / f"{SESSION}.jsonl"
    _rewrite_note(store, planted)
    capsys.readouterr()
    assert agc(["recover", RUN, "--store", str(store)]) == 0
    err = capsys.readouterr().err
    assert "agc import ~/.claude/projects/*/" in err
    assert str(planted) not in err
