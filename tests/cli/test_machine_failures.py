"""Every writing command under a failing disk: exit 3 (never "internal error"), a message
naming the file and the cause, nothing half-written, and the same command works once
the disk is healthy.

The errno is injected under the folder being written (tests/faults.py), and each path
is also run on a small real tmpfs that the kernel fills or makes read-only.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agc._core.store import StoreLayout
from agc.cli.app import main
from agc.cli.verify import main as verify_main
from agc.errors import FileWriteError
from agc.exitcodes import ExitCode
from agc.integrity import TranscriptWriter, check_store, load_signing_key, read_manifest
from agc.resume import SessionSnapshot, ToolCallState, load_snapshot, save_snapshot
from tests.conftest import feed_stdin, write_run
from tests.faults import failing_disk, fill, remount, temp_files, tmpfs

GOLDEN = Path(__file__).resolve().parents[1] / "resume" / "golden"

# Kills and disk faults: os.fsync stays real here (tests/conftest.py, _fsync_off).
pytestmark = pytest.mark.real_fsync

ERRNOS = [errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO]
CAUSES = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EIO: "input/output error",
}
ids = errno.errorcode.get


def _lines(count: int) -> bytes:
    return b"".join(json.dumps({"n": n, "pad": "x" * 40}).encode() + b"\n" for n in range(count))


def _assert_exit_3(code: int, err: str, *, names: str, cause: str) -> None:
    assert code == ExitCode.UNREADABLE, err
    assert "internal error" not in err
    assert "Traceback" not in err
    assert names in err
    assert cause in err


# -- agc seal ---------------------------------------------------------------------------


@pytest.mark.parametrize("err", ERRNOS, ids=ids)
def test_seal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], err: int
) -> None:
    target = tmp_path / "events.jsonl"
    target.write_bytes(_lines(3))
    with failing_disk(monkeypatch, tmp_path, err):
        code = main(["seal", str(target)])
    _assert_exit_3(code, capsys.readouterr().err, names="events.jsonl.b3", cause=CAUSES[err])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.jsonl"]
    assert main(["seal", str(target)]) == ExitCode.OK
    assert (tmp_path / "events.jsonl.b3").exists()


# -- agc keys generate ------------------------------------------------------------------


@pytest.mark.parametrize("err", ERRNOS, ids=ids)
@pytest.mark.parametrize("which", ["signing-key.pem", "signing-key.pub.pem"])
def test_keys_generate_never_leaves_a_partial_or_lone_key(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    err: int,
    which: str,
) -> None:
    keys = tmp_path / "keys"
    keys.mkdir()
    with failing_disk(monkeypatch, keys, err, only=f".{which}.*.tmp"):
        code = main(["keys", "generate", "--out", str(keys)])
    _assert_exit_3(code, capsys.readouterr().err, names=which, cause=CAUSES[err])
    assert list(keys.iterdir()) == []  # no 0-byte key, no lone private key, no temp file
    assert main(["keys", "generate", "--out", str(keys)]) == ExitCode.OK
    load_signing_key(keys / "signing-key.pem")
    assert (keys / "signing-key.pem").stat().st_mode & 0o777 == 0o600


def test_an_empty_key_left_by_an_old_version_is_explained(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "signing-key.pem").write_bytes(b"")
    assert main(["keys", "generate", "--out", str(keys)]) == ExitCode.USAGE
    assert "is empty" in capsys.readouterr().err
    feed = ["record", "--run-id", "r1", "--signing-key", str(keys / "signing-key.pem")]
    assert main(feed) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "signing key" in err
    assert "is empty" in err
    assert "MalformedFraming" not in err


# -- agc record / agc import and everything sealing writes ---------------------------------

SEALING_FILES = {
    "transcript": "r1.jsonl",
    "sidecar": ".r1.jsonl.b3.*.tmp",
    "manifest": ".r1.json.*.tmp",
    "chain-link": "chain.jsonl",
    "chain-head": ".chain-head.json.*.tmp",
}


@pytest.mark.parametrize("err", ERRNOS, ids=ids)
@pytest.mark.parametrize("where", list(SEALING_FILES))
def test_record_then_recover(
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    err: int,
    where: str,
) -> None:
    write_run(store, "earlier")  # the chain already has a link
    data = _lines(500)
    # A disk that fills midway through the transcript, or fails on one sealing file.
    budget = 10_000 if where == "transcript" else 0
    feed_stdin(monkeypatch, data)
    with failing_disk(monkeypatch, store, err, budget=budget, only=SEALING_FILES[where]):
        code = main(["record", "--run-id", "r1", "--store", str(store)])
    err_text = capsys.readouterr().err
    name = "chain" if where.startswith("chain") else "r1.json"
    _assert_exit_3(code, err_text, names=name, cause=CAUSES[err])
    assert f"agc recover r1 --store {store}" in err_text or where == "transcript"
    assert temp_files(store) == []
    layout = StoreLayout(store)
    if where == "transcript" and err == errno.EROFS:
        # Nothing could be created: the run id stays free and the same command works.
        assert not layout.artifact_path("r1", "transcript").exists()
        feed_stdin(monkeypatch, data)
        assert main(["record", "--run-id", "r1", "--store", str(store)]) == ExitCode.OK
        assert check_store(store).complete
        return
    transcript = layout.artifact_path("r1", "transcript").read_bytes()
    assert transcript == b"" or transcript.endswith(b"\n")  # no torn record
    chain = (layout.audit_dir / "chain.jsonl").read_bytes()
    assert chain.endswith(b"\n")
    assert chain.count(b"\n") in {1, 2}
    assert not check_store(store).complete  # unsealed, or sealed but not yet chained

    assert main(["recover", "r1", "--store", str(store)]) == ExitCode.OK
    capsys.readouterr()
    # Bytes the failing disk kept a checkpoint from vouching for make the run
    # `recovered` (an error unless allowed), and only those; healed is everything else.
    manifest = read_manifest(layout, "r1")
    assert manifest is not None
    assert check_store(store).complete is not manifest.recovered_unvouched
    report = check_store(store, allow_recovered=True)
    assert report.complete, [m for r in report.runs for m in r.missing] + [
        f.message for f in report.findings
    ]
    assert layout.artifact_path("r1", "transcript").read_bytes() == transcript


def test_a_disk_full_record_points_to_agc_recover(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    feed_stdin(monkeypatch, _lines(500))
    with failing_disk(monkeypatch, store, errno.ENOSPC, budget=10_000):
        assert main(["record", "--run-id", "r1", "--store", str(store)]) == 3
    err = capsys.readouterr().err
    records = StoreLayout(store).artifact_path("r1", "transcript").read_bytes().count(b"\n")
    assert records > 0
    assert f"{records} records are complete on disk" in err
    assert f"`agc recover r1 --store {store}` seals them" in err


@pytest.mark.parametrize("err", ERRNOS, ids=ids)
def test_a_failure_before_the_first_record_leaves_the_run_id_free(
    tmp_path: Path,
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    err: int,
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(_lines(3))
    with failing_disk(monkeypatch, store, err):
        code = main(["import", str(source), "--run-id", "r1", "--store", str(store)])
    _assert_exit_3(code, capsys.readouterr().err, names=str(store), cause=CAUSES[err])
    assert not StoreLayout(store).artifact_path("r1", "transcript").exists()
    assert main(["import", str(source), "--run-id", "r1", "--store", str(store)]) == 0
    assert verify_main(["r1", "--store", str(store)]) == ExitCode.OK


# -- agc recover ------------------------------------------------------------------------


def _crashed(store: Path, *, torn: bytes = b"") -> Path:
    writer = TranscriptWriter("r1", store=store, checkpoint_records=2)
    for n in range(5):
        writer.write({"n": n})
    writer.flush()
    writer._release()  # as a killed process leaves it
    path = StoreLayout(store).artifact_path("r1", "transcript")
    with path.open("ab") as handle:
        handle.write(torn)
    return path


@pytest.mark.parametrize("err", ERRNOS, ids=ids)
@pytest.mark.parametrize(
    "where", [".r1.jsonl.quarantine.*.tmp", ".r1.jsonl.b3.*.tmp", ".r1.json.*.tmp", "*.lock"]
)
def test_recover(
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    err: int,
    where: str,
) -> None:
    path = _crashed(store, torn=b'{"n": 5, "cut in the mid')
    before = path.read_bytes()
    with failing_disk(monkeypatch, store, err, only=where) as fault:
        code = main(["recover", "r1", "--store", str(store)])
    if err != errno.EROFS and where == "*.lock":
        assert fault.hits == 0  # a full disk can still open an existing or new lock file
        assert code == ExitCode.OK
    else:
        _assert_exit_3(code, capsys.readouterr().err, names=str(store), cause=CAUSES[err])
        assert temp_files(store) == []
        assert main(["recover", "r1", "--store", str(store)]) == ExitCode.OK
    # The record after the last checkpoint was never vouched for: the run is
    # `recovered` (an error unless allowed); healed is everything else.
    assert not check_store(store).complete
    report = check_store(store, allow_recovered=True)
    assert report.complete, [m for r in report.runs for m in r.missing] + [
        f.message for f in report.findings
    ]
    quarantine = path.with_name("r1.jsonl.quarantine")
    assert path.read_bytes() + quarantine.read_bytes() == before  # not a byte lost
    assert not path.with_name("r1.jsonl.quarantine-2").exists()


# -- agc resume --out and snapshots ---------------------------------------------------------

PENDING = [
    {"role": "user", "content": "hi"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "run", "arguments": "{}"}}
        ],
    },
]


@pytest.mark.parametrize("err", ERRNOS, ids=ids)
def test_resume_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], err: int
) -> None:
    source = tmp_path / "history.json"
    source.write_text(json.dumps(PENDING))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "fixed.json"
    with failing_disk(monkeypatch, out_dir, err):
        code = main(["resume", str(source), "--out", str(out)])
    _assert_exit_3(code, capsys.readouterr().err, names="fixed.json", cause=CAUSES[err])
    assert list(out_dir.iterdir()) == []
    assert main(["resume", str(source), "--out", str(out)]) == ExitCode.OK
    assert out.exists()


@pytest.mark.parametrize("err", ERRNOS, ids=ids)
@pytest.mark.parametrize("where", ["run-7.json", "run-7.json.b3"])
def test_snapshot_save_keeps_the_earlier_snapshot(
    store: Path, monkeypatch: pytest.MonkeyPatch, err: int, where: str
) -> None:
    first = SessionSnapshot("run-7", "s", PENDING[:1], ToolCallState(False, None), {})
    second = SessionSnapshot("run-7", "s", PENDING, ToolCallState(True, "a"), {})
    save_snapshot(first, store)
    with (
        failing_disk(monkeypatch, store, err, only=f".{where}.*.tmp"),
        pytest.raises(FileWriteError, match=where.replace(".", r"\.")),
    ):
        save_snapshot(second, store)
    assert load_snapshot("run-7", store).messages == first.messages  # sealed and intact
    assert temp_files(store) == []
    save_snapshot(second, store)
    assert load_snapshot("run-7", store).messages == second.messages


# -- the turn ledger --------------------------------------------------------------------


def _ledger_argv(project: Path, prompt: Path, *extra: str) -> list[str]:
    return [
        "ledger",
        "record",
        "--project",
        str(project),
        "--turn-id",
        "Abc123-def",
        "--prompt-file",
        str(prompt),
        *extra,
    ]


@pytest.mark.parametrize("err", ERRNOS, ids=ids)
def test_ledger_fails_open_and_strict_exits_3(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    err: int,
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("make the game")
    turns = project / ".agent/runtime/direct-codex/turns"
    turns.mkdir(parents=True)
    for extra, expected in (((), ExitCode.OK), (("--strict",), ExitCode.UNREADABLE)):
        feed_stdin(monkeypatch, b'{"type":"turn.completed"}\n')
        with failing_disk(monkeypatch, turns, err):
            code = main(_ledger_argv(project, prompt, *extra))
        captured = capsys.readouterr()
        assert code == expected, captured.err
        assert "Traceback" not in captured.err
        assert CAUSES[err] in captured.err.lower()
    feed_stdin(monkeypatch, b'{"type":"turn.completed"}\n')
    assert main(_ledger_argv(project, prompt, "--strict")) == ExitCode.OK
    turn_file = turns / "Abc123-def.jsonl"
    assert main(["ledger", "check", str(turn_file)]) in {ExitCode.OK, ExitCode.FINDINGS}
    assert "Traceback" not in capsys.readouterr().err


# -- on a real tmpfs ----------------------------------------------------------------------


def test_record_on_a_full_tmpfs_then_recover_after_growing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with tmpfs(tmp_path / "disk", size="64k") as disk:
        store = disk / "store"
        feed_stdin(monkeypatch, _lines(2000))  # about 110 KB: does not fit
        code = main(["record", "--run-id", "big", "--store", str(store)])
        err = capsys.readouterr().err
        _assert_exit_3(code, err, names="big.jsonl", cause="no space left on device")
        assert "agc recover big" in err
        data = StoreLayout(store).artifact_path("big", "transcript").read_bytes()
        assert data.endswith(b"\n")
        assert temp_files(store) == []
        remount(disk, "size=1m")
        assert main(["recover", "big", "--store", str(store)]) == ExitCode.OK
        # The full disk also refused the last checkpoint: the recovered bytes are
        # unvouched, so the gate passes them only when told to.
        assert verify_main(["big", "--store", str(store)]) == ExitCode.FINDINGS
        assert verify_main(["big", "--store", str(store), "--allow-recovered"]) == ExitCode.OK
        assert StoreLayout(store).artifact_path("big", "transcript").read_bytes() == data


def test_keys_and_seal_on_a_full_then_read_only_tmpfs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with tmpfs(tmp_path / "disk", size="64k") as disk:
        events = disk / "events.jsonl"
        events.write_bytes(_lines(3))
        filler = fill(disk)
        assert main(["keys", "generate", "--out", str(disk / "keys")]) == 3
        assert main(["seal", str(events)]) == 3
        err = capsys.readouterr().err
        assert err.count("no space left on device") == 2
        assert list((disk / "keys").iterdir()) == []
        assert not (disk / "events.jsonl.b3").exists()
        filler.unlink()
        remount(disk, "ro")
        assert main(["seal", str(events)]) == 3
        assert "read-only file system" in capsys.readouterr().err
        remount(disk, "rw")
        assert main(["keys", "generate", "--out", str(disk / "keys")]) == 0
        assert main(["seal", str(events)]) == 0
        assert temp_files(disk) == []


def test_ledger_strict_on_a_full_tmpfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """agent.db is SQLite, whose own writes no injection reaches: the kernel fills it."""
    with tmpfs(tmp_path / "disk", size="64k") as disk:
        project = disk / "proj"
        project.mkdir()
        prompt = tmp_path / "prompt.txt"
        prompt.write_text("make the game")
        fill(disk)
        feed_stdin(monkeypatch, b'{"type":"turn.completed"}\n')
        assert main(_ledger_argv(project, prompt, "--strict")) == ExitCode.UNREADABLE


def test_resume_out_on_a_full_tmpfs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "history.json"
    source.write_text(json.dumps(PENDING * 200))
    with tmpfs(tmp_path / "disk", size="64k") as disk:
        fill(disk)
        out = disk / "fixed.json"
        assert main(["resume", str(source), "--out", str(out)]) == ExitCode.UNREADABLE
        assert "no space left on device" in capsys.readouterr().err
        assert sorted(p.name for p in disk.iterdir()) == ["filler"]


# -- an error's --json document on a full stdout -----------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["import", "missing.jsonl", "--run-id", "r1", "--json"],
        ["resume", "missing-run", "--json"],
        ["keys", "generate", "--out", "keys", "--json"],
    ],
    ids=["import", "resume", "keys"],
)
def test_an_errors_json_on_a_full_stdout_is_exit_3(tmp_path: Path, argv: list[str]) -> None:
    # /dev/full refuses the {"error": …} document: OSError escaped run_app (a traceback,
    # Python's exit 1, which reads as "findings"). The error is said on stderr and the
    # full stdout is the machine's failure, exit 3.
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "signing-key.pem").write_text("taken")
    code = f"import sys\nfrom agc.cli.app import main\nsys.exit(main({argv!r}))\n"
    with open("/dev/full", "w") as full_disk:
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tmp_path,
            stdout=full_disk,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            env={
                **os.environ,
                "PYTHONPATH": os.pathsep.join(sys.path),
                "AGC_HOME": str(tmp_path / "store"),
            },
        )
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == ExitCode.UNREADABLE, done.stderr
    assert done.stderr.startswith("error: "), done.stderr
    assert "no space left on device" in done.stderr


# -- stderr that cannot be written ------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["import", "missing.jsonl", "--run-id", "r1"], ExitCode.USAGE),
        (["runs", "--store", "nonexistent"], ExitCode.USAGE),
        # a store whose audit/ is a file: it cannot be read
        (["runs", "--store", "unreadable"], ExitCode.UNREADABLE),
        (["import", "in.jsonl", "--run-id", "r2"], ExitCode.OK),
        (["report", "--all", "--csv", "-"], ExitCode.OK),
    ],
    ids=["usage", "missing-store", "unreadable", "import", "report"],
)
def test_a_full_stderr_keeps_the_commands_exit_code(
    tmp_path: Path, argv: list[str], code: int
) -> None:
    # A message on stderr (2>/dev/full) failed with OSError, and its "error: …" report
    # failed again inside run_app's handler: an uncaught exception, Python's exit 1
    # (which reads as "findings") whatever the command's own outcome. With nowhere to
    # say it, the command's exit code stands, as agc-verify's quick path does.
    (tmp_path / "in.jsonl").write_bytes(_lines(2))
    write_run(tmp_path / "store")
    (tmp_path / "unreadable").mkdir()
    (tmp_path / "unreadable" / "audit").write_bytes(b"not a folder")
    script = f"import sys\nfrom agc.cli.app import main\nsys.exit(main({argv!r}))\n"
    with open("/dev/full", "w") as full_disk:
        done = subprocess.run(
            [sys.executable, "-c", script],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=full_disk,
            check=False,
            env={
                **os.environ,
                "PYTHONPATH": os.pathsep.join(sys.path),
                "AGC_HOME": str(tmp_path / "store"),
            },
        )
    assert done.returncode == code


def test_a_seal_refused_for_a_folder_at_the_chain_intent_keeps_its_own_hint(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not the machine's failure: 'free disk space' would send the user the wrong way."""
    (store / "audit").mkdir(parents=True)
    (store / "audit" / "chain-pending.json").mkdir()
    feed_stdin(monkeypatch, _lines(3))
    assert main(["record", "--run-id", "r1", "--store", str(store)]) == 3
    err = capsys.readouterr().err
    assert "chain-pending.json is not a regular file" in err
    assert "Free disk space" not in err
    assert "agc-verify --all" in err
    assert f"`agc recover r1 --store {store}` seals them" in err


# -- a machine failure no command wrapped, with --json -------------------------------------


@pytest.mark.parametrize("err", [*ERRNOS, errno.EACCES], ids=ids)
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_an_unwrapped_machine_failure_is_exit_3_and_a_json_error_with_json(
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    err: int,
    as_json: bool,
) -> None:
    """The last net in run_app: an OSError of the machine that reached it unwrapped is
    exit 3 with the file and cause on stderr, and with --json the same refusal as one
    document on stdout (docs/format.md, errors with --json), like every other refusal."""
    failed = store / "audit" / "manifests"

    def fail(*_args: object, **_kwargs: object) -> None:
        raise OSError(err, os.strerror(err), str(failed))

    monkeypatch.setattr("agc.cli.runs.list_runs", fail)
    code = main(["runs", "--store", str(store), *(["--json"] if as_json else [])])
    out, stderr = capsys.readouterr()
    assert code == ExitCode.UNREADABLE
    assert f"error: {failed}: " in stderr
    assert "free disk space or fix the permissions" in stderr
    if as_json:
        error = json.loads(out)["error"]
        assert error["code"] == "store-unreadable"
        assert str(failed) in error["message"]
        assert error["hint"].startswith("free disk space")
    else:
        assert out == ""


# -- agc ext import / project -------------------------------------------------------------


@pytest.mark.parametrize("err", ERRNOS, ids=ids)
@pytest.mark.parametrize("command", ["import", "project"])
def test_ext_on_a_failing_disk_is_file_write_failed_with_the_machine_hint(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    err: int,
    command: str,
) -> None:
    """Like every command that writes (docs/format.md, exit codes): file-write-failed,
    the file and the cause, and a hint about the disk, not 'check that the store folder
    exists' (store-unreadable)."""
    from tests.extensions.builders import plugin_with_two_skills_and_mcp  # noqa: PLC0415

    source = plugin_with_two_skills_and_mcp(tmp_path)
    store = tmp_path / "store"
    home = tmp_path / "home"
    if command == "project":
        assert main(["ext", "import", str(source), "--store", str(store)]) == ExitCode.OK
        argv = ["ext", "project", "--codex-home", str(home), "--store", str(store)]
        failing = home
        home.mkdir()
    else:
        argv = ["ext", "import", str(source), "--store", str(store)]
        failing = store
        store.mkdir()
    capsys.readouterr()
    with failing_disk(monkeypatch, failing, err):
        code = main([*argv, "--json"])
    out, stderr = capsys.readouterr()
    _assert_exit_3(code, stderr, names=str(failing), cause=CAUSES[err])
    assert json.loads(out)["error"]["code"] == "file-write-failed", out
    assert "Check that the store folder exists" not in stderr
    assert main(argv) == ExitCode.OK  # the disk is healthy again: the same command works


@pytest.mark.parametrize("disk", ["full", "read-only"])
@pytest.mark.parametrize("where", ["--out", "--in-place"])
def test_resume_of_a_session_file_that_cannot_be_written_says_where(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    disk: str,
    where: str,
) -> None:
    """A session file's repair (written as it is made) on a real full or read-only
    tmpfs is `file-write-failed` (exit 3), as for every command; with --in-place the
    message names --in-place and the file, never an --out that was not given, and the
    hint is one --in-place can follow."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    original = (GOLDEN / "codex-rollout-in-flight.jsonl").read_bytes()
    with tmpfs(tmp_path / "disk", size="64k") as folder:
        source = folder / "rollout.jsonl"
        source.write_bytes(original)
        before = sorted(p.name for p in folder.iterdir())
        if disk == "full":
            fill(folder)
            before = sorted(p.name for p in folder.iterdir())
        else:
            remount(folder, "ro")
        out = folder / "fixed.jsonl"
        target = ["--out", str(out)] if where == "--out" else ["--in-place"]
        code = main(["resume", str(source), *target, "--json"])
        assert code == ExitCode.UNREADABLE
        error = json.loads(capsys.readouterr().out)["error"]
        assert error["code"] == "file-write-failed"
        cause = CAUSES[errno.ENOSPC if disk == "full" else errno.EROFS]
        assert cause in error["message"]
        assert source.read_bytes() == original
        assert sorted(p.name for p in folder.iterdir()) == before
        if where == "--in-place":
            assert "--out" not in error["message"]
            assert f"--in-place: the repair of {source} cannot be written" in error["message"]
            assert "Choose a folder" not in error["hint"]
        else:
            assert f"--out {out} cannot be written" in error["message"]
