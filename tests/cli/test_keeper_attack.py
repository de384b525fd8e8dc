"""The port keeper's handover attacked: the resident takes back, through the keeper's
Unix socket, whatever listening socket is passed to it; it must take only its own
user's socket, listening on 127.0.0.1 at its port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agc.cli import _hookclient

# Another user's keeper: binds the keeper's path (the folder let it), then becomes uid
# 65534 before it listens (the credentials a peer sees), and passes a listening socket
# of its own, on another port, which it keeps a copy of (it accepts the victim's hooks).
FAKE_KEEPER = r"""
import os, socket, sys
door = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
door.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o666)
os.setgid(65534); os.setuid(65534)
door.listen(1)
mine = socket.socket(); mine.bind(("127.0.0.1", 0)); mine.listen(1)
print(mine.getsockname()[1], flush=True)
conn, _ = door.accept()
conn.recv(16)
socket.send_fds(conn, [b"P"], [mine.fileno()])
conn.close()
sys.stdin.read()
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a keeper as another user")
def test_the_resident_takes_back_only_its_own_user_s_socket_of_its_port(tmp_path: Path) -> None:
    folder = tmp_path / "agc"
    folder.mkdir(mode=0o777)
    os.chmod(tmp_path, 0o755)
    port = 23457
    path = _hookclient.keeper_path(str(folder), port)
    assert path is not None
    with subprocess.Popen(
        [sys.executable, "-c", FAKE_KEEPER, path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as keeper:
        assert keeper.stdout is not None
        assert keeper.stdin is not None
        theirs = int(keeper.stdout.readline())
        try:
            taken = _hookclient.take_kept(str(folder), port)
            if taken is not None:
                assert isinstance(taken, socket.socket)
                with taken:
                    assert taken.getsockname() == ("127.0.0.1", port), (
                        f"took the other user's socket on port {theirs}"
                    )
        finally:
            keeper.stdin.close()
            keeper.wait(5)


def test_a_keeper_poked_by_another_user_still_exits_when_its_port_is_no_longer_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json  # noqa: PLC0415
    import threading  # noqa: PLC0415

    state = tmp_path / "state"
    folder = state / "agc"
    folder.mkdir(parents=True)
    kept = folder / "hook-http.json"
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(8)
    port = listening.getsockname()[1]
    kept.write_text(json.dumps({"port": port, "secret": "s"}))
    monkeypatch.setattr(_hookclient, "KEEP_CHECK_S", 0.05)
    done = threading.Event()
    held = os.dup(listening.fileno())

    def keep() -> None:
        _hookclient.keep_port(str(folder), str(state), held, port)
        done.set()

    keeper = threading.Thread(target=keep, daemon=True)
    keeper.start()
    listening.close()
    stop = threading.Event()

    def poke() -> None:  # the other user: a connection every 10 ms
        while not stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
                    conn.recv(100)
            except OSError:
                pass
            stop.wait(0.01)

    poker = threading.Thread(target=poke, daemon=True)
    poker.start()
    kept.unlink()  # agc's hooks no longer name the port
    try:
        exited = done.wait(5)  # a hundred checks' time
    finally:
        stop.set()
        poker.join(5)
        path = _hookclient.keeper_path(str(folder), port)
        if not done.is_set() and path is not None and os.path.exists(path):
            os.unlink(path)  # its Unix socket gone: the keeper exits at its next check
            keeper.join(5)
    assert exited, "the keeper still holds the port agc's hooks no longer name"


def _passing(path: str, passed: socket.socket) -> threading.Thread:
    """A keeper of this user's at ``path`` that passes ``passed`` to whoever asks."""
    door = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    door.bind(path)
    door.listen(1)

    def answer() -> None:
        with door:
            door.settimeout(5)
            conn, _ = door.accept()
            with conn:
                conn.recv(16)
                socket.send_fds(conn, [b"P"], [passed.fileno()])

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(
    "kind", ["listening elsewhere", "bound, not listening", "udp", "the port's listener"]
)
def test_the_resident_takes_back_only_a_tcp_socket_listening_on_its_port(
    tmp_path: Path, kind: str
) -> None:
    folder = tmp_path / "agc"
    folder.mkdir(mode=0o700)
    udp = kind == "udp"
    passed = socket.socket(type=socket.SOCK_DGRAM if udp else socket.SOCK_STREAM)
    with passed:
        passed.bind(("127.0.0.1", 0))
        port = passed.getsockname()[1]
        if kind == "listening elsewhere":
            port = port + 1 if port < 65535 else port - 1
        if kind in ("listening elsewhere", "the port's listener"):
            passed.listen(1)
        path = _hookclient.keeper_path(str(folder), port)
        assert path is not None
        keeper = _passing(path, passed)
        taken = _hookclient.take_kept(str(folder), port)
        keeper.join(5)
    if kind == "the port's listener":
        assert isinstance(taken, socket.socket)
        with taken:
            assert taken.getsockname() == ("127.0.0.1", port)
    else:
        assert taken is None, f"took a socket that is {kind}"
