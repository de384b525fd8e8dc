"""Capture: agent-client sessions turned into tool-event records and session facts.

The pure half of capturing what Claude Code, the Codex CLI and the Gemini CLI do: it
reads what a client gives (a hook's event JSON, the client's own session file) and says
what to keep; writing and sealing it is the evidence layer's job, combined in
:mod:`agc.flows`.

* :func:`run_id_for` names the run of a client session;
* :class:`ToolEvent` is one tool-events record, redacted when made;
* :class:`SessionFacts` is what the run's manifest says about the session;
* :class:`SessionParser` / :func:`parse_session` read both from a client's own session
  file (Codex rollout, ``codex exec --json`` stream, Claude Code session, Gemini CLI chat);
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
from agc.capture._sessions import (
    SESSION_FORMATS,
    SessionFormat,
    SessionParser,
    detect_format,
    parse_session,
)

__all__ = [
    "CLIENTS",
    "SESSION_FORMATS",
    "ClientName",
    "Divergence",
    "EventKind",
    "EventSource",
    "SessionFacts",
    "SessionFormat",
    "SessionParser",
    "ToolEvent",
    "compare_calls",
    "detect_format",
    "parse_session",
    "run_id_for",
]
