"""The resident capture process: captures the hook events its hook commands hand it.

Started by the hook command (:mod:`agc.cli._hookclient`) when none answers, one per user
and agc installation. It has loaded agc and its secret detector once, so an event costs
its capture alone (parse, redact, append, checkpoint), not an interpreter start and
agc's imports. Each connection is one request (see
:func:`agc.cli._hookclient.request` and :func:`~agc.cli._hookclient.exchange`): the
answer is ``R`` once the whole event is here; after the hook's ``G`` the event is
captured, and the answer ends with ``0`` and the line to say on stderr (empty when
nothing failed) once :func:`agc.cli.hook.capture` returned: the event is appended and
vouched for by a crash checkpoint, or its failure kept. Events are captured one at a
time, in the order they arrive (a hook of another process still takes the run's file in
turn, as ever).

A request that ends early or without ``G`` (the hook process was killed while it sent
the event, or timed out by its client) is not captured: its failure is kept (``hook-event-invalid``,
naming the run when the bytes that came name the session), so the run is never
``complete``. A request whose first fields did not come names no store: nothing can be
kept for it.

The process exits after ``idle_s`` seconds without a request (but not while a session
that sends HTTP hooks is open: :meth:`~agc.cli._hookhttp.HookListener.holding`, so its
port is never left free for another user to take), or at once when a file of agc it
loaded has changed (an upgrade: the next hook starts a resident of the new agc); a
capture under way is finished first.

A port another user's program holds when the process is to listen on it is moved off
before the event is answered (:meth:`Listeners._move`): a new port and secret, agc's
hooks in the user's Claude Code settings moved to them, and a ``hook-port-taken``
failure kept for each session that names the old port.

A secret retired by ``agc hooks uninstall`` (the last HTTP hooks taken out) stops the
listener of its port at once (it refuses the secret from then on, the port let go,
handed to no keeper), and the process exits once its captures are done: on the
uninstall's request (:func:`agc.cli._hookclient.retire_resident`), else at its next
look (every :data:`_POLL_S` seconds).

A request whose arguments name ``--http PORT`` (a synchronous event of a Claude Code
session whose tool events ``agc hooks install`` sends over HTTP) makes the process
listen on ``127.0.0.1:PORT`` (:class:`~agc.cli._hookhttp.HookListener`, with the
secret kept under the hook's ``$XDG_STATE_HOME``) before its event is captured, with
what the listener may have missed since the session's previous event. Every capture,
of the socket and of HTTP, runs in one queue, in arrival order (:class:`Captures`): a
session's ``Stop`` is captured after the tool events that came before it.
"""

import contextlib
import fcntl
import os
import queue
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Final

from agc.capture import (
    HttpHook,
    http_settings_path,
    listener_owner,
    move_http_hooks,
    read_http_hook,
    retired_http_port,
)
from agc.cli._hookclient import IDLE_S, PROTOCOL, http_port
from agc.cli._hookhttp import HookListener, event_names
from agc.errors import AgcError, HookPortTakenError

__all__ = ["Captures", "Listeners", "answer", "main", "serve"]

_READ_S: Final = 5.0  # a hook process sends its event at once; a slower one is stuck
_POLL_S: Final = 5.0


def main(argv: list[str]) -> int:
    """The resident process (``_hookclient.py --serve FOLDER KEY``): take
    ``FOLDER/KEY.lock`` (exit at once when another resident process holds it), then
    :func:`serve` ``FOLDER/KEY.sock`` for :data:`~agc.cli._hookclient.IDLE_S` idle
    seconds; returns 0."""
    folder, key = argv[:2]
    listen = None
    if argv[2:3] == ["--http"] and argv[4:5] == ["--state"] and len(argv) == 6:
        listen = (argv[3], argv[5])
    try:
        lock = os.open(os.path.join(folder, key + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another one serves (or the folder is gone)
    os.ftruncate(lock, 0)
    os.write(lock, b"%d\n" % os.getpid())  # who serves: for `kill`
    _load()
    return serve(os.path.join(folder, key + ".sock"), idle_s=IDLE_S, listen=listen, keep=True)


def _load() -> None:
    """Load what a capture uses (the writer, the secret detector with its rules) before
    the first event, not while a hook waits."""
    import agc.cli.hook  # noqa: F401, PLC0415
    from agc.capture import ToolEvent  # noqa: PLC0415
    from agc.flows import capture_hook_event, record_capture_failure  # noqa: F401, PLC0415

    ToolEvent(
        event="call", source="hook", client="codex", session_id="s", input={"a": "b c"}
    ).to_record()


class Captures:
    """The one queue every capture of the process runs in, in arrival order, in one
    thread (the working folder is the capture's meanwhile)."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Callable[[], None]] = queue.Queue()
        self._worker = threading.Thread(target=self._work, daemon=True)
        self._worker.start()

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            try:
                job()
            except Exception:  # noqa: S110 - capture keeps its failures; a bug ends nothing
                pass
            finally:
                self._queue.task_done()

    def submit(self, job: Callable[[], None]) -> None:
        """Queue ``job``; returns at once."""
        self._queue.put(job)

    def run(self, job: Callable[[], str]) -> str:
        """Queue ``job`` and wait for it; what it returned (``""`` when it raised)."""
        done = threading.Event()
        said: list[str] = []

        def wrapped() -> None:
            try:
                said.append(job())
            finally:
                done.set()

        self.submit(wrapped)
        done.wait()
        return said[0] if said else ""

    @property
    def busy(self) -> bool:
        """Whether a capture is queued or under way."""
        return self._queue.unfinished_tasks > 0

    def capture(
        self,
        args: list[str],
        data: bytes,
        origin: tuple[str, str, str],
        unheard: str | None = None,
    ) -> str:
        """:func:`agc.cli.hook.capture` in the queue, from the hook's working folder;
        waits for it."""
        return self.run(lambda: _capture(args, data, origin, unheard))

    def capture_later(self, args: list[str], data: bytes, origin: tuple[str, str, str]) -> None:
        """:func:`agc.cli.hook.capture` in the queue; returns at once."""

        def job() -> None:
            _capture(args, data, origin, None)

        self.submit(job)


def _capture(
    args: list[str], data: bytes, origin: tuple[str, str, str], unheard: str | None
) -> str:
    from agc.cli.hook import capture  # noqa: PLC0415 - loaded by main already

    with contextlib.suppress(OSError):
        os.chdir(origin[0])  # a relative path in the event is the hook's
    return capture(args, data, origin=origin, unheard=unheard)


class Listeners:
    """The process's HTTP listeners, by port (see :mod:`agc.cli._hookhttp`)."""

    def __init__(self, captures: Captures, *, keeper: bool = False) -> None:
        self._captures = captures
        self._keeper = keeper  # listeners take a port back from its keeper
        self._ports: dict[int, HookListener] = {}
        self._lock = threading.Lock()
        # Ports another user held, whose hooks were moved: why, and the sessions told.
        self._moved: dict[int, str] = {}
        self._told: dict[int, set[str]] = {}
        self.retiring = threading.Event()  # a listener's secret was retired: the process exits

    def ensure(self, port: int, origin: tuple[str, str, str]) -> HookListener | str:
        """The listener of ``port``, started when it is not yet, with the secret kept
        under the hook's state folder (``origin[2]``); why there is none, in words,
        when no secret is kept for this port there, or when another user's program
        holds the port: agc's hooks are then moved off it first (:meth:`_move`)."""
        state = {"XDG_STATE_HOME": origin[2]}
        kept = read_http_hook(state)
        with self._lock:
            if kept is None or kept.port != port:
                if port in self._moved:
                    return self._moved[port]
                owner = listener_owner(port)
                if kept is not None and owner is not None and owner != os.getuid():
                    # Moved before (a move stopped between its two writes leaves the
                    # settings naming this port): the settings are moved again.
                    return self._move(port, origin)
                if kept is None and retired_http_port(state) == port:
                    return (
                        "agc's HTTP hooks were uninstalled (agc hooks uninstall) and their "
                        f"secret retired: the tool events this session sends to 127.0.0.1:"
                        f"{port} are not captured"
                    )
                return (
                    f"no secret of agc's HTTP hooks on port {port} is kept in "
                    f"{http_settings_path(state)} (or another user may read it): "
                    "run `agc hooks install --client claude-code` again"
                )
            listener = self._ports.get(port)
            if listener is None or listener.problem is not None:
                listener = HookListener(
                    port, kept.secret, origin, self._captures.capture_later, keeper=self._keeper
                )
                listener.start()
                self._ports[port] = listener
                if listener.taken and listener_owner(port) != os.getuid():
                    return self._move(port, origin)
            else:
                listener.update(kept.secret, origin)
            return listener

    def _move(self, port: int, origin: tuple[str, str, str]) -> str:
        """Another user's program (or one agc cannot name) holds ``port``: Claude Code
        sends it the tool events of every session that names the port, with the secret
        in their header. Keep a new port and secret, move agc's hooks in the user's
        Claude Code settings to them (:func:`agc.capture.move_http_hooks`) and listen on
        the new port at once (held from now on), all before the synchronous event that
        found it is answered; why, in words (the sessions that name ``port`` are told
        so: :meth:`told`)."""
        owner = listener_owner(port)
        who = "a program agc cannot name" if owner is None else f"a program of uid {owner}"
        said = (
            f"{who} holds 127.0.0.1:{port}, where Claude Code sends this session's tool "
            "events and the secret in their header"
        )
        environ = {**os.environ, "XDG_STATE_HOME": origin[2]}

        def hold(listening: socket.socket, hook: HttpHook) -> None:
            # The new port, bound before any file names it: served from now on.
            listener = HookListener(
                hook.port, hook.secret, origin, self._captures.capture_later, keeper=self._keeper
            )
            listener.start(listening)
            self._ports[hook.port] = listener

        try:
            hook, change = move_http_hooks(port, environ=environ, hold=hold)
        except AgcError as exc:
            said += f"; agc could not move its hooks off it: {exc.message}"
        else:
            said += (
                f"; agc moved its hooks in {change.path} to port {hook.port} and a new "
                "secret (sessions started from now on use them; this session's tool "
                "events still go to that program, and agc no longer hears the old secret)"
            )
            listener = self._ports.get(hook.port)
            if listener is None or listener.problem is not None:
                listener = HookListener(
                    hook.port,
                    hook.secret,
                    origin,
                    self._captures.capture_later,
                    keeper=self._keeper,
                )
                listener.start()
                self._ports[hook.port] = listener
        self._moved[port] = said
        return said

    def told(self, port: int, session: str | None) -> str | None:
        """Why ``port`` was moved off (:meth:`_move`), the first time it is asked for
        ``session``; ``None`` when it was not, or the session was told."""
        with self._lock:
            said = self._moved.get(port)
            if said is None or session is None:
                return None
            told = self._told.setdefault(port, set())
            if session in told:
                return None
            told.add(session)
            return said

    def drop_retired(self) -> list[int]:
        """Stop the listeners whose secret was retired (``agc hooks uninstall``): their
        port let go, handed to no keeper; the ports stopped (:attr:`retiring` is set
        when any was, and the process then exits)."""
        with self._lock:
            retired = [port for port, found in self._ports.items() if found.retired()]
            for port in retired:
                self._ports.pop(port).stop()
        if retired:
            self.retiring.set()
        return retired

    def holding(self) -> bool:
        with self._lock:
            return any(listener.holding() for listener in self._ports.values())

    def stop(self, *, keep: bool = False) -> None:
        """Stop listening; with ``keep``, each port listened on is first handed to a
        port keeper (:meth:`HookListener.hand_over`)."""
        with self._lock:
            for listener in self._ports.values():
                if keep:
                    listener.hand_over()
                listener.stop()


def serve(
    path: str,
    *,
    idle_s: float,
    stop: threading.Event | None = None,
    listen: tuple[str, str] | None = None,
    keep: bool = False,
) -> int:
    """Serve the Unix socket ``path`` (made mode 0600; its folder is the user's alone)
    until ``idle_s`` seconds pass without a request (and no HTTP-hooked session is
    open), or ``stop`` is set (what serves it in a thread ends it so; the captures under
    way are finished first); ``listen``: ``(port, state folder)`` to listen on at once,
    before the socket (a hook that started this process waits for the socket); a port
    a keeper holds is taken back from it; ``keep``: on the way out, hand each port
    listened on to a port keeper (its listening socket passed on:
    :func:`agc.cli._hookclient.keep_port`); returns 0."""
    stamps = _agc_files()
    captures = Captures()
    listeners = Listeners(captures, keeper=True)
    if listen is not None and listen[0].isdigit():
        home = os.environ.get("HOME") or os.path.expanduser("~")
        default = os.environ.get("AGC_HOME") or os.path.join(home, ".agc")
        listeners.ensure(int(listen[0]), ("/", default, listen[1]))
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # Bound and listening under a name of its own, then renamed into place: a hook that
    # finds the socket can connect (between bind and listen it would be refused). The
    # rename replaces what a resident that was killed left: the lock says none runs.
    # (A short name in the same folder: a socket's path holds at most 107 bytes.)
    ready = os.path.join(os.path.dirname(path), f".{os.getpid()}.s")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(ready)
    mask = os.umask(0o177)
    try:
        server.bind(ready)
    finally:
        os.umask(mask)
    server.listen(128)
    os.rename(ready, path)
    mine = os.stat(path).st_ino
    server.settimeout(min(idle_s, _POLL_S if stop is None else 0.05))
    workers: list[threading.Thread] = []
    last = time.monotonic()
    try:
        while True:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                workers = [w for w in workers if w.is_alive()]
                listeners.drop_retired()  # uninstalled without a word to this process
                stopped = (stop is not None and stop.is_set()) or listeners.retiring.is_set()
                idle = time.monotonic() - last > idle_s and not listeners.holding()
                if not workers and not captures.busy and (stopped or idle):
                    break
                continue
            last = time.monotonic()
            if _changed(stamps):
                conn.close()  # no answer: the hook captures it, and starts a new resident
                break
            worker = threading.Thread(target=answer, args=(conn, captures, listeners), daemon=True)
            worker.start()
            workers.append(worker)
    finally:
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == mine:
                os.unlink(path)
        server.close()
        for worker in workers:
            worker.join()
        listeners.stop(keep=keep)  # the port held on by a keeper: no other user takes it
        captures.run(lambda: "")  # what HTTP queued before is captured
    return 0


def answer(conn: socket.socket, captures: Captures, listeners: Listeners | None = None) -> None:
    """Read one request from ``conn``, capture it (in ``captures``' queue) and answer;
    closes ``conn``. Never raises."""
    with conn:
        try:
            conn.settimeout(_READ_S)
            got = _receive(conn)
        except OSError:
            return
        head, data, want = got
        if head is None:
            return
        args, origin, note, client, retire = head
        if retire:  # `agc hooks uninstall` retired a secret: let its port go, then exit
            dropped = listeners.drop_retired() if listeners is not None else []
            with contextlib.suppress(OSError):
                conn.sendall(b"0" + b" ".join(b"%d" % port for port in dropped))
            return
        if len(data) < want:
            _keep_cut(args, origin, data, want)
            return
        try:
            conn.sendall(b"R")
            go = conn.recv(1)
        except OSError:
            go = b""
        if go == b"N":
            return  # it answered too late: the hook captures the event itself
        if go != b"G":
            _keep_cut(args, origin, data, want)
            return
        port = http_port(args)
        listener: HookListener | str | None = None
        session, hook = event_names(data) if port is not None else (None, None)
        if listeners is not None and port is not None and port.isdigit():
            listener = listeners.ensure(int(port), origin)
            moved = listeners.told(int(port), session)
            if moved is not None:
                # Kept for the run before its event: its tool events went elsewhere.
                captures.run(lambda: _keep_taken(args, origin, data, moved))
        said = ""
        if isinstance(listener, HookListener):
            if not note:
                said = captures.capture(args, data, origin, listener.unheard(session))
            listener.note(session, hook, origin, client)
        elif not note:
            said = captures.capture(args, data, origin, listener)
        with contextlib.suppress(OSError):
            conn.sendall(b"0" + said.encode("utf-8", "replace"))


def _receive(
    conn: socket.socket,
) -> tuple[tuple[list[str], tuple[str, str, str], bool, int, bool] | None, bytes, int]:
    """``((args, origin, note, client pid, retire), event bytes, length announced)``;
    ``(None, b"", 0)`` when the fields did not all come or are not this protocol's
    (the client pid is 0 when the request names none; ``retire``: the request of
    :func:`agc.cli._hookclient.retire_resident`, no event)."""
    buffer = bytearray()
    end = -1
    while end < 0:
        chunk = conn.recv(65536)
        if not chunk:
            return None, b"", 0
        buffer += chunk
        end = buffer.find(b"\0\0")
    fields = bytes(buffer[:end]).split(b"\0")
    if fields[0] != PROTOCOL:
        return None, b"", 0
    args: list[str] = []
    named: dict[str, str] = {}
    for field in fields[1:]:
        name, _, value = field.partition(b"=")
        text = os.fsdecode(value)
        if name == b"arg":
            args.append(text)
        else:
            named[name.decode("ascii", "replace")] = text
    try:
        want = int(named["len"])
        origin = (named["cwd"], named["store"], named["state"])
    except (KeyError, ValueError):
        return None, b"", 0
    data = bytearray(buffer[end + 2 :])
    while len(data) < want:
        chunk = conn.recv(min(1 << 20, want - len(data)))
        if not chunk:
            break
        data += chunk
    pid = named.get("pid", "")
    client = int(pid) if pid.isdigit() else 0
    head = (args, origin, named.get("note") == "1", client, named.get("retire") == "1")
    return head, bytes(data[:want]), want


def _keep_taken(args: list[str], origin: tuple[str, str, str], data: bytes, said: str) -> str:
    """Keep the ``hook-port-taken`` failure of the event's run (see :meth:`Listeners._move`)."""
    from agc.cli.hook import keep_failure  # noqa: PLC0415 - loaded by main already

    keep_failure(args, origin, data, said, code=HookPortTakenError.code)
    return ""


def _keep_cut(args: list[str], origin: tuple[str, str, str], data: bytes, want: int) -> None:
    """Keep the failure of an event the hook process did not hand over whole (see the
    module docstring)."""
    from agc.cli.hook import keep_failure  # noqa: PLC0415 - loaded by main already

    keep_failure(
        args,
        origin,
        data,
        f"the hook process stopped after handing over {len(data):,} of the event's "
        f"{want:,} bytes, before it said go (it was killed, or its client timed it "
        "out); the event was not captured",
    )


def _agc_files() -> dict[str, int]:
    """Modification time (ns) of every file of agc this process loaded."""
    stamps: dict[str, int] = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if (name == "agc" or name.startswith("agc.")) and path:
            with contextlib.suppress(OSError):
                stamps[path] = os.stat(path).st_mtime_ns
    return stamps


def _changed(stamps: dict[str, int]) -> bool:
    for path, stamp in stamps.items():
        try:
            if os.stat(path).st_mtime_ns != stamp:
                return True
        except OSError:
            return True
    return False
