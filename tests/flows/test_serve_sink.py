"""The audited serve sink (:class:`agc.flows.AuditSink`): each turn of the chat
endpoint an agc run, sealed (and signed) when the turn ends, with a turn ledger; what a
crash leaves, found and sealed by :func:`agc.flows.recover_turn_runs`."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import resource
from collections.abc import Iterator
from pathlib import Path

import pytest

from agc.errors import AgcError, StoreError
from agc.flows import AuditSink, DescriptorReserve, recover_turn_runs
from agc.flows._serve import RESERVED_DESCRIPTORS
from agc.integrity import (
    check_run,
    generate_keypair,
    load_signing_key,
    load_trusted_keys,
    read_run_manifest,
    recover_run,
)
from agc.ledger import check_turn_file
from agc.serve import ProviderEvent, TurnEnd
from agc.serve._trace import Trace
from tests.serve.fakes import Behaviour, Factory, make_supervisor
from tests.serve.helpers import run, start_command_turn, turn_info

REACHES_INSIDE = {
    "agc.serve._trace": "a trace to make provider events from, as the supervisor does",
    "agc.flows._serve": "how many descriptors the sink reserves for sealing",
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
    info = turn_info(trace_id)
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


def test_odd_agent_text_still_makes_a_sealed_run(tmp_path: Path) -> None:
    store = tmp_path / "store"
    sink = AuditSink(store=store, signing_key=None, ledger_root=tmp_path / "ledger")
    trace_id = "trc-" + "c" * 32
    info = turn_info(trace_id, workspace=tmp_path)
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


def _crashed_turn(sink: AuditSink, trace_id: str) -> None:
    """A turn whose writers were gone without a seal (what a kill -9 leaves)."""
    sink.on_turn_start(turn_info(trace_id))
    sink._turns[trace_id].run.abort()


def test_recover_turn_runs_seals_each_run_and_reports_each_failure(tmp_path: Path) -> None:
    store = tmp_path / "store"
    sink = AuditSink(store=store, signing_key=None, ledger_root=None)
    crashed = ["trc-" + "e" * 32, "trc-" + "f" * 32]
    for trace_id in crashed:
        _crashed_turn(sink, trace_id)
    assert sink.unsealed_runs() == crashed
    missing = "trc-" + "0" * 32  # no such run: recover_run refuses it
    sealed_seen: list[str] = []
    failed_seen: list[tuple[str, str]] = []
    sealed = recover_turn_runs(
        [crashed[0], missing, crashed[1]],
        store=store,
        signing_key=None,
        on_sealed=sealed_seen.append,
        on_failed=lambda run_id, exc: failed_seen.append((run_id, exc.code)),
    )
    assert sealed == sealed_seen == crashed
    assert [run_id for run_id, _ in failed_seen] == [missing]
    assert all(check_run(trace_id, store).complete for trace_id in crashed)
    assert sink.unsealed_runs() == []


def test_recover_turn_runs_never_raises_an_agc_error(tmp_path: Path) -> None:
    store = tmp_path / "store"
    try:
        assert recover_turn_runs(["trc-" + "1" * 32], store=store, signing_key=None) == []
    except AgcError as exc:  # pragma: no cover - the failure this test looks for
        pytest.fail(f"recover_turn_runs raised {exc.code}")


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_the_audit_document_says_what_was_sealed(tmp_path: Path, signed: bool) -> None:
    key = load_signing_key(generate_keypair(tmp_path / "keys")[0]) if signed else None
    store = tmp_path / "store"
    sink = AuditSink(store=store, signing_key=key, ledger_root=None)
    trace_id = "trc-" + "9" * 32
    info = start_command_turn(sink, trace_id)
    end = TurnEnd("completed", "ok", None, "app-server", None, None, None, None, 1, 1)
    audit = sink.on_turn_end(info, end)
    report = check_run(trace_id, store)
    assert report.complete, report.missing
    assert audit["signed"] is signed
    assert audit["keyId"] == (key.key_id if key is not None else None)
    assert audit["ledger"] is None
    transcript = _lines(store / "audit" / "transcripts" / f"{trace_id}.jsonl")
    assert audit["transcript"]["records"] == len(transcript) == 3
    assert audit["toolEvents"] == {"records": 1}


@contextlib.contextmanager
def descriptors_exhausted() -> Iterator[None]:
    """Every descriptor the process may open is taken (``EMFILE`` on the next open), as
    under a flood of connections; the limit is lowered first so this costs little."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    used = len(os.listdir("/proc/self/fd"))
    held: list[int] = []
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, used + 64), hard))
    try:
        while True:
            try:
                held.append(os.open(os.devnull, os.O_RDONLY))
            except OSError:
                break
        yield
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


_END = TurnEnd("completed", "ok", None, "app-server", None, None, None, None, 1, 1)


def test_a_turn_ending_when_no_descriptor_is_left_is_sealed_with_the_reserve(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    sink = AuditSink(store=store, signing_key=None, ledger_root=None)
    assert sink.reserve.held == RESERVED_DESCRIPTORS
    trace_id = "trc-" + "5" * 32
    info = start_command_turn(sink, trace_id)
    with descriptors_exhausted():
        audit = sink.on_turn_end(info, _END)
    assert audit["sealed"] is True
    assert audit["transcript"]["records"] == 3
    assert audit["toolEvents"] == {"records": 1}
    report = check_run(trace_id, store)
    assert report.complete
    # Sealed at the first try, not recovered after a failed seal (as without a reserve).
    assert report.findings == ()
    transcript = _lines(store / "audit" / "transcripts" / f"{trace_id}.jsonl")
    assert [r["type"] for r in transcript] == ["serve.request", "serve.event", "serve.reply"]
    assert sink.reserve.held == RESERVED_DESCRIPTORS  # taken again once free


def test_a_run_that_cannot_be_sealed_keeps_every_record_vouched_for_agc_recover(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    sink = AuditSink(store=store, signing_key=None, ledger_root=None, reserve=DescriptorReserve(0))
    trace_id = "trc-" + "6" * 32
    info = start_command_turn(sink, trace_id)

    def no_recovery(*args: object, **kwargs: object) -> None:
        raise StoreError("still no descriptor to be had")

    # Without a reserve the seal fails; the fallback (sealing what reached the disk)
    # fails as well, as when the freed descriptors are taken again at once.
    monkeypatch.setattr("agc.flows._serve.recover_run", no_recovery)
    with descriptors_exhausted(), pytest.raises(AgcError):
        sink.on_turn_end(info, _END)
    monkeypatch.undo()
    assert not check_run(trace_id, store).complete
    assert sink.unsealed_runs() == [trace_id]
    assert recover_turn_runs(sink.unsealed_runs(), store=store, signing_key=None) == [trace_id]
    report = check_run(trace_id, store)
    assert report.complete, report.findings  # every byte was vouched for by a checkpoint
    transcript = _lines(store / "audit" / "transcripts" / f"{trace_id}.jsonl")
    assert [r["type"] for r in transcript] == ["serve.request", "serve.event", "serve.reply"]
    tools = _lines(store / "audit" / "tool-events" / f"{trace_id}.jsonl")
    assert [t["type"] for t in tools] == ["tool.call"]


def test_the_ledger_is_written_outside_the_workspace_with_the_offered_files_hashed(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "workspace"
    (workspace / "docs").mkdir(parents=True)
    design = b"# the design\n"
    (workspace / "docs" / "gdd.md").write_bytes(design)
    before = sorted(p.relative_to(workspace) for p in workspace.rglob("*"))
    ledger_root = tmp_path / "store" / "ledger"
    sink = AuditSink(store=tmp_path / "store", signing_key=None, ledger_root=ledger_root)
    trace_id = "trc-" + "7" * 32
    info = turn_info(trace_id, workspace=workspace, attachments=("docs/gdd.md",))
    sink.on_turn_start(info)
    audit = sink.on_turn_end(info, _END)
    ledger = audit["ledger"]
    assert isinstance(ledger, dict)
    turn_file = ledger_root / ledger["turnLog"]
    assert check_turn_file(turn_file).ok
    (start,) = [r for r in _lines(turn_file) if r["recordType"] == "direct.codex.turn_start"]
    assert start["sidecarPresent"] is True
    attachments = start["attachments"]
    assert isinstance(attachments, list)
    (offered,) = attachments
    assert offered["localPath"] == "docs/gdd.md"
    assert offered["contentSha256"] == hashlib.sha256(design).hexdigest()
    assert sorted(p.relative_to(workspace) for p in workspace.rglob("*")) == before
