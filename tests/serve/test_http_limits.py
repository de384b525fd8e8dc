"""The HTTP server's limits against a real uvicorn on 127.0.0.1 (a child process,
tests/serve/limits_server.py): request deadlines for silent, partial and trickled
clients, and idle connections past the descriptor limit, which must leave the health
check answering and a running turn's evidence whole. Bounded loopback load; every wait
polls with a deadline."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from agc.integrity import check_run

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Served:
    root: Path
    port: int
    pid: int
    max_connections: int
    process: subprocess.Popen[bytes]

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=5.0, trust_env=False)

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=5.0)

    def open_descriptors(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))


@contextlib.contextmanager
def served(tmp_path: Path, **spec: Any) -> Iterator[Served]:
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps({"root": str(tmp_path), **spec}))
    log = (tmp_path / "server.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.serve.limits_server", str(spec_file)],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    port_file = tmp_path / "port.json"
    deadline = time.monotonic() + 30
    try:
        while not port_file.exists():
            assert process.poll() is None, (tmp_path / "server.log").read_text()
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        info = json.loads(port_file.read_text())
        yield Served(tmp_path, info["port"], info["pid"], info["maxConnections"], process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def closed_by_server(sock: socket.socket, *, within: float, trickle: bytes = b"") -> bytes:
    """Everything the server sent until it closed ``sock``; fails after ``within``
    seconds. With ``trickle``, one byte of it is sent every 50 ms meanwhile."""
    sock.setblocking(False)
    received = b""
    deadline = time.monotonic() + within
    position = 0
    while time.monotonic() < deadline:
        if position < len(trickle):
            with contextlib.suppress(BlockingIOError, BrokenPipeError, ConnectionResetError):
                sock.send(trickle[position : position + 1])
            position += 1
        try:
            chunk = sock.recv(65536)
        except BlockingIOError:
            time.sleep(0.05)
            continue
        except ConnectionResetError:
            return received
        if not chunk:
            return received
        received += chunk
    raise AssertionError(f"the server kept the connection open for {within} s")


LIMITS = {"header_timeout_s": 0.5, "body_timeout_s": 0.5, "keep_alive_s": 1}


def test_silent_partial_trickled_and_body_less_requests_are_cut_off_by_their_deadlines(
    tmp_path: Path,
) -> None:
    with served(tmp_path, limits=LIMITS) as server:
        silent = server.connect()
        partial = server.connect()
        partial.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        trickled = server.connect()
        body_less = server.connect()
        body_less.sendall(
            b"POST /v1/agent/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100\r\n\r\n" + b'{"message": '
        )
        # Each is closed within its deadline and a margin, whatever else it waits for.
        assert b" 408 " in closed_by_server(silent, within=5)
        assert b" 408 " in closed_by_server(partial, within=5)
        trickle = b"GET /healthz HTTP/1.1\r\n" + b"X-Slow: " + b"a" * 400
        assert b" 408 " in closed_by_server(trickled, trickle=trickle, within=5)
        closed_by_server(body_less, within=5)
        # A client that sends its request at once is answered as ever.
        with server.client() as client:
            assert client.get("/healthz").status_code == 200


def _chat_until_holding(client: httpx.Client) -> str:
    accepted = client.post("/v1/agent/chat", json={"message": "run it"})
    assert accepted.status_code == 202, accepted.text
    trace_id: str = accepted.json()["traceId"]
    deadline = time.monotonic() + 20
    while client.get(f"/v1/agent/chat/result/{trace_id}").json().get("waitingFor") != (
        "tool:commandExecution"
    ):
        assert time.monotonic() < deadline, "the turn did not start"
        time.sleep(0.02)
    return trace_id


def test_idle_connections_past_the_descriptor_limit_leave_health_and_evidence_whole(
    tmp_path: Path,
) -> None:
    # 400 idle connections against a server allowed 256 descriptors: without a cap
    # they take every descriptor (accept fails, the health check times out, the
    # running turn's seal fails for want of a file).
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < 1024:
        pytest.skip(f"this test opens 400 sockets; the descriptor limit is {soft}")
    limits = {**LIMITS, "header_timeout_s": 120.0, "body_timeout_s": 120.0, "backlog": 32}
    with served(tmp_path, limits=limits, nofile=256, max_sessions=2) as server:
        assert server.max_connections == 256 - 64 - 16 * 2 - 2 * 32
        with server.client() as client:
            trace_id = _chat_until_holding(client)
        idle: list[socket.socket] = []
        try:
            for _ in range(400):
                idle.append(server.connect())
            with server.client() as client:
                health = None
                deadline = time.monotonic() + 20
                while health is None:
                    with contextlib.suppress(httpx.TransportError):
                        health = client.get("/healthz")
                    assert time.monotonic() < deadline, "/healthz never answered"
                assert health.status_code == 200
                assert server.open_descriptors() < 256
                (tmp_path / "release").touch()
                deadline = time.monotonic() + 20
                while (result := client.get(f"/v1/agent/chat/result/{trace_id}").json())[
                    "status"
                ] not in ("completed", "failed", "cancelled"):
                    assert time.monotonic() < deadline, result
                    time.sleep(0.02)
        finally:
            for sock in idle:
                sock.close()
    assert result["status"] == "completed", result
    assert result["audit"]["sealed"] is True
    store = tmp_path / "store"
    assert check_run(trace_id, store).complete
    transcript = (store / "audit" / "transcripts" / f"{trace_id}.jsonl").read_text()
    # the request, every event of the trace, the reply
    assert len(transcript.splitlines()) == result["eventCount"] + 2


def _in_flight(server: Served) -> socket.socket:
    """A connection whose request head is read and whose body is not: "100 Continue"
    says the route is reading the body."""
    sock = server.connect()
    sock.sendall(
        b"POST /v1/agent/chat HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n"
        b"Expect: 100-continue\r\n\r\n"
    )
    assert b"100 Continue" in sock.recv(1024)
    return sock


def test_a_newcomer_evicts_the_idlest_connection_and_is_refused_when_all_are_in_flight(
    tmp_path: Path,
) -> None:
    limits = {**LIMITS, "header_timeout_s": 60.0, "body_timeout_s": 60.0, "max_connections": 8}
    with served(tmp_path, limits=limits) as server:
        idle = server.connect()  # accepted first: the one waiting longest for a head
        busy = [_in_flight(server) for _ in range(7)]
        try:
            with server.client() as client:
                assert client.get("/healthz").status_code == 200
            assert closed_by_server(idle, within=5) == b""  # evicted, nothing sent
            busy.append(_in_flight(server))  # the cap is now all requests in flight
            answer = closed_by_server(server.connect(), within=5)
            assert b" 503 " in answer
            assert b"too_many_connections" in answer
        finally:
            for sock in busy:
                sock.close()


def test_clients_that_pipeline_and_never_read_neither_hold_the_cap_nor_outlast_the_deadline(
    tmp_path: Path,
) -> None:
    """Requests pipelined by the thousand, no answer read: each connection's answers
    fill its buffers and it waits for the client forever. It is dropped at the body
    deadline, and evicted for a newcomer meanwhile: /healthz stays reachable.

    The server's send buffer is 16 KiB (the kernel doubles it) instead of the kernel's
    self-tuning one, which on loopback grows to megabytes: the same stall, reached
    after a few hundred answers per connection instead of thousands. The clients never
    read, to the end: a hangup or reset is seen with poll(2), which reads nothing (a
    read would resume the server's writing, and it would answer the rest)."""
    limits = {**LIMITS, "body_timeout_s": 3.0, "max_connections": 4}
    with served(tmp_path, limits=limits, sndbuf=16384) as server:
        hogs = []
        for _ in range(6):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.settimeout(5.0)
            sock.connect(("127.0.0.1", server.port))
            sock.setblocking(False)
            with contextlib.suppress(BlockingIOError, BrokenPipeError, ConnectionResetError):
                sock.send(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n" * 20000)
            hogs.append(sock)
        try:
            # Until their answers fill the socket buffers, they are requests in flight.
            deadline = time.monotonic() + 90
            with server.client() as client:
                while client.get("/healthz").status_code != 200:  # 503 while they read
                    assert time.monotonic() < deadline, "non-reading clients held the cap"
                    time.sleep(0.1)
            # Each is dropped (reset or closed), not held past its deadline.
            watch = select.poll()
            for sock in hogs:
                watch.register(sock, select.POLLRDHUP)
            held = {sock.fileno() for sock in hogs}
            deadline = time.monotonic() + 60
            while held:
                assert time.monotonic() < deadline, f"{len(held)} non-reading clients were kept"
                for fd, _events in watch.poll(100):  # POLLHUP and POLLERR are always polled
                    held.discard(fd)
                    watch.unregister(fd)
        finally:
            for sock in hogs:
                sock.close()
