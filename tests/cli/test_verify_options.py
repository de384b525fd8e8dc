"""``agc-verify`` as ``sha256sum -c`` users expect it: run-missing, --quiet, --status,
full digests, colour only on a terminal, plain --all when piped, --expect-head checked,
options that do not apply refused, trusted-key folders, --version and completion."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agc import __version__
from agc._core.store import StoreLayout
from agc.cli import verify_main as fast
from agc.cli.app import main as agc_main
from agc.cli.verify import main as verify_main
from agc.exitcodes import ExitCode
from agc.integrity import (
    RunManifest,
    TranscriptWriter,
    generate_keypair,
    load_signing_key,
    open_run,
)
from tests.cli.terminal import on_a_terminal
from tests.conftest import write_run

BOX = set("┏┓┗┛━┃│─┡┩╇╈┼╭╮╰╯")


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = verify_main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _tamper(store: Path, run_id: str) -> None:
    path = StoreLayout(store).artifact_path(run_id, "transcript")
    data = bytearray(path.read_bytes())
    data[3] ^= 1
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("entry", ["fast", "full"])
def test_a_run_that_does_not_exist(
    store: Path, capsys: pytest.CaptureFixture[str], entry: str
) -> None:
    write_run(store, "real")
    argv = ["nope", "--store", str(store)]
    code = fast.main(argv) if entry == "fast" else verify_main([*argv, "--quiet"])
    out, err = capsys.readouterr()
    assert code == ExitCode.FINDINGS
    assert f"no run 'nope' in store {store}" in out
    assert "transcript file missing" not in out
    assert f"`agc runs --store {store}` lists the runs" in err
    assert fast.main([*argv, "--json"]) == ExitCode.FINDINGS
    report = json.loads(capsys.readouterr().out)
    assert [f["code"] for f in report["findings"]] == ["run-missing"]


@pytest.mark.parametrize("entry", ["fast", "full"])
def test_a_run_in_a_store_folder_that_does_not_exist_is_run_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: str
) -> None:
    """A first `agc-verify` before any store was made: no run, exit 1, never exit 3."""
    missing = tmp_path / "never-made"
    argv = ["nope", "--store", str(missing)]
    code = fast.main(argv) if entry == "fast" else verify_main(argv)
    out, _ = capsys.readouterr()
    assert code == ExitCode.FINDINGS
    assert f"no run 'nope' in store {missing} (the store folder does not exist)" in out
    assert not missing.exists(), "verifying never creates a store"


@pytest.mark.parametrize("entry", ["fast", "full"])
@pytest.mark.parametrize(
    ("asked", "meant"),
    [
        ("fix-test-42", "fix-tests-42"),  # a letter left out
        ("fix-tests-24", "fix-tests-42"),  # two digits swapped
        ("deploy_7", "deploy-7"),  # another separator
        ("Deploy-7", "deploy-7"),  # another case
    ],
)
def test_a_mistyped_run_id_is_run_missing_with_the_close_id_suggested(
    store: Path, capsys: pytest.CaptureFixture[str], entry: str, asked: str, meant: str
) -> None:
    for run_id in ("fix-tests-42", "deploy-7", "refactor-cli"):
        write_run(store, run_id)
    argv = [asked, "--store", str(store)]
    code = fast.main(argv) if entry == "fast" else verify_main(argv)
    out, _ = capsys.readouterr()
    assert code == ExitCode.FINDINGS
    assert f"FAIL run          run-missing: no run {asked!r} in store {store}; " in out
    assert out.rstrip().endswith(f"run {asked}: run-missing (unverified; 1 finding(s))")
    assert f"did you mean {meant!r}?" in out
    assert fast.main([*argv, "--json"]) == ExitCode.FINDINGS
    report = json.loads(capsys.readouterr().out)
    assert (report["verdict_word"], report["verdict_category"]) == ("run-missing", "unverified")
    assert report["findings"][0]["message"].endswith(f"; did you mean {meant!r}?")


def _damage(store: Path, run_id: str, how: str) -> None:
    layout = StoreLayout(store)
    transcript = layout.artifact_path(run_id, "transcript")
    if how == "tampered":
        _tamper(store, run_id)
    elif how == "appended":
        transcript.write_bytes(transcript.read_bytes() + b'{"role": "user", "content": "x"}\n')
    elif how == "truncated":
        transcript.write_bytes(transcript.read_bytes()[:-5])
    elif how == "deleted":
        layout.artifact_path(run_id, "tool-events").unlink()


@pytest.mark.parametrize("entry", ["fast", "full"])
@pytest.mark.parametrize(
    ("how", "word", "category"),
    [
        ("tampered", "modified", "tampered"),
        ("appended", "extended", "tampered"),
        ("truncated", "truncated", "tampered"),
        ("deleted", "deleted", "tampered"),
        ("unsealed", "unsealed", "unfinished"),
        ("mistyped", "run-missing", "unverified"),
    ],
)
def test_each_kind_of_failure_reads_as_its_own_word(
    store: Path, capsys: pytest.CaptureFixture[str], entry: str, how: str, word: str, category: str
) -> None:
    """Tampered, appended, truncated, deleted, unsealed and a mistyped id once all read
    INCOMPLETE; each now names its finding code, in the single run's FAIL line and
    summary and in its --all line."""
    write_run(store, "good")
    run_id = "r1"
    if how == "unsealed":
        writer = TranscriptWriter(run_id, store=store)
        writer.write({"a": 1})
        writer.abort()
    elif how != "mistyped":
        write_run(store, run_id)
        _damage(store, run_id, how)
    argv = [run_id, "--store", str(store)]
    code = fast.main(argv) if entry == "fast" else verify_main(argv)
    out, _ = capsys.readouterr()
    assert code == ExitCode.FINDINGS
    lines = out.splitlines()
    assert any(line.startswith("FAIL ") and f" {word}: " in line for line in lines), out
    assert lines[-1].startswith(f"run {run_id}: {word} ({category}; ")
    assert "INCOMPLETE" not in out
    if how == "mistyped":
        return
    code, out, _ = _run(["--all", "--store", str(store)], capsys)
    assert out.splitlines()[0].startswith(f"FAIL {run_id}  {word}  unsigned  {word}: ")
    assert f"1/2 runs complete, 1 {word}; chain head" in out


def test_an_id_like_no_stored_run_gets_no_suggestion(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(store, "fix-tests-42")
    code, out, _ = _run(["zz", "--store", str(store)], capsys)
    assert code == ExitCode.FINDINGS
    assert "run-missing: no run 'zz' in store" in out
    assert "did you mean" not in out


def test_the_store_summary_counts_runs_per_verdict(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for run_id in ("a", "b", "c", "d", "e"):
        write_run(store, run_id)
    _tamper(store, "b")
    _tamper(store, "d")
    events = StoreLayout(store).artifact_path("c", "tool-events")
    events.write_bytes(events.read_bytes() * 2)
    code, out, _ = _run(["--all", "--store", str(store)], capsys)
    assert code == ExitCode.FINDINGS
    lines = out.splitlines()
    assert [line.split()[:3] for line in lines[:5]] == [
        ["FAIL", "b", "modified"],
        ["FAIL", "c", "extended"],
        ["FAIL", "d", "modified"],
        ["OK", "a", "complete"],
        ["OK", "e", "complete"],
    ]
    assert lines[-1].startswith(
        f"store {store}: INCOMPLETE; 2/5 runs complete, 2 modified, 1 extended; chain head "
    )
    code, out, _ = _run(["--all", "--store", str(store), "--json"], capsys)
    summary = json.loads(out)["summary"]
    assert list(summary["verdicts"].items()) == [("modified", 2), ("extended", 1), ("complete", 2)]
    assert (summary["complete"], summary["incomplete"]) == (2, 3)


def test_quiet_prints_only_failures_and_status_nothing(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(store, "good")
    write_run(store, "bad")
    _tamper(store, "bad")
    assert _run(["good", "--store", str(store), "--quiet"], capsys) == (0, "", "")
    code, out, _ = _run(["bad", "--store", str(store), "-q"], capsys)
    assert code == 1
    assert out.splitlines() == [
        "FAIL transcript   modified: transcript checksum mismatch (line 1)",
        "run bad: modified (tampered; 1 finding(s))",
    ]
    for run_id, expected in (("good", 0), ("bad", 1), ("nope", 1)):
        assert _run([run_id, "--store", str(store), "--status"], capsys) == (expected, "", "")
    code, out, _ = _run(["--all", "--store", str(store), "--quiet"], capsys)
    assert code == 1
    assert "good" not in out
    assert out.splitlines()[0].startswith(
        "FAIL bad  modified  unsigned  modified: transcript checksum mismatch"
    )
    assert _run(["--all", "--store", str(store), "--status"], capsys) == (1, "", "")


def test_human_output_has_full_digests(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    layout = write_run(store)
    manifest = RunManifest.from_bytes(layout.manifest_path("r1").read_bytes())
    code, out, _ = _run(["r1", "--store", str(store)], capsys)
    assert code == 0
    for seal in manifest.artifacts.values():
        assert f"blake3 {seal.digest}\n" in out
    assert "…" not in out


def test_all_is_plain_text_when_piped_failing_first(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long_id = "a-very-long-run-id-" + "x" * 100
    for run_id in ("aaa", long_id, "zzz"):
        write_run(store, run_id)
    _tamper(store, "zzz")
    code, out, _ = _run(["--all", "--store", str(store)], capsys)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("FAIL zzz  modified  unsigned  modified: ")
    assert lines[1] == "OK   a-very-long-run-id-" + "x" * 100 + "  complete  unsigned"
    assert lines[2] == "OK   aaa  complete  unsigned"
    assert lines[-1].startswith(
        f"store {store}: INCOMPLETE; 2/3 runs complete, 1 modified; chain head "
    )
    assert not BOX & set(out)
    assert "\x1b[" not in out


def _on_a_terminal(argv: list[str], env: dict[str, str]) -> str:
    """Run agc-verify with stdout on a pseudo-terminal; return what it printed."""
    return on_a_terminal("verify_main", argv, stream="stdout", env={"COLUMNS": "200", **env})[2]


def test_colour_only_on_a_terminal_and_never_with_no_color(store: Path) -> None:
    write_run(store)
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["TERM"] = "xterm-256color"
    coloured = _on_a_terminal(["r1", "--store", str(store)], env)
    assert "\x1b[32mOK  \x1b[0m transcript" in coloured
    plain = _on_a_terminal(["r1", "--store", str(store)], {**env, "NO_COLOR": "1"})
    assert "\x1b[" not in plain
    assert "OK   transcript" in plain


def test_all_on_a_terminal_is_a_table(store: Path) -> None:
    write_run(store)
    write_run(store, "r2")
    _tamper(store, "r2")
    shown = _on_a_terminal(["--all", "--store", str(store)], {"NO_COLOR": "1"})
    assert BOX & set(shown)
    assert "│ r1 " in shown
    assert "│ r2 " in shown
    row = next(line for line in shown.splitlines() if "│ r2 " in line)
    assert "│ modified " in row
    assert "modified: transcript checksum mismatch" in row
    assert "1/2 runs complete, 1 modified; chain head" in shown
    assert not re.search("\x1b\\[[0-9;]*3[0-9]", shown), "NO_COLOR: no colour (rich keeps bold)"


def test_store_findings_under_the_table_are_named_and_never_read_as_markup(store: Path) -> None:
    write_run(store)
    (store / "audit" / "[red]stray").write_bytes(b"")
    shown = _on_a_terminal(["--all", "--store", str(store)], {"NO_COLOR": "1"})
    line = next(line for line in shown.splitlines() if line.startswith("FAIL store"))
    assert "unexpected: " in line
    assert "audit/[red]stray" in line


def test_the_terminal_table_colours_each_verdict_by_its_category(store: Path) -> None:
    write_run(store)
    write_run(store, "r2")
    _tamper(store, "r2")
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["TERM"] = "xterm-256color"
    shown = _on_a_terminal(["--all", "--store", str(store)], env)
    row = next(line for line in shown.splitlines() if " r2 " in line)
    assert "\x1b[31mmodified" in row  # red
    assert "\x1b[32mcomplete" in next(line for line in shown.splitlines() if " r1 " in line)


@pytest.mark.parametrize("head", ["zz", "3f1c", "g" * 64, "a" * 63, "a" * 65, "", " " + "a" * 64])
def test_expect_head_must_be_64_hex_digits(
    store: Path, capsys: pytest.CaptureFixture[str], head: str
) -> None:
    write_run(store)
    code, out, err = _run(["--all", "--store", str(store), "--expect-head", head], capsys)
    assert code == ExitCode.USAGE
    assert "is not a chain head digest" in err
    assert "rolled back" not in out + err


def test_expect_head_in_either_case(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(store)
    _run(["--all", "--store", str(store)], capsys)
    head = json.loads((StoreLayout(store).audit_dir / "chain-head.json").read_text())["digest"]
    for given in (head, head.upper()):
        code, _, err = _run(["--all", "--store", str(store), "--expect-head", given], capsys)
        assert code == ExitCode.OK, err


@pytest.mark.parametrize(
    "extra",
    [
        ["--allow-unsigned"],
        ["--expect-head", "a" * 64],
        ["--store", "somewhere"],
    ],
    ids=lambda a: a[0],
)
def test_options_that_do_not_apply_to_a_turn_file_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    turn = tmp_path / "t.jsonl"
    turn.write_text("{}\n")
    code, _, err = _run(["--turn-file", str(turn), *extra], capsys)
    assert code == ExitCode.USAGE
    assert f"{extra[0]} does not apply to --turn-file" in err


@pytest.mark.parametrize("extra", [["--quiet"], ["--status"]])
def test_json_with_quiet_or_status_is_a_usage_error(
    store: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    write_run(store)
    assert _run(["r1", "--store", str(store), "--json", *extra], capsys)[0] == ExitCode.USAGE


# -- trusted keys -------------------------------------------------------------------------


@pytest.fixture
def signed_store(tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    keys = tmp_path / "keys"
    assert agc_main(["keys", "generate", "--out", str(keys)]) == 0
    monkeypatch.setenv("AGC_SIGNING_KEY", str(keys / "signing-key.pem"))
    source = tmp_path / "in.jsonl"
    source.write_bytes(b'{"a": 1}\n')
    assert agc_main(["import", str(source), "--run-id", "r1", "--store", str(store)]) == 0
    monkeypatch.delenv("AGC_SIGNING_KEY")
    return keys


@pytest.mark.parametrize("how", ["option", "environment"])
def test_the_folder_keys_generate_made_is_a_trusted_key_folder(
    store: Path,
    signed_store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    how: str,
) -> None:
    capsys.readouterr()
    argv = ["r1", "--store", str(store), "--require-signature"]
    if how == "option":
        argv += ["--trusted-key", str(signed_store)]
    else:
        monkeypatch.setenv("AGC_TRUSTED_KEYS", str(signed_store))
    code, out, err = _run(argv, capsys)
    assert code == ExitCode.OK, out + err
    assert "signature-valid" in out
    assert f"note: skipped {signed_store / 'signing-key.pem'}: a private key" in err
    assert _run([*argv, "--status"], capsys) == (0, "", "")  # --status: not even the note


def test_trusted_key_messages_for_files_and_folders(
    tmp_path: Path,
    store: Path,
    signed_store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ["r1", "--store", str(store)]
    private = signed_store / "signing-key.pem"
    code, _, err = _run([*base, "--trusted-key", str(private)], capsys)
    assert code == ExitCode.USAGE
    assert "is a private key, not a public key" in err
    assert f"--trusted-key {signed_store / 'signing-key.pub.pem'}" in err
    code, _, err = _run([*base, "--trusted-key", str(tmp_path / "absent.pem")], capsys)
    assert (code, "trusted key" in err, "does not exist" in err) == (2, True, True)
    empty = tmp_path / "empty-keys"
    empty.mkdir()
    code, _, err = _run([*base, "--trusted-key", str(empty)], capsys)
    assert code == ExitCode.USAGE
    assert "holds no public key" in err
    monkeypatch.setenv("AGC_TRUSTED_KEYS", str(signed_store / "signing-key.pub.pem"))
    code, _, err = _run(base, capsys)
    assert code == ExitCode.USAGE
    assert "$AGC_TRUSTED_KEYS folder" in err
    assert "is a file, not a folder" in err
    monkeypatch.setenv("AGC_TRUSTED_KEYS", str(tmp_path / "nowhere"))
    code, _, err = _run(base, capsys)
    assert (code, "does not exist" in err) == (2, True)


# -- unsealed runs point to agc recover ---------------------------------------------------


def test_an_unsealed_run_points_to_agc_recover(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    writer = TranscriptWriter("r1", store=store)
    writer.write({"a": 1})
    writer.abort()
    for entry in (fast.main, verify_main):
        assert entry(["r1", "--store", str(store)]) == ExitCode.FINDINGS
        err = capsys.readouterr().err
        assert f"`agc recover r1 --store {store}` seals what is on disk" in err
    write_run(store, "fine")
    assert fast.main(["fine", "--store", str(store)]) == 0
    assert "agc recover" not in capsys.readouterr().err


# -- what users reach for -------------------------------------------------------------------


def test_version_on_both_programs(capsys: pytest.CaptureFixture[str]) -> None:
    assert agc_main(["--version"]) == 0
    assert capsys.readouterr().out == f"agc {__version__}\n"
    assert fast.main(["--version"]) == 0
    assert capsys.readouterr().out == f"agc-verify (agc) {__version__}\n"


@pytest.mark.parametrize(
    ("program", "variable", "words", "expected"),
    [
        ("agc", "_AGC_COMPLETE", "agc rep", "report"),
        ("agc-verify", "_AGC_VERIFY_COMPLETE", "agc-verify --sta", "--status"),
    ],
)
def test_shell_completion(program: str, variable: str, words: str, expected: str) -> None:
    entry = {"agc": "agc.cli.app", "agc-verify": "agc.cli.verify_main"}[program]
    script = f"import sys; from {entry} import main; sys.exit(main(sys.argv[1:]))"
    shown = subprocess.run(
        [sys.executable, "-c", script, "--show-completion", "bash"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"},
    )
    assert variable in shown.stdout
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=False,
        env={
            **os.environ,
            variable: "complete_bash",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split()) - 1),
        },
    )
    assert expected in done.stdout.split()


@pytest.mark.parametrize("entry", ["fast", "full"])
def test_a_warning_about_the_manifest_is_no_fail_line_and_quiet_leaves_it_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: str
) -> None:
    """A signed run checked without a trusted key is complete with the warning
    `signature-not-verified`: it was printed as "FAIL manifest  warning: …", and
    --quiet ("nothing at all for a complete run", docs/format.md) printed it too."""
    store = tmp_path / "store"
    private, _public, _ = generate_keypair(tmp_path / "keys")
    with open_run("r1", store=store, signing_key=load_signing_key(private)) as run:
        run.transcript.write({"role": "user", "content": "hi"})
    main = fast.main if entry == "fast" else verify_main
    assert main(["r1", "--store", str(store)]) == ExitCode.OK
    lines = capsys.readouterr().out.splitlines()
    assert not any(line.startswith("FAIL") for line in lines), lines
    assert lines[0].startswith("     manifest     warning: run manifest is signed (key id ")
    assert lines[-1] == "run r1: complete, not-checked"
    assert main(["r1", "--store", str(store), "--quiet"]) == ExitCode.OK
    assert capsys.readouterr().out == ""
