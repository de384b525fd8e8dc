"""CLI: agc keys generate, agc recover, and signed record/import."""

from __future__ import annotations

import io
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agc.cli.app import main
from agc.cli.verify import main as verify_main
from agc.flows import capture_hook_event
from agc.integrity import generate_keypair, open_run
from tests.ledger.helpers import command, record_turn


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_keys_generate_then_signed_record_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    keys, store = tmp_path / "keys", tmp_path / "store"
    assert main(["keys", "generate", "--out", str(keys), "--json"]) == 0
    generated = json.loads(capsys.readouterr().out)
    assert stat.S_IMODE(Path(generated["private_key"]).stat().st_mode) == 0o600
    _stdin(monkeypatch, b'{"role":"user","content":"hi"}\n')
    monkeypatch.setenv("AGC_SIGNING_KEY", generated["private_key"])
    assert main(["record", "--run-id", "r1", "--store", str(store)]) == 0
    capsys.readouterr()
    args = ["r1", "--store", str(store), "--json", "--require-signature"]
    assert verify_main([*args, "--trusted-key", generated["public_key"]]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["signature"] == "signature-valid"
    assert report["key_id"] == generated["key_id"]
    # Without a trusted key, a required signature cannot be checked: incomplete.
    assert verify_main(args) == 1


def test_keys_generate_refuses_to_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keys", "generate", "--out", str(tmp_path)]) == 0
    assert main(["keys", "generate", "--out", str(tmp_path)]) == 2
    assert "never overwritten" in capsys.readouterr().err


def test_bad_signing_key_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bogus = tmp_path / "k.pem"
    bogus.write_text("nope")
    _stdin(monkeypatch, b"{}\n")
    code = main(
        ["record", "--run-id", "r", "--store", str(tmp_path / "s"), "--signing-key", str(bogus)]
    )
    assert code == 2
    assert "k.pem" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_recover_cli_seals_a_crashed_run_and_is_idempotent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    run = open_run("crashed", store=store)
    run.transcript.write({"role": "user", "content": "hi"})
    run.abort()
    with (store / "audit/transcripts/crashed.jsonl").open("ab") as handle:
        handle.write(b'{"seq":1,"to')
    assert verify_main(["crashed", "--store", str(store)]) == 1
    capsys.readouterr()
    assert main(["recover", "crashed", "--store", str(store), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    transcript = next(a for a in result["artifacts"] if a["kind"] == "transcript")
    assert transcript["quarantined_bytes"] == len(b'{"seq":1,"to')
    assert result["changed"] is True
    assert main(["recover", "crashed", "--store", str(store)]) == 0
    assert "nothing changed" in capsys.readouterr().out
    assert verify_main(["crashed", "--store", str(store)]) == 0


def test_verify_all_json_and_expect_head(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    for run_id in ("a", "b"):
        with open_run(run_id, store=store) as run:
            run.transcript.write({"n": run_id})
    assert verify_main(["--all", "--store", str(store), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["summary"]["runs"] == 2
    head = summary["summary"]["head"]
    assert verify_main(["--all", "--store", str(store), "--expect-head", head]) == 0
    assert head in capsys.readouterr().out
    assert verify_main(["--all", "--store", str(store), "--expect-head", "0" * 64]) == 1
    assert "rolled back, forked or rewritten" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args",
    [["a", "--all"], ["--expect-head", "x", "a"], []],
    ids=["run-and-all", "expect-head-without-all", "nothing"],
)
def test_verify_argument_combinations_are_usage_errors(tmp_path: Path, args: list[str]) -> None:
    assert verify_main([*args, "--store", str(tmp_path)]) == 2


def test_recover_of_an_unknown_run_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    assert main(["recover", "typo", "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert "nothing to recover" in err
    assert "hint:" in err
    assert list(store.iterdir()) == []


def test_keys_generate_into_a_file_or_below_one_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_bytes(b"keep me")
    assert main(["keys", "generate", "--out", str(blocker)]) == 2
    err = capsys.readouterr().err
    assert "not a folder" in err
    assert "Traceback" not in err
    assert main(["keys", "generate", "--out", str(blocker / "keys")]) == 3
    err = capsys.readouterr().err
    assert "cannot create" in err
    assert "Traceback" not in err
    assert blocker.read_bytes() == b"keep me"


_KEY_FIFO_CASES = {
    # name: (entry point, argv after it, where the FIFO is: "folder" (x.pem beside a
    # key pair in $AGC_TRUSTED_KEYS), "signing" ($AGC_SIGNING_KEY) or None (in argv)).
    "agc-verify $AGC_TRUSTED_KEYS": ("verify_main", ["r1", "--store", "{store}"], "folder"),
    "agc-verify --trusted-key": (
        "verify_main",
        ["r1", "--store", "{store}", "--trusted-key", "{fifo}"],
        None,
    ),
    "agc ledger check $AGC_TRUSTED_KEYS": ("app", ["ledger", "check", "{turn}"], "folder"),
    "agc record --signing-key": (
        "app",
        ["record", "--run-id", "r2", "--store", "{store}", "--signing-key", "{fifo}"],
        None,
    ),
    "agc ledger record $AGC_SIGNING_KEY": (
        "app",
        [
            *("ledger", "record", "--project", "{project}"),
            *("--turn-id", "Xyz789-abc", "--prompt-file", "{prompt}"),
        ],
        "signing",
    ),
}


@pytest.mark.parametrize("case", list(_KEY_FIFO_CASES))
def test_a_fifo_as_a_key_is_key_invalid_never_a_hang(tmp_path: Path, case: str) -> None:
    """A FIFO nobody writes, named x.pem in $AGC_TRUSTED_KEYS or named as a key, made
    agc-verify, agc ledger check, agc record … wait on open() for ever: exit 2
    (key-invalid) naming the file, in a real process (a regression times out)."""
    entry, argv, env_kind = _KEY_FIFO_CASES[case]
    store, project, folder = tmp_path / "store", tmp_path / "proj", tmp_path / "trusted"
    with open_run("r1", store=store) as run:
        run.transcript.write({"role": "user", "content": "hi"})
    project.mkdir()
    turn = record_turn(project, [command("c1", "ls")]).turn_file
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("hi")
    generate_keypair(folder)
    fifo = folder / "x.pem" if env_kind == "folder" else tmp_path / "key.pem"
    os.mkfifo(fifo)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "400"}
    env.pop("AGC_TRUSTED_KEYS", None)
    env.pop("AGC_SIGNING_KEY", None)
    if env_kind == "folder":
        env["AGC_TRUSTED_KEYS"] = str(folder)
    elif env_kind == "signing":
        env["AGC_SIGNING_KEY"] = str(fifo)
    names = {"fifo": fifo, "store": store, "turn": turn, "project": project, "prompt": prompt}
    module = {"app": "agc.cli.app", "verify_main": "agc.cli.verify_main"}[entry]
    code = (
        "import sys\n"
        "from agc.integrity import _signing\n"
        "_signing.KEY_PIPE_SECONDS = 0.5  # a named FIFO is read as a pipe, this long\n"
        f"from {module} import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, *(a.format(**names) for a in argv)],
            input="{}\n",
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case} still waits on the FIFO after 60 s")
    assert done.returncode == 2, done.stderr
    assert str(fifo) in done.stderr
    assert "not a regular file: a FIFO" in done.stderr


def _signed_run(store: Path, keys: Path) -> Path:
    """A run r1 in ``store`` signed with a new key pair in ``keys``; the public key."""
    from agc.integrity import load_signing_key  # noqa: PLC0415

    private, public, _ = generate_keypair(keys)
    with open_run("r1", store=store, signing_key=load_signing_key(private)) as run:
        run.transcript.write({"role": "user", "content": "hi"})
    return public


def _inside_warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning: trusted key")]


@pytest.mark.parametrize("how", ["file", "folder", "env", "symlinked folder"])
def test_a_trusted_key_inside_the_store_is_warned_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    """Whoever can write the store can add a key to a trusted folder kept there; the
    verdict is unchanged (the key is the signer's), stderr says so."""
    store = tmp_path / "store"
    public = _signed_run(store, store / "keys")
    option: list[str] = []
    if how == "file":
        option = ["--trusted-key", str(public)]
    elif how == "folder":
        option = ["--trusted-key", str(public.parent)]
    elif how == "env":
        monkeypatch.setenv("AGC_TRUSTED_KEYS", str(public.parent))
    else:  # a folder outside the store that is a symlink into it
        (tmp_path / "outside").symlink_to(public.parent)
        option = ["--trusted-key", str(tmp_path / "outside")]
    assert verify_main(["r1", "--store", str(store), *option]) == 0
    (warning,) = _inside_warnings(capsys.readouterr().err)
    assert f"inside the store {store.resolve()}" in warning
    assert "keep trusted keys outside it" in warning


def test_a_trusted_key_outside_the_store_gets_no_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    public = _signed_run(store, tmp_path / "keys")
    assert verify_main(["r1", "--store", str(store), "--trusted-key", str(public)]) == 0
    assert _inside_warnings(capsys.readouterr().err) == []
    # A store folder whose name merely begins like the keys' folder is another folder.
    sibling = tmp_path / "ke"
    public2 = _signed_run(sibling, tmp_path / "keys2")
    assert verify_main(["r1", "--store", str(sibling), "--trusted-key", str(public2)]) == 0
    assert _inside_warnings(capsys.readouterr().err) == []


def test_agc_resume_warns_about_a_trusted_key_inside_its_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    public = _signed_run(store, store / "keys")
    # The keys are loaded (and judged) before the run is read; what the command then
    # says of this run (written by the Python writer, so no session to export) is not
    # the subject here.
    main(["resume", "r1", "--store", str(store), "--check", "--trusted-key", str(public)])
    assert len(_inside_warnings(capsys.readouterr().err)) == 1


def test_keys_inside_store_judges_real_paths_and_skips_object_stores(tmp_path: Path) -> None:
    from agc.cli.common import keys_inside_store  # noqa: PLC0415

    store = tmp_path / "store"
    (store / "keys").mkdir(parents=True)
    outside = tmp_path / "keys"
    outside.mkdir()
    assert keys_inside_store([store / "keys", outside, store], store) == [store / "keys", store]
    assert keys_inside_store([store / "keys"], "s3://bucket/prefix") == []


class _CtrlCAtTheEnd(io.BytesIO):
    """A pipe whose producer is still running when Ctrl-C comes: its lines, then the
    interrupt instead of the end of the input."""

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        if not data:
            raise KeyboardInterrupt
        return data

    def read1(self, size: int | None = -1) -> bytes:
        return self.read(size)

    def readline(self, size: int | None = -1) -> bytes:
        data = super().readline(size)
        if not data:
            raise KeyboardInterrupt
        return data


def test_a_recovered_record_of_a_client_stream_keeps_its_client_and_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    thread = "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"
    stream = b"".join(
        json.dumps(line).encode() + b"\n"
        for line in (
            {"type": "thread.started", "thread_id": thread},
            {"type": "turn.started"},
            {"type": "item.completed", "item": {"id": "i0", "type": "agent_message", "text": "4"}},
        )
    )
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(_CtrlCAtTheEnd(stream)))
    assert main(["record", "--run-id", "r1", "--store", str(store)]) == 130
    capsys.readouterr()
    assert main(["runs", "--store", str(store), "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["state"] == "unsealed"
    assert main(["recover", "r1", "--store", str(store)]) == 0
    assert "recovered and sealed" in capsys.readouterr().out
    assert main(["runs", "--store", str(store), "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert (run["client"], run["session_id"]) == ("codex", thread)
    # Its facts are sealed with it: signed and chained as the recording would have.
    assert verify_main(["r1", "--store", str(store), "--allow-recovered"]) == 0


HOOKS = Path(__file__).parents[1] / "fixtures" / "hooks" / "claude-code"


@pytest.mark.parametrize("end", ["killed", "stop-without-its-file"])
def test_a_hooks_run_recovered_without_its_session_file_says_so_and_how_to_add_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    end: str,
) -> None:
    # A Claude Code session stopped before its first turn's end sealed its session file.
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    projects = tmp_path / "home" / ".claude" / "projects" / "-p"
    projects.mkdir(parents=True)
    store = tmp_path / "store"
    store.mkdir()
    events = ["SessionStart", "PreToolUse"] + (["Stop"] if end != "killed" else [])
    for name in events:
        event = json.loads((HOOKS / f"{name}.json").read_text())
        # where Claude Code writes it: named by its session id
        event["transcript_path"] = str(projects / f"{event['session_id']}.jsonl")
        capture_hook_event("claude-code", json.dumps(event).encode(), store=store)
    session = event["session_id"]
    run_id = f"claude-code-{session}"
    capsys.readouterr()
    assert main(["recover", run_id, "--store", str(store)]) == 0
    out, err = capsys.readouterr()
    assert f"run {run_id}: recovered and sealed, with an empty transcript (not complete)" in out
    # said once: the verdict says the transcript is empty, the hint the next step alone
    assert err.startswith(f"hint: once claude-code session {session}'s file is there"), err
    assert (out + err).count("not complete") == 1
    assert (out + err).count("empty transcript") == 1
    # agc-verify fails it, with the same next step.
    assert verify_main([run_id, "--store", str(store)]) == 1
    out, err = capsys.readouterr()
    assert "complete" not in out.splitlines()[-1]
    (hint,) = [line for line in err.splitlines() if line.startswith("hint:")]
    command = hint.split("`")[1]
    # the very file the hooks named, not a guess at where Claude Code keeps it
    named = projects / f"{session}.jsonl"
    assert shlex.split(command)[:3] == ["agc", "import", str(named)]
    # The step works: the session file there completes the run.
    shutil.copy(HOOKS / "session-file.jsonl", named)
    words = shlex.split(command)
    assert main(words[1:]) == 0
    capsys.readouterr()
    code = verify_main([run_id, "--store", str(store), "--allow-recovered"])
    out = capsys.readouterr().out
    if end == "killed":
        assert code == 0, out
    else:  # the turn's end that found no file is a capture failure for good
        assert code == 1
        assert out.splitlines()[-1].startswith(f"run {run_id}: capture-failed")
        # One failure, kept beside the store and held in the run: counted once.
        assert "capture-failed: 1 hook event(s)" in out, out
