"""The supervisor's lifecycle: idle reaping, capacity, timeouts, shutdown, sink failures."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agc.serve import ChatRefusedError, TurnSink
from tests.serve.fakes import Behaviour, Factory, make_supervisor
from tests.serve.helpers import RecordingSink, run


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _turn(supervisor, message: str = "x", conversation: str | None = None) -> str:  # type: ignore[no-untyped-def]
    accepted = await supervisor.submit(message, conversation)
    trace = supervisor.traces[accepted["traceId"]]
    await asyncio.wait_for(trace.done.wait(), timeout=10)
    return str(accepted["conversationId"])


def test_an_idle_session_is_reaped_and_an_idle_conversation_forgotten(tmp_path: Path) -> None:
    clock = Clock()
    supervisor, factory = make_supervisor(
        tmp_path, clock=clock, idle_timeout_ms=5_000, conversation_retention_ms=60_000
    )

    async def scenario() -> None:
        await supervisor.start()
        try:
            conversation = await _turn(supervisor)
            entry = supervisor.conversations[conversation]
            assert entry.status == "ready"
            clock.now += 4.9
            assert await supervisor.reap() == 0
            assert entry.status == "ready"
            clock.now += 0.2
            assert await supervisor.reap() == 1
            assert entry.status == "idle"
            assert entry.to_dict()["processRunning"] is False
            assert supervisor.live_sessions == 0
            assert factory.turn_sessions[0].closed
            # Retention counts from the last turn: 5.1 s + 54.8 s = 59.9 s < 60 s.
            clock.now += 54.8
            await supervisor.reap()
            assert conversation in supervisor.conversations
            clock.now += 0.1
            await supervisor.reap()
            assert supervisor.conversations == {}
        finally:
            await supervisor.stop()

    run(scenario())


def test_the_reaper_runs_by_itself(tmp_path: Path) -> None:
    supervisor, factory = make_supervisor(tmp_path, idle_timeout_ms=100, reap_interval_ms=20)

    async def scenario() -> None:
        await supervisor.start()
        try:
            conversation = await _turn(supervisor)
            for _ in range(200):
                if supervisor.conversations[conversation].status == "idle":
                    break
                await asyncio.sleep(0.01)
            assert supervisor.conversations[conversation].status == "idle"
            assert supervisor.live_sessions == 0
        finally:
            await supervisor.stop()

    run(scenario())
    assert all(session.closed for session in factory.sessions)


def test_a_full_supervisor_reaps_the_least_recently_used_ready_session(tmp_path: Path) -> None:
    clock = Clock()
    supervisor, factory = make_supervisor(tmp_path, clock=clock, max_sessions=2)

    async def scenario() -> None:
        await supervisor.start()
        try:
            first = await _turn(supervisor)
            clock.now += 1
            second = await _turn(supervisor)
            clock.now += 1
            third = await _turn(supervisor)
            assert supervisor.conversations[first].status == "idle"
            assert supervisor.conversations[second].status == "ready"
            assert supervisor.conversations[third].status == "ready"
            assert supervisor.live_sessions == 2
            # The reaped conversation comes back: a new process resumes its thread.
            await _turn(supervisor, conversation=first)
            assert supervisor.conversations[first].status == "ready"
            assert supervisor.conversations[second].status == "idle"
        finally:
            await supervisor.stop()

    run(scenario())
    resumed = [s for s in factory.turn_sessions if s.resumed_from is not None]
    assert len(resumed) == 1


def test_a_full_supervisor_of_busy_sessions_refuses_with_retry_after(tmp_path: Path) -> None:
    hold = asyncio.Event()
    supervisor, _ = make_supervisor(tmp_path, factory=Factory(Behaviour(hold=hold)), max_sessions=1)

    async def scenario() -> None:
        await supervisor.start()
        try:
            accepted = await supervisor.submit("x", None)
            with pytest.raises(ChatRefusedError) as raised:
                await supervisor.submit("y", None)
            refused = raised.value
            assert refused.http_status == 503
            assert refused.retry_after == 5
            assert refused.body["error"]["code"] == "at_capacity"
            assert "status" not in refused.body  # not a terminal answer: try again
            hold.set()
            await asyncio.wait_for(supervisor.traces[accepted["traceId"]].done.wait(), 10)
        finally:
            await supervisor.stop()

    run(scenario())


def test_a_turn_past_its_timeout_is_interrupted_and_failed(tmp_path: Path) -> None:
    hold = asyncio.Event()
    supervisor, _ = make_supervisor(
        tmp_path, factory=Factory(Behaviour(hold=hold)), turn_timeout_ms=100
    )

    async def scenario() -> None:
        await supervisor.start()
        try:
            accepted = await supervisor.submit("x", None)
            trace = supervisor.traces[accepted["traceId"]]
            await asyncio.wait_for(trace.done.wait(), 10)
            assert trace.status == "failed"
            assert trace.error is not None
            assert trace.error["code"] == "turn_timeout"
            assert "serve.turn.timeout" in [event.method for event in trace.events]
            # The interrupted turn ended on its own: the process lives on.
            assert supervisor.conversations[trace.conversation_id].status == "ready"
        finally:
            await supervisor.stop()

    run(scenario())


def test_a_turn_that_ignores_the_interrupt_has_its_process_killed(tmp_path: Path) -> None:
    hold = asyncio.Event()
    behaviour = Behaviour(hold=hold, ignore_interrupt=True)
    supervisor, factory = make_supervisor(tmp_path, factory=Factory(behaviour), turn_timeout_ms=100)
    supervisor.grace_s = 0.2

    async def scenario() -> None:
        await supervisor.start()
        try:
            accepted = await supervisor.submit("x", None)
            trace = supervisor.traces[accepted["traceId"]]
            await asyncio.wait_for(trace.done.wait(), 10)
            assert trace.status == "failed"
            assert trace.error is not None
            assert trace.error["code"] == "turn_timeout"
            assert supervisor.conversations[trace.conversation_id].status == "idle"
        finally:
            await supervisor.stop()

    run(scenario())
    assert factory.turn_sessions[0].killed


def test_stopping_the_service_ends_running_turns_and_seals_them(tmp_path: Path) -> None:
    hold = asyncio.Event()
    sink = RecordingSink()
    supervisor, factory = make_supervisor(
        tmp_path, factory=Factory(Behaviour(hold=hold)), sink=sink
    )

    async def scenario() -> str:
        await supervisor.start()
        accepted = await supervisor.submit("x", None)
        trace = supervisor.traces[accepted["traceId"]]
        while trace.waiting_for != "tool:commandExecution":
            await asyncio.sleep(0.01)
        await supervisor.stop()
        assert trace.status == "cancelled"
        assert trace.error == {"code": "service_stopping", "message": "the service was shut down"}
        with pytest.raises(ChatRefusedError) as raised:
            await supervisor.submit("y", None)
        assert raised.value.body["error"]["code"] == "service_stopping"
        return str(accepted["traceId"])

    trace_id = run(scenario())
    assert sink.calls[-1] == ("end", trace_id)
    assert sink.records[trace_id][-1]["status"] == "cancelled"
    assert all(session.closed for session in factory.turn_sessions)


def _failing(where: str) -> TurnSink:
    return RecordingSink(fail_on=where)


def test_a_sink_that_cannot_open_refuses_the_turn_before_codex_sees_it(tmp_path: Path) -> None:
    supervisor, factory = make_supervisor(tmp_path, sink=_failing("start"))

    async def scenario() -> None:
        await supervisor.start()
        try:
            accepted = await supervisor.submit("x", None)
            trace = supervisor.traces[accepted["traceId"]]
            await asyncio.wait_for(trace.done.wait(), 10)
            assert trace.status == "failed"
            assert trace.error is not None
            assert trace.error["code"] == "audit_unavailable"
            assert "No space left on device" in trace.error["message"]
            assert trace.audit is None
        finally:
            await supervisor.stop()

    run(scenario())
    assert factory.turn_sessions == []


def test_a_sink_that_fails_mid_turn_stops_the_turn(tmp_path: Path) -> None:
    hold = asyncio.Event()
    # The request and three events are recorded (starting, ready, turn/started); the
    # fourth (item/started: the command runs) fails.
    sink = RecordingSink(fail_on="event", fail_after=3)
    supervisor, factory = make_supervisor(
        tmp_path, factory=Factory(Behaviour(hold=hold)), sink=sink
    )

    async def scenario() -> None:
        await supervisor.start()
        try:
            accepted = await supervisor.submit("x", None)
            trace = supervisor.traces[accepted["traceId"]]
            await asyncio.wait_for(trace.done.wait(), 10)
            assert trace.status == "failed"
            assert trace.error is not None
            assert trace.error["code"] == "audit_write_failed"
        finally:
            await supervisor.stop()

    run(scenario())
    assert factory.turn_sessions[0]._interrupted.is_set()


def test_a_sink_that_fails_at_once_keeps_the_message_from_codex(tmp_path: Path) -> None:
    supervisor, factory = make_supervisor(tmp_path, sink=RecordingSink(fail_on="event"))

    async def scenario() -> None:
        await supervisor.start()
        try:
            accepted = await supervisor.submit("x", None)
            trace = supervisor.traces[accepted["traceId"]]
            await asyncio.wait_for(trace.done.wait(), 10)
            assert trace.status == "failed"
            assert trace.error is not None
            assert trace.error["code"] == "audit_write_failed"
        finally:
            await supervisor.stop()

    run(scenario())
    assert factory.turn_sessions == []


def test_a_sink_that_cannot_seal_fails_the_turn(tmp_path: Path) -> None:
    supervisor, _ = make_supervisor(tmp_path, sink=_failing("end"))

    async def scenario() -> None:
        await supervisor.start()
        try:
            accepted = await supervisor.submit("x", None)
            trace = supervisor.traces[accepted["traceId"]]
            await asyncio.wait_for(trace.done.wait(), 10)
            assert trace.status == "failed"
            assert trace.error is not None
            assert trace.error["code"] == "audit_seal_failed"
            assert trace.audit is not None
            assert trace.audit["sealed"] is False
            assert trace.audit["recoverWith"] == f"agc recover {trace.trace_id}"
        finally:
            await supervisor.stop()

    run(scenario())


def test_the_sink_sees_request_events_and_reply_in_order(tmp_path: Path) -> None:
    sink = RecordingSink()
    supervisor, _ = make_supervisor(tmp_path, sink=sink)

    async def scenario() -> str:
        await supervisor.start()
        try:
            accepted = await supervisor.submit("echo it", None)
            trace = supervisor.traces[accepted["traceId"]]
            await asyncio.wait_for(trace.done.wait(), 10)
            assert trace.status == "completed"
            assert trace.audit == {"recorded": True, "runId": trace.trace_id, "sealed": True}
            return trace.trace_id
        finally:
            await supervisor.stop()

    trace_id = run(scenario())
    records = sink.records[trace_id]
    assert records[0]["type"] == "serve.request"
    assert records[0]["message"] == "echo it"
    assert records[-1]["type"] == "serve.reply"
    assert records[-1]["reply"] == {"role": "assistant", "content": "done"}
    events = [r for r in records if r["type"] == "serve.event"]
    assert [r["trace_seq"] for r in events] == list(range(len(events)))
    assert [e["type"] for e in sink.tool_events[trace_id]] == ["tool.call", "tool.result"]
    kinds = [call for call, _ in sink.calls]
    assert kinds[0] == "start"
    assert kinds[-1] == "end"
    assert set(kinds[1:-1]) == {"event"}


def test_finished_traces_beyond_the_limit_are_dropped_oldest_first(tmp_path: Path) -> None:
    supervisor, _ = make_supervisor(tmp_path, max_traces=2)

    async def scenario() -> None:
        await supervisor.start()
        try:
            ids = []
            for _ in range(3):
                accepted = await supervisor.submit("x", None)
                ids.append(accepted["traceId"])
                await asyncio.wait_for(supervisor.traces[accepted["traceId"]].done.wait(), 10)
            assert list(supervisor.traces) == ids[1:]
            assert supervisor.result(ids[0]) is None
        finally:
            await supervisor.stop()

    run(scenario())
