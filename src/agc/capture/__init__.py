"""Capture: agent-client sessions turned into tool-event records and session facts.

The pure half of capturing what Claude Code, the Codex CLI and the Gemini CLI do: it
reads what a client gives (a hook's event JSON, the client's own session file) and says
what to keep; writing and sealing it is the evidence layer's job, combined in
:mod:`agc.flows`.

* :func:`run_id_for` names the run of a client session;
* :class:`ToolEvent` is one tool-events record, redacted when made;
* :class:`SessionFacts` is what the run's manifest says about the session;
* :func:`parse_hook_event` reads a client hook's event JSON into a :class:`HookEvent`;
* :func:`compare_calls` finds the tool calls only one of two witnesses (the hooks, the
  client's session file) has.

Example::

    from agc.capture import ToolEvent, run_id_for

    run_id = run_id_for("claude-code", "4f1c…")
    record = ToolEvent(event="call", source="hook", client="claude-code",
                       session_id="4f1c…", tool="Bash", call_id="toolu_01",
                       input={"command": "ls"}).to_record()
"""

from __future__ import annotations

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

__all__ = [
    "CLIENTS",
    "EVENT_KINDS",
    "MAX_HOOK_EVENT_BYTES",
    "ClientName",
    "Divergence",
    "EventKind",
    "EventSource",
    "HookEvent",
    "SessionFacts",
    "ToolEvent",
    "compare_calls",
    "event_kind",
    "parse_hook_event",
    "run_id_for",
]
