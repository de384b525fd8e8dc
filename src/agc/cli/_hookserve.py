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

The process exits after ``idle_s`` seconds without a request, or at once when a file of
agc it loaded has changed (an upgrade: the next hook starts a resident of the new agc);
a capture under way is finished first.
"""

import contextlib
import fcntl
import os
import re
import socket
import sys
import threading
import time
from typing import Final

from agc.cli._hookclient import IDLE_S, PROTOCOL

__all__ = ["answer", "main", "serve"]

_READ_S: Final = 5.0  # a hook process sends its event at once; a slower one is stuck
_POLL_S: Final = 5.0
_SESSION: Final = re.compile(rb'"session_id"\s*:\s*("(?:[^"\\]|\\.){1,400}")')


def main(argv: list[str]) -> int:
    """The resident process (``_hookclient.py --serve FOLDER KEY``): take
    ``FOLDER/KEY.lock`` (exit at once when another resident process holds it), then
    :func:`serve` ``FOLDER/KEY.sock`` for :data:`~agc.cli._hookclient.IDLE_S` idle
    seconds; returns 0."""
    folder, key = argv
    try:
        lock = os.open(os.path.join(folder, key + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another one serves (or the folder is gone)
    os.ftruncate(lock, 0)
    os.write(lock, b"%d\n" % os.getpid())  # who serves: for `kill`
    _load()
    return serve(os.path.join(folder, key + ".sock"), idle_s=IDLE_S)


def _load() -> None:
    """Load what a capture uses (the writer, the secret detector with its rules) before
    the first event, not while a hook waits."""
    import agc.cli.hook  # noqa: F401, PLC0415
    from agc.capture import ToolEvent  # noqa: PLC0415
    from agc.flows import capture_hook_event, record_capture_failure  # noqa: F401, PLC0415

    ToolEvent(
        event="call", source="hook", client="codex", session_id="s", input={"a": "b c"}
    ).to_record()


def serve(path: str, *, idle_s: float, stop: threading.Event | None = None) -> int:
    """Serve the Unix socket ``path`` (made mode 0600; its folder is the user's alone)
    until ``idle_s`` seconds pass without a request, or ``stop`` is set (what serves
    it in a thread ends it so; the captures under way are finished first); returns 0."""
    stamps = _agc_files()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a resident that was killed left it: the lock says none runs
    mask = os.umask(0o177)
    try:
        server.bind(path)
    finally:
        os.umask(mask)
    server.listen(128)
    mine = os.stat(path).st_ino
    server.settimeout(min(idle_s, _POLL_S if stop is None else 0.05))
    turn = threading.Lock()
    workers: list[threading.Thread] = []
    last = time.monotonic()
    try:
        while True:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                workers = [w for w in workers if w.is_alive()]
                stopped = stop is not None and stop.is_set()
                if not workers and (stopped or time.monotonic() - last > idle_s):
                    break
                continue
            last = time.monotonic()
            if _changed(stamps):
                conn.close()  # no answer: the hook captures it, and starts a new resident
                break
            worker = threading.Thread(target=answer, args=(conn, turn), daemon=True)
            worker.start()
            workers.append(worker)
    finally:
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == mine:
                os.unlink(path)
        server.close()
        for worker in workers:
            worker.join()
    return 0


def answer(conn: socket.socket, turn: threading.Lock) -> None:
    """Read one request from ``conn``, capture it (holding ``turn``) and answer; closes
    ``conn``. Never raises."""
    from agc.cli.hook import capture  # noqa: PLC0415 - loaded by main already

    with conn:
        try:
            conn.settimeout(_READ_S)
            got = _receive(conn)
        except OSError:
            return
        head, data, want = got
        if head is None:
            return
        args, origin = head
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
        with turn:  # one capture at a time: the working folder is the hook's meanwhile
            with contextlib.suppress(OSError):
                os.chdir(origin[0])  # a relative path in the event is the hook's
            said = capture(args, data, origin=origin)
        with contextlib.suppress(OSError):
            conn.sendall(b"0" + said.encode("utf-8", "replace"))


def _receive(
    conn: socket.socket,
) -> tuple[tuple[list[str], tuple[str, str, str]] | None, bytes, int]:
    """``((args, origin), event bytes, length announced)``; ``(None, b"", 0)`` when the
    fields did not all come or are not this protocol's."""
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
    return (args, origin), bytes(data[:want]), want


def _keep_cut(args: list[str], origin: tuple[str, str, str], data: bytes, want: int) -> None:
    """Keep the failure of an event the hook process did not hand over whole (see the
    module docstring)."""
    from agc.capture import run_id_for  # noqa: PLC0415
    from agc.cli.hook import _parse  # noqa: PLC0415
    from agc.errors import AgcError  # noqa: PLC0415
    from agc.flows import parse_json, record_capture_failure  # noqa: PLC0415

    client, store, _ = _parse(args)
    cwd, default, state = origin
    store = store or default
    if "://" not in store:
        store = os.path.join(cwd, store)
    run_id = None
    found = _SESSION.search(data)
    if client is not None and found is not None:
        with contextlib.suppress(AgcError, ValueError, TypeError):
            session = parse_json(found.group(1))
            if isinstance(session, str):
                run_id = run_id_for(client, session)
    record_capture_failure(
        store=store,
        code="hook-event-invalid",
        message=(
            f"the hook process stopped after handing over {len(data):,} of the event's "
            f"{want:,} bytes, before it said go (it was killed, or its client timed it "
            "out); the event was not captured"
        ),
        client=client or "unknown",
        run_id=run_id,
        environ={"XDG_STATE_HOME": state},
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
