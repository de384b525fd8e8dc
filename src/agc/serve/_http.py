"""The HTTP server's own limits: deadlines for a request to arrive and a cap on open
connections, on uvicorn's HTTP/1.1 protocol (h11).

uvicorn has knobs for the keep-alive time (``timeout_keep_alive``), the size of a
request head (``h11_max_incomplete_event_size``) and the number of requests at once
(``limit_concurrency``, answered ``503`` once the request is read), but none for how
long a client may take to send its request, and it accepts every connection. So a
client that sends nothing, or its head or body a byte at a time, keeps a connection
and its descriptor for as long as it likes, and enough of them exhaust the process's
descriptors (``EMFILE``): no new connection, no file for the audit records.
:class:`GuardedH11Protocol` adds what is missing (:class:`~agc.serve._config.HttpLimits`):

* **head deadline**: from a connection's start, or the end of the previous response,
  the request head (request line and headers) must be complete within
  ``header_timeout_s``; else ``408 request_timeout`` and the connection is closed;
* **body deadline**: once the head is read, the body must be complete within
  ``body_timeout_s``; else the connection is closed (the route sees the client gone);
* **connection cap**: over ``max_connections`` open connections, a new one evicts the
  connection that has waited longest for a request head (an idle or a slow client;
  never one whose request is being answered); when every connection has a request in
  flight, the new one is answered ``503 too_many_connections`` and closed at once, so
  its descriptor is freed.

Only :mod:`agc.serve` loads this (with uvicorn, the ``serve`` extra).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar, Final

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from agc.serve._config import HttpLimits

__all__ = ["GuardedH11Protocol", "guarded_protocol", "uvicorn_config"]


def _raw_response(status: int, reason: str, code: str, message: str, retry_after: int) -> bytes:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nretry-after: {retry_after}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


_TIMEOUT: Final = _raw_response(
    408, "Request Timeout", "request_timeout", "the request did not arrive in time", 1
)
_FULL: Final = _raw_response(
    503,
    "Service Unavailable",
    "too_many_connections",
    "every connection has a request in flight; try again shortly",
    1,
)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with request deadlines and a connection cap (see the
    module docstring). Subclassed by :func:`guarded_protocol` with its limits."""

    limits: ClassVar[HttpLimits] = HttpLimits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._phase: str | None = None  # "head", "body" or None (a request in flight)
        self._phase_since = 0.0
        self._deadline: asyncio.TimerHandle | None = None
        self._stalled_since: float | None = None  # our answer waits for the client to read
        self._stall_deadline: asyncio.TimerHandle | None = None

    # -- the asyncio protocol ------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self._make_room():
            transport.write(_FULL)
            transport.close()
            return
        self._track()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._track()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._track()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        self._unstall()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        """The client does not read what we send (asyncio flow control): it has the body
        deadline to read on, else the connection is dropped; meanwhile it may be evicted
        for a newcomer, as an idle one is (a client pipelining requests and reading
        nothing would otherwise hold its connection for good)."""
        super().pause_writing()
        if self._stall_deadline is None:
            self._stalled_since = self.loop.time()
            self._stall_deadline = self.loop.call_later(
                self.limits.body_timeout_s, self._stall_expire
            )

    def resume_writing(self) -> None:
        super().resume_writing()
        self._unstall()

    def _unstall(self) -> None:
        if self._stall_deadline is not None:
            self._stall_deadline.cancel()
            self._stall_deadline = None
        self._stalled_since = None

    def _stall_expire(self) -> None:
        self._stall_deadline = None
        if self.transport is not None and not self.transport.is_closing():
            self.transport.abort()  # what it did not read is dropped, not flushed

    # -- deadlines -----------------------------------------------------------------------

    def _cancel(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _track(self) -> None:
        """Arm the deadline of what the connection waits for now (after a change)."""
        if self.transport is None or self.transport.is_closing():
            self._cancel()
            self._phase = None
            return
        state = self.conn.their_state
        phase = "head" if state is h11.IDLE else "body" if state is h11.SEND_BODY else None
        if phase == self._phase:
            return
        self._cancel()
        self._phase = phase
        self._phase_since = self.loop.time()
        if phase is not None:
            limits = self.limits
            seconds = limits.header_timeout_s if phase == "head" else limits.body_timeout_s
            self._deadline = self.loop.call_later(seconds, self._expire)

    def _expire(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self._phase == "head" and self.conn.our_state is h11.IDLE:
            self.transport.write(_TIMEOUT)  # no response of ours has started
        self.transport.close()

    # -- the cap -------------------------------------------------------------------------

    def _make_room(self) -> bool:
        """Whether this new connection may stay: within the cap, or once the connection
        waiting longest for a request head, or for its client to read our answer, is
        closed."""
        open_ = [c for c in self.connections if c.transport is not None]
        live = [c for c in open_ if not c.transport.is_closing()]
        if len(live) <= self.limits.max_connections:
            return True
        waiting = [
            (c._stalled_since if c._stalled_since is not None else c._phase_since, c)
            for c in live
            if c is not self
            and isinstance(c, GuardedH11Protocol)
            and (c._phase == "head" or c._stalled_since is not None)
        ]
        if not waiting:
            return False
        _, oldest = min(waiting, key=lambda pair: pair[0])
        oldest._cancel()
        if oldest._stalled_since is not None:
            oldest._unstall()
            oldest.transport.abort()
        else:
            oldest.transport.close()
        return True


def guarded_protocol(limits: HttpLimits) -> type[GuardedH11Protocol]:
    """:class:`GuardedH11Protocol` bound to ``limits`` (uvicorn makes one per
    connection from the class)."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"limits": limits})


def uvicorn_config(app: Any, limits: HttpLimits, **options: Any) -> uvicorn.Config:
    """A ``uvicorn.Config`` for ``app`` with ``limits``: the guarded protocol, the
    keep-alive time, the request head size, the backlog, and ``limit_concurrency`` at twice the
    connection cap (a backstop on requests in flight, which counts those whose client
    left too, and connections being closed). ``options`` are passed on (``lifespan``,
    ``log_level`` …)."""
    return uvicorn.Config(
        app,
        http=guarded_protocol(limits),
        timeout_keep_alive=limits.keep_alive_s,
        h11_max_incomplete_event_size=limits.max_header_bytes,
        limit_concurrency=limits.max_connections * 2,
        backlog=limits.backlog,
        **options,
    )
