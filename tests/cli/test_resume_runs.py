"""``agc resume`` on runs recorded or imported with agc, ``agc export``, and the inputs
``--check`` refuses (an empty or unreadable history is never valid)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc._core.store import StoreLayout
from agc.cli.app import main
from agc.resume._snapshot import SessionSnapshot, ToolCallState, save_snapshot
from tests.conftest import feed_stdin


def _line(record: Any) -> str:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)


def _rollout(*, answered: bool) -> bytes:
    """A small paginated Codex rollout whose last call is answered or not."""
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go é"}]},
        {
            "type": "function_call",
            "name": "exec_command",
            "arguments": '{"cmd":"ls"}',
            "call_id": "call_1",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "a\nb"},
        {
            "type": "function_call",
            "name": "exec_command",
            "arguments": '{"cmd":"sleep 9"}',
            "call_id": "call_2",
        },
    ]
    if answered:
        items.append({"type": "function_call_output", "call_id": "call_2", "output": "ok"})
    lines = [
        {
            "timestamp": "2026-01-01T00:00:00.000Z",
            "ordinal": 0,
            "type": "session_meta",
            "payload": {"id": "s1"},
        }
    ]
    for item in items:
        lines.append(
            {
                "timestamp": "2026-01-01T00:00:01.000Z",
                "ordinal": len(lines),
                "type": "response_item",
                "payload": item,
            }
        )
    return "".join(_line(line) + "\n" for line in lines).encode()


def _import(tmp_path: Path, store: Path, data: bytes, run_id: str = "r1") -> None:
    source = tmp_path / f"{run_id}.jsonl"
    source.write_bytes(data)
    assert main(["import", str(source), "--run-id", run_id, "--store", str(store)]) == 0


def _json(capsys: pytest.CaptureFixture[str]) -> Any:
    return json.loads(capsys.readouterr().out)


# --- agc resume RUN_ID for an imported run ------------------------------------------------


def test_imported_run_is_checked_by_its_id(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _import(tmp_path, store, _rollout(answered=False))
    capsys.readouterr()
    assert main(["resume", "r1", "--store", str(store), "--check", "--json"]) == 1
    report = _json(capsys)
    assert [(f["code"], f["call_id"], f["line"]) for f in report["findings"]] == [
        ("tool-call-unanswered", "call_2", 5)
    ]
    assert report["format"] == "codex-rollout"
    assert report["tool_call_state"] is None  # a recorded file has no snapshot state


def test_imported_run_is_repaired_into_the_session_file(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _rollout(answered=False)
    _import(tmp_path, store, data)
    out = tmp_path / "fixed.jsonl"
    rc = main(
        ["resume", "r1", "--store", str(store), "--strategy", "synthesize", "--out", str(out)]
    )
    assert rc == 0
    fixed = out.read_bytes()
    assert fixed.startswith(data)  # the session itself, unwrapped, then agc's answer
    last = json.loads(fixed.splitlines()[-1])
    assert last["payload"]["call_id"] == "call_2"
    assert last["ordinal"] == 5


def test_tampered_run_is_refused_unless_insecure(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _import(tmp_path, store, _rollout(answered=False))
    transcript = StoreLayout(store).artifact_path("r1", "transcript")
    transcript.write_bytes(transcript.read_bytes().replace(b"sleep 9", b"sleep 1"))
    capsys.readouterr()
    assert main(["resume", "r1", "--store", str(store), "--check"]) == 1
    err = capsys.readouterr().err
    assert "run r1 does not verify" in err
    assert "--insecure-skip-verify" in err
    assert main(["resume", "r1", "--store", str(store), "--check", "--insecure-skip-verify"]) == 1
    captured = capsys.readouterr()
    assert "warning: --insecure-skip-verify: run r1 does not verify" in captured.err
    assert "call_2" in captured.out  # read as it is: the findings are still reported


def test_snapshot_comes_before_a_recorded_run(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _import(tmp_path, store, _rollout(answered=False))
    messages = [{"role": "user", "content": "hi"}]
    save_snapshot(SessionSnapshot("r1", "s", messages, ToolCallState(), {}), store)
    capsys.readouterr()
    assert main(["resume", "r1", "--store", str(store), "--check", "--json"]) == 0
    assert _json(capsys)["format"] == "openai-chat"


def test_no_snapshot_and_no_run_is_not_found(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["resume", "nope", "--store", str(store), "--check"]) == 2
    assert "nope" in capsys.readouterr().err


def test_recorded_stream_is_resumable(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`claude -p --output-format stream-json | agc record` keeps a resumable history."""
    stream = [
        {"type": "system", "subtype": "init", "session_id": "s"},
        {
            "type": "assistant",
            "uuid": "a1",
            "session_id": "s",
            "parent_tool_use_id": None,
            "message": {
                "id": "m1",
                "type": "message",
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "Bash",
                        "input": {"command": "sleep 9"},
                    }
                ],
            },
        },
    ]
    feed_stdin(monkeypatch, "".join(_line(r) + "\n" for r in stream).encode())
    assert main(["record", "--run-id", "cc", "--store", str(store)]) == 0
    capsys.readouterr()
    assert main(["resume", "cc", "--store", str(store), "--check", "--json"]) == 1
    report = _json(capsys)
    assert report["format"] == "claude-code"
    assert [f["call_id"] for f in report["findings"]] == ["toolu_1"]


# --- agc export ---------------------------------------------------------------------------


def test_export_gives_back_the_imported_file(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _rollout(answered=True)
    _import(tmp_path, store, data)
    out = tmp_path / "back.jsonl"
    assert main(["export", "r1", "--store", str(store), "--out", str(out)]) == 0
    assert out.read_bytes() == data
    assert main(["export", "r1", "--store", str(store), "--out", str(out)]) == 2  # never over


def test_export_refuses_a_tampered_run(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _import(tmp_path, store, _rollout(answered=True))
    transcript = StoreLayout(store).artifact_path("r1", "transcript")
    transcript.write_bytes(transcript.read_bytes() + b"\n")
    out = tmp_path / "back.jsonl"
    assert main(["export", "r1", "--store", str(store), "--out", str(out)]) == 1
    assert not out.exists()


_LINE = st.one_of(
    # compact JSON objects, as the agents write them
    st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.one_of(st.integers(-(10**6), 10**6), st.text(max_size=12), st.booleans(), st.none()),
        max_size=4,
    ).map(_line),
    # anything else a line can hold (no line break)
    st.text(max_size=20).filter(lambda t: "\n" not in t),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(_LINE, min_size=1, max_size=8), torn=st.booleans())
def test_export_round_trips_any_file(
    lines: list[str], torn: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Compact JSON lines and non-JSON lines come back byte for byte; a last line that
    is not JSON comes back without a line break when it had none (a torn line)."""
    data = "".join(line + "\n" for line in lines)
    last_is_json = True
    try:
        json.loads(lines[-1])
    except ValueError:
        last_is_json = False
    if torn and not last_is_json and lines[-1].strip():
        data = data[:-1]
    root = tmp_path_factory.mktemp("export")
    store = root / "store"
    store.mkdir()
    source = root / "in.jsonl"
    source.write_bytes(data.encode())
    assert main(["import", str(source), "--run-id", "x", "--store", str(store)]) == 0
    out = root / "out.jsonl"
    assert main(["export", "x", "--store", str(store), "--out", str(out)]) == 0
    exported = out.read_bytes()
    if not lines[-1].strip() or last_is_json or torn:
        assert exported == data.encode()
    else:  # a non-JSON last line that had its line break: the record cannot say so
        assert exported == data.encode()[:-1]


# --- inputs --check refuses -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "args", "says"),
    [
        pytest.param(b"[]", [], "holds no messages", id="empty-array"),
        pytest.param(
            b'{"type":"queue-operation","sessionId":"s"}\n{"type":"user","uuid":"u","sessionId":"s","message":{"role":"user","content":"hi"}}\n'.replace(
                b'{"type":"user"', b'{"type":"summary"'
            ),
            [],
            "none of them a message",
            id="no-message-line",
        ),
        pytest.param(
            b'{"timestamp":"t","type":"session_meta","payload":{"id":"s"}}\n',
            ["--format", "codex-rollout"],
            "is a codex-rollout message",
            id="format-matches-no-line",
        ),
    ],
)
def test_check_refuses_an_empty_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, args: list[str], says: str
) -> None:
    path = tmp_path / "h.jsonl"
    path.write_bytes(content)
    assert main(["resume", str(path), "--check", *args]) == 2
    err = capsys.readouterr().err
    assert str(path) in err
    assert says in err


def test_check_refuses_a_sealed_transcript(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _import(tmp_path, store, _rollout(answered=False))
    transcript = StoreLayout(store).artifact_path("r1", "transcript")
    for args in ([], ["--format", "codex-rollout"], ["--format", "claude-code"]):
        capsys.readouterr()
        assert main(["resume", str(transcript), "--check", *args]) == 2
        err = capsys.readouterr().err
        assert "sealed transcript" in err
        assert "agc resume RUN_ID" in err


# --- report details -------------------------------------------------------------------------


def test_pending_id_matching_no_call_is_a_warning(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "done"}]
    save_snapshot(SessionSnapshot("p", "s", messages, ToolCallState(True, "call_gone"), {}), store)
    assert main(["resume", "p", "--store", str(store), "--json"]) == 0
    report = _json(capsys)["report"]
    assert len(report["warnings"]) == 1
    assert "call_gone" in report["warnings"][0]
    assert main(["resume", "p", "--store", str(store), "--check"]) == 0
    assert "warning: the snapshot says call call_gone was in flight" in capsys.readouterr().err


def test_text_and_json_name_the_same_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(_rollout(answered=False))
    assert main(["resume", str(path), "--check"]) == 1
    text = capsys.readouterr().out
    assert main(["resume", str(path), "--check", "--json"]) == 1
    (finding,) = _json(capsys)["findings"]
    assert finding["record"] == 4  # 0-based
    assert f"line {finding['line']}: tool-call-unanswered" in text


def test_export_to_a_reader_gone_keeps_its_exit_code(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `agc export r1 | head -0`: the EPIPE reached click, whose rule for it is exit 1.
    _import(tmp_path, store, _rollout(answered=True))
    capsys.readouterr()
    argv = ["export", "r1", "--store", str(store)]
    script = f"import sys\nfrom agc.cli.app import main\nsys.exit(main({argv!r}))\n"
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-c", script],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (0, "")
