"""The service's settings: one frozen object, checked when it is made.

Times are milliseconds (``*_ms``) as in the answers the service gives (``idleTimeoutMs``);
counts are plain integers. Nothing here is a secret: the bearer token is named by an env
var (:attr:`ServeConfig.token_env`) and read only by the HTTP layer.
"""

from __future__ import annotations

import dataclasses
import os
import re
import resource
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from agc.errors import UsageError

__all__ = [
    "APPROVAL_POLICIES",
    "HIDDEN_ENV",
    "SANDBOX_MODES",
    "HttpLimits",
    "ProtocolChoice",
    "ServeConfig",
    "connection_budget",
]

ProtocolChoice = Literal["auto", "app-server", "mcp-server"]

#: ``approvalPolicy`` values of the Codex app-server protocol.
APPROVAL_POLICIES: Final = ("never", "on-request", "on-failure", "untrusted")
#: ``sandbox`` values of the Codex app-server protocol.
SANDBOX_MODES: Final = ("read-only", "workspace-write", "danger-full-access")

#: Env vars of agc itself that never reach the agent's environment.
HIDDEN_ENV: Final = ("AGC_SIGNING_KEY", "AGC_SERVE_TOKEN")

_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def _positive(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise UsageError(f"{name} must be a positive integer, not {value!r}")


@dataclass(frozen=True)
class ServeConfig:
    """Everything ``agc serve`` needs to know (see docs/serve.md, "Configuration").

    Attributes:
        workspace: the agent's working folder (each thread's ``cwd``).
        codex_home: ``CODEX_HOME`` for the agent (its configuration, its sessions).
        codex_bin: the Codex executable (a path or a name looked up on ``PATH``).
        protocol: ``app-server``, ``mcp-server``, or ``auto`` (the first whose handshake
            answers, app-server first).
        provider_key_env: env var names the agent needs for its model provider; a
            missing one is a ``provider_unavailable`` failure (``error.missingEnv``).
        model, approval_policy, sandbox: thread settings (``None``: Codex's own config).
        idle_timeout_ms: a session with no turn for this long is reaped (process ended).
        turn_timeout_ms: a turn running longer is interrupted, then failed.
        handshake_timeout_ms: spawn + handshake of a session or of the preflight.
        request_timeout_ms: for one protocol request (thread start, turn start).
        preflight_ttl_ms: how long a passed deep preflight (``codex --version`` and the
            handshake) is trusted before it is run again.
        result_trace_limit: events in the ``/result`` window (the latest ones).
        trace_page_limit: the largest page ``/trace`` gives.
        max_trace_events: events kept in memory per trace (the sealed run has all).
        max_trace_bytes: what a running trace keeps of its events, in bytes (roughly:
            their strings' characters; the oldest dropped first, the newest always kept).
        finished_trace_bytes: the same for a finished trace (its ``/result`` windows
            are kept apart, whole).
        max_traces: finished traces kept in memory (oldest dropped first).
        max_sessions: live agent processes at once.
        max_conversations: conversations remembered (idle ones dropped oldest first).
        conversation_retention_ms: an idle conversation (no process) is forgotten
            after this long.
        max_message_chars: the longest ``message`` accepted.
        reap_interval_ms: how often the reaper looks at idle sessions.
        token_env: env var holding the bearer token (required off loopback).
        env: the environment the agent inherits (default: this process's), without
            :attr:`hidden_env`; ``CODEX_HOME`` is set to :attr:`codex_home`.
        hidden_env: env var names never passed to the agent.
        codex_log_dir: write each session's stderr (redacted) here, if given.
        codex_args: extra arguments after the protocol subcommand.
        opt_out_notifications: app-server notification methods not to receive.
    """

    workspace: Path
    codex_home: Path
    codex_bin: str = "codex"
    protocol: ProtocolChoice = "auto"
    provider_key_env: tuple[str, ...] = ("OPENAI_API_KEY",)
    model: str | None = None
    approval_policy: str = "never"
    sandbox: str | None = None
    idle_timeout_ms: int = 600_000
    turn_timeout_ms: int = 1_800_000
    handshake_timeout_ms: int = 20_000
    request_timeout_ms: int = 60_000
    preflight_ttl_ms: int = 30_000
    result_trace_limit: int = 20
    trace_page_limit: int = 500
    max_trace_events: int = 20_000
    max_trace_bytes: int = 16 * 1024 * 1024
    finished_trace_bytes: int = 256 * 1024
    max_traces: int = 1_000
    max_sessions: int = 32
    max_conversations: int = 10_000
    conversation_retention_ms: int = 86_400_000
    max_message_chars: int = 100_000
    reap_interval_ms: int = 1_000
    token_env: str | None = None
    env: Mapping[str, str] | None = None
    hidden_env: tuple[str, ...] = HIDDEN_ENV
    codex_log_dir: Path | None = None
    codex_args: tuple[str, ...] = ()
    opt_out_notifications: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        for name in (
            "idle_timeout_ms",
            "turn_timeout_ms",
            "handshake_timeout_ms",
            "request_timeout_ms",
            "preflight_ttl_ms",
            "result_trace_limit",
            "trace_page_limit",
            "max_trace_events",
            "max_trace_bytes",
            "finished_trace_bytes",
            "max_traces",
            "max_sessions",
            "max_conversations",
            "conversation_retention_ms",
            "max_message_chars",
            "reap_interval_ms",
        ):
            _positive(name, getattr(self, name))
        if self.protocol not in ("auto", "app-server", "mcp-server"):
            raise UsageError(
                f"protocol must be auto, app-server or mcp-server, not {self.protocol!r}"
            )
        if self.approval_policy not in APPROVAL_POLICIES:
            raise UsageError(
                f"approval policy {self.approval_policy!r} is not one of "
                + ", ".join(APPROVAL_POLICIES)
            )
        if self.sandbox is not None and self.sandbox not in SANDBOX_MODES:
            raise UsageError(f"sandbox {self.sandbox!r} is not one of {', '.join(SANDBOX_MODES)}")
        names = [*self.provider_key_env, *self.hidden_env]
        if self.token_env is not None:
            names.append(self.token_env)
        for name in names:
            if not _ENV_NAME.fullmatch(name):
                raise UsageError(f"{name!r} is not an environment variable name")
        if not self.codex_bin:
            raise UsageError("the Codex executable must not be empty")
        if not self.workspace.is_absolute() or not self.codex_home.is_absolute():
            raise UsageError("the workspace and CODEX_HOME must be absolute paths")

    def agent_env(self) -> dict[str, str]:
        """The agent's whole environment (see :attr:`env`)."""
        base = dict(os.environ if self.env is None else self.env)
        hidden = {*self.hidden_env, *((self.token_env,) if self.token_env else ())}
        for name in hidden:
            base.pop(name, None)
        base["CODEX_HOME"] = str(self.codex_home)
        return base


#: Descriptors kept for the service itself whatever the load (the listening socket,
#: logs, the store's lock and chain files, the preflight's probes, the sink's reserve).
BASE_DESCRIPTORS: Final = 64
#: Descriptors per agent session: its stdin, stdout and stderr pipes, its log, and its
#: running turn's files (transcript, tool events, ledger, seal temporaries).
SESSION_DESCRIPTORS: Final = 16


@dataclass(frozen=True)
class HttpLimits:
    """What the HTTP server allows a client (see docs/serve.md, "Limits").

    Attributes:
        header_timeout_s: seconds for a request's head (request line and headers) to
            arrive, from a connection's start or the end of the previous response.
        body_timeout_s: seconds for its body to arrive once the head is read.
        keep_alive_s: seconds an idle connection is kept between requests.
        max_connections: open connections at once (see :func:`connection_budget`).
        max_header_bytes: the largest request head, in bytes.
        backlog: connections the kernel queues for accepting, which is also how many
            the server accepts at a time before it can close any (so the descriptor
            budget keeps twice this free; see :func:`connection_budget`).
    """

    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    keep_alive_s: int = 5
    max_connections: int = 256
    max_header_bytes: int = 16 * 1024
    backlog: int = 64

    def __post_init__(self) -> None:
        for name in ("header_timeout_s", "body_timeout_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise UsageError(f"{name} must be a positive number of seconds, not {value!r}")
        for name in ("keep_alive_s", "max_connections", "max_header_bytes", "backlog"):
            _positive(name, getattr(self, name))


def connection_budget(limits: HttpLimits, *, max_sessions: int) -> HttpLimits:
    """``limits`` with the connection cap the descriptor limit allows: at most
    ``limits.max_connections``, fewer when ``RLIMIT_NOFILE`` (soft) must keep
    :data:`BASE_DESCRIPTORS`, :data:`SESSION_DESCRIPTORS` per session and twice the
    backlog free of connections (each holds one descriptor; the event loop accepts up
    to a backlog of them before it runs the code that closes the idlest, and a closed
    one is released a step later).

    Raises:
        UsageError: the limit leaves fewer than 8 connections (raise ``ulimit -n`` or
            lower ``--max-sessions``).
    """
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return limits
    spare = soft - BASE_DESCRIPTORS - SESSION_DESCRIPTORS * max_sessions - 2 * limits.backlog
    if spare < 8:
        raise UsageError(
            f"the descriptor limit ({soft}, ulimit -n) leaves {max(spare, 0)} connections "
            f"beside {max_sessions} sessions",
            hint="Raise the limit (ulimit -n) or lower --max-sessions.",
        )
    return dataclasses.replace(limits, max_connections=min(limits.max_connections, spare))
