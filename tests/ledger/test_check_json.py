"""agc ledger check on turn files holding JSON that readers disagree on or choke on:
every such line is a ``record-invalid`` finding, never accepted, never exit 4."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agc._core.digest import new_hasher
from agc.cli.app import main
from agc.exitcodes import ExitCode
from agc.ledger import check_turn_file
from tests.ledger.helpers import command, record_turn

_HOSTILE_LINES = {
    "duplicate-record-type": b'{"recordType":"direct.codex.item","recordType":"x"}',
    "deep": b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "just-too-deep": b'{"a":' + b"[" * 600 + b"]" * 600 + b"}",
    "lone-surrogate": b'{"recordType":"direct.codex.item","text":"\\ud800"}',
    "nan": b'{"recordType":"direct.codex.item","n":NaN}',
    "digits": b'{"n":' + b"9" * 5000 + b"}",
}


def _reseal(path: Path) -> None:
    hasher = new_hasher("blake3")
    hasher.update(path.read_bytes())
    path.with_name(path.name + ".b3").write_text(f"{hasher.hexdigest()}  {path.name}\n")


@pytest.mark.parametrize("kind", sorted(_HOSTILE_LINES))
def test_a_hostile_line_is_record_invalid_even_when_resealed(
    project: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = record_turn(project, [command("c1", "ls")]).turn_file
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(1, _HOSTILE_LINES[kind] + b"\n")
    path.write_bytes(b"".join(lines))
    _reseal(path)
    report = check_turn_file(path)
    assert not report.ok
    assert [f.line for f in report.findings if f.code == "record-invalid"] == [2]
    capsys.readouterr()
    assert main(["ledger", "check", str(path), "--json"]) == ExitCode.FINDINGS
    out = capsys.readouterr().out
    json.loads(out.encode("utf-8"))
