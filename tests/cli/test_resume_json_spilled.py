"""``agc resume --json`` keeps every finding, change and removed call with bounded
memory: past a bound they are spilled to a temporary file (the bound made small here,
so a small session exercises the spill) and the report is written on stdout one item
at a time. What it prints is, byte for byte, what it prints when nothing is spilled,
in the same order; the text output is unchanged; a full disk while spilling is the
disk-full error (exit 3), never a traceback or a short list."""

from __future__ import annotations

import errno
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

import agc._core.spill as spill
import agc.resume
from agc._core.spill import SpilledItems
from agc.cli.app import main
from tests.resume.test_gemini_parts_output import _long_session


def _rollout(calls: int, *, surrogate: bool = False) -> bytes:
    """A Codex rollout in which every call id is used twice: each call and its output
    written again right after (``duplicate-call-id`` and ``duplicate-tool-result``
    each time); ``surrogate``: one call id holds a lone surrogate (a ``\\udc80``
    escape), so the JSON is written with escapes."""
    lines = [{"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}]

    def item(payload: dict[str, Any]) -> None:
        lines.append({"timestamp": "t", "type": "response_item", "payload": payload})

    for number in range(calls):
        call_id = f"call_{number:06d}" + ("\udc80" if surrogate and number == calls // 2 else "é")
        item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]})
        call = {
            "type": "function_call",
            "name": "shell",
            "arguments": '{"cmd":"ls"}',
            "call_id": call_id,
        }
        output = {"type": "function_call_output", "call_id": call_id, "output": "ok"}
        for _ in range(2):
            item(call)
            item(output)
        item(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "done"}],
            }
        )
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _run(argv: list[str], capsys: Any) -> tuple[int, str, str]:
    code = main(argv)
    said = capsys.readouterr()
    return code, said.out, said.err


_SHAPES = {
    "codex": lambda: _rollout(300),
    "codex-surrogate": lambda: _rollout(300, surrogate=True),
    "gemini": lambda: _long_session(150),  # read and repaired in parts
}


@pytest.mark.parametrize("shape", sorted(_SHAPES))
@pytest.mark.parametrize("mode", ["--check", "--out", "--in-place"])
def test_spilled_json_is_byte_for_byte_the_json_held_in_memory(
    shape: str, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setattr(agc.resume, "SETTLE_MESSAGES", 64)  # read in parts, let go of
    data = _SHAPES[shape]()
    outputs = {}
    spilled_what: list[str] = []
    real_spill = SpilledItems._spill

    def counted(self: SpilledItems[Any], chunk: list[Any]) -> None:
        spilled_what.append(self._what)
        real_spill(self, chunk)

    monkeypatch.setattr(SpilledItems, "_spill", counted)
    for spill_at, chunk in ((spill.SPILL_AT, spill._CHUNK), (3, 2)):
        monkeypatch.setattr(spill, "SPILL_AT", spill_at)
        monkeypatch.setattr(spill, "_CHUNK", chunk)
        source = tmp_path / "session.jsonl"
        source.write_bytes(data)
        argv = ["resume", str(source), "--json"]
        if mode == "--check":
            argv.append("--check")
        else:
            argv += ["--strategy", "strip", mode]
            if mode == "--out":
                fixed = tmp_path / "fixed.jsonl"
                fixed.unlink(missing_ok=True)
                argv.append(str(fixed))
        code, out, _ = _run(argv, capsys)
        written = (
            (tmp_path / "fixed.jsonl").read_bytes() if mode == "--out" else source.read_bytes()
        )
        for backup in tmp_path.glob("session.jsonl.*"):  # the --in-place backup's name differs
            out = out.replace(backup.name, "BACKUP")
            backup.unlink()
        outputs[spill_at] = (code, out, written)
    (code, held, written), (spilled_code, spilled, spilled_written) = outputs.values()
    assert (spilled_code, spilled_written) == (code, written)
    assert spilled == held  # byte for byte, in the same order
    assert "findings" in spilled_what  # the findings of the parts let go of
    if mode != "--check":
        assert "changes" in spilled_what  # the changes of the runs or parts repaired
    document = json.loads(spilled)
    findings = (
        document["findings"] if mode == "--check" else document["report"]["before"]["findings"]
    )
    assert len(findings) > 2 * 3  # many past the bound: spilled
    lines = [finding["line"] for finding in findings]
    assert lines == sorted(lines)  # history order kept
    if mode != "--check":
        assert len(document["report"]["changes"]) > 2 * 3
    if shape == "codex-surrogate":
        assert spilled.isascii()
        assert "\\udc80" in spilled
        assert "\\u00e9" in spilled
    elif shape == "codex":
        assert "é" in spilled


@pytest.mark.parametrize("mode", ["--check", "--out"])
def test_the_text_output_is_unchanged_by_a_small_bound(
    mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setattr(agc.resume, "SETTLE_MESSAGES", 64)
    source = tmp_path / "session.jsonl"
    source.write_bytes(_rollout(200))
    said = []
    for spill_at in (spill.SPILL_AT, 1):
        monkeypatch.setattr(spill, "SPILL_AT", spill_at)
        monkeypatch.setattr(spill, "_CHUNK", 2)
        argv = ["resume", str(source), "--max-findings", "5"]
        if mode == "--check":
            argv.append("--check")
        else:
            fixed = tmp_path / "fixed.jsonl"
            fixed.unlink(missing_ok=True)
            argv += ["--strategy", "strip", "--out", str(fixed)]
        said.append(_run(argv, capsys))
    assert said[0] == said[1]
    assert "400 problem(s)" in said[0][1]


class _FullDisk:
    """A temporary file whose writes fail as on a full disk."""

    def __init__(self, real: Any) -> None:
        self._real = real

    tried = 0

    def write(self, data: bytes) -> int:
        _FullDisk.tried += 1
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


@pytest.mark.parametrize("shape", ["codex", "gemini"])
@pytest.mark.parametrize("mode", ["--check", "--out"])
def test_a_full_disk_while_spilling_findings_exits_3(
    shape: str, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setattr(agc.resume, "SETTLE_MESSAGES", 64)
    monkeypatch.setattr(spill, "SPILL_AT", 3)
    monkeypatch.setattr(spill, "_CHUNK", 2)
    real = tempfile.TemporaryFile

    def failing(**kw: Any) -> Any:
        made = real(**kw)
        return _FullDisk(made) if kw.get("prefix") == "agc-spill-" else made

    monkeypatch.setattr(tempfile, "TemporaryFile", failing)
    source = tmp_path / "session.jsonl"
    data = _SHAPES[shape]()
    source.write_bytes(data)
    argv = ["resume", str(source), "--json"]
    argv += (
        ["--check"]
        if mode == "--check"
        else ["--strategy", "strip", "--out", str(tmp_path / "fixed.jsonl")]
    )
    _FullDisk.tried = 0
    code, out, err = _run(argv, capsys)
    assert _FullDisk.tried  # a spill was tried
    assert code == 3, out[-600:] + err[-600:]
    assert json.loads(out)["error"]["code"] == "file-write-failed"
    assert "no space left on device" in err
    assert "Traceback" not in err
    assert source.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session.jsonl"]
