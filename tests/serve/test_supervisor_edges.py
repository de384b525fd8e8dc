"""The supervisor where a session misbehaves or the registry is full: a session that
cannot open its thread fails the turn with the reason (a crash's message redacted), a
turn that ignores the interrupt has its process killed (on cancel and on shutdown), a
conversation ended mid-turn is stopped and forgotten, and the conversation registry
forgets its oldest idle entry for a new one, or refuses when none is idle."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agc.serve import ChatRefusedError, ProviderError, Supervisor
from tests.serve.fakes import Behaviour, Factory, ScriptedSession, make_config
from tests.serve.helpers import RecordingSink, run

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


@dataclass
class ThreadFails(ScriptedSession):
    """A session that starts (the preflight's handshake passes) but cannot open a
    thread: ``error`` is raised."""

    error: BaseException | None = None

    async def open_thread(self, resume_thread_id: str | None) -> None:
        assert self.error is not None
        raise self.error


@dataclass
class FailingFactory(Factory):
    error: BaseException | None = None

    def __call__(self, protocol: Any) -> ScriptedSession:
        session = ThreadFails(self.behaviour, protocol=protocol, error=self.error)
        self.sessions.append(session)
        return session


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def supervisor_for(
    tmp_path: Path,
    factory: Factory,
    *,
    sink: Any = None,
    clock: Clock | None = None,
    **overrides: Any,
) -> Supervisor:
    return Supervisor(
        make_config(tmp_path, **overrides),
        sink,
        session_factory=factory,
        grace_s=0.05,
        monotonic=clock or Clock(),
    )


async def _finished(supervisor: Supervisor, trace_id: str) -> Any:
    trace = supervisor.traces[trace_id]
    await asyncio.wait_for(trace.done.wait(), 10)
    return trace


@pytest.mark.parametrize(
    ("error", "code", "message"),
    [
        (ProviderError("provider_timeout", "no answer to thread/start within 20 s"),
         "provider_timeout", "no answer to thread/start within 20 s"),
        (ProviderError("stdio_protocol_not_wired", "the handshake was not answered"),
         "stdio_protocol_not_wired", "the handshake was not answered"),
        (RuntimeError(f"unexpected frame with {SECRET}"), "provider_protocol_error",
         "unexpected frame with [REDACTED:github-token]"),
    ],
    ids=["provider-error", "protocol-not-wired", "crash"],
)  # fmt: skip
def test_a_session_that_cannot_open_its_thread_fails_the_turn_with_the_reason(
    tmp_path: Path, error: BaseException, code: str, message: str
) -> None:
    factory = FailingFactory(error=error)
    sink = RecordingSink()
    supervisor = supervisor_for(tmp_path, factory, sink=sink)

    async def scenario() -> Any:
        await supervisor.start()
        try:
            accepted = await supervisor.submit("x", None)
            trace = await _finished(supervisor, accepted["traceId"])
            conversation = supervisor.conversations[accepted["conversationId"]]
            assert conversation.session is None  # no process kept for the next turn
            return trace
        finally:
            await supervisor.stop()

    trace = run(scenario())
    assert trace.status == "failed"
    assert trace.error == {"code": code, "message": message}
    assert SECRET not in str(sink.records[trace.trace_id])
    assert sink.records[trace.trace_id][-1]["status"] == "failed"  # sealed all the same
    assert all(session.closed for session in factory.sessions if isinstance(session, ThreadFails))


def test_a_cancelled_turn_that_ignores_the_interrupt_has_its_process_killed(
    tmp_path: Path,
) -> None:
    hold = asyncio.Event()
    factory = Factory(Behaviour(hold=hold, ignore_interrupt=True))
    supervisor = supervisor_for(tmp_path, factory)

    async def scenario() -> tuple[dict[str, Any] | None, Any]:
        await supervisor.start()
        try:
            accepted = await supervisor.submit("x", None)
            trace = supervisor.traces[accepted["traceId"]]
            while trace.waiting_for != "tool:commandExecution":
                await asyncio.sleep(0.005)
            answer = await supervisor.cancel(accepted["traceId"])
            await _finished(supervisor, accepted["traceId"])
            again = await supervisor.cancel(accepted["traceId"])
            assert again == {"traceId": trace.trace_id, "status": trace.status, "cancelled": False}
            return answer, trace
        finally:
            await supervisor.stop()

    answer, trace = run(scenario())
    assert answer == {"traceId": trace.trace_id, "status": "cancelling", "cancelled": True}
    assert trace.terminal
    assert factory.turn_sessions[0].killed


def test_stopping_with_a_turn_that_ignores_the_interrupt_kills_its_process(
    tmp_path: Path,
) -> None:
    hold = asyncio.Event()
    sink = RecordingSink()
    factory = Factory(Behaviour(hold=hold, ignore_interrupt=True))
    supervisor = supervisor_for(tmp_path, factory, sink=sink)

    async def scenario() -> Any:
        await supervisor.start()
        accepted = await supervisor.submit("x", None)
        trace = supervisor.traces[accepted["traceId"]]
        while trace.waiting_for != "tool:commandExecution":
            await asyncio.sleep(0.005)
        await supervisor.stop()
        return trace

    trace = run(scenario())
    assert factory.turn_sessions[0].killed
    assert trace.terminal
    assert sink.calls[-1] == ("end", trace.trace_id)  # still sealed


def test_ending_a_conversation_mid_turn_stops_the_turn_and_forgets_it(tmp_path: Path) -> None:
    hold = asyncio.Event()
    factory = Factory(Behaviour(hold=hold))
    supervisor = supervisor_for(tmp_path, factory)

    async def scenario() -> tuple[Any, Any, Any, Any]:
        await supervisor.start()
        try:
            accepted = await supervisor.submit("x", None)
            trace = supervisor.traces[accepted["traceId"]]
            while trace.waiting_for != "tool:commandExecution":
                await asyncio.sleep(0.005)
            ended = await supervisor.end_conversation(accepted["conversationId"])
            unknown = await supervisor.end_conversation(accepted["conversationId"])
            return accepted, ended, unknown, supervisor.result(accepted["traceId"])
        finally:
            await supervisor.stop()

    accepted, ended, unknown, result = run(scenario())
    assert ended == {"conversationId": accepted["conversationId"], "status": "closed"}
    assert unknown is None
    assert result["status"] == "cancelled"
    assert "session" not in result  # the conversation is forgotten
    assert factory.turn_sessions[0].closed


def test_a_full_registry_forgets_its_oldest_idle_conversation_or_refuses(tmp_path: Path) -> None:
    hold = asyncio.Event()
    factory = Factory(Behaviour(hold=hold))
    clock = Clock()
    supervisor = supervisor_for(
        tmp_path, factory, clock=clock, max_conversations=1, idle_timeout_ms=5_000
    )

    async def scenario() -> None:
        await supervisor.start()
        try:
            first = await supervisor.submit("x", None)
            with pytest.raises(ChatRefusedError) as refused:  # the one entry is busy
                await supervisor.submit("y", None)
            assert refused.value.http_status == 503
            assert refused.value.retry_after == 5
            assert refused.value.body["error"]["code"] == "at_capacity"
            hold.set()
            await _finished(supervisor, first["traceId"])
            assert await supervisor.end_conversation(first["conversationId"]) is not None
            # ended conversations are forgotten; one left idle is forgotten for a new one
            second = await supervisor.submit("y", None)
            await _finished(supervisor, second["traceId"])
            clock.now += 6  # past the idle timeout: its process is reaped, it stays known
            assert await supervisor.reap() == 1
            assert supervisor.conversations[second["conversationId"]].status == "idle"
            third = await supervisor.submit("z", None)
            await _finished(supervisor, third["traceId"])
            assert list(supervisor.conversations) == [third["conversationId"]]
        finally:
            await supervisor.stop()

    run(scenario())
