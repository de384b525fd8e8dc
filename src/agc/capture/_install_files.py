"""``agc hooks install / uninstall / status``: the clients' configuration files on disk.

Where each client reads its hooks (the clients' documentation):

==============  ===============================================  ==============================
client          user scope                                       project scope
==============  ===============================================  ==============================
claude-code     ``$CLAUDE_CONFIG_DIR/settings.json``, else       ``<project>/.claude/settings.json``
                ``~/.claude/settings.json``
codex           ``$CODEX_HOME/config.toml``, else                ``<project>/.codex/config.toml``
                ``~/.codex/config.toml``                         (trust: the user file)
gemini          ``$GEMINI_CLI_HOME/.gemini/settings.json``,      ``<project>/.gemini/settings.json``
                else ``~/.gemini/settings.json``
==============  ===============================================  ==============================

A file is changed only when its text changes (installing twice writes nothing the second
time). Before it is changed, it is kept as ``<file>.agc-backup-<UTC time>``
(:func:`agc._core.fs.keep_backup`: a new name, an existing backup is never
overwritten); then the new text, parsed again
first, replaces it atomically, keeping its permission bits. A file that is not valid in
the client's format is refused (:class:`~agc.errors.ClientConfigInvalidError`) and
nothing is written. A configuration file that is a symlink is written through to its
target (dotfile managers link them).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shlex
import shutil
import socket
import stat
import threading
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from agc._core.fs import (
    atomic_write_bytes,
    describe_os_error,
    exclusive_lock,
    keep_backup,
    machine_hint,
    read_small_file,
    write_error,
)
from agc._core.json import loads
from agc._core.report import SCHEMA_VERSION
from agc.capture._codex_app import CodexAppError, codex_hooks_list
from agc.capture._events import ClientName
from agc.capture._http_hooks import (
    HttpHook,
    http_hook_of,
    http_settings_path,
    keep_http_hook,
    listen_on_free_port,
    listener_owner,
    read_http_hook,
)
from agc.capture._install import (
    BACKGROUND_EVENTS,
    CLIENT_EVENTS,
    CodexTrust,
    Scope,
    agc_handlers,
    codex_moves,
    codex_trust,
    hook_programs,
    is_agc_command,
    with_codex_trust,
    with_hooks,
    with_http_moved,
    without_hooks,
)
from agc.errors import (
    AgcError,
    ClientConfigInvalidError,
    FileUnreadableError,
    FileWriteError,
    UsageError,
)

__all__ = [
    "ClientHooks",
    "FileChange",
    "HooksChange",
    "check_hooks",
    "config_paths",
    "install_hooks",
    "move_http_hooks",
    "session_folder",
    "uninstall_hooks",
]

_MAX_CONFIG_BYTES: Final = 16 << 20


@dataclass(frozen=True)
class ConfigPaths:
    """Where one client's hooks live for one scope.

    Attributes:
        hooks: the file that holds the hooks.
        trust: the file that holds Codex's trust (``None`` for the other clients).
    """

    hooks: Path
    trust: Path | None = None


def config_paths(
    client: ClientName,
    scope: Scope,
    *,
    project: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> ConfigPaths:
    """The configuration files of ``client`` for ``scope`` (table in the module).

    Args:
        client: the client.
        scope: ``user`` or ``project``.
        project: the project folder for ``project`` scope (default: the working folder).
        environ: the environment to read ``$HOME``, ``$CLAUDE_CONFIG_DIR``,
            ``$CODEX_HOME``, ``$GEMINI_CLI_HOME`` from (default: ``os.environ``).

    Raises:
        UsageError: an unknown client or scope, or no home folder.
    """
    env = os.environ if environ is None else environ
    root = (project or Path.cwd()).absolute()
    codex_home = _client_home("codex", env)
    # Codex names its user file by its home folder with every symlink resolved (the key
    # of a trusted hook starts with it), the file itself as it is.
    user_codex = Path(os.path.realpath(codex_home)) / "config.toml"
    if client == "claude-code":
        folder = _client_home(client, env) if scope == "user" else root / ".claude"
        return ConfigPaths(folder.absolute() / "settings.json")
    if client == "codex":
        hooks = user_codex if scope == "user" else root / ".codex" / "config.toml"
        return ConfigPaths(hooks, trust=user_codex)
    if client == "gemini":
        folder = _client_home(client, env) if scope == "user" else root / ".gemini"
        return ConfigPaths(folder.absolute() / "settings.json")
    raise UsageError(f"unknown client {client!r}")


def _home(env: Mapping[str, str]) -> Path:
    """``$HOME``, else the user's home folder.

    Raises:
        UsageError: there is none.
    """
    home_text = env.get("HOME") or os.path.expanduser("~")
    if not home_text or home_text == "~":
        raise UsageError("no home folder: set $HOME")
    return Path(home_text)


def _client_home(client: ClientName, env: Mapping[str, str]) -> Path:
    """A client's own folder for this user: Claude Code ``$CLAUDE_CONFIG_DIR``, else
    ``~/.claude``; Codex ``$CODEX_HOME``, else ``~/.codex``; Gemini CLI
    ``$GEMINI_CLI_HOME/.gemini``, else ``~/.gemini`` (each client's documented
    variable).

    Raises:
        UsageError: an unknown client, or no home folder.
    """
    variable = {"claude-code": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME"}.get(client)
    if variable is not None:
        named = env.get(variable)
        if named:
            return Path(named)
        return _home(env) / (".claude" if client == "claude-code" else ".codex")
    if client == "gemini":
        named = env.get("GEMINI_CLI_HOME")
        return (Path(named) if named else _home(env)) / ".gemini"
    raise UsageError(f"unknown client {client!r}")


_SESSION_SUBFOLDER: Final[Mapping[str, str]] = {
    "claude-code": "projects",
    "codex": "sessions",
    "gemini": "tmp",
}


def session_folder(client: ClientName, *, environ: Mapping[str, str] | None = None) -> Path:
    """The folder under which ``client`` writes this user's session files: Claude Code
    ``$CLAUDE_CONFIG_DIR/projects`` (``~/.claude/projects``), Codex
    ``$CODEX_HOME/sessions`` (``~/.codex/sessions``), Gemini CLI
    ``$GEMINI_CLI_HOME/.gemini/tmp`` (``~/.gemini/tmp``). Not resolved; it may not
    exist.

    Raises:
        UsageError: an unknown client, or no home folder.
    """
    env = os.environ if environ is None else environ
    if client not in _SESSION_SUBFOLDER:
        raise UsageError(f"unknown client {client!r}")
    return _client_home(client, env) / _SESSION_SUBFOLDER[client]


@dataclass(frozen=True)
class FileChange:
    """One configuration file agc changed (or would have).

    Attributes:
        path: the file.
        changed: ``False`` when its text was already what it should be (nothing written).
        created: the file did not exist before.
        backup: the copy of its former bytes, ``None`` when nothing was copied.
    """

    path: str
    changed: bool
    created: bool = False
    backup: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "changed": self.changed,
            "created": self.created,
            "backup": self.backup,
        }


@dataclass(frozen=True)
class HooksChange:
    """What ``agc hooks install`` or ``uninstall`` did for one client.

    Attributes:
        client / scope: as asked.
        action: ``install`` or ``uninstall``.
        command: the hook command installed (``None`` for uninstall).
        files: the files changed, the hooks file first.
        codex_says: Codex only, when it was asked (``hooks/list``): ``trusted`` when it
            lists every agc hook as trusted, else what it says (or why it could not be
            asked); ``None`` when not asked.
    """

    client: ClientName
    scope: Scope
    action: str
    command: str | None
    files: tuple[FileChange, ...]
    codex_says: str | None = None

    @property
    def changed(self) -> bool:
        return any(change.changed for change in self.files)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "client": self.client,
            "scope": self.scope,
            "action": self.action,
            "command": self.command,
            "changed": self.changed,
            "files": [change.to_dict() for change in self.files],
            "codex_says": self.codex_says,
        }


def _read(path: Path) -> str | None:
    """The file's text, ``None`` when it does not exist (a symlink is read through)."""
    target = Path(os.path.realpath(path))
    try:
        data = read_small_file(target, max_bytes=_MAX_CONFIG_BYTES)
    except FileNotFoundError:
        return None
    except AgcError as exc:
        raise ClientConfigInvalidError(f"{path}: {exc.message}") from exc
    except OSError as exc:
        raise FileUnreadableError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ClientConfigInvalidError(f"{path} is not UTF-8 text") from exc


def _write(path: Path, old: str | None, new: str | None, *, owner_only: bool = False) -> FileChange:
    """Replace the file's text ``old`` by ``new`` (backing ``old`` up first).

    Raises:
        FileWriteError: the file, its backup or its folder cannot be written (a failure
            of the machine, a permission, a file where a folder should be); the file is
            unchanged.
    """
    try:
        return _write_file(path, old, new, owner_only=owner_only)
    except OSError as exc:
        raise FileWriteError(
            f"cannot write {path}: {describe_os_error(exc)}",
            path=str(path),
            errno=exc.errno,
            hint=machine_hint(exc) or "Check that you may write the file and its folder.",
        ) from exc


def _write_file(
    path: Path, old: str | None, new: str | None, *, owner_only: bool = False
) -> FileChange:
    if new is None or new == old:
        return FileChange(str(path), changed=False)
    target = Path(os.path.realpath(path))
    mode = 0o600 if old is None else 0o644
    backup = None
    if old is not None:
        with contextlib.suppress(OSError):
            mode = stat.S_IMODE(target.stat().st_mode)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
    if owner_only:  # it holds a secret: never on disk where others may read it
        mode &= 0o700
    if _read(path) != old:  # changed by someone else since it was read: merge again
        raise _ChangedError
    if old is not None:
        backup = keep_backup(target)
    atomic_write_bytes(target, new.encode("utf-8"), overwrite=True, mode=mode)
    return FileChange(
        str(path),
        changed=True,
        created=old is None,
        backup=None if backup is None else str(backup),
    )


def _owner_only(path: Path) -> None:
    """Make the file (a symlink's target) readable and writable by its owner alone.

    Raises:
        FileWriteError: its mode cannot be changed.
    """
    target = Path(os.path.realpath(path))
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
        if mode & 0o077:
            os.chmod(target, mode & 0o700)
    except OSError as exc:
        raise FileWriteError(
            f"cannot make {path} readable by you alone (it holds the secret of agc's "
            f"HTTP hooks): {describe_os_error(exc)}",
            path=str(path),
            errno=exc.errno,
        ) from exc


class _ChangedError(Exception):
    """The file changed between reading and writing it."""


def _retrying(action: Any) -> Any:
    for _ in range(3):
        try:
            return action()
        except _ChangedError:
            continue
    raise ClientConfigInvalidError(
        "the client's configuration changed three times while agc was merging into it",
        hint="Close the client (it may be saving its settings) and run the command again.",
    )


def install_hooks(
    client: ClientName,
    scope: Scope,
    *,
    command: str,
    project: Path | None = None,
    environ: Mapping[str, str] | None = None,
    codex: str | None = None,
    http: Mapping[str, Any] | None = None,
) -> HooksChange:
    """Install agc's hook command for every event of ``client`` (:data:`CLIENT_EVENTS`),
    and for Codex trust it in the user configuration.

    Args:
        client / scope / project / environ: as :func:`config_paths`.
        command: the hook command (:func:`~agc.capture.hook_command`).
        codex: a Codex program to ask, once the hooks are written, what it will run
            (``hooks/list``): an agc hook Codex does not call trusted is then trusted
            with the digest Codex reports for it (as Codex's own review does), and
            Codex is asked again. ``None``: the digest agc computes is the only one.
        http: Claude Code only: agc's HTTP handler for :data:`BACKGROUND_EVENTS` (see
            :func:`~agc.capture._install.with_hooks`); the file, which then holds its
            secret, is made mode 0600.

    Raises:
        ClientConfigInvalidError: a file is not valid in the client's format (nothing is
            written).
        FileUnreadableError: a file cannot be read.
        FileWriteError: a failure of the machine while writing (the file is unchanged).
    """
    paths = config_paths(client, scope, project=project, environ=environ)

    def run() -> HooksChange:
        text = _read(paths.hooks)
        new = with_hooks(client, text, command, path=str(paths.hooks), http=http)
        trust_file = paths.trust
        trust_old = None
        trust_new = None
        if trust_file is not None:
            trust_old = new if trust_file == paths.hooks else _read(trust_file)
            trust = codex_trust(
                new, hooks_path=str(paths.hooks), user_text=trust_old, user_path=str(trust_file)
            )
            trust_new = with_codex_trust(
                trust_old,
                user_path=str(trust_file),
                trust={entry.key: entry.current_hash for entry in trust},
            )
        if trust_file == paths.hooks:
            changes = [_write(paths.hooks, text, trust_new)]
        else:
            changes = [_write(paths.hooks, text, new, owner_only=http is not None)]
            if trust_file is not None:
                changes.append(_write(trust_file, trust_old, trust_new))
        return HooksChange(client, scope, "install", command, tuple(changes))

    result: HooksChange = _retrying(run)
    if http is not None:
        _owner_only(paths.hooks)
    if client == "codex" and codex is not None:
        result = _confirm_with_codex(result, paths, codex, project, environ)
    return result


_MOVES = threading.local()  # the lock files this thread holds -> how deep


@contextlib.contextmanager
def _moving(environ: Mapping[str, str] | None) -> Iterator[None]:
    """Hold the exclusive lock of moves of agc's HTTP hooks (``STATE/agc/hook-http.lock``,
    its folder made 0700) for the ``with`` body: a move reads, decides and writes both
    ``hook-http.json`` and the settings while no other move does. Re-entered by the same
    thread without waiting for itself.

    Raises:
        FileWriteError: the folder or the lock file cannot be made.
    """
    folder = http_settings_path(environ).parent
    path = folder / "hook-http.lock"
    held: dict[Path, int] = _MOVES.__dict__.setdefault("held", {})
    if held.get(path):
        held[path] += 1
        try:
            yield
        finally:
            held[path] -= 1
        return
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(folder, exc, doing="make the folder of agc's HTTP hooks") from exc
    with exclusive_lock(path, blocking=True, what="the move of agc's HTTP hooks"):
        held[path] = 1
        try:
            yield
        finally:
            del held[path]


def move_http_hooks(
    port: int,
    *,
    environ: Mapping[str, str] | None = None,
    hold: Callable[[socket.socket, HttpHook], None] | None = None,
) -> tuple[HttpHook, FileChange]:
    """Move agc's HTTP hooks of Claude Code off ``port`` (another user's program holds
    it: Claude Code would send it the tool events, and the secret in their header).

    Under an exclusive lock (``STATE/agc/hook-http.lock``: a second move at once waits,
    then finds the first's port and moves the settings to it), a new port is bound and
    listened on first (:func:`~agc.capture.listen_on_free_port`: never a port another
    program holds), then it and a new secret are kept (:func:`keep_http_hook`: the old
    secret is no longer heard by agc's listener), then agc's handlers in the user's
    Claude Code settings (:func:`config_paths`, user scope) that name ``port`` are moved
    to them in place (:func:`~agc.capture._install.with_http_moved`; backed up, written
    atomically, mode 0600, as ``agc hooks install`` writes). Idempotent: when the kept
    port is already another one, only the settings are moved to it, so a move stopped
    between its two writes is finished by the next.

    Args:
        port: the port another user holds.
        environ: ``$HOME``, ``$CLAUDE_CONFIG_DIR`` and ``$XDG_STATE_HOME`` (default
            ``os.environ``).
        hold: given the listening socket of the new port (and the port and secret kept)
            once they are kept, before the settings name them: the caller serves on it
            and closes it. Without it the socket is closed once the settings are written.

    Returns:
        The port and secret now kept, and what was done to the settings file.

    Raises:
        HookPortTakenError: no free port was found (nothing is written).
        ClientConfigInvalidError: the settings file is not valid (it is left as it is;
            the secret was changed all the same).
        FileUnreadableError, FileWriteError: a file cannot be read or written.
    """
    path = config_paths("claude-code", "user", environ=environ).hooks
    with _moving(environ), contextlib.ExitStack() as closing:
        kept = read_http_hook(environ)
        if kept is None or kept.port == port:
            listening = listen_on_free_port(avoid=port)
            closing.callback(listening.close)
            kept = keep_http_hook(environ, port=listening.getsockname()[1], instead_of=port)
            if hold is not None and kept.port == listening.getsockname()[1]:
                closing.pop_all()
                hold(listening, kept)

        def run() -> FileChange:
            text = _read(path)
            return _write(
                path, text, with_http_moved(text, port, kept, path=str(path)), owner_only=True
            )

        change: FileChange = _retrying(run)
        if change.changed:
            _owner_only(path)
    return kept, change


def _codex_view(
    paths: ConfigPaths,
    codex: str,
    project: Path | None,
    environ: Mapping[str, str] | None,
) -> dict[str, dict[str, Any]] | str:
    """agc's hooks as Codex lists them (key -> hooks/list entry), or why Codex could not
    be asked."""
    try:
        hooks = codex_hooks_list(codex, cwd=(project or Path.cwd()).absolute(), environ=environ)
    except CodexAppError as exc:
        return str(exc)
    return {
        str(hook.get("key")): hook
        for hook in hooks
        if is_agc_command(hook.get("command"), "codex")
        and str(hook.get("sourcePath")) == str(paths.hooks)
    }


def _confirm_with_codex(
    change: HooksChange,
    paths: ConfigPaths,
    codex: str,
    project: Path | None,
    environ: Mapping[str, str] | None,
) -> HooksChange:
    view = _codex_view(paths, codex, project, environ)
    if isinstance(view, str):
        return dataclasses.replace(change, codex_says=f"not asked: {view}")
    untrusted = {
        key: str(hook.get("currentHash"))
        for key, hook in view.items()
        if hook.get("trustStatus") != "trusted" and hook.get("command") == change.command
    }
    files = change.files
    if untrusted and paths.trust is not None:
        trust_file = paths.trust
        old = _read(trust_file)
        new = with_codex_trust(old, user_path=str(trust_file), trust=untrusted)
        files = (*files, _write(trust_file, old, new))
        view = _codex_view(paths, codex, project, environ)
        if isinstance(view, str):
            return dataclasses.replace(change, files=files, codex_says=f"not asked: {view}")
    statuses = sorted({str(hook.get("trustStatus")) for hook in view.values()})
    says = "trusted" if statuses == ["trusted"] else ", ".join(statuses) or "not listed"
    if len(view) != len(CLIENT_EVENTS["codex"]) and says == "trusted":
        says = f"{len(view)} of {len(CLIENT_EVENTS['codex'])} agc hooks listed"
    return dataclasses.replace(change, files=files, codex_says=says)


def uninstall_hooks(
    client: ClientName,
    scope: Scope,
    *,
    project: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> HooksChange:
    """Take agc's hook handlers out of ``client``'s configuration (and for Codex their
    trust entries; the user's handlers that move keep their trust under their new key).

    Raises:
        ClientConfigInvalidError, FileUnreadableError, FileWriteError: as
            :func:`install_hooks`.
    """
    paths = config_paths(client, scope, project=project, environ=environ)

    def run() -> HooksChange:
        text = _read(paths.hooks)
        found = agc_handlers(client, text, path=str(paths.hooks))
        new = without_hooks(client, text, path=str(paths.hooks))
        trust_file = paths.trust
        if trust_file is None:
            return HooksChange(client, scope, "uninstall", None, (_write(paths.hooks, text, new),))
        trust_old = new if trust_file == paths.hooks else _read(trust_file)
        forget = tuple(
            entry.key
            for entry in codex_trust(
                text, hooks_path=str(paths.hooks), user_text=None, user_path=str(trust_file)
            )
        )
        moves = codex_moves(text, path=str(paths.hooks))
        trust_new = (
            with_codex_trust(
                trust_old, user_path=str(trust_file), trust={}, forget=forget, rename=moves
            )
            if found and trust_old is not None
            else trust_old
        )
        if trust_file == paths.hooks:
            return HooksChange(
                client, scope, "uninstall", None, (_write(paths.hooks, text, trust_new),)
            )
        return HooksChange(
            client,
            scope,
            "uninstall",
            None,
            (_write(paths.hooks, text, new), _write(trust_file, trust_old, trust_new)),
        )

    result: HooksChange = _retrying(run)
    return result


@dataclass(frozen=True)
class ClientHooks:
    """Whether one client will run agc's hook (``agc hooks status``).

    Attributes:
        client / scope: the client and the scope looked at.
        config: the file that holds the hooks; ``config_exists`` whether it exists.
        events: the events agc's handler is installed for.
        missing: the events of :data:`CLIENT_EVENTS` without it.
        background: the events whose agc handler the client runs in the background
            (``async``: it does not wait for it).
        http: the events agc's HTTP handler is installed for (Claude Code: sent to
            agc's listener on 127.0.0.1).
        port: the port of agc's HTTP handlers, ``None`` when there is none.
        wants_http: the install this agc makes sends :data:`BACKGROUND_EVENTS` over
            HTTP (Claude Code, user scope, agc's hook client).
        command: the hook command (the first found), ``None`` when not installed.
        command_found: the command's program exists and is executable.
        store: the ``--store`` the command names, ``None`` when it names none.
        trust: Codex only: each handler's trust (``trusted``/``untrusted``/``modified``).
        problems: what keeps the client from running the hook, in words; empty when it
            will run it for every event.
        last_failure: the last capture failure the hook recorded, when known.
        codex_says: Codex only, when it was asked (``hooks/list``): key -> the trust
            status Codex itself gives each agc hook it lists; ``None`` when not asked.
        unconfirmed: why whether the client runs the hook cannot be confirmed, when it
            cannot (Codex: no Codex program to ask, so the trust is agc's own digest
            alone); ``None`` when it can.
    """

    client: ClientName
    scope: Scope
    config: str
    config_exists: bool
    events: tuple[str, ...]
    missing: tuple[str, ...]
    command: str | None
    command_found: bool
    store: str | None
    background: tuple[str, ...] = ()
    http: tuple[str, ...] = ()
    port: int | None = None
    wants_http: bool = False
    trust: tuple[CodexTrust, ...] = ()
    problems: tuple[str, ...] = ()
    last_failure: Mapping[str, Any] | None = field(default=None)
    codex_says: Mapping[str, str] | None = None
    unconfirmed: str | None = None

    @property
    def installed(self) -> bool:
        """agc's handler is there for at least one event."""
        return bool(self.events)

    @property
    def outdated(self) -> bool:
        """agc's handlers are not as this agc installs them (an install by an earlier
        agc, or an edit by hand): other events run in the background or go over HTTP
        than :data:`BACKGROUND_EVENTS` says, or the command does not name the HTTP
        handlers' port. Installing again brings them up to date."""
        if not self.installed:
            return False
        per_call = BACKGROUND_EVENTS[self.client] & set(self.events)
        over_http = per_call if self.wants_http else set()
        if set(self.http) != over_http or set(self.background) != per_call - over_http:
            return True
        return bool(over_http) and _http_port(self.command) != self.port

    @property
    def will_run(self) -> bool:
        """The client will run agc's hook for every event agc installs, as far as can be
        confirmed (never when it cannot be: :attr:`unconfirmed`)."""
        return not self.problems and self.unconfirmed is None

    @property
    def verdict(self) -> bool | None:
        """``will_run``, ``None`` when nothing is seen wrong but it cannot be confirmed."""
        if not self.problems and self.unconfirmed is not None:
            return None
        return self.will_run

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "client": self.client,
            "scope": self.scope,
            "config": self.config,
            "config_exists": self.config_exists,
            "installed": self.installed,
            "will_run": self.verdict,
            "unconfirmed": self.unconfirmed,
            "events": list(self.events),
            "missing": list(self.missing),
            "background": list(self.background),
            "http": list(self.http),
            "port": self.port,
            "outdated": self.outdated,
            "command": self.command,
            "command_found": self.command_found,
            "store": self.store,
            "trust": [
                {
                    "event": entry.event,
                    "key": entry.key,
                    "status": entry.status,
                    "enabled": entry.enabled,
                }
                for entry in self.trust
            ],
            "problems": list(self.problems),
            "last_failure": None if self.last_failure is None else dict(self.last_failure),
            "codex_says": None if self.codex_says is None else dict(self.codex_says),
        }


def _program_found(command: str) -> bool:
    """Whether the program ``command`` runs exists and is executable (and, for the hook
    client, its script is a file)."""
    needed = hook_programs(command)
    if not needed:
        return False
    program = needed[0] if os.sep in needed[0] else shutil.which(needed[0])
    found = program is not None and os.path.isfile(program) and os.access(program, os.X_OK)
    return found and all(os.path.isfile(script) for script in needed[1:])


def _http_port(command: str | None) -> int | None:
    """The ``--http PORT`` of agc's hook command, ``None`` when it names none."""
    value = _option(command, "--http") if command is not None else None
    return int(value) if value is not None and value.isdigit() else None


def _store_of(command: str) -> str | None:
    return _option(command, "--store")


def _option(command: str, name: str) -> str | None:
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    for index, arg in enumerate(argv):
        if arg == name and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith(name + "="):
            return arg.partition("=")[2]
    return None


def check_hooks(
    client: ClientName,
    scope: Scope,
    *,
    project: Path | None = None,
    environ: Mapping[str, str] | None = None,
    last_failure: Mapping[str, Any] | None = None,
    codex: str | None = None,
) -> ClientHooks:
    """Whether ``client`` will run agc's hook; never raises on what it finds (a file it
    cannot read is a problem in the report).

    For Codex, with ``codex`` (a Codex program), Codex itself is asked (``hooks/list``)
    and its word on each agc hook replaces the trust agc computes: a hook it does not
    list (a project it does not load) or does not call trusted is a problem.

    Raises:
        UsageError: an unknown client or scope, or no home folder.
    """
    paths = config_paths(client, scope, project=project, environ=environ)
    problems: list[str] = []
    text = None
    try:
        text = _read(paths.hooks)
        handlers = agc_handlers(client, text, path=str(paths.hooks))
    except AgcError as exc:
        handlers = []
        problems.append(exc.message)
    events = tuple(dict.fromkeys(h.event for h in handlers))
    missing = tuple(e for e in CLIENT_EVENTS[client] if e not in events)
    commands = [h for h in handlers if h.kind == "command"]
    urls = [h for h in handlers if h.kind == "http"]
    command = commands[0].command if commands else None
    found = command is not None and _program_found(command)
    port = http_hook_of(urls[0].command)[0] if urls else None
    trust: tuple[CodexTrust, ...] = ()
    if not problems:
        if not handlers:
            problems.append(f"not installed in {paths.hooks} (agc hooks install --client {client})")
        elif missing:
            problems.append(f"no agc hook for {', '.join(missing)}")
        if command is not None and not found:
            problems.append(f"the hook command's program does not exist: {command}")
        if len({h.command for h in commands}) > 1 or len({h.command for h in urls}) > 1:
            problems.append("the agc hooks run different commands (install again)")
        if urls:
            problems.extend(_http_problems(port, environ))
            problems.extend(_http_blocked(urls[0].command, {paths.hooks: text}))
    if handlers:
        problems.extend(_switched_off(client, text, command))
    if client == "gemini" and scope == "project" and handlers:
        env = os.environ if environ is None else environ
        if not _gemini_folder_trusted(project, env):
            problems.append(
                "the Gemini CLI reads a project's .gemini/settings.json only in a trusted "
                "folder: trust it when the Gemini CLI asks (/permissions), or set "
                "GEMINI_CLI_TRUST_WORKSPACE=true for headless runs"
            )
    if paths.trust is not None and handlers:
        try:
            trust_text = text if paths.trust == paths.hooks else _read(paths.trust)
            trust = tuple(
                codex_trust(
                    text,
                    hooks_path=str(paths.hooks),
                    user_text=trust_text,
                    user_path=str(paths.trust),
                )
            )
            problems.extend(_codex_problems(trust, scope, paths, trust_text, project))
        except AgcError as exc:
            problems.append(exc.message)
    says: dict[str, str] | None = None
    unconfirmed = None
    if client == "codex" and codex is None and handlers:
        unconfirmed = (
            "no Codex program was found to ask (codex on PATH, or --codex PATH): the trust "
            "shown is agc's own digest, and whether Codex runs the hooks cannot be confirmed"
        )
    if client == "codex" and codex is not None and handlers:
        view = _codex_view(paths, codex, project, environ)
        if isinstance(view, str):
            problems.append(f"Codex could not be asked: {view}")
        else:
            says = {key: str(hook.get("trustStatus")) for key, hook in view.items()}
            problems = [p for p in problems if not p.startswith("Codex skips the ")]
            for entry in trust:
                status = says.get(entry.key)
                if status is None:
                    problems.append(f"Codex does not list agc's {entry.event} hook")
                elif status != "trusted":
                    problems.append(f"Codex says agc's {entry.event} hook is {status}")
    return ClientHooks(
        client=client,
        scope=scope,
        config=str(paths.hooks),
        config_exists=text is not None,
        events=events,
        missing=missing,
        background=tuple(h.event for h in handlers if h.background),
        http=tuple(h.event for h in urls),
        port=port,
        wants_http=client == "claude-code"
        and scope == "user"
        and command is not None
        and len(hook_programs(command)) == 2,
        command=command,
        command_found=found,
        store=None if command is None else _store_of(command),
        trust=trust,
        problems=tuple(problems),
        last_failure=last_failure,
        codex_says=says,
        unconfirmed=unconfirmed,
    )


def _http_problems(port: int | None, environ: Mapping[str, str] | None) -> list[str]:
    """What keeps agc's listener from hearing the HTTP hooks on ``port``: no secret kept
    for it (:func:`~agc.capture._http_hooks.read_http_hook`), or another user's program
    listening on it (which the client would send the events, and their secret, to)."""
    kept = read_http_hook(environ)
    problems = []
    if kept is None or kept.port != port:
        problems.append(
            f"no secret of agc's HTTP hooks on port {port} is kept for you in "
            f"{http_settings_path(environ)}: agc's listener would refuse every event "
            "(agc hooks install --client claude-code)"
        )
    owner = listener_owner(port) if port is not None else None
    if owner is not None and owner != os.getuid():
        problems.append(
            f"a program of another user (uid {owner}) listens on 127.0.0.1:{port}: Claude "
            "Code would send it the events; choose another port (agc hooks install "
            "--client claude-code --port N)"
        )
    return problems


MANAGED_SETTINGS: Final = Path("/etc/claude-code/managed-settings.json")
"""Claude Code's managed (administrator's) settings on Linux (its settings reference)."""


def _http_blocked(url: str, texts: Mapping[Path, str | None]) -> list[str]:
    """Claude Code's ``allowedHttpHookUrls`` (in ``texts``, the settings files agc read,
    and the managed settings when readable) that no pattern of matches agc's hook
    ``url``: Claude Code then blocks the hooks (its settings reference: ``*`` is a
    wildcard; a list set and empty allows none)."""
    files = dict(texts)
    with contextlib.suppress(OSError, UnicodeDecodeError):
        files[MANAGED_SETTINGS] = MANAGED_SETTINGS.read_text(encoding="utf-8")
    problems = []
    for path, text in files.items():
        try:
            value: Any = loads(text or "{}")
        except AgcError:
            continue
        patterns = value.get("allowedHttpHookUrls") if isinstance(value, dict) else None
        if not isinstance(patterns, list):
            continue
        if not any(isinstance(p, str) and _url_matches(url, p) for p in patterns):
            problems.append(
                f"Claude Code blocks agc's HTTP hooks: no pattern of allowedHttpHookUrls in "
                f"{path} matches http://127.0.0.1:<port>/agc-hook (add one)"
            )
    return problems


def _url_matches(url: str, pattern: str) -> bool:
    """Whether ``url`` matches an ``allowedHttpHookUrls`` pattern (``*``: any text)."""
    import fnmatch  # noqa: PLC0415 - only for a file that restricts HTTP hooks

    escaped = pattern.replace("[", "[[]").replace("?", "[?]")
    return pattern == "*" or fnmatch.fnmatchcase(url, escaped)


def _switched_off(client: ClientName, text: str | None, command: str | None) -> list[str]:
    """The client's own switches that keep every hook, or agc's, from running: Claude
    Code's ``disableAllHooks``, the Gemini CLI's ``hooksConfig.enabled`` and
    ``hooksConfig.disabled`` (hook commands), Codex's ``[features] hooks`` (and its
    former name ``codex_hooks``); each client's settings reference."""
    try:
        value: Any = tomllib.loads(text or "") if client == "codex" else loads(text or "{}")
    except (tomllib.TOMLDecodeError, AgcError):
        return []
    if not isinstance(value, dict):
        return []
    problems = []
    if client == "claude-code" and value.get("disableAllHooks") is True:
        problems.append("Claude Code runs no hook: disableAllHooks is true")
    if client == "gemini":
        config = value.get("hooksConfig")
        if isinstance(config, dict):
            if config.get("enabled") is False:
                problems.append("the Gemini CLI runs no hook: hooksConfig.enabled is false")
            disabled = config.get("disabled")
            if isinstance(disabled, list) and command in disabled:
                problems.append("the Gemini CLI skips agc's hook: it is in hooksConfig.disabled")
    if client == "codex":
        features = value.get("features")
        if isinstance(features, dict) and False in (
            features.get("hooks"),
            features.get("codex_hooks"),
        ):
            problems.append("Codex runs no hook: [features] hooks is false")
    return problems


def _codex_problems(
    trust: tuple[CodexTrust, ...],
    scope: Scope,
    paths: ConfigPaths,
    user_text: str | None,
    project: Path | None,
) -> list[str]:
    problems = []
    for entry in trust:
        if not entry.enabled:
            problems.append(f"Codex: the {entry.event} hook is disabled in {paths.trust}")
        elif entry.status != "trusted":
            problems.append(
                f"Codex skips the {entry.event} hook: {entry.status} "
                "(agc hooks install trusts it again; or review it with /hooks)"
            )
    if scope == "project" and not _codex_project_trusted(user_text, project):
        problems.append(
            "Codex loads a project's .codex/config.toml only in a trusted project: trust "
            'the project when Codex asks (or set trust_level = "trusted" under '
            f'[projects."{(project or Path.cwd()).absolute()}"] in {paths.trust})'
        )
    return problems


def _gemini_folder_trusted(project: Path | None, env: Mapping[str, str]) -> bool:
    """The Gemini CLI's folder trust for the project (its ``trustedFolders.ts``):
    ``GEMINI_CLI_TRUST_WORKSPACE``, ``security.folderTrust.enabled`` of the user's
    settings, else the longest rule of ``~/.gemini/trustedFolders.json`` that covers the
    folder (``TRUST_FOLDER``, ``TRUST_PARENT``: the rule's parent, ``DO_NOT_TRUST``)."""
    if env.get("GEMINI_CLI_TRUST_WORKSPACE") in {"true", "false"}:
        return env["GEMINI_CLI_TRUST_WORKSPACE"] == "true"
    gemini = config_paths("gemini", "user", environ=env).hooks.parent
    try:
        settings = loads(_read(gemini / "settings.json") or "{}")
        rules = loads(_read(gemini / "trustedFolders.json") or "{}")
    except AgcError:
        return False
    security = settings.get("security") if isinstance(settings, dict) else None
    folder_trust = security.get("folderTrust") if isinstance(security, dict) else None
    if isinstance(folder_trust, dict) and folder_trust.get("enabled") is False:
        return True
    folder = Path(os.path.realpath((project or Path.cwd()).absolute()))
    best, verdict = -1, False
    for rule, level in rules.items() if isinstance(rules, dict) else ():
        covered = Path(rule).parent if level == "TRUST_PARENT" else Path(rule)
        covered = Path(os.path.realpath(covered))
        if (folder == covered or covered in folder.parents) and len(rule) > best:
            best, verdict = len(rule), level in {"TRUST_FOLDER", "TRUST_PARENT"}
    return verdict


def _codex_project_trusted(user_text: str | None, project: Path | None) -> bool:
    """The project (or a folder above it) is ``trust_level = "trusted"`` in the user's
    Codex configuration (Codex's config reference, ``[projects]``)."""
    try:
        value = tomllib.loads(user_text or "")
    except tomllib.TOMLDecodeError:
        return False
    projects = value.get("projects")
    if not isinstance(projects, dict):
        return False
    folder = (project or Path.cwd()).absolute()
    resolved = Path(os.path.realpath(folder))
    for candidate in dict.fromkeys((folder, *folder.parents, resolved, *resolved.parents)):
        entry = projects.get(str(candidate))
        if isinstance(entry, dict) and entry.get("trust_level") == "trusted":
            return True
    return False
