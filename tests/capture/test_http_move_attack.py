"""Attacks on the move of agc's HTTP hooks off a port another user holds: the move must
never land on a port that user holds too (the next session would send the new secret
and its tool events there)."""

from __future__ import annotations

import contextlib
import json
import random
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from agc.capture import listener_owner, move_http_hooks
from tests.capture.test_install_http_move import _install

REACHES_INSIDE = {
    "agc.capture._http_hooks": "its port range, narrowed to ports held here",
    "agc.capture._install_files": "another move run inside a move's step",
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path


@contextlib.contextmanager
def _every_port_held(count: int) -> Iterator[list[int]]:
    """``count`` consecutive ports of 127.0.0.1, each with a listening socket (the
    squatter's, who binds every port of agc's range: 12,768 descriptors)."""
    for _ in range(100):
        base = random.randint(40000, 60000)
        held: list[socket.socket] = []
        try:
            for port in range(base, base + count):
                sock = socket.socket()
                held.append(sock)
                sock.bind(("127.0.0.1", port))
                sock.listen(1)
        except OSError:
            for sock in held:
                sock.close()
            continue
        try:
            yield list(range(base, base + count))
        finally:
            for sock in held:
                sock.close()
        return
    pytest.skip("no run of free ports found")


def test_a_move_never_lands_on_a_port_another_program_holds(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agc.capture import _http_hooks  # noqa: PLC0415 - its range narrowed

    with _every_port_held(4) as ports:
        _install("/abs/store", ports[0])
        monkeypatch.setattr(_http_hooks, "_PORTS", (ports[0], ports[-1]))
        try:
            kept, _ = move_http_hooks(ports[0])
        except Exception:  # a refusal is an answer: no port was found
            return
        assert listener_owner(kept.port) is None, f"moved onto {kept.port}, which is held"


def test_two_moves_at_once_leave_the_settings_naming_the_kept_port(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agc.capture._install_files as install_files  # noqa: PLC0415 - its step patched
    from agc.capture import keep_http_hook, read_http_hook  # noqa: PLC0415

    with _every_port_held(1) as (squatted,):
        _install("/abs/store", squatted)
        real_keep = keep_http_hook
        inside: list[bool] = []

        def keep_while_another_moves(*args: object, **kwargs: object) -> object:
            if not inside:  # the first move, after it read the kept port: the other runs
                inside.append(True)
                move_http_hooks(squatted)
            return real_keep(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(install_files, "keep_http_hook", keep_while_another_moves)
        move_http_hooks(squatted)
    kept = read_http_hook()
    assert kept is not None
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    urls = {
        handler["url"]
        for groups in settings["hooks"].values()
        for group in groups
        for handler in group["hooks"]
        if handler.get("type") == "http"
    }
    assert urls
    assert all(f":{kept.port}/" in url for url in urls), (urls, kept.port)


def test_the_new_port_is_held_before_the_settings_name_it(home: Path) -> None:
    from agc.capture import HttpHook  # noqa: PLC0415

    settings = home / ".claude" / "settings.json"
    held: list[tuple[int, bool, str]] = []

    def hold(listening: socket.socket, hook: HttpHook) -> None:
        with listening:
            accepting = listening.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
            held.append((listening.getsockname()[1], accepting == 1, settings.read_text()))

    with _every_port_held(1) as (squatted,):
        _install("/abs/store", squatted)
        kept, change = move_http_hooks(squatted, hold=hold)
    assert change.changed
    assert len(held) == 1
    port, listening, text_then = held[0]
    assert port == kept.port
    assert listening, "the new port was handed over bound but not listening"
    assert f":{kept.port}/" not in text_then  # named only once held
    assert f":{kept.port}/" in settings.read_text()
