"""A scripted agent chat endpoint of the tests' own: a threaded stdlib HTTP server on
127.0.0.1 that answers submit, result, trace and readyz from scripts, in order."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHAT = "/v1/agent/chat"


@dataclass(frozen=True)
class Reply:
    """One scripted answer: status, body (a JSON value, raw bytes, or None for an empty
    body), headers, a delay before answering (seconds; longer than the client's
    timeout makes a timeout), and how slowly the body trickles out."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    raw: bool = False
    trickle_s: float = 0.0
    """Send the body one byte at a time, this many seconds apart (a slow stream)."""
    head_trickle_s: float = 0.0
    """Send the status line and a long header one byte at a time, this many seconds
    apart (a head that never ends in time)."""


def json_reply(status: int, body: Any, **headers: str) -> Reply:
    return Reply(status=status, body=body, headers=headers)


def raw_reply(status: int, data: bytes, content_type: str = "text/html") -> Reply:
    return Reply(status=status, body=data, headers={"Content-Type": content_type}, raw=True)


@dataclass
class Script:
    """What the server answers. Each list is consumed in order; its last item repeats."""

    submit: list[Reply] = field(default_factory=lambda: [json_reply(202, {"traceId": "t-1"})])
    result: list[Reply] = field(default_factory=list)
    trace: list[Reply] = field(default_factory=list)
    readyz: list[Reply] = field(default_factory=lambda: [raw_reply(404, b"not found")])
    error_answer: list[Reply] = field(
        default_factory=lambda: [json_reply(404, {"error": {"code": "trace_not_found"}})]
    )
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self, name: str) -> Reply:
        with self.lock:
            queue: list[Reply] = getattr(self, name)
            if not queue:
                return raw_reply(500, b"script exhausted")
            return queue.pop(0) if len(queue) > 1 else queue[0]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _route(self) -> str | None:
        path = self.path.split("?", 1)[0]
        if self.command == "POST" and path == CHAT:
            return "submit"
        if self.command == "GET" and path == "/readyz":
            return "readyz"
        if self.command == "GET" and path.startswith(CHAT + "/result/agc-readiness-dry-run-"):
            return "error_answer"
        if self.command == "GET" and path.startswith(CHAT + "/result/"):
            return "result"
        if self.command == "GET" and path.startswith(CHAT + "/trace/"):
            return "trace"
        return None

    def _answer(self) -> None:
        script = self.server.script
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        with script.lock:
            script.requests.append((self.command, self.path, dict(self.headers.items())))
        route = self._route()
        reply = script.next(route) if route else raw_reply(404, b"no such route")
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.raw:
            data = reply.body
        elif reply.body is None:
            data = b""
        else:
            data = json.dumps(reply.body).encode()
        if reply.head_trickle_s:
            head = b"HTTP/1.1 202 Accepted\r\nx-pad: " + b"a" * 100_000
            try:
                for index in range(len(head)):
                    self.wfile.write(head[index : index + 1])
                    self.wfile.flush()
                    time.sleep(reply.head_trickle_s)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up
            return
        try:
            self.send_response(reply.status)
            headers = {"Content-Type": "application/json", **reply.headers}
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if not reply.trickle_s:
                self.wfile.write(data)
            for index in range(len(data) if reply.trickle_s else 0):
                self.wfile.write(data[index : index + 1])
                self.wfile.flush()
                time.sleep(reply.trickle_s)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a scripted timeout)

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    script: Script

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a client that timed out and closed: expected in these tests


@contextmanager
def chat_server(script: Script) -> Iterator[str]:
    """Serve ``script`` on 127.0.0.1 (a free port); yields the base URL."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.script = script
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class FakeTiming:
    """An injectable clock: ``sleep`` advances it; nothing waits. Jitter is fixed."""

    def __init__(self, *, jitter: float = 0.5, wall_start: float = 1_764_460_800.0) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []
        self.jitter = jitter
        self.wall_start = wall_start

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds

    def random(self) -> float:
        return self.jitter

    def wall(self) -> float:
        return self.wall_start + self.now
