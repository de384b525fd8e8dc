"""Tests for ``agc import``: a JSONL file copied into the store through the writer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agc._core.store import StoreLayout
from agc.cli.app import main
from agc.cli.verify import main as verify_main
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
)

REAL = real_fixture_files() or [REAL_FIXTURES / "absent.jsonl"]
# Where to change one byte of the stored transcript: first, last, and spread between.
POSITIONS = [0.0, 0.13, 0.37, 0.5, 0.71, 0.94, 1.0]


def _import(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["import", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_import_file(tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "session.jsonl"
    data = b'{"a":1}\n[2]\n{"b":"\xe2\x80\xa8"}'
    source.write_bytes(data)
    code, out, err = _import(capsys, str(source), "--run-id", "r1", "--store", str(store))
    assert code == 0
    assert "3 records written to transcript (1 non-object line kept" in out
    assert err == ""
    assert_keeps_every_line(
        data, read_records(StoreLayout(store).artifact_path("r1", "transcript"))
    )
    assert check_run("r1", store).complete
    assert source.read_bytes() == data  # the input is never touched


def test_import_json_summary(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "s.jsonl"
    source.write_bytes(b"{}\n{}\n")
    code, out, _ = _import(capsys, str(source), "--run-id", "r1", "--store", str(store), "--json")
    assert code == 0
    assert json.loads(out)["records"] == 2


def test_import_zero_records_with_allow_empty_gives_an_incomplete_run(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "empty.jsonl"
    source.write_bytes(b"")
    argv = [str(source), "--run-id", "r1", "--store", str(store), "--allow-empty"]
    assert _import(capsys, *argv)[0] == 0
    assert verify_main(["r1", "--store", str(store)]) == ExitCode.FINDINGS
    assert "transcript has no records" in capsys.readouterr().out


@pytest.mark.parametrize("what", ["missing", "folder"])
def test_bad_input_file_exits_2_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str
) -> None:
    source = tmp_path / "input"
    if what == "folder":
        source.mkdir()
    store = tmp_path / "store"
    code, out, err = _import(capsys, str(source), "--run-id", "r1", "--store", str(store))
    assert code == ExitCode.USAGE
    assert out == ""
    assert str(source) in err
    assert not store.exists()


@pytest.mark.parametrize("run_id", BAD_RUN_IDS)
def test_bad_run_id_exits_2_and_creates_nothing(
    run_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "s.jsonl"
    source.write_bytes(b"{}\n")
    store = tmp_path / "store"
    code, _, err = _import(capsys, str(source), "--run-id", run_id, "--store", str(store))
    assert code == ExitCode.USAGE
    assert "run id" in err
    assert not store.exists()
    assert not Path(os.environ["AGC_HOME"]).exists()
    assert tree(tmp_path) == ["s.jsonl"]


@pytest.mark.parametrize("fixture", REAL, ids=lambda p: p.name)
def test_real_transcripts_through_import(
    fixture: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_shared(fixture)
    code, out, err = _import(capsys, str(fixture), "--run-id", "real", "--store", str(store))
    assert code == 0, err
    data = fixture.read_bytes()
    stored = read_records(StoreLayout(store).artifact_path("real", "transcript"))
    assert_keeps_every_line(data, stored)
    invalid = sum("invalid" in record for record in stored)
    assert f"({invalid} non-object lines" in out
    assert verify_main(["real", "--store", str(store)]) == ExitCode.OK


@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("fixture", REAL, ids=lambda p: p.name)
def test_real_transcript_fails_after_a_one_byte_change(
    fixture: Path, position: float, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_shared(fixture)
    assert _import(capsys, str(fixture), "--run-id", "real", "--store", str(store))[0] == 0
    path = StoreLayout(store).artifact_path("real", "transcript")
    data = bytearray(path.read_bytes())
    index = min(int(position * len(data)), len(data) - 1)
    data[index] ^= 0x20
    path.write_bytes(bytes(data))
    report = check_run("real", store)
    assert not report.complete
    assert "modified" in finding_codes(report)
    assert verify_main(["real", "--store", str(store)]) == ExitCode.FINDINGS


BAD_TRANSCRIPTS = [
    pytest.param(b'\xef\xbb\xbf{"a":1}\n{"b":2}\n', ExitCode.OK, id="bom"),
    pytest.param(b'{"a":1}\r\n{"b":2}\r\n', ExitCode.OK, id="crlf"),
    pytest.param(b'{"a":1}\n{"b":2}', ExitCode.OK, id="unterminated-last-line"),
    pytest.param(b'{"a":"\xff"}\n\xc3\x28\n{"c":3}\n', ExitCode.OK, id="invalid-utf8"),
    pytest.param(b'{"big":"' + b"z" * (10 * 1024 * 1024) + b'"}\n', ExitCode.OK, id="10mb-line"),
    pytest.param(b"", ExitCode.FINDINGS, id="zero-records"),
]


@pytest.mark.parametrize(("data", "verdict"), BAD_TRANSCRIPTS)
@pytest.mark.parametrize("how", ["import", "record"])
def test_awkward_transcripts_keep_every_line(
    tmp_path: Path,
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    data: bytes,
    verdict: ExitCode,
    how: str,
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(data)
    # An empty input is refused unless asked for (tests/cli/test_failures.py).
    extra = [] if data else ["--allow-empty"]
    if how == "import":
        code = main(["import", str(source), "--run-id", "r1", "--store", str(store), *extra])
    else:
        feed_stdin(monkeypatch, data)
        code = main(["record", "--run-id", "r1", "--store", str(store), *extra])
    assert code == ExitCode.OK
    stored = read_records(StoreLayout(store).artifact_path("r1", "transcript"))
    assert_keeps_every_line(data, stored)
    assert verify_main(["r1", "--store", str(store)]) == verdict
    out = capsys.readouterr().out
    if verdict == ExitCode.FINDINGS:
        assert "transcript has no records" in out


def test_importing_the_runs_own_file_is_refused(store: Path) -> None:
    # Without the check this copies the file into itself until the disk is full, so it
    # runs in a subprocess with a file-size limit and a timeout.
    writer = TranscriptWriter("r1", store=store)
    for n in range(2000):
        writer.write({"n": n, "pad": "x" * 100})
    writer.abort()
    target = StoreLayout(store).artifact_path("r1", "transcript")
    link = store.parent / "hardlink.jsonl"
    os.link(target, link)
    before = target.read_bytes()
    script = textwrap.dedent(
        """
        import resource, sys
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000_000, 20_000_000))
        from agc.cli.app import main
        sys.exit(main(sys.argv[1:]))
        """
    )
    for source in (target, link):
        argv = ["import", str(source), "--run-id", "r1", "--store", str(store)]
        result = subprocess.run(
            [sys.executable, "-c", script, *argv],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == ExitCode.USAGE, result.stderr
        assert "is the transcript file of run r1 itself" in result.stderr
        assert target.read_bytes() == before


def test_a_missing_input_whose_name_is_not_utf8_is_named_on_a_strict_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # capsys's stderr is strict, as an in-process caller's may be: the message naming
    # the file raised UnicodeEncodeError out of main() instead of exit 2.
    missing = Path(os.fsdecode(os.fsencode(tmp_path) + b"/in-\xfe.jsonl"))
    code = main(["import", str(missing), "--run-id", "r1", "--store", str(tmp_path / "s")])
    assert code == ExitCode.USAGE
    assert "in-\\udcfe.jsonl does not exist" in capsys.readouterr().err


def test_a_folder_with_no_session_file_says_nothing_was_imported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "sessions"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_text("not a session\n")
    store = tmp_path / "store"
    assert main(["import", str(folder), "--store", str(store)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"no client session files under {folder}" in captured.err
    assert main(["import", str(folder), "--store", str(store), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
