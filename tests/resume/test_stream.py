"""Session files read and repaired line by line from disk (``_formats.stream``,
``repair_streamed``), against the same files read whole (``load_history``,
``repair_loaded``): the same history, the same findings, the same repaired bytes and
report, on every session-file fixture and every real file; and one idempotency key per
call whichever way a session is resumed (a file, the run it was imported into, a
snapshot)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc.cli.app import main
from agc.errors import AgcError
from agc.resume import (
    FormatName,
    History,
    SessionSnapshot,
    Strategy,
    ToolCallState,
    check_loaded,
    load_history,
    repair_loaded,
    repair_streamed,
    save_snapshot,
    scan_session,
)
from tests.conftest import examples
from tests.resume.helpers import REAL_FIXTURES, need, shared_params

GOLDEN = Path(__file__).resolve().parent / "golden"
GEMINI = (
    Path(__file__).resolve().parents[1] / "fixtures" / "hooks" / "gemini" / "session-file.jsonl"
)
FIXTURES = [
    *(pytest.param(path, id=path.name) for path in sorted(GOLDEN.glob("*.jsonl"))),
    pytest.param(GEMINI, id="gemini-session-file"),
    *shared_params(REAL_FIXTURES, "*/*.jsonl"),
]


def _both(path: Path) -> tuple[History | AgcError, History | AgcError]:
    def whole() -> History | AgcError:
        try:
            return load_history(path.read_bytes(), source=str(path))
        except AgcError as exc:
            return exc

    def streamed() -> History | AgcError:
        try:
            return scan_session(path, source=str(path), format=None)
        except AgcError as exc:
            return exc

    return whole(), streamed()


@pytest.mark.parametrize("path", FIXTURES)
def test_streamed_read_and_check_equal_the_whole_read(path: Path | None) -> None:
    path = need(path, REAL_FIXTURES)
    whole, streamed = _both(path)
    if isinstance(whole, AgcError) or isinstance(streamed, AgcError):
        assert type(whole) is type(streamed)
        assert str(whole) == str(streamed)
        return
    assert list(streamed.lines or ()) == list(whole.lines or ())
    assert list(streamed.records) == list(whole.records)
    assert list(streamed.skipped) == list(whole.skipped)
    assert (streamed.torn, streamed.final_newline) == (whole.torn, whole.final_newline)
    assert streamed.session_id == whole.session_id
    assert check_loaded(streamed).to_dict() == check_loaded(whole).to_dict()


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
@pytest.mark.parametrize("path", FIXTURES)
def test_streamed_repair_writes_the_bytes_of_the_whole_repair(
    path: Path | None, strategy: Strategy, tmp_path: Path
) -> None:
    path = need(path, REAL_FIXTURES)
    whole, streamed = _both(path)
    if isinstance(whole, AgcError) or isinstance(streamed, AgcError):
        return  # refused alike (the test above)
    expected = repair_loaded(whole, strategy=strategy)
    out = tmp_path / "out.jsonl"
    with out.open("wb") as sink:
        report = repair_streamed(
            streamed,
            sink,
            lambda: scan_session(out, source="out", format=streamed.format),
            strategy=strategy,
        )
    assert out.read_bytes() == expected.data
    assert report.to_dict() == expected.report.to_dict()


def _cut_in_flight(source: Path, folder: Path) -> tuple[Path, str]:
    """The session cut after its last tool call's line: that call is in flight."""
    lines = source.read_bytes().splitlines(keepends=True)
    marker = (b'"type":"tool_use"', b'"type":"function_call"')
    last = max(i for i, line in enumerate(lines) if any(m in line for m in marker))
    cut = folder / source.name
    cut.write_bytes(b"".join(lines[: last + 1]))
    history = load_history(cut.read_bytes(), source=str(cut))
    call = history.messages[-1].calls()[-1]
    assert call.call_id is not None
    return cut, call.call_id


def _keys(document: dict[str, Any], call_id: str) -> set[str]:
    return {
        change["idempotency_key"]
        for change in document["report"]["changes"]
        if change["call_id"] == call_id and change["idempotency_key"] is not None
    }


@pytest.mark.parametrize(
    "path",
    [
        *shared_params(REAL_FIXTURES / "claude-code", "*.jsonl"),
        *shared_params(REAL_FIXTURES / "codex-rollout", "*.jsonl"),
    ],
)
def test_one_key_per_call_from_a_file_a_run_and_a_snapshot(
    path: Path | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = need(path, REAL_FIXTURES)
    try:
        cut, call_id = _cut_in_flight(path, tmp_path)
    except ValueError:
        pytest.skip(f"{path.name} holds no tool call")
    store = tmp_path / "store"
    history = load_history(cut.read_bytes(), source=str(cut))
    assert history.session_id, "the real files carry the client's session id"

    def keys(argv: list[str]) -> set[str]:
        capsys.readouterr()
        # written nowhere, so the broken history exits 1 as --check does
        assert main(["resume", *argv, "--strategy", "synthesize", "--json"]) == 1
        return _keys(json.loads(capsys.readouterr().out), call_id)

    from_file = keys([str(cut)])
    assert main(["import", str(cut), "--run-id", "imported", "--store", str(store)]) == 0
    from_run = keys(["imported", "--store", str(store)])
    if history.format == "claude-code":
        messages: list[Any] = [
            {
                "role": message.role,
                "content": [
                    {"type": "text", "text": b.raw} if isinstance(b.raw, str) else b.raw
                    for b in message.blocks
                ],
            }
            for message in history.messages
        ]
        api: FormatName = "anthropic"
    else:
        messages, api = [message.raw for message in history.messages], "openai-responses"
    save_snapshot(
        SessionSnapshot(
            run_id="snap",
            session_id=history.session_id,
            messages=messages,
            tool_call_state=ToolCallState(in_flight=True, pending_tool_call_id=call_id),
            agent_config={},
            format=api,
        ),
        store=store,
    )
    from_snapshot = keys(["snap", "--store", str(store)])
    assert len(from_file) == 1
    assert from_file == from_run == from_snapshot


def _gemini_executing(data: bytes) -> bytes:
    """The real Gemini CLI session cut at the record of its last call, left executing:
    no ``result`` in its ``toolCalls`` entry (the earlier lines as recorded)."""
    records = [json.loads(line) for line in data.splitlines() if line.strip()]
    last = max(i for i, r in enumerate(records) if r.get("toolCalls"))
    records = records[: last + 1]
    call = records[last]["toolCalls"][-1]
    call.pop("result")
    call["status"] = "executing"
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


@pytest.mark.parametrize("executing", [False, True], ids=["as-recorded", "last-call-executing"])
def test_one_key_per_call_of_a_gemini_session_from_a_file_a_run_and_a_snapshot(
    executing: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real Gemini CLI session (each result recorded twice; or its last call left
    executing): ``agc resume FILE``, ``agc resume RUN`` of the run it was imported into
    and a snapshot of its records (``gemini-chat``) give each call the same key."""
    data = GEMINI.read_bytes()
    if executing:
        data = _gemini_executing(data)
    source = tmp_path / "session.jsonl"
    source.write_bytes(data)
    history = load_history(data, source=str(source))
    assert history.session_id == "00000000-0000-4000-8000-000000000001"
    store = tmp_path / "store"

    def keys(argv: list[str]) -> dict[tuple[str, str], str]:
        capsys.readouterr()
        # written nowhere, so the broken history exits 1 as --check does
        assert main(["resume", *argv, "--strategy", "synthesize", "--json"]) == 1
        changes = json.loads(capsys.readouterr().out)["report"]["changes"]
        return {(c["action"], c["call_id"]): c["idempotency_key"] for c in changes}

    from_file = keys([str(source)])
    assert main(["import", str(source), "--run-id", "imported", "--store", str(store)]) == 0
    from_run = keys(["imported", "--store", str(store)])
    save_snapshot(
        SessionSnapshot(
            run_id="snap",
            session_id=history.session_id,
            messages=list(history.records),
            format="gemini-chat",
        ),
        store=store,
    )
    from_snapshot = keys(["snap", "--store", str(store)])
    actions = {action for action, _ in from_file}
    assert actions == (
        {"dropped-duplicate-result", "synthesized"} if executing else {"dropped-duplicate-result"}
    )
    assert all(key.startswith("idem-") for key in from_file.values())
    assert len(set(from_file.values())) == len(from_file)  # one key per call
    assert from_file == from_run == from_snapshot


_HEADER = b'{"sessionId": "s", "projectHash": "p", "startTime": "t"}'


@settings(max_examples=examples(40), deadline=None)
@given(
    lines=st.lists(
        st.one_of(
            st.text(max_size=40).map(lambda text: json.dumps({"$set": {"note": text}})),
            st.text(max_size=20),  # not JSON: kept as its text
            # around the piece of 1 MiB a pass reads at a time, and across two pieces
            st.sampled_from([(1 << 20) - 80, (1 << 20) + 3, (2 << 20) + 1]).map(
                lambda size: json.dumps({"$set": {"note": "é" * (size // 2)}})
            ),
        ),
        max_size=6,
    ),
    crlf=st.booleans(),
    end=st.sampled_from(["newline", "none", "cut"]),
)
def test_a_pass_over_the_lines_reads_each_line_as_reading_it_alone(
    lines: list[str], crlf: bool, end: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A writer's pass over a streamed file's lines (texts and parsed records, read in
    large pieces) gives each line exactly as reading that line alone gives it: lines
    across the pieces, CRLF, lines that are not JSON, no final line break, and a last
    line cut inside a character (its text ends in U+FFFD)."""
    body = [_HEADER, *(line.encode() for line in lines)]
    data = b"".join(line + (b"\r\n" if crlf else b"\n") for line in body)
    if end == "none":
        data = data.rstrip(b"\n")
    elif end == "cut":
        data += "é".encode()[:1]
    path = tmp_path_factory.mktemp("pass") / "session.jsonl"
    path.write_bytes(data)
    history = scan_session(path, source="session.jsonl", format=None)
    assert history.format == "gemini-chat"
    assert history.lines is not None
    texts, records = history.lines, history.records
    assert list(texts) == [texts[index] for index in range(len(texts))]
    assert list(records) == [records[index] for index in range(len(records))]
    assert texts[0].rstrip("\r").encode() == _HEADER
