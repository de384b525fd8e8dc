"""``agc serve``: an audited agent chat endpoint on the real Codex CLI.

``POST /v1/agent/chat`` in front of long-lived Codex sessions over stdio (the
``codex-stdio`` provider: ``codex app-server``, or ``codex mcp-server`` through the MCP
Python SDK where a build has it), with short-connection submit (``202`` + ``traceId``),
``/result`` and ``/trace`` polling, a session registry, preflight blockers and nothing
secret in any answer. Each turn is handed to a :class:`TurnSink`;
``agc.flows.AuditSink`` is the one that seals every turn as an agc run with a turn
ledger (the command line uses it).

Example::

    from agc.serve import ServeConfig, Supervisor, create_app

    config = ServeConfig(workspace=Path("/work"), codex_home=Path("/codex-home"))
    app = create_app(Supervisor(config, sink=my_sink))   # any ASGI server runs it

The HTTP API, the records and the blockers are documented in docs/serve.md.
"""

from __future__ import annotations

import typing

from agc.serve._config import (
    APPROVAL_POLICIES,
    HIDDEN_ENV,
    SANDBOX_MODES,
    HttpLimits,
    ServeConfig,
    connection_budget,
)
from agc.serve._preflight import BLOCKER_CODES, Blocker, Preflight, PreflightReport
from agc.serve._provider import (
    PROTOCOLS,
    ProviderError,
    ProviderEvent,
    ProviderSession,
    SessionFacts,
    TurnResult,
)
from agc.serve._records import (
    RECORD_SCHEMA_VERSION,
    manifest_attributes,
    reply_record,
    request_record,
    tool_event,
    transcript_record,
)
from agc.serve._sink import NullSink, TurnEnd, TurnInfo, TurnSink
from agc.serve._supervisor import (
    PROVIDER,
    ChatRefusedError,
    Conversation,
    Supervisor,
    offered_files,
)
from agc.serve._trace import TraceEvent

if typing.TYPE_CHECKING:
    from agc.serve._app import CHAT_PATH, BearerAuth, create_app
    from agc.serve._http import uvicorn_config

__all__ = [
    "APPROVAL_POLICIES",
    "BLOCKER_CODES",
    "CHAT_PATH",
    "HIDDEN_ENV",
    "PROTOCOLS",
    "PROVIDER",
    "RECORD_SCHEMA_VERSION",
    "SANDBOX_MODES",
    "BearerAuth",
    "Blocker",
    "ChatRefusedError",
    "Conversation",
    "HttpLimits",
    "NullSink",
    "Preflight",
    "PreflightReport",
    "ProviderError",
    "ProviderEvent",
    "ProviderSession",
    "ServeConfig",
    "SessionFacts",
    "Supervisor",
    "TraceEvent",
    "TurnEnd",
    "TurnInfo",
    "TurnResult",
    "TurnSink",
    "connection_budget",
    "create_app",
    "manifest_attributes",
    "offered_files",
    "reply_record",
    "request_record",
    "tool_event",
    "transcript_record",
    "uvicorn_config",
]

# The HTTP app needs the ASGI toolkit (starlette, the ``serve`` extra): loaded on first
# use, so that the records, the supervisor and the preflight import without it.
_HTTP_APP: typing.Final = frozenset({"CHAT_PATH", "BearerAuth", "create_app"})
# The server's limits need uvicorn (the ``serve`` extra) too.
_HTTP_SERVER: typing.Final = frozenset({"uvicorn_config"})


def __getattr__(name: str) -> typing.Any:
    """``create_app``, ``BearerAuth`` and ``CHAT_PATH`` from :mod:`agc.serve._app`, and
    ``uvicorn_config`` from :mod:`agc.serve._http`, on first access (PEP 562).

    Raises:
        MissingExtraError: starlette or uvicorn is not installed (the ``serve`` extra).
    """
    if name not in _HTTP_APP | _HTTP_SERVER:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from agc.errors import MissingExtraError  # noqa: PLC0415

    with MissingExtraError.raised_for("serve", feature="the HTTP app of agc serve"):
        if name in _HTTP_SERVER:
            from agc.serve import _http  # noqa: PLC0415

            return getattr(_http, name)
        from agc.serve import _app  # noqa: PLC0415

    return getattr(_app, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_HTTP_APP, *_HTTP_SERVER})
