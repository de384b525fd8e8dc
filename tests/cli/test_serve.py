"""``agc serve`` at the edge: the audit sink (agc runs + turn ledger) and the command's
refusals. The real server with the real Codex runs in tests/e2e/test_serve_codex.py."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import pytest

from agc.cli import agc_main
from agc.cli.serve import AuditSink, handle_leftovers, is_loopback
from agc.integrity import (
    check_run,
    generate_keypair,
    load_signing_key,
    load_trusted_keys,
    read_run_manifest,
)
from agc.integrity._recover import recover_run
from agc.ledger import check_turn_file
from agc.serve import ProviderEvent, TurnEnd, TurnInfo
from agc.serve._trace import Trace
from tests.serve.fakes import Behaviour, Factory, make_supervisor
from tests.serve.helpers import run

REACHES_INSIDE = {
    "agc.integrity._recover": (
        "recover_run, which agc.integrity does not export, after a killed serve"
    ),
    "agc.serve._trace": "the trace a turn writes into, for a hand-made turn",
}


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_each_turn_is_a_sealed_signed_run_with_a_turn_ledger(tmp_path: Path) -> None:
    private, public, key_id = generate_keypair(tmp_path / "keys")
    store = tmp_path / "store"
    sink = AuditSink(
        store=store, signing_key=load_signing_key(private), ledger_root=tmp_path / "workspace"
    )
    supervisor, _ = make_supervisor(tmp_path, sink=sink)

    async def scenario() -> tuple[str, dict[str, object]]:
        await supervisor.start()
        try:
            accepted = await supervisor.submit("list the files", None)
            trace = supervisor.traces[accepted["traceId"]]
            await asyncio.wait_for(trace.done.wait(), 10)
            assert trace.status == "completed"
            assert trace.audit is not None
            return trace.trace_id, dict(trace.audit)
        finally:
            await supervisor.stop()

    trace_id, audit = run(scenario())
    assert audit["runId"] == trace_id
    assert audit["sealed"] is True
    assert audit["signed"] is True
    assert audit["keyId"] == key_id
    report = check_run(
        trace_id, store, trusted_keys=load_trusted_keys([public]), require_signature=True
    )
    assert report.complete, report.missing
    assert report.signature == "signature-valid"
    manifest = read_run_manifest(trace_id, store)
    assert manifest is not None
    assert manifest.attributes["serve"]["trace_id"] == trace_id  # type: ignore[index]
    transcript = _lines(store / "audit" / "transcripts" / f"{trace_id}.jsonl")
    assert transcript[0]["type"] == "serve.request"
    assert transcript[-1]["type"] == "serve.reply"
    assert {record["type"] for record in transcript[1:-1]} == {"serve.event"}
    assert audit["transcript"]["records"] == len(transcript)  # type: ignore[index]
    tools = _lines(store / "audit" / "tool-events" / f"{trace_id}.jsonl")
    assert [t["type"] for t in tools] == ["tool.call", "tool.result"]
    assert all(t["run_id"] == trace_id for t in tools)
    ledger = audit["ledger"]
    assert isinstance(ledger, dict)
    assert ledger["sealed"] is True
    assert ledger["itemCount"] == 1
    turn_file = tmp_path / "workspace" / ledger["turnLog"]
    assert check_turn_file(turn_file).ok
    items = [r for r in _lines(turn_file) if r["recordType"] == "direct.codex.item"]
    assert [(i["itemType"], i["command"]) for i in items] == [("commandExecution", "echo hi")]


def _info(trace_id: str) -> TurnInfo:
    return TurnInfo(trace_id, "conv-1", 1, "hello", 0, "codex-stdio", Path("/w"))


@pytest.mark.parametrize("dies", [False, True], ids=["completed", "agent-died-mid-item"])
def test_a_key_streamed_in_deltas_is_sealed_redacted_on_disk(tmp_path: Path, dies: bool) -> None:
    key = "sk-proj-" + "Zq8Lw2Rt" * 6
    reply = f"the key is {key}, done"
    deltas = [reply[i : i + 5] for i in range(0, len(reply), 5)]
    output = f"OPENAI_API_KEY={key}\n" * 3
    reads = [output[i : i + 13] for i in range(0, len(output), 13)]
    events = [
        ProviderEvent("item/started", {"item": {"id": "m9", "type": "agentMessage"}}),
        *(ProviderEvent("item/agentMessage/delta", {"itemId": "m9", "delta": d}) for d in deltas),
        *(
            ProviderEvent("item/commandExecution/outputDelta", {"itemId": "c9", "delta": r})
            for r in reads
        ),
    ]
    if not dies:
        item = {"id": "m9", "type": "agentMessage", "text": reply}
        events.append(ProviderEvent("item/completed", {"item": item}))
    store = tmp_path / "store"
    sink = AuditSink(store=store, signing_key=None, ledger_root=tmp_path / "workspace")
    behaviour = Behaviour(reply=reply, exit_during_turn=dies, extra_events=tuple(events))
    supervisor, _ = make_supervisor(tmp_path, sink=sink, factory=Factory(behaviour))

    async def scenario() -> str:
        await supervisor.start()
        try:
            accepted = await supervisor.submit("show me the key", None)
            trace = supervisor.traces[accepted["traceId"]]
            await asyncio.wait_for(trace.done.wait(), 10)
            return trace.trace_id
        finally:
            await supervisor.stop()

    trace_id = run(scenario())
    assert check_run(trace_id, store).complete
    written = [
        p for root in (store, tmp_path / "workspace") for p in root.rglob("*") if p.is_file()
    ]
    assert not [p for p in written if key.encode() in p.read_bytes()]
    transcript = _lines(store / "audit" / "transcripts" / f"{trace_id}.jsonl")
    joined = {
        r["method"]: r["params"] for r in transcript if str(r.get("method", "")).endswith("elta")
    }
    reply_params = joined["item/agentMessage/delta"]
    assert isinstance(reply_params, dict)
    assert reply_params["delta"] == "the key is [REDACTED:openai-key], done"
    assert reply_params["agcJoined"] == {
        "deltas": len(deltas),
        "release": "turn-end" if dies else "completed",
        "part": 0,
    }
    output_params = joined["item/commandExecution/outputDelta"]
    assert isinstance(output_params, dict)
    assert output_params["delta"] == "OPENAI_API_KEY=[REDACTED:openai-key]\n" * 3


def test_a_turn_cut_off_by_a_crash_stays_unsealed_until_recovered(tmp_path: Path) -> None:
    store = tmp_path / "store"
    sink = AuditSink(store=store, signing_key=None, ledger_root=None)
    trace_id = "trc-" + "a" * 32
    info = _info(trace_id)
    sink.on_turn_start(info)
    trace = Trace(trace_id, "conv-1", 1, 0, 100)
    for method in ("turn/started", "item/started"):
        sink.on_event(
            info,
            trace.add(
                "codex", method, {"item": {"type": "commandExecution", "id": "c"}}, "notification"
            ),
        )
    # What a kill -9 leaves: the writers gone without a seal, every event on disk.
    sink._turns[trace_id].run.abort()
    before = check_run(trace_id, store)
    assert not before.complete
    assert sink.unsealed_runs() == [trace_id]
    recover_run(trace_id, store)
    after = check_run(trace_id, store)
    assert after.complete, after.missing
    transcript = _lines(store / "audit" / "transcripts" / f"{trace_id}.jsonl")
    assert [r["type"] for r in transcript] == ["serve.request", "serve.event", "serve.event"]
    assert sink.unsealed_runs() == []


def test_serve_recover_seals_what_a_crash_left_and_otherwise_only_lists_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    sink = AuditSink(store=store, signing_key=None, ledger_root=None)
    trace_id = "trc-" + "b" * 32
    sink.on_turn_start(_info(trace_id))
    sink._turns[trace_id].run.abort()
    assert handle_leftovers(sink, store=store, signing_key=None, recover=False) == []
    assert "agc serve --recover" in capsys.readouterr().err
    assert not check_run(trace_id, store).complete
    assert handle_leftovers(sink, store=store, signing_key=None, recover=True) == [trace_id]
    assert check_run(trace_id, store).complete
    assert handle_leftovers(sink, store=store, signing_key=None, recover=True) == []


def test_a_crash_between_the_two_seals_is_found_and_recovered_at_the_next_start(
    tmp_path: Path,
) -> None:
    # The transcript is sealed first: killed before the tool events' seal, the run's
    # transcript has its sidecar, and the run is still incomplete.
    store = tmp_path / "store"
    sink = AuditSink(store=store, signing_key=None, ledger_root=None)
    trace_id = "trc-" + "d" * 32
    info = _info(trace_id)
    sink.on_turn_start(info)
    trace = Trace(trace_id, "conv-1", 1, 0, 100)
    item = {"type": "commandExecution", "id": "c", "command": "ls"}
    sink.on_event(info, trace.add("codex", "item/started", {"item": item}, "notification"))
    run_writers = sink._turns[trace_id].run
    run_writers.transcript.close()
    run_writers.tool_events.abort()  # the kill -9
    assert not check_run(trace_id, store).complete
    assert sink.unsealed_runs() == [trace_id]
    assert handle_leftovers(sink, store=store, signing_key=None, recover=True) == [trace_id]
    assert check_run(trace_id, store).complete
    tools = _lines(store / "audit" / "tool-events" / f"{trace_id}.jsonl")
    assert [t["type"] for t in tools] == ["tool.call"]
    assert sink.unsealed_runs() == []


def test_odd_agent_text_still_makes_a_sealed_run(tmp_path: Path) -> None:
    store = tmp_path / "store"
    sink = AuditSink(store=store, signing_key=None, ledger_root=tmp_path)
    trace_id = "trc-" + "c" * 32
    info = _info(trace_id)
    sink.on_turn_start(info)
    trace = Trace(trace_id, "conv-1", 1, 0, 100)
    odd = {
        "item": {"type": "agentMessage", "id": "m", "text": "\ud800 \x00 \u2028 " + "x" * 300_000}
    }
    sink.on_event(info, trace.add("codex", "item/completed", odd, "notification"))
    end = TurnEnd("completed", "ok", None, "app-server", None, None, None, None, 1, 1)
    audit = sink.on_turn_end(info, end)
    assert audit["sealed"] is True
    assert check_run(trace_id, store).complete


def test_an_unwritable_store_is_a_preflight_blocker(tmp_path: Path) -> None:
    blocked = tmp_path / "store-file"
    blocked.write_text("not a folder")
    sink = AuditSink(store=blocked, signing_key=None, ledger_root=None)
    blocker = sink.check()
    assert blocker is not None
    assert blocker.code == "audit_store_not_writable"
    assert AuditSink(store=tmp_path / "ok", signing_key=None, ledger_root=None).check() is None


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("192.168.1.4", False),
        ("example.com", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_non_loopback_address_needs_the_flag_and_a_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AGC_SERVE_TOKEN", raising=False)
    base = ["serve", "--workspace", str(tmp_path), "--store", str(tmp_path / "s")]
    assert agc_main([*base, "--host", "0.0.0.0"]) == 2
    assert "--allow-non-loopback" in capsys.readouterr().err
    assert agc_main([*base, "--host", "0.0.0.0", "--allow-non-loopback"]) == 2
    assert "bearer token" in capsys.readouterr().err
    monkeypatch.setenv("AGC_SERVE_TOKEN", "short")
    assert agc_main([*base, "--host", "0.0.0.0", "--allow-non-loopback"]) == 2
    err = capsys.readouterr().err
    assert "at least 16" in err
    assert "short" not in err.replace("shortly", "")


@pytest.mark.parametrize(
    "token", ["Z" * 20 + "\n", " " * 20, "Z" * 10 + " " + "Z" * 10, "Z" * 20 + "\u00e9"]
)
def test_a_token_no_client_could_present_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], token: str
) -> None:
    # The presented token is stripped and is visible ASCII: with this one every request
    # would be refused 401 (twenty spaces even passed the length check).
    monkeypatch.setenv("AGC_SERVE_TOKEN", token)
    base = ["serve", "--workspace", str(tmp_path), "--store", str(tmp_path / "s")]
    with socket.socket() as taken:  # were the token let through, it would stop here
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        assert agc_main([*base, "--port", port]) == 2
    err = capsys.readouterr().err
    assert "$AGC_SERVE_TOKEN holds a character a bearer token cannot have" in err
    assert "Z" * 10 not in err


def test_a_bad_protocol_and_a_busy_port_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["serve", "--workspace", str(tmp_path), "--store", str(tmp_path / "s")]
    assert agc_main([*base, "--protocol", "websocket"]) == 2
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert agc_main([*base, "--port", str(port)]) == 2
    assert "cannot listen" in capsys.readouterr().err
