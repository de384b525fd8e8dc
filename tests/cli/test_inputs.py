"""Inputs a new user gets wrong: empty input, run ids that look like options, missing
files, names that are both a file and a run; one exit code per kind of failure and hints
that fit the situation."""

from __future__ import annotations

import errno
import fcntl
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from agc._core.store import StoreLayout, validate_new_run_id, validate_run_id
from agc.cli.app import main
from agc.cli.verify import main as verify_main
from agc.errors import ArtifactSealedError, RunIdInvalidError
from agc.exitcodes import ExitCode
from agc.integrity import TranscriptWriter, _writer, check_run, open_run, recover_run
from agc.resume import SessionSnapshot, ToolCallState, save_snapshot
from tests.conftest import feed_stdin, tree, write_run
from tests.extensions.builders import codex_config_two_servers

REACHES_INSIDE = {
    "agc.integrity._writer": "delays the run writer's seal between two opens (a race)",
}

STORE_HINT = "Check that the store folder exists"

# -- empty input ------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["record", "import-empty-file", "import-dev-null"])
def test_empty_input_is_refused_and_the_run_id_stays_free(
    tmp_path: Path,
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    how: str,
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    argv = ["--run-id", "r1", "--store", str(store)]
    if how == "record":
        feed_stdin(monkeypatch, b"")
        code = main(["record", *argv])
    else:
        source = "/dev/null" if how == "import-dev-null" else str(empty)
        code = main(["import", source, *argv])
    err = capsys.readouterr().err
    assert code == ExitCode.USAGE
    assert "the input is empty" in err
    assert "run id r1 stays free" in err
    assert "--allow-empty" in err
    layout = StoreLayout(store)
    assert [p for p in tree(store) if "r1" in p] == []
    assert not (layout.audit_dir / "chain.jsonl").exists()  # nothing was sealed
    feed_stdin(monkeypatch, b'{"role": "user"}\n')
    assert main(["record", *argv]) == ExitCode.OK  # the id is free
    assert verify_main(["r1", "--store", str(store)]) == ExitCode.OK


def test_allow_empty_seals_an_empty_run_that_never_verifies(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    feed_stdin(monkeypatch, b"")
    assert main(["record", "--run-id", "r1", "--store", str(store), "--allow-empty"]) == 0
    assert verify_main(["r1", "--store", str(store)]) == ExitCode.FINDINGS
    assert "transcript has no records" in capsys.readouterr().out


# -- run ids beginning with '-' ---------------------------------------------------------------


@pytest.mark.parametrize("run_id", ["-x", "--help", "-", "--all"])
def test_a_dash_run_id_is_refused_at_creation_with_a_hint(
    tmp_path: Path,
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    run_id: str,
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"{}\n")
    feed_stdin(monkeypatch, b"{}\n")
    assert main(["record", f"--run-id={run_id}", "--store", str(store)]) == ExitCode.USAGE
    assert main(["import", str(source), f"--run-id={run_id}", "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.count("begins with '-'") == 2
    assert "hint: Begin the run id with a letter" in err
    with pytest.raises(RunIdInvalidError):
        open_run(run_id, store=store)
    with pytest.raises(RunIdInvalidError):
        TranscriptWriter(run_id, store=store)
    snapshot = SessionSnapshot(
        run_id, "s", [{"role": "user", "content": "hi"}], ToolCallState(False, None), {}
    )
    with pytest.raises(RunIdInvalidError):
        save_snapshot(snapshot, store)
    assert tree(store) == []


def test_a_dash_run_from_before_the_rule_is_read_after_double_dash(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_writer, "validate_new_run_id", validate_run_id)
    write_run(store, "-old")
    monkeypatch.undo()
    assert verify_main(["--store", str(store), "--", "-old"]) == ExitCode.OK
    assert "run -old: complete" in capsys.readouterr().out
    assert main(["show", "--store", str(store), "--", "-old"]) == ExitCode.OK
    with pytest.raises(RunIdInvalidError):
        validate_new_run_id("-old")


# -- one exit code per kind of failure ------------------------------------------------------


def test_a_missing_input_file_is_exit_2_for_every_command(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "missing.jsonl")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("p")
    project = tmp_path / "proj"
    project.mkdir()
    record = ["ledger", "record", "--project", str(project), "--turn-id", "Abc123-def"]
    commands = {
        "import": ["import", missing, "--run-id", "r1", "--store", str(store)],
        "seal": ["seal", missing],
        "ledger show": ["ledger", "show", missing],
        "ledger check": ["ledger", "check", missing],
        "ledger record --input": [*record, "--prompt-file", str(prompt), "--input", missing],
        "ledger record --prompt-file": [*record, "--prompt-file", missing],
        "resume": ["resume", missing],
        "verify --turn-file": ["verify", "--turn-file", missing],
    }
    for name, argv in commands.items():
        code = main(argv)
        err = capsys.readouterr().err
        assert code == ExitCode.USAGE, (name, err)
        assert "missing.jsonl" in err, name
        assert "does not exist" in err, name
        assert STORE_HINT not in err, name
    json_codes = set()
    for argv in (commands["import"], commands["seal"], commands["ledger show"]):
        main([*argv, "--json"])
        json_codes.add(json.loads(capsys.readouterr().out)["error"]["code"])
    assert json_codes == {"input-missing"}


def test_an_unreadable_input_file_is_exit_3_for_every_command(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Root reads any file whatever its mode, so the refusal is injected where the file
    # is opened (os.open and io.open, which pathlib uses).
    unreadable = tmp_path / "unreadable.jsonl"
    unreadable.write_text('{"role": "user", "content": "hi"}\n')
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("p")
    events = tmp_path / "events.jsonl"
    events.write_text("")
    project = tmp_path / "proj"
    project.mkdir()
    record = ["ledger", "record", "--project", str(project), "--turn-id", "Abc123-def"]
    commands = {
        "import": ["import", str(unreadable), "--run-id", "r1", "--store", str(store)],
        "seal": ["seal", str(unreadable)],
        "resume": ["resume", str(unreadable), "--check"],
        "readiness classify": ["readiness", "classify", str(unreadable)],
        "ledger record --prompt-file": [*record, "--prompt-file", str(unreadable)],
        "ledger record --attachments": [
            *record, "--prompt-file", str(prompt), "--input", str(events),
            "--attachments", str(unreadable),
        ],
        "ledger record --input": [
            *record, "--prompt-file", str(prompt), "--input", str(unreadable)
        ],
        "ext status --from-events": [
            "ext", "status", "--from-events", str(unreadable), "--store", str(store)
        ],
        "ext import": ["ext", "import", str(unreadable), "--store", str(store)],
    }  # fmt: skip
    real_os_open, real_io_open = os.open, io.open

    def refused(path: object) -> bool:
        return isinstance(path, str | os.PathLike) and Path(path) == unreadable

    def os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if refused(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_os_open(path, flags, *args, **kwargs)

    def io_open(path: Any, *args: Any, **kwargs: Any) -> Any:
        if refused(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_io_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(io, "open", io_open)
    for name, argv in commands.items():
        code = main(argv)
        err = capsys.readouterr().err
        assert code == ExitCode.UNREADABLE, (name, err)
        assert "unreadable.jsonl" in err, name
        assert "permission denied" in err.lower(), name
        # An input that cannot be read is not a disk that cannot be written.
        assert "free disk space" not in err, name


# A file that opens and then fails on read() with EIO: a bad sector, a network file
# system gone away. Linux's /proc/self/mem is one (offset 0 is not mapped).
EIO_FILE = Path("/proc/self/mem")


def _read_fails_with_eio() -> bool:
    try:
        with EIO_FILE.open("rb") as handle:
            handle.read(1)
    except OSError as exc:
        return exc.errno == errno.EIO
    return False


def _eio_commands(tmp_path: Path, store: Path) -> dict[str, list[str]]:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("p")
    events = tmp_path / "events.jsonl"
    events.write_text("")
    project = tmp_path / "proj"
    project.mkdir()
    record = ["ledger", "record", "--project", str(project), "--turn-id", "Abc123-def"]
    eio = str(EIO_FILE)
    return {
        "import": ["import", eio, "--run-id", "r1", "--store", str(store)],
        "record": ["record", "--run-id", "r2", "--store", str(store)],
        "seal": ["seal", eio],
        "resume": ["resume", eio, "--check"],
        "readiness classify": ["readiness", "classify", eio],
        "ledger record --prompt-file": [*record, "--prompt-file", eio],
        "ledger record --attachments": [
            *record, "--prompt-file", str(prompt), "--input", str(events), "--attachments", eio,
        ],
        "ledger record --input": [*record, "--prompt-file", str(prompt), "--input", eio],
        "ext import": ["ext", "import", eio, "--store", str(store)],
    }  # fmt: skip


@pytest.mark.skipif(not _read_fails_with_eio(), reason="needs Linux /proc/self/mem (EIO)")
@pytest.mark.parametrize(
    "name",
    [
        "import", "record", "seal", "resume", "readiness classify",
        "ledger record --prompt-file", "ledger record --attachments", "ledger record --input",
        "ext import",
    ],
)  # fmt: skip
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_an_input_whose_read_fails_is_exit_3_naming_it(
    tmp_path: Path,
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    as_json: bool,
) -> None:
    """The file opens, then read() fails (EIO): exit 3, ``file-unreadable``, the file and
    the cause named, and with --json the error document on stdout."""
    argv = _eio_commands(tmp_path, store)[name]
    if name == "record":
        handle = EIO_FILE.open("rb")
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(handle))
    code = main([*argv, "--json"] if as_json else argv)
    out, err = capsys.readouterr()
    assert code == ExitCode.UNREADABLE, (name, err)
    assert str(EIO_FILE) in err, (name, err)  # in process, stdin is the file itself
    assert "input/output error" in err.lower(), (name, err)
    assert "free disk space" not in err, name
    if as_json:
        assert json.loads(out)["error"]["code"] == "file-unreadable", (name, out)
    assert not any("r1" in p or "r2" in p for p in tree(store)), name  # the run ids stay free


@pytest.mark.parametrize(
    "file",
    ["audit/transcripts/r1.jsonl", "audit/tool-events/r1.jsonl.b3", "audit/manifests/r1.json"],
)
def test_a_store_file_given_for_a_run_id_gets_the_run_id_and_store_as_hint(
    store: Path, capsys: pytest.CaptureFixture[str], file: str
) -> None:
    write_run(store)
    path = str(store / file)
    for name, argv in {
        "agc-verify": ["verify", path],
        "show": ["show", path],
        "export": ["export", path],
        "recover": ["recover", path],
    }.items():
        run = verify_main if name == "agc-verify" else main
        assert run(argv[1:] if name == "agc-verify" else argv) == ExitCode.USAGE, name
        err = capsys.readouterr().err
        assert "contains the character '/'" in err, name
        assert f"hint: That is a file of run 'r1' in store {store}" in err, name
        assert f"r1 --store {store}" in err, name


def test_a_path_outside_a_store_given_for_a_run_id_is_called_a_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert verify_main([str(tmp_path / "session.jsonl")]) == ExitCode.USAGE
    assert "hint: A run id is a name, not a path" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["runs", "--json", "--jsn"], "No such option: --jsn"),
        (["verify", "r1", "--json", "--jobs", "0"], "'--jobs' / '-j': 0 is not in the range"),
        (["resume", "--json"], "Missing argument"),
        (
            ["record", "--run-id", "r1", "--kind", "tool-event", "--json"],
            "Invalid value for '--kind'",
        ),
    ],
)
def test_an_option_error_with_json_is_a_json_error_too(
    store: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    # A script that asked for --json parses stdout: a refusal by the option parser is
    # the same {"error": …} document as agc's own refusals, and the usage text stays
    # on stderr.
    assert main([*argv, "--store", str(store)]) == ExitCode.USAGE
    captured = capsys.readouterr()
    error = json.loads(captured.out)["error"]
    assert error["code"] == "usage"
    assert says in error["message"]
    assert error["hint"] == f"Try 'agc {argv[0]} -h' for help."
    assert "Usage: agc" in captured.err
    assert main([a for a in argv if a != "--json"]) == ExitCode.USAGE
    assert capsys.readouterr().out == ""


def test_hints_fit_a_failure_outside_any_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("p")
    argv = ["ledger", "record", "--project", str(tmp_path / "nope"), "--turn-id", "Abc123-def"]
    assert main([*argv, "--prompt-file", str(prompt)]) == ExitCode.UNREADABLE
    err = capsys.readouterr().err
    assert "--project" in err
    assert STORE_HINT not in err


def test_a_run_sealed_while_its_lock_is_held_is_called_sealed_not_locked(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other writer finished meanwhile: 'wait for the other writer' would not help."""
    write_run(store)
    path = StoreLayout(store).artifact_path("r1", "transcript")
    holder = os.open(path, os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_SH)  # as `agc seal` holds it while it hashes
    # The check before opening saw no seal yet (the race this guards against); later
    # checks see the seal the other writer wrote meanwhile.
    real = _writer.RunArtifactSeal.before_open
    calls: list[Path] = []

    def first_sees_nothing(self: _writer.RunArtifactSeal, path: Path) -> None:
        calls.append(path)
        if len(calls) > 1:
            real(self, path)

    monkeypatch.setattr(_writer.RunArtifactSeal, "before_open", first_sees_nothing)
    # Nor was it linked yet when the new writer looked at the chain.
    monkeypatch.setattr(_writer, "refuse_if_linked", lambda layout, run_id: None)
    try:
        with pytest.raises(ArtifactSealedError) as caught:
            TranscriptWriter("r1", store=store)
    finally:
        os.close(holder)
    assert "wait for the other writer" not in caught.value.hint
    assert len(calls) == 2  # refused after the lock was found taken


# -- a name that is both a file and a run --------------------------------------------------


def test_a_name_that_is_a_file_and_a_run_is_ambiguous(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    history = [{"role": "user", "content": "hi"}]
    save_snapshot(SessionSnapshot("run-7", "s", history, ToolCallState(False, None), {}), store)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run-7").write_text(json.dumps(history))
    assert main(["resume", "run-7", "--store", str(store), "--check"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "ambiguous" in err
    assert "./run-7" in err
    assert main(["resume", "./run-7", "--check"]) == ExitCode.OK  # a path: the file
    (tmp_path / "run-7").unlink()
    assert main(["resume", "run-7", "--store", str(store), "--check"]) == ExitCode.OK


# -- open_run when the with body raises ----------------------------------------------------


def test_open_run_on_an_exception_stays_unsealed_with_every_record_checkpointed(
    store: Path,
) -> None:
    """The documented choice: an exception never seals (a half-done run must not verify
    complete); a last checkpoint vouches for every record written, recover seals it."""

    class AgentCrashedError(RuntimeError):
        pass

    def agent() -> None:
        with open_run("r1", store=store) as run:
            for n in range(5):
                run.transcript.write({"n": n})
            run.tool_events.write({"tool": "bash"})
            raise AgentCrashedError

    with pytest.raises(AgentCrashedError):
        agent()
    report = check_run("r1", store)
    assert not report.complete
    unsealed = {f.artifact: f for f in report.findings if f.code == "unsealed"}
    assert set(unsealed) == {"transcript", "tool-events"}
    transcript_facts = unsealed["transcript"].actual or {}
    assert transcript_facts["verified_records"] == 5
    assert transcript_facts["unverified_bytes"] == 0
    recovered = recover_run("r1", store)
    assert [a.records for a in recovered.artifacts] == [5, 1]
    assert check_run("r1", store).complete


@pytest.mark.skipif(not _read_fails_with_eio(), reason="needs Linux /proc/self/mem (EIO)")
@pytest.mark.parametrize(
    "how", ["--signing-key", "$AGC_SIGNING_KEY", "--trusted-key", "$AGC_TRUSTED_KEYS"]
)
def test_a_key_file_whose_read_fails_is_exit_3_not_a_bad_key(
    tmp_path: Path,
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    how: str,
) -> None:
    """A key file that opens and then fails on read (EIO) is the machine failing, not a
    bad key: exit 3, ``file-unreadable`` with --json, the file named; nothing sealed."""
    source = tmp_path / "session.jsonl"
    source.write_text('{"role": "user"}\n')
    folder = tmp_path / "keys"
    folder.mkdir()
    (folder / "k.pem").symlink_to(EIO_FILE)
    monkeypatch.delenv("AGC_SIGNING_KEY", raising=False)
    monkeypatch.delenv("AGC_TRUSTED_KEYS", raising=False)
    if how in ("--signing-key", "$AGC_SIGNING_KEY"):
        argv = ["import", str(source), "--run-id", "r1", "--store", str(store), "--json"]
    else:
        write_run(store, "r2")
        argv = ["verify", "r2", "--store", str(store), "--json"]
    if how.startswith("--"):
        argv += [how, str(EIO_FILE)]
    else:
        monkeypatch.setenv(how[1:], str(folder if how == "$AGC_TRUSTED_KEYS" else EIO_FILE))
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == ExitCode.UNREADABLE, (how, err)
    assert json.loads(out)["error"]["code"] == "file-unreadable", out
    assert "input/output error" in err.lower(), err
    assert ("k.pem" if how == "$AGC_TRUSTED_KEYS" else str(EIO_FILE)) in err, err
    assert not any("r1" in p for p in tree(store))


@pytest.mark.skipif(not _read_fails_with_eio(), reason="needs Linux /proc/self/mem (EIO)")
@pytest.mark.parametrize("how", ["ext status --from-events FILE", "ext status --from-events -"])
def test_an_events_file_whose_read_fails_is_exit_3_naming_it(
    tmp_path: Path,
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    how: str,
) -> None:
    """The events file opens and then fails on read (EIO), once a projection exists to
    apply it to: it was the unwrapped OSError (store-unreadable, "free disk space", no
    file named); it is file-unreadable naming the file, as for every input."""
    source = codex_config_two_servers(tmp_path / "cfg")
    assert main(["ext", "import", str(source), "--store", str(store)]) == ExitCode.OK
    home = str(tmp_path / "home")
    assert main(["ext", "project", "--codex-home", home, "--store", str(store)]) == ExitCode.OK
    capsys.readouterr()
    named = str(EIO_FILE)
    if how.endswith("-"):
        named = "-"
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(EIO_FILE.open("rb")))
    code = main(["ext", "status", "--from-events", named, "--store", str(store), "--json"])
    out, err = capsys.readouterr()
    assert code == ExitCode.UNREADABLE, err
    assert json.loads(out)["error"]["code"] == "file-unreadable", out
    assert "input/output error" in err.lower(), err
    assert str(EIO_FILE) in err, err  # in process, stdin is the file itself
    assert "free disk space" not in err


@pytest.mark.skipif(not _read_fails_with_eio(), reason="needs Linux /proc/self/mem (EIO)")
def test_an_observation_on_stdin_whose_read_fails_is_exit_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`agc readiness classify -` whose standard input fails on read (EIO): it was the
    unwrapped OSError (store-unreadable, "free disk space", nothing named)."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(EIO_FILE.open("rb")))
    code = main(["readiness", "classify", "-", "--json"])
    out, err = capsys.readouterr()
    assert code == ExitCode.UNREADABLE, err
    assert json.loads(out)["error"]["code"] == "file-unreadable", out
    assert "observation on standard input" in err, err
    assert "input/output error" in err.lower(), err
    assert "free disk space" not in err


# -- a run the store holds nothing of (docs/format.md, "Exit codes") ---------------------


@pytest.mark.parametrize(
    ("argv", "expected", "code"),
    [
        (["show", "nope"], ExitCode.USAGE, "'nope'"),
        (["export", "nope"], ExitCode.USAGE, "'nope'"),
        (["diff", "nope", "{file}"], ExitCode.USAGE, "'nope'"),
        (["resume", "nope"], ExitCode.USAGE, "nope"),
        (["recover", "nope"], ExitCode.USAGE, "nope"),
        (["verify", "nope"], ExitCode.FINDINGS, "run-missing"),
        (["report", "nope", "--csv", "-"], ExitCode.FINDINGS, "run-missing"),
        (["agc-verify", "nope"], ExitCode.FINDINGS, "run-missing"),
    ],
    ids=lambda v: "-".join(v) if isinstance(v, list) else str(v),
)
def test_a_run_the_store_lacks_is_refused_by_actions_and_a_finding_of_verifications(
    tmp_path: Path,
    store: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    expected: int,
    code: str,
) -> None:
    """An action on a missing run is a usage error (2, run-not-found); a verification
    answers it with the verdict run-missing (1, agc-verify's contract)."""
    write_run(store, "present")  # the store exists and holds another run
    other = tmp_path / "other.jsonl"
    other.write_text("{}\n")
    args = [a.replace("{file}", str(other)) for a in argv]
    if args[0] == "agc-verify":
        result = verify_main([*args[1:], "--store", str(store)])
    else:
        result = main([*args, "--store", str(store)])
    out, err = capsys.readouterr()
    assert result == expected, err
    assert code in out + err  # the run named, or the verdict's code
