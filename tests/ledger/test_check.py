"""Tests for agc.ledger._check: show and check, and every tampering case."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import get_args

import pytest

from agc._core.digest import new_hasher
from agc.cli.app import main as cli_main
from agc.errors import (
    InputError,
    InputMissingError,
    LedgerInvalidError,
    StoreError,
    VerificationError,
)
from agc.ledger import (
    LedgerFindingCode,
    check_turn_file,
    parse_policy,
    show_turn_file,
    verify_turn_file,
)
from agc.ledger import _check as check_module
from agc.ledger._lines import MAX_READ_LINE_BYTES
from tests.ledger.helpers import command, mcp, record_turn

REACHES_INSIDE = {
    "agc.ledger._check": "reads the checker's source for the finding codes it emits",
    "agc.ledger._lines": "the reader's line limit, to write a line just over it",
}

GDD = "assets/uploads/upload-1-fast_gdd.md"
OFFERED = [{"name": "fast_gdd.md", "localPath": GDD, "status": "imported"}]


def _reseal(path: Path) -> None:
    hasher = new_hasher("blake3")
    hasher.update(path.read_bytes())
    path.with_name(path.name + ".b3").write_text(f"{hasher.hexdigest()}  {path.name}\n")


def _edit_record(index: int, change: Callable[[dict[str, object]], None]) -> Callable[[Path], None]:
    def apply(path: Path) -> None:
        lines = path.read_bytes().splitlines()
        record = json.loads(lines[index])
        change(record)
        lines[index] = json.dumps(record, separators=(",", ":")).encode()
        path.write_bytes(b"\n".join(lines) + b"\n")

    return apply


def _sealed_turn(project: Path) -> Path:
    events = [
        command("c1", f"ls {GDD}", [{"type": "listFiles", "path": "assets/uploads"}]),
        mcp("m1", "taonier_prepare_game_art", {"brief": "collect"}),
    ]
    return record_turn(project, events, attachments=OFFERED).turn_file


def test_a_fresh_turn_file_checks_ok(project: Path) -> None:
    report = check_turn_file(_sealed_turn(project))
    assert report.ok
    assert report.findings == ()
    assert report.to_dict()["schema_version"] == 1
    assert verify_turn_file(_sealed_turn(project)).attempts == 2


def _append(path: Path) -> None:
    with path.open("ab") as handle:
        handle.write(b'{"recordType":"direct.codex.item","clientTurnId":"Abc123-def","seq":3}\n')


def _flip(path: Path) -> None:
    path.write_bytes(path.read_bytes().replace(b'"collect"', b'"collecT"', 1))


def _drop_last_line(path: Path) -> None:
    path.write_bytes(b"\n".join(path.read_bytes().splitlines()[:-1]) + b"\n")


def _torn(path: Path) -> None:
    path.write_bytes(path.read_bytes() + b'{"recordType":')


def _junk(path: Path) -> None:
    path.write_bytes(path.read_bytes() + b"not json\n")
    _reseal(path)


def _both(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    def apply(path: Path) -> None:
        for step in steps:
            step(path)

    return apply


def _set(key: str, value: object) -> Callable[[dict[str, object]], None]:
    def change(record: dict[str, object]) -> None:
        record[key] = value

    return change


@pytest.mark.parametrize(
    ("tamper", "codes"),
    [
        pytest.param(_flip, {"modified", "seal-mismatch", "turn-end-mismatch"}, id="byte-changed"),
        pytest.param(_append, {"extended", "turn-end-mismatch"}, id="record-appended"),
        pytest.param(_drop_last_line, {"modified", "attempt-unsealed"}, id="seal-line-removed"),
        pytest.param(_torn, {"torn-tail", "record-invalid", "extended"}, id="torn-tail"),
        pytest.param(_junk, {"record-invalid"}, id="junk-line-resealed"),
        pytest.param(
            lambda p: p.with_name(p.name + ".b3").unlink(), {"unsealed"}, id="sidecar-deleted"
        ),
        pytest.param(
            lambda p: p.with_name(p.name + ".b3").write_text("nonsense\n"),
            {"sidecar-invalid"},
            id="sidecar-garbled",
        ),
        pytest.param(
            _both(
                _edit_record(3, _set("offeredRead", [{"localPath": GDD, "read": True}])), _reseal
            ),
            {"turn-end-mismatch", "seal-mismatch"},
            id="turn-end-forged-and-resealed",
        ),
        pytest.param(
            _both(_edit_record(1, _set("aggregatedOutput", "secret")), _reseal),
            {"forbidden-field", "seal-mismatch"},
            id="output-smuggled",
        ),
        pytest.param(
            _both(_edit_record(1, _set("path", "/home/bob/x")), _reseal),
            {"host-path", "seal-mismatch"},
            id="host-path-smuggled",
        ),
        pytest.param(
            _both(_edit_record(2, _set("clientTurnId", "other-turn")), _reseal),
            {"turn-id-mismatch", "seal-mismatch"},
            id="turn-id-changed",
        ),
        pytest.param(
            _both(_edit_record(2, _set("seq", 5)), _reseal),
            {"seq-invalid", "turn-end-mismatch", "seal-mismatch"},
            id="seq-changed",
        ),
    ],
)
def test_tampering_is_found(project: Path, tamper: Callable[[Path], None], codes: set[str]) -> None:
    path = record_turn(
        project,
        [
            command("c1", "ls", [{"type": "listFiles", "path": "assets/uploads"}]),
            mcp("m1", "taonier_prepare_game_art", {"brief": "collect"}),
        ],
        attachments=OFFERED,
    ).turn_file
    tamper(path)
    report = check_turn_file(path)
    assert not report.ok
    assert {f.code for f in report.findings} == codes
    with pytest.raises(VerificationError):
        verify_turn_file(path)


def test_policy_mismatch_is_a_warning(project: Path) -> None:
    path = _sealed_turn(project)
    other = parse_policy(b"schema_version = 1\n", name="empty.toml")
    report = check_turn_file(path, policy=other)
    codes = {f.code: f.severity for f in report.findings}
    assert codes["policy-mismatch"] == "warning"
    assert codes["turn-end-mismatch"] == "error"  # the empty policy finds no design


def test_not_a_turn_file(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"a":1}\n')
    report = check_turn_file(path)
    assert {"no-turn-start", "orphan-records", "unsealed"} <= {f.code for f in report.findings}
    with pytest.raises(LedgerInvalidError):
        show_turn_file(path)


def test_missing_or_unusable_turn_files_are_named(tmp_path: Path) -> None:
    # A missing file is the same error as any missing input (exit 2); a symlink exit 3.
    with pytest.raises(InputMissingError, match="does not exist"):
        check_turn_file(tmp_path / "missing.jsonl")
    (tmp_path / "real.jsonl").write_text("")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "real.jsonl")
    with pytest.raises(StoreError, match="symlink"):
        check_turn_file(tmp_path / "link.jsonl")
    with pytest.raises(InputError, match="is a folder"):
        check_turn_file(tmp_path)


def test_show_picks_an_attempt(project: Path) -> None:
    record_turn(
        project, [mcp("m", "taonier_prepare_game_art", {"brief": "x"})], attachments=OFFERED
    )
    path = record_turn(
        project, [command("r", "cat", [{"type": "read", "path": GDD}])], attachments=OFFERED
    ).turn_file
    assert show_turn_file(path).row == "read-no-design"
    first = show_turn_file(path, attempt=1)
    assert (first.attempt, first.attempts, first.row) == (1, 2, "not-opened-before-design")
    with pytest.raises(LedgerInvalidError, match="no attempt 3"):
        show_turn_file(path, attempt=3)


def test_every_ledger_finding_code_is_documented() -> None:
    """The codes the checker emits are the typed codes, and exactly those docs/ledger.md
    lists for `check`."""
    source = Path(str(check_module.__file__)).read_text()
    emitted = set(re.findall(r'Finding\(\s*"([a-z-]+)"', source))
    docs = (Path(__file__).resolve().parents[2] / "docs" / "ledger.md").read_text()
    listed = docs[docs.index("Finding codes:") : docs.index("The JSON report has")]
    documented = set(re.findall(r"`([a-z-]+)`", listed))
    assert emitted == set(get_args(LedgerFindingCode)) == documented


def test_a_fifo_in_place_of_a_turn_file_is_unreadable_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "Abc123-def.jsonl"
    os.mkfifo(fifo)
    script = (
        "import sys; from pathlib import Path\n"
        "from agc.errors import StoreError\n"
        "from agc.ledger import check_turn_file\n"
        "try:\n    check_turn_file(Path(sys.argv[1]))\n"
        "except StoreError as exc:\n    print(exc.code, exc.message)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(fifo)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert done.stdout.startswith("store-unreadable ")
    assert "not a regular file" in done.stdout


def test_show_says_when_an_attempt_has_no_seal_record(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A recorder killed at each step of its second attempt (the file cut after each of
    # its records), and an attempt an attacker appended after the last seal: show
    # printed "completed: True" for a turn_end that no seal closes, as for a sealed one.
    first = record_turn(project, [command("c1", "ls")]).turn_file
    second = record_turn(project, [command("c2", "ls"), command("c3", "pwd")]).turn_file
    assert first == second
    lines = second.read_bytes().splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if b'"direct.codex.turn_start"' in line]
    for cut in range(starts[1] + 1, len(lines) + 1):
        second.write_bytes(b"".join(lines[:cut]))
        summary = show_turn_file(second)
        assert summary.attempt == 2
        assert summary.sealed is (cut == len(lines))
        assert show_turn_file(second, attempt=1).sealed is True
        assert summary.to_dict()["sealed"] is summary.sealed
        assert cli_main(["ledger", "show", str(second)]) == 0
        header = capsys.readouterr().out.splitlines()[0]
        assert header.endswith("sealed: yes" if summary.sealed else "see `agc ledger check`)")
    forged = [line for line in lines[starts[1] :] if b'"direct.codex.seal"' not in line]
    second.write_bytes(
        b"".join(lines + [line.replace(b'"attempt":2', b'"attempt":3') for line in forged])
    )
    assert show_turn_file(second).sealed is False


@pytest.mark.parametrize("torn", [False, True], ids=["line", "unterminated"])
def test_an_enormous_line_is_hashed_in_pieces_never_read_whole(project: Path, torn: bool) -> None:
    path = _sealed_turn(project)
    size = 48 * 1024 * 1024
    with path.open("ab") as handle:  # one JSON object of 48 MiB after the last seal
        handle.write(b'{"a":"' + b"A" * (size - 9) + b'"}' + (b"" if torn else b"\n"))
    _reseal(path)
    tracemalloc.start()
    try:
        report = check_turn_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024, peak
    lines = len(path.read_bytes().splitlines())
    invalid = [f for f in report.errors if f.code == "record-invalid"]
    assert [f.line for f in invalid] == [lines]
    assert "longer than" in invalid[0].message
    assert report.bytes == path.stat().st_size
    hasher = new_hasher("blake3")
    hasher.update(path.read_bytes())
    assert report.digest == hasher.hexdigest()
    assert ("torn-tail" in {f.code for f in report.errors}) is torn


@pytest.mark.parametrize("extra", [0, 1], ids=["at-the-limit", "one-byte-over"])
def test_a_line_is_parsed_up_to_the_read_limit(project: Path, extra: int) -> None:
    path = _sealed_turn(project)
    limit = MAX_READ_LINE_BYTES
    line = b'{"a":"' + b"A" * (limit - 9 + extra) + b'"}\n'
    assert len(line) == limit + extra
    with path.open("ab") as handle:
        handle.write(line)
    _reseal(path)
    codes = {f.code for f in check_turn_file(path).errors}
    # At the limit the line is read (an object of another turn); beyond it, not read.
    assert ("turn-id-mismatch" in codes) is (extra == 0)
    assert ("record-invalid" in codes) is (extra == 1)


def test_show_prints_the_outcome_in_words_as_the_rest_of_its_header(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    turn = record_turn(project, [command("c1", "ls")]).turn_file
    assert show_turn_file(turn).completed is True
    assert cli_main(["ledger", "show", str(turn)]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert header.endswith(", completed: yes, sealed: yes"), header
