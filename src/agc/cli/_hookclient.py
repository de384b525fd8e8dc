"""The hook command a client runs on every event: hands the event to agc's resident
capture process and waits for its answer. Standard library only, run as a script.

Installed by ``agc hooks install`` as ``<python> -I -S <this file> --client C [--store S]``
(``-S``: no ``site`` import, so the interpreter starts in a few milliseconds). A client
(Claude Code, the Codex CLI, the Gemini CLI) starts it for each hook event with the event
JSON on stdin; its contract is ``agc hook``'s: exit 0, nothing on stdout.

1. It reads the event, connects to the resident capture process of this agc
   installation (a Unix socket, mode 0600, in a folder only the user can enter:
   ``$XDG_RUNTIME_DIR/agc/``, else ``<tmp>/agc-<uid>/``) and sends it the command's
   arguments, what the store defaults to in the client's environment, and the event.
2. The resident process answers ``R`` once it holds the whole event; this command says
   ``G`` (go: from then on the event is the resident's to capture), and the resident
   answers ``0`` (with the failure's message, if any) once the event is appended to its
   run and vouched for by a crash checkpoint, or its failure kept: only then does this
   command exit.
3. When no resident process answers (none runs yet, it exited when idle, it was killed,
   it runs an older agc), this command starts one (detached: its own session, its
   standard streams on ``/dev/null``) and captures the event itself, as ``agc hook``
   does, so no event waits for the start and none is lost. When the resident process
   took the event (``R``) but died before its answer, the event is captured here with
   ``retry``: it is not appended a second time when the run's last record is already
   this event.

The resident process is this script run with ``--serve DIR KEY``
(:mod:`agc.cli._hookserve`): one per user and installation at a time (an exclusive lock
on ``DIR/KEY.lock``), it exits after :data:`IDLE_S` seconds without an event (while no
session sending HTTP hooks is open), handing the HTTP port it listened on to a port
keeper, this script run with ``--keep`` (:func:`keep_port`), until the next resident
takes it back.

With ``--http PORT`` (Claude Code, whose per-tool-call events ``agc hooks install`` sends
as HTTP hooks to the resident process on ``127.0.0.1:PORT``, :mod:`agc.cli._hookhttp`),
this command is one of the session's synchronous events, which the client waits for:
it makes sure the resident process listens on the port before it exits. When no
resident answered, it captures the event saying that the tool events since the
session's previous event may have gone unheard, starts a resident process (which
listens at once), waits for it (at most :data:`START_WAIT_S`) and tells it the session
is heard from now on (a request with ``note=1``: nothing captured).
"""

import os
import signal
import stat
import sys

PROTOCOL = b"agc-hook/1"
"""The first field of a request; a resident process of another protocol refuses it."""

IDLE_S = 300.0
"""How long the resident process waits for the next event before it exits (seconds)."""

TAKE_WAIT_S = 1.0
"""How long this command waits for the resident process to say it holds the event."""

DONE_WAIT_S = 8.0
"""How long it then waits for the event to be captured (the client gives a hook 10 s)."""

START_WAIT_S = 5.0
"""How long a synchronous event of an HTTP-hooked session waits for a resident process
it started to listen (seconds)."""

UNHEARD = (
    "no agc resident capture process answered this synchronous event, so none was "
    "listening for the session's HTTP hook events since its previous event"
)
"""Why a synchronous event captured by the hook command itself may follow lost events."""

_MAX_FOLDER = 80  # bytes; "/<16 hex>.sock" follows, within a socket path's 107
_MAX_EVENT = (64 << 20) + 1  # agc reads at most 64 MiB (agc.capture.MAX_HOOK_EVENT_BYTES)


def socket_dir(environ: "dict[str, str] | os._Environ[str]") -> "str | None":
    """The private folder of the user's sockets (``$XDG_RUNTIME_DIR/agc``, else
    ``$TMPDIR/agc-<uid>``, else ``/tmp/agc-<uid>``: the first whose socket paths fit
    the 107 bytes a Unix socket's path may have), made when missing; ``None`` when it
    is not a folder the user alone owns and can enter (then no resident process is
    used)."""
    candidates = []
    for name, leaf in (("XDG_RUNTIME_DIR", "agc"), ("TMPDIR", f"agc-{os.getuid()}")):
        base = environ.get(name, "")
        if base and os.path.isabs(base) and os.path.isdir(base):
            candidates.append(os.path.join(base, leaf))
    # Safe in a shared /tmp: used only when the user owns it and no one else may enter.
    candidates.append(f"/tmp/agc-{os.getuid()}")  # noqa: S108
    folder = next(c for c in candidates if len(os.fsencode(c)) <= _MAX_FOLDER)
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    return folder if _private(folder) else None


def installation_key(executable: "str | None" = None, script: "str | None" = None) -> str:
    """Names the resident process of this interpreter and this agc (16 hex digits of the
    FNV-1a hash of both paths and this file's modification time): another installation,
    or this one upgraded, has its own. ``executable`` and ``script``: those of another
    hook command (default: this process's interpreter and this file).

    Raises:
        OSError: ``script`` cannot be read."""
    here = os.path.abspath(__file__ if script is None else script)
    python = sys.executable if executable is None else executable
    text = f"{python}\0{here}\0{os.stat(here).st_mtime_ns}".encode("utf-8", "surrogateescape")
    value = 0xCBF29CE484222325
    for byte in text:
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


def request(
    args: "list[str]",
    data: bytes,
    environ: "dict[str, str] | os._Environ[str]",
    *,
    note: bool = False,
) -> bytes:
    """The request's bytes: ``PROTOCOL``, then ``name=value`` fields (``arg`` once per
    argument, ``cwd``, ``home``: the store when neither ``--store`` nor ``$AGC_HOME``
    names one, ``state``: ``$XDG_STATE_HOME`` or its default, ``len``; ``note=1`` when
    the event is only to be noted as heard, not captured; for ``--http``, ``pid``: the
    client process, :func:`client_pid`), each ended by a NUL byte, an empty field, then
    the event's bytes."""
    home = environ.get("HOME") or os.path.expanduser("~")
    agc_home = environ.get("AGC_HOME", "")
    state = state_dir(environ)
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = "/"
    fields = [PROTOCOL]
    fields += [b"arg=" + os.fsencode(arg) for arg in args]
    fields += [
        b"cwd=" + os.fsencode(cwd),
        b"store=" + os.fsencode(agc_home or os.path.join(home, ".agc")),
        b"state=" + os.fsencode(state),
        b"len=%d" % len(data),
    ]
    if note:
        fields.append(b"note=1")
    if http_port(args) is not None:
        fields.append(b"pid=%d" % client_pid())
    return b"\0".join(fields) + b"\0\0" + data


_SHELLS = frozenset({b"sh", b"dash", b"bash", b"zsh", b"ksh", b"mksh", b"busybox"})


def client_pid() -> int:
    """The pid of the client that ran this hook: the parent process, or, when that is a
    shell running the hook's command (a client runs it with ``sh -c``), the shell's
    parent (``/proc/PID/stat``); 0 when it is not known (no ``/proc``, or init)."""
    pid = os.getppid()
    for _ in range(3):
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                line = handle.read(4096)
        except OSError:
            break
        head, _, rest = line.rpartition(b")")
        if head.partition(b"(")[2] not in _SHELLS:
            break
        try:
            pid = int(rest.split()[1])
        except (IndexError, ValueError):
            return 0
    return pid if pid > 1 else 0


def exchange(sock: "object", payload: bytes) -> "tuple[bool, bytes | None]":
    """Hand ``payload`` over on a connected socket; ``(taken, answer)``: whether the
    resident process took the event (then it captures it, and this command must not
    capture it unless it says nothing more), and its final answer (``None`` when none
    came).

    The resident process answers ``R`` once it holds the whole event; this command then
    says ``G`` (go), or ``N`` when ``R`` came too late (it captures the event itself):
    the resident captures only after ``G``, so an event is never captured by both."""
    import _socket  # noqa: PLC0415 - stdlib C module; `socket` costs more to import

    assert isinstance(sock, _socket.socket)
    first = got = b""
    try:
        sock.settimeout(DONE_WAIT_S)
        sock.sendall(payload)
        sock.settimeout(TAKE_WAIT_S)
        try:
            first = sock.recv(1)
        except TimeoutError:
            sock.send(b"N")
            return False, None
        if first != b"R":  # closed: it died, or it runs an older agc
            return False, None
        sock.sendall(b"G")
        sock.settimeout(DONE_WAIT_S)
        while chunk := sock.recv(65536):
            got += chunk
    except OSError:  # refused, reset, or no answer in time
        return first == b"R", None
    return True, (got[1:] if got[:1] == b"0" else None)


def start_resident(folder: str, key: str, listen: "list[str] | None" = None) -> None:
    """Start the resident capture process, detached (a session of its own, standard
    streams on ``/dev/null``, no other inherited descriptor), with ``listen`` (``--http
    PORT --state DIR``) when it is to listen for HTTP hooks at once; never raises."""
    _detached(["--serve", folder, key, *(listen or [])])


def _detached(args: "list[str]", fd: "int | None" = None) -> None:
    """Run this script with ``args`` in a detached child process: a session of its own,
    standard streams on ``/dev/null``, no inherited descriptor but ``fd`` (as
    descriptor 3, when given), in ``/``; never raises."""
    try:
        pid = os.fork()
    except OSError:
        return
    if pid:
        return
    try:  # the child: becomes the resident process or the keeper
        os.setsid()
        if fd is not None:
            os.dup2(fd, 3)
            os.set_inheritable(3, True)
        null = os.open(os.devnull, os.O_RDWR)
        for number in (0, 1, 2):
            os.dup2(null, number)
        os.closerange(3 if fd is None else 4, 65536)
        os.chdir("/")
        os.execv(  # noqa: S606 - this interpreter, with this file: no shell
            sys.executable,
            [sys.executable, "-I", "-S", os.path.abspath(__file__), *args],
        )
    finally:
        os._exit(0)


KEEP_CHECK_S = 60.0
"""How often the port keeper looks whether agc's hooks still name its port (seconds)."""

_BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def keeper_path(folder: str, port: int) -> "str | None":
    """The Unix socket of the keeper of ``port`` in ``folder`` (the state folder of
    agc's HTTP hooks), ``None`` when its path is longer than a Unix socket's 107 bytes
    (then no keeper is used)."""
    path = os.path.join(folder, f"port-{port}.keep")
    return path if len(os.fsencode(path)) <= 107 else None


def start_keeper(folder: str, state: str, fd: int, port: int) -> None:
    """Hand the listening socket ``fd`` of ``127.0.0.1:port`` to a port keeper
    (:func:`keep_port`: this script run with ``--keep``), detached as
    :func:`start_resident` starts the resident; never raises."""
    if keeper_path(folder, port) is None or not os.path.isdir(folder):
        return
    _detached(["--keep", folder, state, "3", str(port)], fd)


def keep_port(folder: str, state: str, fd: int, port: int) -> int:
    """The port keeper (``--keep FOLDER STATE FD PORT``): holds the listening socket
    ``fd`` of ``127.0.0.1:port`` that an exiting resident process handed it, so that no
    other user can bind the port while no resident runs (Linux refuses a second bind of
    a listening address). A connection to it is answered ``503`` unread. The next
    resident process takes the socket back through the Unix socket
    :func:`keeper_path` (mode 0600, in the folder of ``hook-http.json``: whatever socket
    folder a resident uses, it finds the keeper of its port there; the descriptor
    passed with ``SCM_RIGHTS``), and the keeper exits (``agc hooks uninstall`` takes it
    back so, and closes it, when it retires the secret); it exits too when agc's hooks
    no longer name the port (``STATE/agc/hook-http.json``) or its Unix socket is gone,
    looked at every :data:`KEEP_CHECK_S` seconds (on time, however often connections
    come). Returns 0."""
    import json  # noqa: PLC0415
    import select  # noqa: PLC0415
    import socket  # noqa: PLC0415
    import time  # noqa: PLC0415

    held = socket.socket(fileno=fd)
    held.setblocking(False)  # a connection reset before its accept must not hold the keeper
    path = keeper_path(folder, port)
    if path is None:
        return 0
    ready = os.path.join(folder, f".{os.getpid()}.k")
    door = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mask = os.umask(0o177)
    try:
        door.bind(ready)
    finally:
        os.umask(mask)
    door.listen(8)
    os.rename(ready, path)
    mine = os.stat(path).st_ino
    kept = os.path.join(state, "agc", "hook-http.json")
    check = time.monotonic() + KEEP_CHECK_S
    try:
        while True:
            wait = max(0.0, check - time.monotonic())
            readable, _, _ = select.select([held, door], [], [], wait)
            if held in readable:
                try:
                    conn, _ = held.accept()
                    with conn:
                        conn.sendall(_BUSY)
                except OSError:
                    pass
            if door in readable and _hand_over(door, held, port):
                return 0
            if time.monotonic() >= check:  # on time, however often others connect
                check = time.monotonic() + KEEP_CHECK_S
                try:
                    if os.stat(path).st_ino != mine:
                        return 0  # its socket replaced: another keeper, or none wanted
                except OSError:
                    return 0  # its folder is gone
                try:
                    with open(kept, encoding="utf-8") as handle:
                        named = json.load(handle).get("port")
                except FileNotFoundError:
                    return 0
                except (OSError, ValueError, AttributeError):
                    continue
                if named != port:
                    return 0
    finally:
        try:
            if os.stat(path).st_ino == mine:
                os.unlink(path)
        except OSError:
            pass
        held.close()
        door.close()


def _hand_over(door: "object", held: "object", port: int) -> bool:
    """Answer one connection to the keeper's Unix socket: the listening socket passed
    to whoever asks for its port; whether it was."""
    import socket  # noqa: PLC0415

    assert isinstance(door, socket.socket)
    assert isinstance(held, socket.socket)
    try:
        conn, _ = door.accept()
    except OSError:
        return False
    with conn:
        try:
            conn.settimeout(1.0)
            if conn.recv(16) != b"%d" % port:
                return False
            socket.send_fds(conn, [b"P"], [held.fileno()])
        except OSError:
            return False
    return True


def take_kept(folder: str, port: int) -> "object | None":
    """The listening socket of ``127.0.0.1:port`` taken back from its keeper
    (:func:`keep_port`), ``None`` when no keeper holds it, or when what answers is not
    this user's keeper of that port: ``folder`` must be a folder of this user's that no
    one else may write (mode 0700), the keeper's process this user's (``SO_PEERCRED``,
    Linux's credentials of a Unix socket's peer), and the socket passed a TCP socket
    listening on 127.0.0.1 at ``port`` (else it is closed unused)."""
    import socket  # noqa: PLC0415
    import struct  # noqa: PLC0415

    path = keeper_path(folder, port)
    if path is None:
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    fds: list[int] = []
    try:
        conn.settimeout(1.0)
        conn.connect(path)  # closed unasked when not this user's keeper
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        if struct.unpack("3i", creds)[1] != os.getuid() or not _private(folder):
            return None
        conn.sendall(b"%d" % port)
        _, fds, _, _ = socket.recv_fds(conn, 1, 1)
    except OSError:
        return None
    finally:
        conn.close()
    if not fds:
        return None
    for extra in fds[1:]:
        os.close(extra)
    try:
        taken = socket.socket(fileno=fds[0])
    except OSError:
        os.close(fds[0])
        return None
    try:
        listening = taken.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
        mine = (
            taken.family == socket.AF_INET
            and taken.type == socket.SOCK_STREAM
            and listening == 1
            and taken.getsockname() == ("127.0.0.1", port)
        )
    except OSError:
        mine = False
    if not mine:
        taken.close()
        return None
    return taken


def _private(folder: str) -> bool:
    """Whether ``folder`` is a folder (not a link) of this user's that no one else may
    write or enter (no permission bit for group or others)."""
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def capture_here(args: "list[str]", data: bytes, *, retry: bool) -> int:
    """Capture the event in this process, as ``agc hook`` does (see
    :func:`agc.cli.hook.run`); for an HTTP-hooked session (``--http``), saying that no
    resident process listened (:data:`UNHEARD`)."""
    import io  # noqa: PLC0415

    load_site()
    from agc.cli.hook import run  # noqa: PLC0415

    unheard = UNHEARD if http_port(args) is not None else None
    return run(args, stdin=io.BytesIO(data), retry=retry, unheard=unheard)


def http_port(args: "list[str]") -> "str | None":
    """The ``--http PORT`` of the command line (``--http=PORT`` too), ``None`` when none."""
    for index, word in enumerate(args):
        if word == "--http" and index + 1 < len(args):
            return args[index + 1]
        if word.startswith("--http="):
            return word.partition("=")[2]
    return None


def state_dir(environ: "dict[str, str] | os._Environ[str]") -> str:
    """``$XDG_STATE_HOME`` when absolute, else ``~/.local/state``."""
    state = environ.get("XDG_STATE_HOME", "")
    if state and os.path.isabs(state):
        return state
    home = environ.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, ".local", "state")


def await_resident(args: "list[str]", data: bytes) -> None:
    """For an HTTP-hooked session (``--http``): wait (at most :data:`START_WAIT_S`) for the
    resident process to answer, then tell it the event's session is heard from now on
    (``note=1``); never raises."""
    if http_port(args) is None:
        return
    import time  # noqa: PLC0415

    folder = socket_dir(os.environ)
    if folder is None:
        return
    import _socket  # noqa: PLC0415

    path = os.path.join(folder, installation_key() + ".sock")
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(TAKE_WAIT_S)
            sock.connect(path)
            exchange(sock, request(args, data, os.environ, note=True))
            return
        except OSError:
            time.sleep(0.02)
        finally:
            sock.close()


def load_site() -> None:
    """Make the installation's packages importable, as a start without ``-I -S`` has
    them: ``site`` (the venv's, or the system's and the user's site-packages; the user's
    unless ``$PYTHONNOUSERSITE`` is set, which ``-I`` made Python ignore)."""
    import site  # noqa: PLC0415

    site.ENABLE_USER_SITE = not os.environ.get("PYTHONNOUSERSITE")
    site.main()


def main(argv: "list[str]") -> int:
    """The hook command (see the module docstring); returns 0."""
    if argv[:1] == ["--keep"] and len(argv) == 5 and argv[3].isdigit() and argv[4].isdigit():
        return keep_port(argv[1], argv[2], int(argv[3]), int(argv[4]))
    if argv[:1] == ["--serve"] and len(argv) in (3, 7):
        # The resident process: agc.cli._hookserve reads this module's constants, so it
        # is loaded by name here, once the installation's packages are importable.
        import importlib  # noqa: PLC0415

        load_site()
        return int(importlib.import_module("agc.cli._hookserve").main(argv[1:]))
    try:
        data = sys.stdin.buffer.read(_MAX_EVENT) if sys.stdin is not None else b""
    except (OSError, ValueError):
        data = b""
    try:
        taken, answer = through_resident(argv, data)
    except Exception:  # a bug here must not cost the event: it is captured here
        taken, answer = False, None
    if answer is None:
        capture_here(argv, data, retry=taken)
        await_resident(argv, data)
        return 0
    if answer:
        _say(answer)
    return 0


def resident_answers(executable: str, script: str) -> "tuple[bool, str] | None":
    """Whether the resident capture process of the hook command ``executable script``
    accepts a connection on its socket, and the socket's path; ``None`` when there is no
    private socket folder or the script cannot be read. A connection that sends nothing
    is closed by the resident without a capture or a failure."""
    folder = socket_dir(os.environ)
    try:
        key = installation_key(executable, script)
    except OSError:
        return None
    if folder is None:
        return None
    import _socket  # noqa: PLC0415

    path = os.path.join(folder, key + ".sock")
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(TAKE_WAIT_S)
        sock.connect(path)
    except OSError:
        return False, path
    finally:
        sock.close()
    return True, path


def retire_resident(folder: str, key: str, state: str) -> "list[int] | None":
    """Tell the resident capture process ``KEY`` of the socket folder ``folder`` that the
    secret of agc's HTTP hooks under ``state`` (``$XDG_STATE_HOME``) was retired (``agc
    hooks uninstall``): it stops listening on that port (handed to no keeper) and exits
    once its captures are done. The ports it stopped listening on (answered once they
    are let go); ``None`` when no resident answered. Never raises."""
    import _socket  # noqa: PLC0415

    fields = [PROTOCOL, b"cwd=/", b"store=", b"state=" + os.fsencode(state), b"len=0", b"retire=1"]
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    got = b""
    try:
        sock.settimeout(DONE_WAIT_S)
        sock.connect(os.path.join(folder, key + ".sock"))
        sock.sendall(b"\0".join(fields) + b"\0\0")
        while chunk := sock.recv(4096):
            got += chunk
    except OSError:
        return None
    finally:
        sock.close()
    if got[:1] != b"0":
        return None
    return [int(word) for word in got[1:].split() if word.isdigit()]


def through_resident(argv: "list[str]", data: bytes) -> "tuple[bool, bytes | None]":
    """Hand the event to the resident capture process (:func:`exchange`), starting one
    when none answers; ``(False, None)`` when there is no private socket folder."""
    folder = socket_dir(os.environ)
    if folder is None:
        return False, None
    import _socket  # noqa: PLC0415

    key = installation_key()
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(TAKE_WAIT_S)
        port = http_port(argv)
        listen = None if port is None else ["--http", port, "--state", state_dir(os.environ)]
        try:
            sock.connect(os.path.join(folder, key + ".sock"))
        except OSError:
            start_resident(folder, key, listen)
            return False, None
        taken, answer = exchange(sock, request(argv, data, os.environ))
    finally:
        sock.close()
    if answer is None:
        start_resident(folder, key, listen)  # it died, or runs an older agc (or is stuck)
    return taken, answer


def _say(text: bytes) -> None:
    try:
        sys.stderr.buffer.write(text)
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass


#: What a client may end a hook it runs in the background with when its turn ends
#: (Claude Code ends its ``async`` hooks so, before the process exits): ignored by the
#: hook command, so that an event it has read is handed on, and restored in the
#: resident process (which inherits the disposition across ``exec``).
_END_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


if __name__ == "__main__":
    for _number in _END_SIGNALS:
        resident = sys.argv[1:2] in (["--serve"], ["--keep"])
        signal.signal(_number, signal.SIG_DFL if resident else signal.SIG_IGN)
    try:
        main(sys.argv[1:])
    finally:
        sys.exit(0)  # whatever happened: the client is never stopped
