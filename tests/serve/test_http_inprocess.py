"""The HTTP server's own limits (request deadlines, the connection cap, a client that
does not read) on a real uvicorn server and real loopback sockets, in this process:
the server runs on the test's event loop, so each case is a few hundred milliseconds
of short deadlines and needs no child process. The load tests against a whole chat
app in a child process are tests/serve/test_http_limits.py."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import uvicorn

from agc.errors import UsageError
from agc.serve import HttpLimits, uvicorn_config

BIG = 8 << 20  # bytes of the large answer: more than loopback's socket buffers hold
CHUNK = 1 << 20

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class App:
    """An ASGI app: ``/hold`` answers once :attr:`release` is set, ``/big`` answers
    :data:`BIG` bytes, ``/echo`` the size of the request body, anything else ``ok``."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.holding = asyncio.Event()
        self.disconnected = asyncio.Event()

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        path = scope["path"]
        if path == "/hold":
            self.holding.set()
            await self.release.wait()
        size = 0
        if path == "/echo":
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    self.disconnected.set()
                    return
                size += len(message.get("body", b""))
                if not message.get("more_body"):
                    break
        headers = [(b"content-type", b"text/plain")]
        if path == "/big":
            headers.append((b"content-length", str(BIG).encode()))
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            for _ in range(BIG // CHUNK):
                await send({"type": "http.response.body", "body": b"x" * CHUNK, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            return
        body = str(size).encode() if path == "/echo" else b"ok"
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class Served:
    def __init__(self, server: uvicorn.Server, app: App, port: int) -> None:
        self.server = server
        self.app = app
        self.port = port

    async def connect(
        self, *, rcvbuf: int | None = None
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:  # a small window: the server's writes pause sooner
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", self.port))
        return await asyncio.open_connection(sock=sock, limit=1 << 16)

    def stalled(self) -> bool:
        """Whether a connection's writes are paused (the protocol's stall flag: the one
        event that says the client's window is full)."""
        return any(
            getattr(c, "_stalled_since", None) is not None
            for c in self.server.server_state.connections
        )


@contextlib.asynccontextmanager
async def served(**limits: Any) -> AsyncIterator[Served]:
    app = App()
    config = uvicorn_config(app, HttpLimits(**limits), lifespan="on", log_level="critical")
    server = uvicorn.Server(config)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    try:
        await until(lambda: server.started or task.done())
        assert not task.done(), task.exception()
        yield Served(server, app, sock.getsockname()[1])
    finally:
        app.release.set()
        server.should_exit = True
        await asyncio.wait_for(task, 10)
        sock.close()


async def until(condition: Callable[[], bool], *, within: float = 10.0) -> None:
    """Poll ``condition`` on the event loop; fails after ``within`` seconds."""
    async with asyncio.timeout(within):
        while not condition():
            await asyncio.sleep(0.005)


async def read_to_close(reader: asyncio.StreamReader, *, within: float = 10.0) -> bytes:
    """Everything the server sends until it closes the connection (a reset counts as
    closed); fails if the server keeps it open ``within`` seconds."""
    chunks: list[bytes] = []
    async with asyncio.timeout(within):
        while True:
            try:
                chunk = await reader.read(1 << 16)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


def answer(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("ascii").split("\r\n")
    status = int(lines[0].split()[1])
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return status, headers, body


async def get(served_: Served, path: str) -> tuple[int, bytes]:
    reader, writer = await served_.connect()
    writer.write(f"GET {path} HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n".encode())
    status, _, body = answer(await read_to_close(reader))
    writer.close()
    return status, body


def run(coroutine: Awaitable[None]) -> None:
    asyncio.run(coroutine)  # type: ignore[arg-type]


# -- request deadlines ---------------------------------------------------------------


@pytest.mark.parametrize("sent", [b"", b"GET / HT", b"GET / HTTP/1.1\r\nhost: t\r\n"])
def test_a_head_that_does_not_arrive_in_time_is_answered_408_and_closed(sent: bytes) -> None:
    async def case() -> None:
        async with served(header_timeout_s=0.2) as s:
            reader, writer = await s.connect()
            writer.write(sent)
            status, headers, body = answer(await read_to_close(reader))
            assert status == 408
            assert headers["connection"] == "close"
            assert json.loads(body)["error"]["code"] == "request_timeout"
            writer.close()

    run(case())


def test_a_body_that_does_not_arrive_in_time_closes_the_connection_without_an_answer() -> None:
    async def case() -> None:
        async with served(header_timeout_s=5, body_timeout_s=0.2) as s:
            reader, writer = await s.connect()
            writer.write(b"POST /echo HTTP/1.1\r\nhost: t\r\ncontent-length: 10\r\n\r\nabc")
            assert await read_to_close(reader) == b""  # closed, and no 408 on a started request
            await until(s.app.disconnected.is_set)  # the route sees the client gone
            writer.close()

    run(case())


def test_a_request_within_its_deadlines_is_answered_and_the_deadline_rearms_per_request() -> None:
    async def case() -> None:
        async with served(header_timeout_s=0.3, body_timeout_s=0.3) as s:
            reader, writer = await s.connect()
            for _ in range(2):  # keep-alive: the head deadline starts again after the answer
                writer.write(b"POST /echo HTTP/1.1\r\nhost: t\r\ncontent-length: 3\r\n\r\nabc")
                head = await reader.readuntil(b"\r\n\r\n")
                assert head.startswith(b"HTTP/1.1 200")
                assert await reader.readexactly(1) == b"3"
            # then silence: the second head deadline closes it with a 408
            status, _, _ = answer(await read_to_close(reader))
            assert status == 408
            writer.close()

    run(case())


# -- the connection cap --------------------------------------------------------------


def test_over_the_cap_the_connection_idle_longest_is_closed_for_the_newcomer() -> None:
    async def case() -> None:
        async with served(max_connections=2, header_timeout_s=30) as s:
            old_reader, old_writer = await s.connect()
            young_reader, young_writer = await s.connect()
            await until(lambda: len(s.server.server_state.connections) == 2)
            status, body = await get(s, "/")  # a third connection
            assert (status, body) == (200, b"ok")
            assert await read_to_close(old_reader) == b""  # evicted without an answer
            young_writer.write(b"GET / HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n")
            assert answer(await read_to_close(young_reader))[0] == 200  # kept
            old_writer.close()
            young_writer.close()

    run(case())


def test_when_every_connection_has_a_request_in_flight_a_newcomer_gets_503() -> None:
    async def case() -> None:
        async with served(max_connections=1, header_timeout_s=30) as s:
            reader, writer = await s.connect()
            writer.write(b"GET /hold HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n")
            await until(s.app.holding.is_set)
            status, body = await get(s, "/")
            assert status == 503
            assert json.loads(body)["error"]["code"] == "too_many_connections"
            s.app.release.set()  # the request in flight was not disturbed
            assert answer(await read_to_close(reader))[:3:2] == (200, b"ok")
            writer.close()

    run(case())


# -- a client that does not read -----------------------------------------------------


def test_a_client_that_stops_reading_is_dropped_after_the_body_deadline() -> None:
    async def case() -> None:
        async with served(body_timeout_s=0.3, header_timeout_s=30) as s:
            reader, writer = await s.connect(rcvbuf=4096)
            writer.write(b"GET /big HTTP/1.1\r\nhost: t\r\n\r\n")
            await until(s.stalled)
            await until(lambda: not s.server.server_state.connections)  # while it reads nothing
            got = await read_to_close(reader)
            assert got.startswith(b"HTTP/1.1 200")
            assert len(got) < BIG  # aborted: what it did not read was dropped
            writer.close()

    run(case())


def test_a_client_that_reads_again_in_time_gets_the_whole_answer_and_keeps_its_connection() -> None:
    async def case() -> None:
        async with served(body_timeout_s=0.4, header_timeout_s=1.0, keep_alive_s=5) as s:
            reader, writer = await s.connect(rcvbuf=4096)
            writer.write(b"GET /big HTTP/1.1\r\nhost: t\r\n\r\n")
            await until(s.stalled)
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200")
            await reader.readexactly(BIG)
            assert not s.stalled()
            # The connection now waits for a second head: it ends with the head
            # deadline's 408, which comes after the stall deadline would have fired had
            # reading again not cancelled it (that drops the connection with no answer).
            status, _, body = answer(await read_to_close(reader))
            assert status == 408
            assert json.loads(body)["error"]["code"] == "request_timeout"
            writer.close()

    run(case())


def test_over_the_cap_a_client_that_does_not_read_is_evicted_before_one_in_flight() -> None:
    async def case() -> None:
        async with served(max_connections=2, body_timeout_s=30, header_timeout_s=30) as s:
            busy_reader, busy_writer = await s.connect()
            busy_writer.write(b"GET /hold HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n")
            await until(s.app.holding.is_set)
            stalled_reader, stalled_writer = await s.connect(rcvbuf=4096)
            stalled_writer.write(b"GET /big HTTP/1.1\r\nhost: t\r\n\r\n")
            await until(s.stalled)
            assert await get(s, "/") == (200, b"ok")
            assert len(await read_to_close(stalled_reader)) < BIG  # aborted, not flushed
            s.app.release.set()
            assert answer(await read_to_close(busy_reader))[0] == 200
            busy_writer.close()
            stalled_writer.close()

    run(case())


# -- the configuration ---------------------------------------------------------------


def test_uvicorn_config_carries_the_limits() -> None:
    limits = HttpLimits(keep_alive_s=7, max_header_bytes=4096, max_connections=10, backlog=9)
    config = uvicorn_config(App(), limits)
    assert config.timeout_keep_alive == 7
    assert config.h11_max_incomplete_event_size == 4096
    assert config.limit_concurrency == 20
    assert config.backlog == 9
    assert config.http.limits is limits  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("header_timeout_s", 0),
        ("body_timeout_s", -1.0),
        ("body_timeout_s", True),
        ("max_connections", 0),
    ],
)
def test_limits_refuse_a_value_that_is_not_positive(field: str, value: object) -> None:
    with pytest.raises(UsageError, match=field):
        HttpLimits(**{field: value})  # type: ignore[arg-type]
