"""The resident capture process's HTTP listener: Claude Code's HTTP hooks.

Claude Code can send a hook event as an HTTP ``POST`` of the event JSON to a URL
(``{"type": "http", "url": …, "headers": …, "timeout": …}``, its hooks reference):
a request to a process that is already running costs the client far less than starting
a hook process per tool call. ``agc hooks install --client claude-code`` sends the
per-tool-call events (:data:`agc.capture.BACKGROUND_EVENTS`) so, to
``http://127.0.0.1:PORT/agc-hook?client=claude-code[&store=S]`` with the header
``Authorization: Bearer <secret>``; the session's other events stay synchronous command
hooks (the hook client), which start the resident process and make it listen
(:mod:`agc.cli._hookclient`).

The port and the secret are chosen at install and kept for the user
(:func:`agc.capture.keep_http_hook`: ``$XDG_STATE_HOME/agc/hook-http.json``, mode 0600);
the resident process reads them there (:func:`agc.capture.read_http_hook`, the state
folder of the synchronous hook that made it listen).

A request is answered at once: the body is read, the event queued for capture (the one
capture path of the socket, :func:`agc.cli.hook.capture`, in arrival order) and ``200``
returned, so the client never waits on the store. A request byte for byte one already
taken for the same address (a replay, or a retry of a request whose answer was lost:
every Claude Code event names its session, event and, for a tool event, its call id) is
answered ``200`` too and not captured again: the event is in the run once, nothing was
lost, so nothing is kept against the run (a ``409`` that kept a failure made the run
fail for good over an event it holds). Refused, and never captured:

* another path or method: ``404`` / ``405``;
* a missing or wrong secret (compared with :func:`hmac.compare_digest`), or one no longer
  kept (retired by ``agc hooks uninstall``, read at every request): ``401``, before the
  body is read: another local user cannot write into the user's store, nor anyone with
  a retired secret (a backup of the settings holds it);
* a body without ``Content-Length`` (``411``) or larger than
  :data:`agc.capture.MAX_HOOK_EVENT_BYTES` (``413``, the connection closed unread; the
  event's failure kept for the store, as an over-long event on the socket);
* a request not whole within :data:`READ_S` seconds (the connection is shut: a client
  that trickles bytes cannot hold a thread); at most :data:`MAX_CONNECTIONS` at a time;

What the listener cannot hear (it was not running, or another program holds the port)
is lost to it: the session's next synchronous event is captured with the reason
(:attr:`HookListener.unheard`), and :func:`agc.flows.capture_hook_event` keeps a
``hook-events-unheard`` failure when the session was in a turn. The resident process
stays while a session is open (:meth:`HookListener.holding`), so the port is not left
free for another user to bind while a client may send to it; a port another user holds
is moved off (:mod:`agc.cli._hookserve`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import json
import os
import select
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from agc.capture import (
    BACKGROUND_EVENTS,
    HTTP_HOOK_PATH,
    MAX_HOOK_EVENT_BYTES,
    read_http_hook,
)

__all__ = ["MAX_CONNECTIONS", "READ_S", "HookListener", "event_names"]

READ_S: Final = 5.0
"""How long a request may take to arrive whole (seconds)."""

MAX_CONNECTIONS: Final = 32
"""Connections served at a time; more are closed at once."""

SESSION_HOLD_S: Final = 3600.0
"""How long the resident process stays for an open session without an event when it
cannot watch the session's client process (seconds): a tool call may run long, and its
result must find the listener up."""

_HTTP_EVENTS: Final = BACKGROUND_EVENTS["claude-code"]  # the events installed as HTTP hooks
_REPLAYS: Final = 4096  # digests of recent bodies remembered


Submit = Callable[[list[str], bytes, "tuple[str, str, str]"], None]
"""Queue one event for capture: ``(args, body, origin)`` as :func:`agc.cli.hook.capture`
takes them."""


class HookListener:
    """One port's listener (see the module docstring).

    Attributes:
        port: the TCP port on 127.0.0.1.
        problem: why it is not listening, ``None`` while it is.
    """

    def __init__(
        self,
        port: int,
        secret: str,
        origin: tuple[str, str, str],
        submit: Submit,
        *,
        keeper: bool = False,
    ):
        self.port = port
        self._keeper = keeper  # a port keeper may hold the port (keeper_folder)
        self.problem: str | None = "not started"
        self._secret = secret.encode("utf-8")
        self._origin = origin
        self._submit = submit
        self._lock = threading.Lock()
        self._heard: set[str] = set()  # sessions noted while listening
        # Requests turned away or cut off before they were whole (any of them may have
        # been a client's event): their count, why the last one was, and the count each
        # session's last synchronous event saw.
        self._drops = 0
        self._dropped = ""
        self._drops_seen: dict[str, int] = {}
        # Each session's origin (its hook's store and state), as its last synchronous
        # event gave it: the store of an installation without --store is the hook's
        # environment's ($AGC_HOME), which an HTTP request does not carry.
        self._origins: dict[str, tuple[str, str, str]] = {}
        # Open sessions (a synchronous event seen, their end not yet) -> their last
        # event (monotonic) and a descriptor of their client process, when watched.
        self._open: dict[str, tuple[float, int | None]] = {}
        self._seen: OrderedDict[bytes, None] = OrderedDict()
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.taken = False  # the port was held by another socket when it was to listen

    # -- the resident's side --------------------------------------------------------------

    def start(self, listening: socket.socket | None = None) -> None:
        """Serve in a thread on ``listening`` (a socket already listening on
        ``127.0.0.1:port``, now this listener's), else bind ``127.0.0.1:port`` (or take
        the listening socket back from the port's keeper, :func:`agc.cli._hookclient.
        keep_port`, which held it since the last resident process exited);
        :attr:`problem` says why not."""
        try:
            if listening is not None:
                server = self._on(listening)
            else:
                server = self._kept() or _Server(("127.0.0.1", self.port), _handler(self))
        except OSError as exc:
            self.taken = exc.errno == errno.EADDRINUSE
            self.problem = (
                f"agc could not listen on 127.0.0.1:{self.port} ({exc.strerror or exc}): "
                "another program holds the port"
            )
            return
        self._server = server
        self.problem = None
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _kept(self) -> _Server | None:
        """A server on the listening socket the port's keeper held, ``None`` when none
        held it."""
        if not self._keeper:
            return None
        from agc.cli._hookclient import take_kept  # noqa: PLC0415

        sock = take_kept(self.keeper_folder(), self.port)
        if not isinstance(sock, socket.socket):
            return None
        sock.setblocking(True)  # the keeper's accepts did not block
        return self._on(sock)

    def _on(self, sock: socket.socket) -> _Server:
        """A server on ``sock``, listening on ``127.0.0.1:port`` already."""
        server = _Server(("127.0.0.1", self.port), _handler(self), bind_and_activate=False)
        server.socket.close()
        server.socket = sock
        server.server_name, server.server_port = "127.0.0.1", self.port
        return server

    def hand_over(self) -> None:
        """Before the resident process exits: give the listening socket to a port keeper
        (:func:`agc.cli._hookclient.start_keeper`), so the port stays held."""
        if not self._keeper or self._server is None or self.problem is not None:
            return
        if self.retired():
            return  # uninstalled: the port is let go, no keeper holds it for a new resident
        from agc.cli._hookclient import start_keeper  # noqa: PLC0415

        state = self._origin[2]
        start_keeper(self.keeper_folder(), state, self._server.socket.fileno(), self.port)

    def keeper_folder(self) -> str:
        """Where the keeper of this port has its Unix socket: ``STATE/agc``, beside the
        port and secret it holds for (``hook-http.json``, :func:`agc.capture.
        http_settings_path`), whatever socket folder a resident process uses."""
        with self._lock:
            return os.path.join(self._origin[2], "agc")

    def _serve(self) -> None:
        assert self._server is not None
        try:
            self._server.serve_forever(poll_interval=0.2)
        except Exception as exc:  # the listener stops: every later session event says so
            self.problem = f"agc's listener on 127.0.0.1:{self.port} stopped: {exc}"
            raise
        finally:
            if self.problem is None:
                self.problem = f"agc's listener on 127.0.0.1:{self.port} stopped"

    def stop(self) -> None:
        """Stop listening (the resident process exits)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def update(self, secret: str, origin: tuple[str, str, str]) -> None:
        """The secret and the hook's origin the latest synchronous event of an
        installation using this port gave."""
        with self._lock:
            self._secret = secret.encode("utf-8")
            self._origin = origin

    def unheard(self, session: str | None) -> str | None:
        """Why events of ``session`` since its previous synchronous event may not have
        been heard here, ``None`` when this listener was up throughout."""
        if self.problem is not None:
            return self.problem
        with self._lock:
            if session is not None and session in self._heard:
                if self._drops_seen.get(session, self._drops) < self._drops:
                    return f"agc's listener on 127.0.0.1:{self.port} {self._dropped}"
                return None
        return (
            "agc's resident capture process, and its listener on 127.0.0.1:"
            f"{self.port}, started after the session's previous event"
        )

    def note(
        self,
        session: str | None,
        hook: str | None,
        origin: tuple[str, str, str] | None = None,
        client: int = 0,
    ) -> None:
        """A synchronous event of ``session`` was captured (or noted): heard from now on;
        open until its ``SessionEnd``; its tool events go to ``origin``'s store (default:
        the latest synchronous event's). ``client``: the pid of the client process that
        ran the hook (0: unknown), watched while the session is open (it waits for the
        hook, so the pid is its own)."""
        if session is None or self.problem is not None:
            return
        with self._lock:
            self._heard.add(session)
            if origin is not None:
                self._origins[session] = origin
            self._drops_seen[session] = self._drops
            _, watched = self._open.pop(session, (0.0, None))
            if hook == "SessionEnd":
                _close(watched)
                return
            if client > 1 and (watched is None or _pid_of(watched) != client):
                _close(watched)
                watched = _watch(client)
            self._open[session] = (time.monotonic(), watched)

    def holding(self) -> bool:
        """Whether a session is open (the resident process then stays, so the port is
        never free while a client may send to it): its ``SessionEnd`` not seen, and its
        client process still running, or (when it cannot be watched) an event within
        :data:`SESSION_HOLD_S` seconds."""
        now = time.monotonic()
        held = False
        with self._lock:
            for session, (last, watched) in list(self._open.items()):
                if watched is not None and _ended(watched):
                    _close(watched)
                    del self._open[session]
                elif watched is not None or now - last < SESSION_HOLD_S:
                    held = True
        return held

    # -- a request --------------------------------------------------------------------------

    def dropped(self, why: str) -> None:
        """A request was turned away or cut off before it was whole (``why``: what
        happened, after "agc's listener on 127.0.0.1:PORT"): nobody can tell whose
        event it was, so each session's next synchronous event in a turn says events
        may be lost (:meth:`unheard`)."""
        with self._lock:
            self._drops += 1
            self._dropped = why

    def authorized(self, header: str | None) -> bool:
        """Whether ``header`` (``Authorization``) is ``Bearer <the secret>`` and the secret
        is still kept: not retired (``agc hooks uninstall``,
        :func:`agc.capture.retire_http_hook`) and, for this port, not replaced by a new
        one (read at every request, so a retired secret is refused at once)."""
        given = (header or "").encode("utf-8", "replace")
        with self._lock:
            secret = self._secret
        if not hmac.compare_digest(given, b"Bearer " + secret):
            return False
        kept = read_http_hook(self._state())
        if kept is None:
            return False
        return kept.port != self.port or hmac.compare_digest(kept.secret.encode("utf-8"), secret)

    def retired(self) -> bool:
        """Whether the secret of this listener's state folder was retired, or is no
        longer kept at all (then nothing may be heard on the port)."""
        return read_http_hook(self._state()) is None

    def _state(self) -> dict[str, str]:
        with self._lock:
            return {"XDG_STATE_HOME": self._origin[2]}

    def take(self, query: str, body: bytes) -> int:
        """Queue a request's event for capture; the HTTP status to answer."""
        args = _args(query)
        if args is None:
            self.dropped("was sent a request whose address names no hook")
            return 400
        session, hook = event_names(body)
        if hook not in _HTTP_EVENTS:
            # Only the tool events are installed as HTTP hooks: a session's start, turn
            # or end comes through `agc hook`, which keeps its books (what was heard).
            with self._lock:
                origin = self._origin
            _keep(
                args,
                body,
                origin,
                f"a {hook or 'nameless'} hook event came over HTTP, where agc takes only "
                "the tool events; it was not captured",
            )
            return 403
        # The address is part of what was sent: the same event for another store is its own.
        digest = hashlib.sha256(query.encode("utf-8", "replace") + b"\0" + body).digest()
        with self._lock:
            origin = self._origins.get(session or "", self._origin)
            replay = digest in self._seen
            self._seen[digest] = None
            if len(self._seen) > _REPLAYS:
                self._seen.popitem(last=False)
            if session is not None and session in self._open:
                self._open[session] = (time.monotonic(), self._open[session][1])
        if not replay:
            self._submit(args, body, origin)
        return 200

    def refuse_large(self, query: str, head: bytes, length: int) -> None:
        """Keep the failure of an event larger than agc reads (its first bytes name the
        run, when they name the session); it is not captured."""
        args = _args(query)
        if args is None:
            return
        with self._lock:
            origin = self._origin
        _keep(
            args,
            head,
            origin,
            f"a hook event of {length:,} bytes came over HTTP, more than the "
            f"{MAX_HOOK_EVENT_BYTES:,} agc reads; it was not captured",
        )


def _watch(pid: int) -> int | None:
    """A descriptor of the running process ``pid`` (``os.pidfd_open``: it names that
    process, never a later one given the same pid), ``None`` when it cannot be had."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        return int(pidfd_open(pid))
    except OSError:
        return None


def _ended(fd: int) -> bool:
    """Whether the process a pidfd names has ended (the descriptor is then readable)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    try:
        return bool(poller.poll(0))
    except OSError:
        return True


def _pid_of(fd: int) -> int:
    """The pid a pidfd names (``Pid:`` of ``/proc/self/fdinfo/FD``), 0 when unknown."""
    try:
        with open(f"/proc/self/fdinfo/{fd}", encoding="ascii") as info:
            for line in info:
                if line.startswith("Pid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _close(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def event_names(data: bytes) -> tuple[str | None, str | None]:
    """``(session_id, hook_event_name)`` of an event's JSON, each ``None`` when absent."""
    try:
        value: Any = json.loads(data)
    except ValueError:
        return None, None
    if not isinstance(value, dict):
        return None, None
    session, hook = value.get("session_id"), value.get("hook_event_name")
    return (
        session if isinstance(session, str) else None,
        hook if isinstance(hook, str) else None,
    )


def _args(query: str) -> list[str] | None:
    """``agc hook``'s arguments from the URL's query (``client``, ``store``)."""
    try:
        values = parse_qs(query, strict_parsing=False, max_num_fields=4)
    except ValueError:
        return None
    client = values.get("client", [])
    store = values.get("store", [])
    if len(client) != 1 or len(store) > 1:
        return None
    return ["--client", client[0], *(["--store", store[0]] if store else [])]


def _keep(args: list[str], data: bytes, origin: tuple[str, str, str], message: str) -> None:
    """Keep the failure of an event that is not captured (never raises)."""
    from agc.cli.hook import keep_failure  # noqa: PLC0415 - loaded by the resident already

    keep_failure(args, origin, data, message)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True  # a listener of a resident that was killed leaves TIME_WAIT


def _handler(listener: HookListener) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "agc-hook"
        sys_version = ""
        timeout = READ_S

        def setup(self) -> None:
            # One deadline for the whole request: a peer that trickles bytes is cut off.
            self._slot = listener._slots.acquire(blocking=False)
            self._watch = threading.Timer(READ_S, self._cut)
            self._watch.daemon = True
            self._watch.start()
            super().setup()
            if not self._slot:
                self.close_connection = True

        def _cut(self) -> None:
            listener.dropped(f"cut off a request not whole within {READ_S:g} s")
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

        def finish(self) -> None:
            self._watch.cancel()
            with contextlib.suppress(OSError):
                super().finish()
            if self._slot:
                listener._slots.release()

        def handle_one_request(self) -> None:
            if not self._slot:
                listener.dropped(f"turned a request away: {MAX_CONNECTIONS} connections were open")
                self.close_connection = True
                return
            with contextlib.suppress(OSError):
                super().handle_one_request()

        def _answer(self, status: int) -> None:
            # Every answer closes its connection: a connection the client kept for a
            # later event could be closed by the deadline as that event is sent.
            self.send_response_only(status)
            self.send_header("Content-Length", "0")
            self.send_header("Connection", "close")
            self.close_connection = True
            self.end_headers()

        def do_POST(self) -> None:
            url = urlsplit(self.path)
            if url.path != HTTP_HOOK_PATH:
                self._answer(404)
                return
            if not listener.authorized(self.headers.get("Authorization")):
                listener.dropped("refused a request without agc's secret")
                self._answer(401)
                return
            length = self.headers.get("Content-Length")
            if length is None or not length.isdigit():
                listener.dropped("refused a request that gave no Content-Length")
                self._answer(411)
                return
            if int(length) > MAX_HOOK_EVENT_BYTES:
                head = self.rfile.read(min(int(length), 1 << 16))  # names the run
                listener.refuse_large(url.query, head, int(length))
                self._answer(413)
                return
            body = self.rfile.read(int(length))
            if len(body) < int(length):
                listener.dropped("was sent a request that ended before its body did")
                self.close_connection = True
                return  # cut off (READ_S) or closed early: nothing whole to capture
            self._answer(listener.take(url.query, body))

        def do_GET(self) -> None:
            self._answer(405)

        do_PUT = do_DELETE = do_PATCH = do_HEAD = do_GET  # noqa: N815

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the resident's standard streams are /dev/null

    return Handler
