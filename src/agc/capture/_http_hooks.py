"""agc's HTTP hooks for Claude Code: the URL, the secret, and where both are kept.

Claude Code can send a hook event as an HTTP ``POST`` of the event JSON to a URL instead
of starting a command (its hooks reference: a handler ``{"type": "http", "url": …,
"headers": {…}, "timeout": …}``; a ``2xx`` answer with an empty body is a success that
decides nothing; a refused connection or another status is a non-blocking error, and
the client goes on). A request to agc's resident capture process, already running,
costs the client far less than a process per tool call, so ``agc hooks install
--client claude-code`` (user scope, agc's hook client) sends the per-tool-call events
(:data:`~agc.capture.BACKGROUND_EVENTS`) so:

* to ``http://127.0.0.1:<port>/agc-hook?client=claude-code[&store=<store>]``: loopback
  only; the port is chosen at the first install (``--port``, else a free port below
  the kernel's ephemeral range, so an outgoing connection never takes it) and kept;
* with ``Authorization: Bearer <secret>``: 32 random bytes (URL-safe base64), chosen at
  the first install and kept. Another local user can reach the port but not read the
  secret: it is kept in ``$XDG_STATE_HOME/agc/hook-http.json`` (mode 0600, its folder
  0700), where the resident process reads it, and in the settings file that holds the
  header, which install makes mode 0600.

The project scope keeps command hooks for every event: a project's
``.claude/settings.json`` is usually shared (committed), and a secret in it would not
be one.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import secrets
import socket
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qs, quote, urlsplit

from agc._core.capture_failures import state_folder
from agc._core.fs import atomic_write_bytes, write_error
from agc.errors import HookPortTakenError, UsageError

__all__ = [
    "HTTP_HOOK_PATH",
    "HTTP_HOOK_TIMEOUT_S",
    "HttpHook",
    "free_port",
    "http_hook_of",
    "http_settings_path",
    "is_agc_url",
    "keep_http_hook",
    "listen_on_free_port",
    "listener_owner",
    "port_listening",
    "read_http_hook",
    "retire_http_hook",
    "retired_http_port",
]

HTTP_HOOK_PATH: Final = "/agc-hook"
"""The path of agc's hook URL."""

HTTP_HOOK_TIMEOUT_S: Final = 5
"""How long Claude Code waits for agc's listener (seconds); it answers in milliseconds,
before the event is captured."""

_PORTS: Final = (20000, 32767)  # below Linux's default ephemeral range (32768-60999)
_HOST: Final = "127.0.0.1"


@dataclass(frozen=True)
class HttpHook:
    """The port and secret of agc's HTTP hooks for one user.

    Attributes:
        port: the TCP port on 127.0.0.1.
        secret: the bearer token (never printed).
    """

    port: int
    secret: str

    def url(self, client: str, store: str | None = None) -> str:
        """The hook URL: ``http://127.0.0.1:<port>/agc-hook?client=<client>[&store=…]``."""
        query = f"client={quote(client, safe='')}"
        if store is not None:
            query += f"&store={quote(store, safe='')}"
        return f"http://{_HOST}:{self.port}{HTTP_HOOK_PATH}?{query}"

    def handler(self, client: str, store: str | None = None) -> dict[str, Any]:
        """Claude Code's HTTP hook handler of agc."""
        return {
            "type": "http",
            "url": self.url(client, store),
            "headers": {"Authorization": f"Bearer {self.secret}"},
            "timeout": HTTP_HOOK_TIMEOUT_S,
        }

    def __repr__(self) -> str:  # the secret is never shown
        return f"HttpHook(port={self.port}, secret=…)"


def is_agc_url(url: object, client: str) -> bool:
    """Whether ``url`` is agc's hook URL for ``client`` (any port)."""
    if not isinstance(url, str):
        return False
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return False
    if parts.scheme != "http" or parts.hostname != _HOST or port is None:
        return False
    if parts.path != HTTP_HOOK_PATH:
        return False
    return parse_qs(parts.query).get("client") == [client]


def http_hook_of(url: str) -> tuple[int, str | None]:
    """``(port, store)`` an agc hook URL names (``store`` ``None`` when it names none).

    Raises:
        UsageError: ``url`` is not agc's hook URL.
    """
    parts = urlsplit(url)
    if parts.port is None or parts.path != HTTP_HOOK_PATH:
        raise UsageError(f"{url} is not agc's hook URL")
    stores = parse_qs(parts.query).get("store")
    return parts.port, stores[0] if stores else None


def http_settings_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/agc/hook-http.json``: where the port and secret are kept."""
    return state_folder(environ) / "agc" / "hook-http.json"


def read_http_hook(environ: Mapping[str, str] | None = None) -> HttpHook | None:
    """The kept port and secret, ``None`` when the file is missing, not a regular file of
    this user's, readable or writable by others, or not ``{"port": 1-65535, "secret":
    "…"}``."""
    path = http_settings_path(environ)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            return None
        data = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        value = json.loads(data)
    except ValueError:
        return None
    port = value.get("port") if isinstance(value, dict) else None
    secret = value.get("secret") if isinstance(value, dict) else None
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        return None
    if not isinstance(secret, str) or not secret:
        return None
    return HttpHook(port, secret)


def keep_http_hook(
    environ: Mapping[str, str] | None = None,
    *,
    port: int | None = None,
    instead_of: int | None = None,
) -> HttpHook:
    """The port and secret of agc's HTTP hooks: those kept (:func:`read_http_hook`); a
    new secret with ``port`` when given another port (a program that held the old port
    may have read the secret Claude Code sent it), and with a free port when none are
    kept. Written (mode 0600, the folder made 0700) when they change. With
    ``instead_of`` (a move off that port), those kept are returned unchanged when they
    name another port already (another move chose it first).

    Raises:
        UsageError: ``port`` is not 1-65535.
        HookPortTakenError: none are kept, no ``port`` is given, and no port of agc's
            range is free (:func:`free_port`).
        FileWriteError: the file cannot be written.
    """
    if port is not None and not 0 < port < 65536:
        raise UsageError(f"--port {port} is not a TCP port (1-65535)")
    kept = read_http_hook(environ)
    if kept is not None and (port is None or kept.port == port):
        return kept
    if kept is not None and instead_of is not None and kept.port != instead_of:
        return kept
    chosen = HttpHook(
        port if port is not None else (kept.port if kept else free_port()),
        base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
    )
    path = http_settings_path(environ)
    data = json.dumps({"port": chosen.port, "secret": chosen.secret}).encode() + b"\n"
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            os.chmod(path.parent, 0o700)
        atomic_write_bytes(path, data, overwrite=True, mode=0o600)
    except OSError as exc:
        raise write_error(path, exc, doing="keep the secret of agc's HTTP hooks") from exc
    return chosen


def retire_http_hook(environ: Mapping[str, str] | None = None) -> int | None:
    """Retire the kept secret (``agc hooks uninstall`` of the last HTTP hooks): the file
    is rewritten atomically (mode 0600) as ``{"retired": true, "retired_port": N}``, so
    :func:`read_http_hook` finds no secret (agc's listener then refuses the old one,
    ``401``; a port keeper sees no ``port`` and exits) and the next install makes a new
    one. Idempotent.

    Returns:
        The port whose secret was retired (by this call or an earlier one), ``None``
        when no secret was kept.

    Raises:
        FileWriteError: the file cannot be written (the secret is still kept).
    """
    kept = read_http_hook(environ)
    if kept is None:
        return retired_http_port(environ)
    path = http_settings_path(environ)
    data = json.dumps({"retired": True, "retired_port": kept.port}).encode() + b"\n"
    try:
        atomic_write_bytes(path, data, overwrite=True, mode=0o600)
    except OSError as exc:
        raise write_error(path, exc, doing="retire the secret of agc's HTTP hooks") from exc
    return kept.port


def retired_http_port(environ: Mapping[str, str] | None = None) -> int | None:
    """The port of a secret :func:`retire_http_hook` retired, ``None`` when the file holds
    no retired secret (a kept one, none, or one that cannot be read)."""
    try:
        value = json.loads(http_settings_path(environ).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(value, dict) or value.get("retired") is not True:
        return None
    port = value.get("retired_port")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        return None
    return port


def free_port(*, avoid: int | None = None) -> int:
    """A port of :data:`_PORTS` that nothing listens on now, never ``avoid``.

    Raises:
        HookPortTakenError: none was found in 64 random tries.
    """
    with listen_on_free_port(avoid=avoid) as probe:
        port: int = probe.getsockname()[1]
    return port


def listen_on_free_port(*, avoid: int | None = None) -> socket.socket:
    """A TCP socket bound to 127.0.0.1 at a random port of :data:`_PORTS` (never
    ``avoid``) and listening: the port is held from then on (Linux refuses a second
    bind of a listening address, whoever asks), so it can be named to Claude Code.

    Raises:
        HookPortTakenError: each of 64 random tries found the port bound (another
            program may hold most of the range): no port is named that agc does not hold.
    """
    rng = random.SystemRandom()
    for _ in range(64):
        candidate = rng.randint(*_PORTS)
        if candidate == avoid:
            continue
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((_HOST, candidate))
            sock.listen(128)
        except OSError:
            sock.close()
            continue
        return sock
    raise HookPortTakenError(
        f"no free port of 127.0.0.1 was found in {_PORTS[0]}-{_PORTS[1]} (64 tries, "
        "each bound by another socket): agc's HTTP hooks were not moved",
        hint="Find who listens on these ports (`ss -ltnp`), then run `agc hooks install "
        "--client claude-code --port PORT` with a port you hold.",
    )


_LISTEN: Final = "0A"  # the TCP state LISTEN in /proc/net/tcp*


def listener_owner(port: int) -> int | None:
    """The uid of the socket listening where a connection to 127.0.0.1:``port`` goes
    (that address, every IPv4 address, or every IPv6 address of a dual-stack socket),
    from Linux's ``/proc/net/tcp`` and ``/proc/net/tcp6``; ``None`` when none listens
    or they cannot be read."""
    uids = _listening_uids(port)
    return uids[0] if uids else None


def port_listening(port: int) -> bool | None:
    """Whether a socket listens where a connection to 127.0.0.1:``port`` goes, read from
    Linux's ``/proc/net/tcp`` and ``/proc/net/tcp6`` (never by connecting: to agc's
    listener, a connection that sends no event reads as an event it may have lost);
    ``None`` where neither table can be read."""
    uids = _listening_uids(port)
    return None if uids is None else bool(uids)


def _listening_uids(port: int) -> list[int] | None:
    """The uids of the sockets in state LISTEN where a connection to 127.0.0.1:``port``
    goes, in table order; ``None`` when neither table can be read."""
    wanted = {
        f"0100007F:{port:04X}",
        f"00000000:{port:04X}",
        f"{'0' * 32}:{port:04X}",
        f"0000000000000000FFFF00000100007F:{port:04X}",
    }
    uids: list[int] = []
    read_any = False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:
            continue
        read_any = True
        for row in rows:
            fields = row.split()
            if len(fields) > 7 and fields[1] in wanted and fields[3] == _LISTEN:
                with contextlib.suppress(ValueError):
                    uids.append(int(fields[7]))
    return uids if read_any else None
