"""The ASGI application's lifespan and its guards: with ``lifespan`` it starts the
supervisor, calls ``on_startup`` once it runs and stops it (ending running turns) on
shutdown; without, it leaves both to the caller; an empty bearer token is refused,
since it would let anyone in."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from agc.serve import BearerAuth, Supervisor, create_app
from tests.serve.fakes import Behaviour, Factory, make_supervisor


def _recording(supervisor: Supervisor, calls: list[str]) -> None:
    """Record the supervisor's start and stop in ``calls`` (each still runs)."""
    start, stop = supervisor.start, supervisor.stop

    async def recorded_start() -> None:
        calls.append("start")
        await start()

    async def recorded_stop() -> None:
        calls.append("stop")
        await stop()

    supervisor.start = recorded_start  # type: ignore[method-assign]
    supervisor.stop = recorded_stop  # type: ignore[method-assign]


def test_the_lifespan_starts_the_supervisor_then_calls_on_startup_and_stops_it(
    tmp_path: Path,
) -> None:
    hold = asyncio.Event()
    supervisor, factory = make_supervisor(tmp_path, factory=Factory(Behaviour(hold=hold)))
    calls: list[str] = []
    _recording(supervisor, calls)
    app = create_app(supervisor, on_startup=lambda: calls.append("on_startup"))
    with TestClient(app) as client:
        assert calls == ["start", "on_startup"]
        accepted = client.post("/v1/agent/chat", json={"message": "x"})
        assert accepted.status_code == 202
        trace_id = accepted.json()["traceId"]
    assert calls == ["start", "on_startup", "stop"]
    # the running turn was interrupted and ended on shutdown, its process closed
    assert supervisor.traces[trace_id].terminal
    assert all(session.closed for session in factory.turn_sessions)


def test_without_lifespan_the_caller_starts_and_stops_the_supervisor(tmp_path: Path) -> None:
    supervisor, _ = make_supervisor(tmp_path)
    calls: list[str] = []
    _recording(supervisor, calls)
    app = create_app(supervisor, lifespan=False, on_startup=lambda: calls.append("on_startup"))
    with TestClient(app) as client:
        assert client.get("/healthz").status_code == 200
    assert calls == ["on_startup"]


def test_an_empty_bearer_token_is_refused(tmp_path: Path) -> None:
    supervisor, _ = make_supervisor(tmp_path)
    with pytest.raises(ValueError, match="empty bearer token"):
        BearerAuth(create_app(supervisor, lifespan=False), token=b"")
