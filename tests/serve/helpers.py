"""Running the app in process: an httpx client on the ASGI transport, and a sink that
keeps what it is given."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

from agc.serve import (
    Supervisor,
    TraceEvent,
    TurnEnd,
    TurnInfo,
    TurnSink,
    create_app,
    reply_record,
    request_record,
    tool_event,
    transcript_record,
)

REACHES_INSIDE = {
    "agc.serve._trace": "the trace a supervisor hands a sink, for a hand-made turn",
}

T = TypeVar("T")


def run(coroutine: Awaitable[T]) -> T:
    async def main() -> T:
        return await coroutine

    return asyncio.run(main())


@contextlib.asynccontextmanager
async def served(
    supervisor: Supervisor, *, token: str | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    """The app in process (the supervisor started and stopped around it)."""
    await supervisor.start()
    app = create_app(supervisor, token=token, lifespan=False)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://serve.test") as client:
            yield client
    finally:
        await supervisor.stop()


def turn_info(
    trace_id: str, *, workspace: Path = Path("/w"), attachments: tuple[str, ...] = ()
) -> TurnInfo:
    """A turn of conversation ``conv-1`` saying "hello", for a sink under test."""
    return TurnInfo(
        trace_id,
        "conv-1",
        1,
        "hello",
        0,
        "codex-stdio",
        workspace,
        attachments=attachments,
    )


def start_command_turn(sink: TurnSink, trace_id: str) -> TurnInfo:
    """Start a turn on ``sink`` and hand it one event: a command (``ls``) started."""
    from agc.serve._trace import Trace  # noqa: PLC0415 - events as the supervisor makes them

    info = turn_info(trace_id)
    sink.on_turn_start(info)
    trace = Trace(trace_id, "conv-1", 1, 0, 100)
    item = {"type": "commandExecution", "id": "c", "command": "ls"}
    sink.on_event(info, trace.add("codex", "item/started", {"item": item}, "notification"))
    return info


def split_at(text: str, cuts: Iterable[int]) -> list[str]:
    """``text`` cut at each position of ``cuts`` in range (no empty piece)."""
    points = sorted({0, len(text), *(c for c in cuts if 0 <= c <= len(text))})
    return [text[a:b] for a, b in itertools.pairwise(points) if b > a]


async def wait_until(check: Callable[[], Awaitable[bool]], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("timed out")
        await asyncio.sleep(0.01)


async def terminal(
    client: httpx.AsyncClient, trace_id: str, timeout: float = 10.0
) -> dict[str, Any]:
    """Poll /result until the turn is terminal."""
    found: dict[str, Any] = {}

    async def done() -> bool:
        answer = await client.get(f"/v1/agent/chat/result/{trace_id}")
        assert answer.status_code == 200, answer.text
        found.clear()
        found.update(answer.json())
        return found["status"] in ("completed", "failed", "cancelled")

    await wait_until(done, timeout)
    return found


async def waiting(client: httpx.AsyncClient, trace_id: str, what: str) -> dict[str, Any]:
    """Poll /result until ``waitingFor`` is ``what``."""
    found: dict[str, Any] = {}

    async def check() -> bool:
        answer = await client.get(f"/v1/agent/chat/result/{trace_id}")
        found.clear()
        found.update(answer.json())
        return found.get("waitingFor") == what

    await wait_until(check)
    return found


@dataclass
class RecordingSink:
    """Builds the records a real sink writes and keeps them by trace; can fail on cue."""

    records: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    tool_events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)
    fail_on: str | None = None
    fail_after: int = 0  # events recorded before an "event" failure
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def on_turn_start(self, turn: TurnInfo) -> None:
        if self.fail_on == "start":
            raise OSError(28, "No space left on device")
        with self._lock:
            self.calls.append(("start", turn.trace_id))
            self.records[turn.trace_id] = [request_record(turn)]
            self.tool_events[turn.trace_id] = []

    def on_event(self, turn: TurnInfo, event: TraceEvent) -> None:
        if self.fail_on == "event" and len(self.records.get(turn.trace_id, ())) > self.fail_after:
            raise OSError(28, "No space left on device")
        with self._lock:
            self.calls.append(("event", turn.trace_id))
            self.records[turn.trace_id].append(transcript_record(event))
            record = tool_event(event)
            if record is not None:
                self.tool_events[turn.trace_id].append(record)

    def on_turn_end(self, turn: TurnInfo, end: TurnEnd) -> Mapping[str, Any]:
        if self.fail_on == "end":
            raise OSError(28, "No space left on device")
        with self._lock:
            self.calls.append(("end", turn.trace_id))
            self.records[turn.trace_id].append(reply_record(turn, end))
        return {"recorded": True, "runId": turn.trace_id, "sealed": True}
