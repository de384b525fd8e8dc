"""The clients' own hook configuration: agc's hook put in, found, taken out. Pure: text in,
text out.

Each client keeps its hooks in a file of its own, grouped by event, each group a list of
handlers (``{"type": "command", "command": …, "timeout": …}``):

* Claude Code: ``settings.json`` (``~/.claude/settings.json`` or
  ``<project>/.claude/settings.json``), member ``hooks``; timeouts in seconds (Claude
  Code's hooks reference);
* the Codex CLI: ``config.toml`` (``$CODEX_HOME/config.toml`` or
  ``<project>/.codex/config.toml``), tables ``[[hooks.<Event>]]`` with
  ``[[hooks.<Event>.hooks]]``; timeouts in seconds (Codex's hooks documentation);
* the Gemini CLI: ``settings.json`` (``~/.gemini/settings.json`` or
  ``<project>/.gemini/settings.json``), member ``hooks``; timeouts in milliseconds (the
  Gemini CLI's hooks reference).

agc adds one group per event holding one handler, the command ``<agc> hook --client
<client> [--store S]``, after the user's groups, so the position of every other hook
stays what it was. For Claude Code the per-tool-call events may instead get agc's HTTP
handler (``{"type": "http", "url": "http://127.0.0.1:<port>/agc-hook?client=…"}``,
:mod:`agc.capture._http_hooks`), which is agc's too. A handler is agc's when its command
is ``agc hook --client <client>`` (any path to ``agc``, any options after): installing
again replaces it in place, so the file holds one agc handler per event whatever was
installed before.

Codex runs a hook that is not managed by an administrator only once the user trusts it:
the user configuration (``$CODEX_HOME/config.toml``) keeps, for each hook, the digest of
what was reviewed, ``[hooks.state."<key>"] trusted_hash = "sha256:<hex>"``, and Codex skips
a hook whose current digest differs, without a word. The key is
``<config file>:<event in snake case>:<group index>:<handler index>``; the digest is the
SHA-256 of the JSON of ``{"event_name", "matcher"?, "hooks": [handler]}`` with keys sorted
and no spaces, the handler normalized to ``type``, ``command``, ``timeout`` (Codex's
default when absent), ``async`` and ``statusMessage`` when set (Codex's
``codex-rs/hooks/src/engine/discovery.rs``, ``command_hook_hash``, and
``codex-rs/config``'s ``version_for_toml``; the value Codex's own ``/hooks`` review and
its app server's ``hooks/list`` ``currentHash`` give). :func:`codex_trust` computes it for
agc's handlers; the user's own entries are never touched, except that a key whose handler
moved when agc's group was taken out is renamed with it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import tomlkit
import tomlkit.exceptions
from tomlkit.items import AoT, Array, InlineTable, Table

from agc._core.json import loads
from agc.capture._events import CLIENTS, ClientName
from agc.capture._http_hooks import HttpHook, http_hook_of, is_agc_url
from agc.errors import ClientConfigInvalidError, JsonInvalidError, UsageError

__all__ = [
    "BACKGROUND_EVENTS",
    "CLIENT_EVENTS",
    "HOOK_TIMEOUT_S",
    "AgcHandler",
    "CodexTrust",
    "Scope",
    "agc_handlers",
    "codex_hook_hash",
    "codex_key",
    "codex_moves",
    "codex_trust",
    "hook_client_command",
    "hook_command",
    "hook_programs",
    "is_agc_command",
    "is_agc_handler",
    "with_codex_trust",
    "with_hooks",
    "with_http_moved",
    "without_hooks",
]

Scope = Literal["user", "project"]
"""Where a client's hooks are configured: the user's own settings or one project's."""

CLIENT_EVENTS: Final[Mapping[ClientName, tuple[str, ...]]] = {
    # Claude Code's hooks reference; PostToolUseFailure is the result of a failed call.
    "claude-code": (
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "Stop",
        "PreCompact",
        "SessionEnd",
    ),
    # Codex's hooks documentation (config.toml [hooks], Codex CLI 0.171).
    "codex": (
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "SessionEnd",
    ),
    # The Gemini CLI's hooks reference.
    "gemini": (
        "SessionStart",
        "BeforeAgent",
        "BeforeTool",
        "AfterTool",
        "AfterAgent",
        "PreCompress",
        "SessionEnd",
    ),
}
"""The hook events agc installs its handler for, per client, in the client's spelling."""

BACKGROUND_EVENTS: Final[Mapping[ClientName, frozenset[str]]] = {
    # Claude Code's hooks reference: a command hook with ``"async": true`` runs in the
    # background and cannot block; the client goes on at once.
    "claude-code": frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure"}),
    # Codex's hooks (``codex-rs/hooks``): ``async = true`` runs a command hook in the
    # background (a ``SessionEnd`` handler is always run synchronously).
    "codex": frozenset({"PreToolUse", "PostToolUse"}),
    # The Gemini CLI awaits every command hook: it has no background option.
    "gemini": frozenset(),
}
"""The per-tool-call events agc's handler is installed for as a background (``async``)
hook, per client: the client does not wait for it, so capture of these events is best
effort and may reach the store out of order or, when the client exits at once, not at all
(the events that seal the session, ``Stop``/``SessionEnd``/``AfterAgent``, stay
synchronous: the seal completes before the client goes on)."""

HOOK_TIMEOUT_S: Final = 10
"""How long a client waits for agc's hook before it goes on without it (seconds). The hook
itself returns within 1 s; the margin is for a cold start on a loaded machine."""

_TIMEOUT_UNIT: Final[Mapping[ClientName, int]] = {"claude-code": 1, "codex": 1, "gemini": 1000}
_CODEX_DEFAULT_TIMEOUT_S: Final = 600  # a handler without `timeout` (discovery.rs)
# Codex 0.171 bounds a SessionEnd handler's timeout to 1-3 s (1 s when absent), as its
# app server's hooks/list reports and as the trust digest is computed.
_CODEX_SESSION_END_TIMEOUT_S: Final = (1, 3)


def hook_command(agc: str, client: ClientName, *, store: str | None = None) -> str:
    """The shell command a client runs for every event: ``<agc> hook --client <client>``
    with ``--store S`` when given, quoted for a POSIX shell (each client runs the command
    through ``sh -c``).

    Raises:
        UsageError: ``client`` is not one of :data:`~agc.capture.CLIENTS`.
    """
    _known(client)
    argv = [agc, "hook", "--client", client]
    if store is not None:
        argv += ["--store", store]
    return shlex.join(argv)


HOOK_CLIENT: Final = ("agc", "cli", "_hookclient.py")
"""The last parts of the path of agc's hook client script (``agc/cli/_hookclient.py``)."""


def hook_client_command(
    python: str,
    script: str,
    client: ClientName,
    *,
    store: str | None = None,
    http_port: int | None = None,
) -> str:
    """The shell command a client runs for every event: agc's hook client ``script``
    (``…/agc/cli/_hookclient.py``) run by ``python`` with ``-I -S`` (isolated, no
    ``site``: it starts in milliseconds and hands the event to agc's resident capture
    process), ``--client <client>``, ``--store S`` when given, ``--http PORT`` when the
    client's tool events go to agc's HTTP listener on that port (the command then makes
    sure it listens); quoted for a POSIX shell (each client runs the command through
    ``sh -c``).

    Raises:
        UsageError: ``client`` is not one of :data:`~agc.capture.CLIENTS`, or ``script``
            is not a path ending in ``agc/cli/_hookclient.py``.
    """
    _known(client)
    if tuple(script.split(os.sep)[-3:]) != HOOK_CLIENT:
        raise UsageError(f"{script} is not agc's hook client ({'/'.join(HOOK_CLIENT)})")
    argv = [python, "-I", "-S", script, "--client", client]
    if store is not None:
        argv += ["--store", store]
    if http_port is not None:
        argv += ["--http", str(http_port)]
    return shlex.join(argv)


def hook_programs(command: str) -> list[str]:
    """The programs and files agc's hook ``command`` runs: ``[agc]`` for ``agc hook …``,
    ``[python, script]`` for the hook client (:func:`hook_client_command`); ``[]`` when
    the command cannot be split."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return []
    script = _client_script(argv)
    return argv[:1] + ([argv[script]] if script is not None else [])


def _client_script(argv: list[str]) -> int | None:
    """The index of agc's hook client script in ``argv`` (after the interpreter and its
    options), ``None`` when ``argv`` does not run it."""
    for index in range(1, len(argv)):
        word = argv[index]
        if tuple(word.split("/")[-3:]) == HOOK_CLIENT:
            return index
        if not word.startswith("-"):
            return None
    return None


def is_agc_command(command: object, client: ClientName) -> bool:
    """True when ``command`` is agc's hook for ``client``: ``…/agc hook --client <client> …``
    (any path to an executable named ``agc``, any options after) or the hook client,
    ``<python> [options] …/agc/cli/_hookclient.py --client <client> …``."""
    if not isinstance(command, str):
        return False
    try:
        argv = shlex.split(command)
    except ValueError:
        return False
    script = _client_script(argv)
    if script is not None:
        start = script + 1
    elif len(argv) >= 4 and os.path.basename(argv[0]) == "agc" and argv[1] == "hook":
        start = 2
    else:
        return False
    try:
        return argv[argv.index("--client", start) + 1] == client
    except (ValueError, IndexError):
        return False


@dataclass(frozen=True)
class AgcHandler:
    """agc's handler found in a client's configuration.

    Attributes:
        event: the event, in the client's spelling (``PreToolUse``, ``BeforeTool`` …).
        group: the index of its group in the event's list.
        index: its index in the group's ``hooks``.
        command: its command (an HTTP handler's URL).
        timeout: its timeout as written (the client's unit), ``None`` when absent.
        matcher: its group's matcher, ``None`` when absent.
        background: its ``async`` (the client runs it without waiting).
        kind: ``command``, or ``http`` for agc's HTTP handler (Claude Code).
    """

    event: str
    group: int
    index: int
    command: str
    timeout: int | None = None
    matcher: str | None = None
    background: bool = False
    kind: Literal["command", "http"] = "command"


def is_agc_handler(handler: Mapping[str, Any], client: ClientName) -> bool:
    """Whether a handler of the client's configuration is agc's: its command hook
    (:func:`is_agc_command`) or, for Claude Code, its HTTP hook
    (:func:`~agc.capture._http_hooks.is_agc_url`)."""
    if handler.get("type") == "http":
        return client == "claude-code" and is_agc_url(handler.get("url"), client)
    return is_agc_command(handler.get("command"), client)


def _known(client: str) -> None:
    if client not in CLIENTS:
        raise UsageError(f"unknown client {client!r}; known: {', '.join(CLIENTS)}")


def _file_kind(client: ClientName) -> str:
    return "config.toml" if client == "codex" else "settings.json"


# --- reading ---------------------------------------------------------------------------


def _parse(client: ClientName, text: str | None, path: str) -> dict[str, Any]:
    """The configuration as plain values, checked to be one agc can change safely.

    Raises:
        ClientConfigInvalidError: not the client's format, or ``hooks`` is not an object
            of events, each a list of groups with a list of handlers.
    """
    if text is None or not text.strip():
        return {}
    if client == "codex":
        try:
            value: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ClientConfigInvalidError(f"{path} is not valid TOML: {exc}") from exc
    else:
        try:
            value = loads(text)
        except JsonInvalidError as exc:
            raise ClientConfigInvalidError(
                f"{path} is not strict JSON: {exc.message}",
                hint="Fix the file (or move it away) and run the command again; agc does "
                "not rewrite a file it cannot read exactly (comments, duplicate members).",
            ) from exc
        if not isinstance(value, dict):
            raise ClientConfigInvalidError(
                f"{path} holds a JSON {type(value).__name__}, not an object"
            )
    config: dict[str, Any] = value
    hooks = config.get("hooks")
    if hooks is None:
        return config
    if not isinstance(hooks, dict):
        raise ClientConfigInvalidError(f"{path}: 'hooks' is not a table of events")
    for event, groups in hooks.items():
        if client == "codex" and event == "state":
            if not isinstance(groups, dict):
                raise ClientConfigInvalidError(f"{path}: 'hooks.state' is not a table")
            continue
        if not isinstance(groups, list):
            raise ClientConfigInvalidError(f"{path}: hooks.{event} is not a list of groups")
        for number, group in enumerate(groups):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list) or not all(isinstance(h, dict) for h in handlers):
                raise ClientConfigInvalidError(
                    f"{path}: hooks.{event}[{number}] is not a group with a list of handlers"
                )
    return config


def agc_handlers(client: ClientName, text: str | None, *, path: str) -> list[AgcHandler]:
    """agc's handlers for ``client`` in a configuration file's text (``None``: no file).

    Raises:
        ClientConfigInvalidError: the text is not a configuration agc can read (see
            :func:`with_hooks`).
    """
    _known(client)
    value = _parse(client, text, path)
    found: list[AgcHandler] = []
    for event, groups in (value.get("hooks") or {}).items():
        if client == "codex" and event == "state":
            continue
        for number, group in enumerate(groups):
            for index, handler in enumerate(group["hooks"]):
                if is_agc_handler(handler, client):
                    timeout = handler.get("timeout")
                    matcher = group.get("matcher")
                    http = handler.get("type") == "http"
                    found.append(
                        AgcHandler(
                            event=event,
                            group=number,
                            index=index,
                            command=handler["url" if http else "command"],
                            timeout=timeout if isinstance(timeout, int) else None,
                            matcher=matcher if isinstance(matcher, str) else None,
                            background=handler.get("async") is True,
                            kind="http" if http else "command",
                        )
                    )
    return found


# --- writing ---------------------------------------------------------------------------


def _timeout(client: ClientName, event: str) -> int:
    if client == "codex" and event == "SessionEnd":
        return _CODEX_SESSION_END_TIMEOUT_S[1]
    return HOOK_TIMEOUT_S * _TIMEOUT_UNIT[client]


def _handler(
    client: ClientName, command: str, event: str, http: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """agc's handler of ``event``: ``http`` (agc's HTTP handler) for
    :data:`BACKGROUND_EVENTS` when given, else the command, ``async`` only for
    :data:`BACKGROUND_EVENTS` (a handler installed before keeps no ``async`` of its own:
    see :func:`_replace`)."""
    if http is not None and event in BACKGROUND_EVENTS[client]:
        return dict(http)
    handler: dict[str, Any] = {
        "type": "command",
        "command": command,
        "timeout": _timeout(client, event),
    }
    if event in BACKGROUND_EVENTS[client]:
        handler["async"] = True
    return handler


_KIND_MEMBERS: Final = frozenset({"type", "command", "url", "headers", "async", "allowedEnvVars"})
"""Members a handler has by its kind: dropped when agc's handler changes kind."""


def _replace(
    client: ClientName,
    old: Mapping[str, Any],
    command: str,
    event: str,
    http: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An agc handler already in the file, made the current one: its other members kept
    (a ``statusMessage``), those of its kind replaced, ``async`` set or removed as
    :data:`BACKGROUND_EVENTS` says."""
    wanted = _handler(client, command, event, http)
    new = {key: value for key, value in old.items() if key not in _KIND_MEMBERS or key in wanted}
    new.update(wanted)  # the members it had keep their place: installing again is a no-op
    return new


def with_hooks(
    client: ClientName,
    text: str | None,
    command: str,
    *,
    path: str,
    http: Mapping[str, Any] | None = None,
) -> str:
    """The configuration with agc's handler for every event of :data:`CLIENT_EVENTS`.

    An agc handler already there is given ``command`` in place; an event without one
    gets a new group at the end of its list. Everything else is kept: the user's hooks
    and settings, and for TOML its comments and layout. The result is parsed again and
    must hold exactly one agc handler per event.

    Args:
        client: the client whose file this is.
        text: the file's text, ``None`` or empty when there is no file yet.
        command: the hook command (:func:`hook_command`).
        path: the file's name, for messages.
        http: Claude Code only: agc's HTTP handler
            (:meth:`~agc.capture._http_hooks.HttpHook.handler`), installed for
            :data:`BACKGROUND_EVENTS` instead of the command.

    Raises:
        ClientConfigInvalidError: ``text`` is not valid TOML/strict JSON, or its
            ``hooks`` is not an object of events, each a list of groups with a list of
            handlers: nothing can be merged into it without guessing.
        UsageError: ``http`` for another client than Claude Code.
    """
    _known(client)
    if http is not None and client != "claude-code":
        raise UsageError(f"{client} has no HTTP hooks; agc sends them to Claude Code only")
    _parse(client, text, path)
    if client == "codex":
        result = _toml_with_hooks(text or "", command)
    else:
        result = _json_with_hooks(client, text, command, http)
    _check_result(client, result, path, expect=command, http=http)
    return result


def without_hooks(client: ClientName, text: str | None, *, path: str) -> str | None:
    """The configuration without agc's handlers (``None`` when there was no file).

    A group left without handlers is removed, and so is an event left without groups;
    the user's hooks and settings are kept.

    Raises:
        ClientConfigInvalidError: as :func:`with_hooks`.
    """
    _known(client)
    value = _parse(client, text, path)
    if text is None:
        return None
    if not value.get("hooks"):
        return text
    result = (
        _toml_without_hooks(text, client)
        if client == "codex"
        else _json_without_hooks(client, text)
    )
    _check_result(client, result, path, expect=None)
    return result


def with_http_moved(text: str | None, port: int, hook: HttpHook, *, path: str) -> str | None:
    """Claude Code's settings with agc's handlers that name ``port`` moved to ``hook``:
    an HTTP handler whose URL names ``port`` gets ``hook``'s URL (the same ``store``)
    and ``Authorization`` header, a command hook's ``--http PORT`` becomes ``hook``'s
    port; every other member, handler and setting is kept. ``text`` itself when no agc
    handler names ``port``, ``None`` when there is no file.

    Raises:
        ClientConfigInvalidError: ``text`` is not valid settings (as :func:`with_hooks`).
    """
    _parse("claude-code", text, path)
    if not text or not text.strip():
        return text
    value: dict[str, Any] = loads(text)
    changed = False
    for groups in (value.get("hooks") or {}).values():
        for group in groups:
            for index, handler in enumerate(group["hooks"]):
                if not is_agc_handler(handler, "claude-code"):
                    continue
                moved = _moved_handler(handler, port, hook)
                if moved is not None:
                    group["hooks"][index] = moved
                    changed = True
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n" if changed else text


def _moved_handler(handler: Mapping[str, Any], port: int, hook: HttpHook) -> dict[str, Any] | None:
    """An agc handler of Claude Code moved from ``port`` to ``hook``, ``None`` when it
    does not name ``port``."""
    if handler.get("type") == "http":
        named, store = http_hook_of(str(handler["url"]))
        if named != port:
            return None
        return {**handler, **hook.handler("claude-code", store)}
    argv = shlex.split(str(handler["command"]))
    at = next(
        (i for i in range(len(argv) - 1) if argv[i] == "--http" and argv[i + 1] == str(port)),
        None,
    )
    if at is None:
        return None
    argv[at + 1] = str(hook.port)
    return {**handler, "command": shlex.join(argv)}


def _check_result(
    client: ClientName,
    result: str,
    path: str,
    *,
    expect: str | None,
    http: Mapping[str, Any] | None = None,
) -> None:
    """Parse what is about to be written: an error here is a bug in agc, never a file."""
    try:
        handlers = agc_handlers(client, result, path=path)
    except ClientConfigInvalidError as exc:  # pragma: no cover - a bug in agc
        raise AssertionError(f"agc made an invalid {_file_kind(client)}: {exc}") from exc
    if expect is None:
        if handlers:  # pragma: no cover - a bug in agc
            raise AssertionError(f"agc handlers left in {path}")
        return
    events = sorted(h.event for h in handlers)
    over_http = BACKGROUND_EVENTS[client] if http is not None else frozenset()
    wrong = [
        h
        for h in handlers
        if (h.kind == "http") != (h.event in over_http)
        or h.command != (http["url"] if h.kind == "http" and http else expect)
        or h.background != (h.event in BACKGROUND_EVENTS[client] - over_http)
    ]
    if events != sorted(CLIENT_EVENTS[client]) or wrong:
        raise AssertionError(f"agc made a wrong {path}: {handlers}")  # pragma: no cover


def _json_with_hooks(
    client: ClientName, text: str | None, command: str, http: Mapping[str, Any] | None = None
) -> str:
    value: dict[str, Any] = loads(text) if text and text.strip() else {}
    hooks = value.get("hooks") or {}  # absent or null
    value["hooks"] = hooks
    for event in CLIENT_EVENTS[client]:
        groups: list[dict[str, Any]] = hooks.setdefault(event, [])
        placed = False
        for group in groups:
            kept = []
            for handler in group["hooks"]:
                if not is_agc_handler(handler, client):
                    kept.append(handler)
                elif not placed:  # a second agc handler for the event: one is enough
                    kept.append(_replace(client, handler, command, event, http))
                    placed = True
            group["hooks"] = kept
        hooks[event] = [group for group in groups if group["hooks"]]
        if not placed:
            hooks[event].append({"hooks": [_handler(client, command, event, http)]})
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _json_without_hooks(client: ClientName, text: str) -> str:
    value: dict[str, Any] = loads(text)
    hooks: dict[str, Any] = value["hooks"]
    for event in list(hooks):
        groups = []
        for group in hooks[event]:
            kept = [h for h in group["hooks"] if not is_agc_handler(h, client)]
            if kept or not group["hooks"]:
                groups.append({**group, "hooks": kept})
        if groups:
            hooks[event] = groups
        else:
            del hooks[event]
    if not hooks:
        del value["hooks"]
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _toml_doc(text: str) -> tomlkit.TOMLDocument:
    try:
        return tomlkit.parse(text)
    except tomlkit.exceptions.TOMLKitError as exc:  # pragma: no cover - tomllib read it
        raise ClientConfigInvalidError(f"config.toml could not be edited: {exc}") from exc


def _toml_handler(command: str, event: str, *, inline: bool) -> Table | InlineTable:
    handler: Table | InlineTable = tomlkit.inline_table() if inline else tomlkit.table()
    for key, item in _handler("codex", command, event).items():
        handler[key] = item
    return handler


def _as_table(container: Any, key: str) -> Table:
    """``container[key]`` as a standard table, made one when absent; an inline table
    (``hooks = { … }``) becomes a standard table with the same members, as Codex's own
    configuration editor does, so that tables of arrays can be added to it."""
    item = container.get(key)
    if item is None:
        container[key] = tomlkit.table(is_super_table=True)
    elif isinstance(item, InlineTable):
        table = tomlkit.table()
        for name, value in item.items():
            table[name] = value
        container[key] = table
    result: Table = container[key]
    return result


def _toml_with_hooks(text: str, command: str) -> str:
    doc = _toml_doc(text)
    hooks = _as_table(doc, "hooks")
    for event in CLIENT_EVENTS["codex"]:
        groups = hooks.get(event)
        placed = False
        for group in groups or ():
            handlers = group["hooks"]
            for index in range(len(handlers) - 1, -1, -1):
                if not is_agc_command(handlers[index].get("command"), "codex"):
                    continue
                wanted = _handler("codex", command, event)
                if "async" in handlers[index] and "async" not in wanted:
                    del handlers[index]["async"]
                for key, item in wanted.items():
                    handlers[index][key] = item
                placed = True
        if placed:
            continue
        if groups is None:
            groups = tomlkit.aot()
            hooks[event] = groups
        if isinstance(groups, AoT):
            group = tomlkit.table()
            aot = tomlkit.aot()
            aot.append(_toml_handler(command, event, inline=False))
            group["hooks"] = aot
            groups.append(group)
        else:  # an inline array of groups
            group_inline = tomlkit.inline_table()
            array = tomlkit.array()
            array.append(_toml_handler(command, event, inline=True))
            group_inline["hooks"] = array
            groups.append(group_inline)
    return _dedupe_agc(doc).as_string()


def _dedupe_agc(doc: tomlkit.TOMLDocument) -> tomlkit.TOMLDocument:
    """Keep the first agc handler of each event (a file edited by hand may hold two)."""
    hooks = doc.get("hooks")
    for event in CLIENT_EVENTS["codex"]:
        seen = False
        for group in (hooks.get(event) if hooks is not None else None) or ():
            handlers = group["hooks"]
            for index in range(len(handlers)):
                if is_agc_command(handlers[index].get("command"), "codex"):
                    if seen:
                        raise ClientConfigInvalidError(
                            f"config.toml holds two agc hooks for {event}",
                            hint="Remove one by hand (or run `agc hooks uninstall` first).",
                        )
                    seen = True
    return doc


def _remove_indices(container: AoT | Array, indices: list[int]) -> None:
    for index in sorted(indices, reverse=True):
        del container[index]


def _toml_without_hooks(text: str, client: ClientName) -> str:
    doc = _toml_doc(text)
    hooks = doc["hooks"]
    for event in [key for key in hooks if key != "state"]:
        groups = hooks[event]
        empty_groups = []
        for number, group in enumerate(groups):
            handlers = group["hooks"]
            ours = [i for i, h in enumerate(handlers) if is_agc_command(h.get("command"), client)]
            if not ours:
                continue
            _remove_indices(handlers, ours)
            if len(handlers) == 0:
                empty_groups.append(number)
        _remove_indices(groups, empty_groups)
        if len(groups) == 0:
            del hooks[event]
    if len(hooks) == 0:
        del doc["hooks"]
    return doc.as_string()


# --- Codex trust -----------------------------------------------------------------------


_SNAKE: Final[Mapping[str, str]] = {
    "PreToolUse": "pre_tool_use",
    "PermissionRequest": "permission_request",
    "PostToolUse": "post_tool_use",
    "PreCompact": "pre_compact",
    "PostCompact": "post_compact",
    "SessionStart": "session_start",
    "SessionEnd": "session_end",
    "UserPromptSubmit": "user_prompt_submit",
    "SubagentStart": "subagent_start",
    "SubagentStop": "subagent_stop",
    "Stop": "stop",
}


def codex_hook_hash(
    event: str,
    command: str,
    *,
    timeout: int | None,
    matcher: str | None = None,
    is_async: bool = False,
    status_message: str | None = None,
) -> str:
    """The digest Codex trusts a command hook by: ``sha256:<64 hex>`` (see the module).

    Args:
        event: the event as ``config.toml`` names it (``PreToolUse``).
        command: the handler's command.
        timeout: its ``timeout`` in seconds, ``None`` when absent (Codex's default: 600 s;
            a ``SessionEnd`` handler's is bounded to 1-3 s, 1 s when absent).
        matcher: its group's matcher, when the event takes one.
        is_async: its ``async``.
        status_message: its ``statusMessage``.

    Raises:
        UsageError: an event Codex does not know.
    """
    label = _SNAKE.get(event)
    if label is None:
        raise UsageError(f"Codex has no hook event {event!r}")
    if event == "SessionEnd":
        least, most = _CODEX_SESSION_END_TIMEOUT_S
        seconds = min(most, max(least, timeout if timeout is not None else least))
    else:
        seconds = max(1, timeout if timeout is not None else _CODEX_DEFAULT_TIMEOUT_S)
    handler: dict[str, Any] = {
        "type": "command",
        "command": command,
        "timeout": seconds,
        "async": is_async,
    }
    if status_message is not None:
        handler["statusMessage"] = status_message
    identity: dict[str, Any] = {"event_name": label, "hooks": [handler]}
    if matcher is not None:
        identity["matcher"] = matcher
    data = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(data.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CodexTrust:
    """Whether Codex will run one of agc's handlers.

    Attributes:
        key: its ``[hooks.state]`` key (``<config file>:<event>:<group>:<handler>``).
        event: the event (``PreToolUse`` …).
        current_hash: the digest of the handler as it is now.
        trusted_hash: the digest the user configuration trusts, ``None`` when none.
        enabled: ``False`` when the user configuration disables the hook.
    """

    key: str
    event: str
    current_hash: str
    trusted_hash: str | None
    enabled: bool = True

    @property
    def status(self) -> Literal["trusted", "untrusted", "modified"]:
        """``trusted`` (the digests match), ``modified`` (a different one is trusted) or
        ``untrusted`` (none is)."""
        if self.trusted_hash is None:
            return "untrusted"
        return "trusted" if self.trusted_hash == self.current_hash else "modified"


def codex_trust(
    hooks_text: str | None, *, hooks_path: str, user_text: str | None, user_path: str
) -> list[CodexTrust]:
    """The trust of each agc handler in a Codex ``config.toml``.

    Args:
        hooks_text: the text of the file that holds the hooks.
        hooks_path: its absolute path as Codex names it (the key's first part).
        user_text: the text of the user configuration (``$CODEX_HOME/config.toml``),
            where Codex keeps trust; the same text as ``hooks_text`` for user scope.
        user_path: its path, for messages.

    Raises:
        ClientConfigInvalidError: either file is not a configuration agc can read.
    """
    handlers = agc_handlers("codex", hooks_text, path=hooks_path)
    states = _codex_states(user_text, user_path)
    trust = []
    for handler in handlers:
        key = codex_key(hooks_path, handler.event, handler.group, handler.index)
        state = states.get(key, {})
        trusted = state.get("trusted_hash")
        trust.append(
            CodexTrust(
                key=key,
                event=handler.event,
                current_hash=codex_hook_hash(
                    handler.event,
                    handler.command,
                    timeout=handler.timeout,
                    matcher=None,
                    is_async=handler.background,
                ),
                trusted_hash=trusted if isinstance(trusted, str) else None,
                enabled=state.get("enabled") is not False,
            )
        )
    return trust


def _codex_states(user_text: str | None, user_path: str) -> dict[str, dict[str, Any]]:
    value = _parse("codex", user_text, user_path)
    states = (value.get("hooks") or {}).get("state") or {}
    return {key.strip(): state for key, state in states.items() if isinstance(state, dict)}


def with_codex_trust(
    user_text: str | None,
    *,
    user_path: str,
    trust: Mapping[str, str],
    forget: tuple[str, ...] = (),
    rename: Mapping[str, str] | None = None,
) -> str:
    """The user configuration trusting agc's handlers, as Codex's own review writes it:
    ``[hooks.state."<key>"] trusted_hash = "<digest>"``, other members of the entry
    (``enabled``) and every other entry kept.

    Args:
        user_text: the text of ``$CODEX_HOME/config.toml`` (``None``: no file yet).
        user_path: its path, for messages.
        trust: key -> digest to trust.
        forget: keys whose entries to remove (agc's handlers taken out).
        rename: old key -> new key, for entries of the user's handlers that moved.

    Raises:
        ClientConfigInvalidError: the text is not valid TOML or ``hooks.state`` is not a
            table.
    """
    _parse("codex", user_text, user_path)
    doc = _toml_doc(user_text or "")
    hooks = _as_table(doc, "hooks")
    state = _as_table(hooks, "state")
    moved = {old: state[old] for old in (rename or {}) if old in state}
    for key in (*forget, *moved):
        if key in state:
            del state[key]
    for old, item in moved.items():
        state[(rename or {})[old]] = item
    for key, digest in trust.items():
        if key not in state:
            state[key] = tomlkit.table()
        state[key]["trusted_hash"] = digest
    if len(state) == 0:
        del hooks["state"]
    if len(hooks) == 0:
        del doc["hooks"]
    result = doc.as_string()
    _parse("codex", result, user_path)
    return result


def codex_moves(text: str | None, *, path: str) -> dict[str, str]:
    """The ``[hooks.state]`` keys of the user's handlers that move when agc's handlers are
    taken out of a Codex ``config.toml`` (:func:`without_hooks`): old key -> new key.

    Raises:
        ClientConfigInvalidError: as :func:`with_hooks`.
    """
    value = _parse("codex", text, path)
    moves: dict[str, str] = {}
    for event, groups in (value.get("hooks") or {}).items():
        if event == "state":
            continue
        new_group = 0
        for number, group in enumerate(groups):
            handlers = group["hooks"]
            ours = [is_agc_command(h.get("command"), "codex") for h in handlers]
            new_index = 0
            for index, is_ours in enumerate(ours):
                if is_ours:
                    continue
                if (number, index) != (new_group, new_index):
                    moves[codex_key(path, event, number, index)] = codex_key(
                        path, event, new_group, new_index
                    )
                new_index += 1
            if not (handlers and all(ours)):
                new_group += 1
    return moves


def codex_key(path: str, event: str, group: int, index: int) -> str:
    """The ``[hooks.state]`` key of a handler (see the module)."""
    return f"{path}:{_SNAKE.get(event, event)}:{group}:{index}"
