"""Capture: agent-client sessions turned into tool-event records and session facts.

The pure half of capturing what Claude Code, the Codex CLI and the Gemini CLI do: it
reads what a client gives (a hook's event JSON, the client's own session file) and says
what to keep; writing and sealing it is the evidence layer's job, combined in
:mod:`agc.flows`.

* :func:`run_id_for` names the run of a client session;
* :class:`ToolEvent` is one tool-events record, redacted when made;
* :class:`SessionFacts` is what the run's manifest says about the session;
* :func:`parse_hook_event` reads a client hook's event JSON into a :class:`HookEvent`;
* :class:`SessionParser` / :func:`parse_session` read both from a client's own session
  file (Codex rollout, ``codex exec --json`` stream, Claude Code session, Gemini CLI chat);
* :func:`compare_calls` finds the tool calls only one of two witnesses (the hooks, the
  client's session file) has;
* :func:`install_hooks`, :func:`uninstall_hooks` and :func:`check_hooks` put agc's hook
  command into a client's own hook configuration, take it out, and say whether the
  client will run it (for Codex: whether the hook is trusted).

Example::

    from agc.capture import ToolEvent, run_id_for

    run_id = run_id_for("claude-code", "4f1c…")
    record = ToolEvent(event="call", source="hook", client="claude-code",
                       session_id="4f1c…", tool="Bash", call_id="toolu_01",
                       input={"command": "ls"}).to_record()
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from agc._core.lazy import lazy_names as _lazy_names

if _TYPE_CHECKING:
    from agc.capture._codex_app import find_codex
    from agc.capture._crosscheck import Divergence, compare_calls
    from agc.capture._events import (
        CLIENTS,
        ClientName,
        EventKind,
        EventSource,
        SessionFacts,
        ToolEvent,
        run_id_for,
    )
    from agc.capture._hooks import (
        EVENT_KINDS,
        MAX_HOOK_EVENT_BYTES,
        HookEvent,
        event_kind,
        parse_hook_event,
    )
    from agc.capture._http_hooks import (
        HTTP_HOOK_PATH,
        HttpHook,
        free_port,
        http_settings_path,
        keep_http_hook,
        listen_on_free_port,
        listener_owner,
        port_listening,
        read_http_hook,
        retire_http_hook,
        retired_http_port,
    )
    from agc.capture._install import (
        BACKGROUND_EVENTS,
        CLIENT_EVENTS,
        CodexTrust,
        Scope,
        codex_hook_hash,
        hook_client_command,
        hook_command,
    )
    from agc.capture._install_files import (
        ClientHooks,
        FileChange,
        HooksChange,
        check_hooks,
        config_paths,
        install_hooks,
        move_http_hooks,
        session_folder,
        uninstall_hooks,
    )
    from agc.capture._sessions import (
        SESSION_FORMATS,
        SessionFormat,
        SessionParser,
        detect_format,
        parse_session,
    )

__all__ = [
    "BACKGROUND_EVENTS",
    "CLIENTS",
    "CLIENT_EVENTS",
    "EVENT_KINDS",
    "HTTP_HOOK_PATH",
    "MAX_HOOK_EVENT_BYTES",
    "SESSION_FORMATS",
    "ClientHooks",
    "ClientName",
    "CodexTrust",
    "Divergence",
    "EventKind",
    "EventSource",
    "FileChange",
    "HookEvent",
    "HooksChange",
    "HttpHook",
    "Scope",
    "SessionFacts",
    "SessionFormat",
    "SessionParser",
    "ToolEvent",
    "check_hooks",
    "codex_hook_hash",
    "compare_calls",
    "config_paths",
    "detect_format",
    "event_kind",
    "find_codex",
    "free_port",
    "hook_client_command",
    "hook_command",
    "http_settings_path",
    "install_hooks",
    "keep_http_hook",
    "listen_on_free_port",
    "listener_owner",
    "move_http_hooks",
    "parse_hook_event",
    "parse_session",
    "port_listening",
    "read_http_hook",
    "retire_http_hook",
    "retired_http_port",
    "run_id_for",
    "session_folder",
    "uninstall_hooks",
]

_HOMES: dict[str, tuple[str, ...]] = {
    "agc.capture._codex_app": ("find_codex",),
    "agc.capture._crosscheck": (
        "Divergence",
        "compare_calls",
    ),
    "agc.capture._events": (
        "CLIENTS",
        "ClientName",
        "EventKind",
        "EventSource",
        "SessionFacts",
        "ToolEvent",
        "run_id_for",
    ),
    "agc.capture._hooks": (
        "EVENT_KINDS",
        "MAX_HOOK_EVENT_BYTES",
        "HookEvent",
        "event_kind",
        "parse_hook_event",
    ),
    "agc.capture._http_hooks": (
        "HTTP_HOOK_PATH",
        "HttpHook",
        "free_port",
        "http_settings_path",
        "keep_http_hook",
        "listen_on_free_port",
        "listener_owner",
        "port_listening",
        "read_http_hook",
        "retire_http_hook",
        "retired_http_port",
    ),
    "agc.capture._install": (
        "BACKGROUND_EVENTS",
        "CLIENT_EVENTS",
        "CodexTrust",
        "Scope",
        "codex_hook_hash",
        "hook_client_command",
        "hook_command",
    ),
    "agc.capture._install_files": (
        "ClientHooks",
        "FileChange",
        "HooksChange",
        "check_hooks",
        "config_paths",
        "install_hooks",
        "move_http_hooks",
        "session_folder",
        "uninstall_hooks",
    ),
    "agc.capture._sessions": (
        "SESSION_FORMATS",
        "SessionFormat",
        "SessionParser",
        "detect_format",
        "parse_session",
    ),
}

# Every name is loaded on first use (PEP 562): ``agc hook`` reads one event and writes
# one record, so it loads the hook parser and the record shape, not the configuration
# editors (tomlkit), the Codex app-server client or the session-file readers.
__getattr__, __dir__ = _lazy_names(
    globals(), {name: (module, name) for module, names in _HOMES.items() for name in names}
)
