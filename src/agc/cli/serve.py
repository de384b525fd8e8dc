"""``agc serve``: the audited agent chat endpoint, run on uvicorn.

The HTTP API and the supervisor come from :mod:`agc.serve`; the record of each turn is
made by :class:`agc.flows.AuditSink`: every turn an agc run (request, events, reply,
sealed when the turn ends and signed when a signing key is set) plus a turn ledger. A
crash of the service leaves the open turns' runs unsealed, for ``agc recover`` (or
``agc serve --recover`` at the next start).
"""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Annotated, Final

import typer

import agc
from agc.cli.common import StoreOption, err_console
from agc.cli.keys import SigningKeyOption, signing_key_from
from agc.errors import AgcError, MissingExtraError, UsageError
from agc.exitcodes import ExitCode
from agc.flows import (
    DEFAULT_MCP_STARTUP_WAIT_MS,
    AuditSink,
    ServeExtensions,
    StoreLayout,
    atomic_write_bytes,
    recover_turn_runs,
)
from agc.integrity import SigningKey
from agc.serve import (
    APPROVAL_POLICIES,
    SANDBOX_MODES,
    HttpLimits,
    ServeConfig,
    Supervisor,
    connection_budget,
)

__all__ = [
    "AuditSink",
    "handle_leftovers",
    "is_loopback",
    "ledger_root_for",
    "listen_url",
    "register",
]

DEFAULT_TOKEN_ENV: Final = "AGC_SERVE_TOKEN"  # noqa: S105 - a name, not a secret
_MIN_TOKEN_CHARS: Final = 16


def handle_leftovers(
    sink: AuditSink, *, store: Path | None, signing_key: SigningKey | None, recover: bool
) -> list[str]:
    """Runs an earlier crash of the service left unsealed: sealed with
    :func:`agc.flows.recover_turn_runs` when ``recover``, else listed on stderr. Returns
    those it sealed."""
    leftovers = sink.unsealed_runs()
    if not leftovers:
        return []
    if not recover:
        shown = ", ".join(leftovers[:5]) + (" …" if len(leftovers) > 5 else "")
        err_console.print(
            f"{len(leftovers)} turn run(s) of an earlier service are unsealed (a crash?): "
            f"{shown}; seal them with `agc recover RUN_ID` or `agc serve --recover`",
            markup=False,
        )
        return []

    def failed(run_id: str, exc: AgcError) -> None:  # a live writer of another service …
        err_console.print(f"run {run_id} not recovered: {exc.message}", markup=False)

    def sealed(run_id: str) -> None:
        err_console.print(f"recovered and sealed run {run_id}", markup=False)

    return recover_turn_runs(
        leftovers, store=store, signing_key=signing_key, on_sealed=sealed, on_failed=failed
    )


def is_loopback(host: str) -> bool:
    """``localhost``, 127.0.0.0/8 or ``::1``."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def listen_url(host: str, port: int) -> str:
    """``http://host:port``, an IPv6 address in brackets once (RFC 3986, section 3.2.2)
    whether ``host`` came with them or not."""
    bare = host.strip("[]") if host.startswith("[") else host
    return f"http://[{bare}]:{port}" if ":" in bare else f"http://{bare}:{port}"


def ledger_root_for(
    requested: Path | None, *, workspace: Path, store_root: Path, insecure: bool
) -> Path:
    """The turn ledger's folder: ``requested``, else ``<store>/ledger`` (where the
    agent's sandbox does not reach, as the store); resolved (symbolic links followed,
    the workspace's too).

    The ledger is a control plane the agent cannot reach: the folder and the workspace
    must not hold one another, in either direction (a ledger folder holding the
    workspace puts the ledger's own ``.agent/`` within the agent's reach whenever the
    workspace is that folder or a part of it).

    Raises:
        UsageError: it is the workspace, inside it, or holds it (the agent could
            rewrite its own ledger) and ``insecure`` (``--insecure-ledger-in-workspace``)
            is not set.
    """
    root = (requested or store_root / "ledger").expanduser().resolve()
    work = workspace.expanduser().resolve()
    if insecure:
        return root
    where = "--ledger-root" if requested is not None else "the store's ledger folder"
    hint = (
        "Keep the ledger and the workspace apart (--ledger-root DIR, or a --store, "
        "outside the workspace and not holding it), or accept that risk with "
        "--insecure-ledger-in-workspace."
    )
    if root.is_relative_to(work) or _holds(work, root):
        raise UsageError(
            f"{where} {root} is inside the workspace {work}, where the agent can write",
            hint=hint,
        )
    if work.is_relative_to(root) or _holds(root, work):
        raise UsageError(
            f"{where} {root} holds the workspace {work}: the agent can write inside the "
            "ledger's folder",
            hint=hint,
        )
    return root


def _holds(outer: Path, inner: Path) -> bool:
    """Whether the folder ``outer`` is ``inner`` or one of its parents by identity
    (device and inode), not only by name: the same folder reached by two names (a bind
    mount) is one folder. Parts that do not exist (yet) are passed over."""
    try:
        there = os.stat(outer)
    except OSError:
        return False
    for part in (inner, *inner.parents):
        try:
            info = os.stat(part)
        except OSError:
            continue
        if (info.st_dev, info.st_ino) == (there.st_dev, there.st_ino):
            return True
    return False


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise UsageError(
            f"cannot listen on {host}:{port}: {exc.strerror}",
            hint="Choose another --port (0 picks a free one).",
        ) from exc
    sock.listen(64)  # uvicorn sets the backlog it is given (HttpLimits.backlog)
    sock.set_inheritable(True)
    return sock


def _seconds_ms(value: float | None, default_ms: int) -> int:
    return default_ms if value is None else max(1, int(value * 1000))


def serve_command(
    host: Annotated[
        str,
        typer.Option("--host", help="Address to listen on (loopback unless --allow-non-loopback)."),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="Port (0: a free one).", min=0, max=65535)
    ] = 8765,
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            help="The agent's working folder [default: the current folder].",
            show_default=False,
        ),
    ] = None,
    codex_home: Annotated[
        Path | None,
        typer.Option(
            "--codex-home",
            help="CODEX_HOME for the agent [default: $CODEX_HOME, else ~/.codex].",
            show_default=False,
        ),
    ] = None,
    codex_bin: Annotated[
        str, typer.Option("--codex-bin", help="The Codex executable (a path, or a name on PATH).")
    ] = "codex",
    protocol: Annotated[
        str,
        typer.Option(
            "--protocol", help="auto (the first whose handshake answers), app-server or mcp-server."
        ),
    ] = "auto",
    provider_key_env: Annotated[
        list[str] | None,
        typer.Option(
            "--provider-key-env",
            metavar="NAME",
            help="Env var the model provider needs (repeatable) [default: OPENAI_API_KEY]; "
            "only whether it is set is checked.",
            show_default=False,
        ),
    ] = None,
    no_provider_key: Annotated[
        bool,
        typer.Option(
            "--no-provider-key",
            help="The provider needs no env credential (Codex logs in otherwise).",
        ),
    ] = False,
    model: Annotated[
        str | None, typer.Option("--model", help="The thread's model [default: Codex's config].")
    ] = None,
    approval_policy: Annotated[
        str, typer.Option("--approval-policy", help=f"One of {', '.join(APPROVAL_POLICIES)}.")
    ] = "never",
    sandbox: Annotated[
        str | None,
        typer.Option(
            "--sandbox",
            help=f"One of {', '.join(SANDBOX_MODES)} [default: Codex's config].",
            show_default=False,
        ),
    ] = None,
    idle_timeout: Annotated[
        float | None,
        typer.Option(
            "--idle-timeout",
            help="Seconds before an idle session's process is ended [default: 600].",
            min=0.001,
            show_default=False,
        ),
    ] = None,
    conversation_retention: Annotated[
        float | None,
        typer.Option(
            "--conversation-retention",
            help="Seconds an idle conversation (no process) is remembered [default: 86400].",
            min=0.001,
            show_default=False,
        ),
    ] = None,
    turn_timeout: Annotated[
        float | None,
        typer.Option(
            "--turn-timeout",
            help="Seconds a turn may run [default: 1800].",
            min=0.001,
            show_default=False,
        ),
    ] = None,
    handshake_timeout: Annotated[
        float | None,
        typer.Option(
            "--handshake-timeout",
            help="Seconds for a session's start and handshake [default: 20].",
            min=0.001,
            show_default=False,
        ),
    ] = None,
    result_trace_limit: Annotated[
        int, typer.Option("--result-trace-limit", help="Events in the /result window.", min=1)
    ] = 20,
    trace_page_limit: Annotated[
        int, typer.Option("--trace-page-limit", help="Largest /trace page.", min=1)
    ] = 500,
    max_sessions: Annotated[
        int, typer.Option("--max-sessions", help="Codex processes at once.", min=1)
    ] = 32,
    header_timeout: Annotated[
        float,
        typer.Option(
            "--header-timeout",
            help="Seconds for a request's head to arrive (else 408 and the connection closes).",
            min=0.001,
        ),
    ] = 10.0,
    body_timeout: Annotated[
        float,
        typer.Option(
            "--body-timeout",
            help="Seconds for a request's body to arrive once its head is read.",
            min=0.001,
        ),
    ] = 30.0,
    keep_alive_timeout: Annotated[
        int,
        typer.Option(
            "--keep-alive-timeout", help="Seconds an idle connection is kept open.", min=1
        ),
    ] = 5,
    max_connections: Annotated[
        int,
        typer.Option(
            "--max-connections",
            help="Open connections at once (lowered to what ulimit -n leaves beside the "
            "sessions); over it the connection idle longest is closed.",
            min=1,
        ),
    ] = 256,
    store: StoreOption = None,
    signing_key: SigningKeyOption = None,
    ledger_root: Annotated[
        Path | None,
        typer.Option(
            "--ledger-root",
            help="Folder of the turn ledger (its .agent/), outside the workspace "
            "[default: <store>/ledger].",
            show_default=False,
        ),
    ] = None,
    no_ledger: Annotated[bool, typer.Option("--no-ledger", help="Write no turn ledger.")] = False,
    insecure_ledger_in_workspace: Annotated[
        bool,
        typer.Option(
            "--insecure-ledger-in-workspace",
            help="Allow a ledger root inside the workspace or holding it, where the agent "
            "can rewrite the ledger.",
        ),
    ] = False,
    token_env: Annotated[
        str,
        typer.Option(
            "--token-env",
            metavar="NAME",
            help="Env var holding the bearer token (required off loopback).",
        ),
    ] = DEFAULT_TOKEN_ENV,
    allow_non_loopback: Annotated[
        bool,
        typer.Option(
            "--allow-non-loopback",
            help="Listen on a non-loopback address (needs the bearer token).",
        ),
    ] = False,
    recover: Annotated[
        bool,
        typer.Option(
            "--recover",
            help="Seal the runs an earlier crash of the service left unsealed, then start.",
        ),
    ] = False,
    port_file: Annotated[
        Path | None,
        typer.Option(
            "--port-file",
            help='Write {"url", "port", "pid"} here once listening.',
            show_default=False,
        ),
    ] = None,
    codex_log_dir: Annotated[
        Path | None,
        typer.Option(
            "--codex-log-dir",
            help="Write each Codex process's stderr (redacted) here.",
            show_default=False,
        ),
    ] = None,
    access_log: Annotated[
        bool, typer.Option("--access-log", help="Log each HTTP request (method, path, status).")
    ] = False,
    no_extensions: Annotated[
        bool,
        typer.Option(
            "--no-extensions", help="Launch Codex without the enabled items of the extension store."
        ),
    ] = False,
    extensions_store: Annotated[
        Path | None,
        typer.Option(
            "--extensions-store",
            help="The store whose extensions Codex gets [default: --store].",
            show_default=False,
        ),
    ] = None,
    extensions_home: Annotated[
        Path | None,
        typer.Option(
            "--extensions-home",
            help="The Codex home the extensions are projected into, with the served "
            "home's config.toml as base [default: <extensions store>/serve-codex-home].",
            show_default=False,
        ),
    ] = None,
    mcp_startup_wait: Annotated[
        float,
        typer.Option(
            "--mcp-startup-wait",
            help="Seconds a new session waits for the projected MCP servers to start "
            "before its first turn.",
            min=0.0,
            max=3600.0,
        ),
    ] = DEFAULT_MCP_STARTUP_WAIT_MS / 1000,
) -> int:
    """Serve POST /v1/agent/chat on the real Codex CLI; every turn a sealed agc run.

    Each conversation gets a long-lived `codex app-server` (or `codex mcp-server`)
    process over stdio; a follow-up message continues the same Codex thread. The
    enabled items of the extension store are projected (as `agc ext project` does) into
    --extensions-home; each session registers the skill root, waits for the MCP
    servers' startup, and is restarted when the extensions change (--no-extensions:
    none). Submit
    answers 202 {traceId, conversationId}; poll /v1/agent/chat/result/<traceId> and
    /v1/agent/chat/trace/<traceId>. GET /readyz is the preflight (docs/serve.md). Each
    turn is sealed into the store as run <traceId> (signed with $AGC_SIGNING_KEY) with a
    turn ledger in <store>/ledger. Listens on loopback unless --allow-non-loopback, which
    needs a bearer token in $AGC_SERVE_TOKEN (or --token-env). Stop with Ctrl-C/SIGTERM:
    running turns are interrupted and sealed.

    \b
    Examples:
      agc serve --workspace ~/project --port 8765
      agc readiness probe --url http://127.0.0.1:8765 --environment local --live
      AGC_SERVE_TOKEN=… agc serve --host 0.0.0.0 --allow-non-loopback --store /audit
      agc serve --recover --store /audit          # after a crash
    """
    # Only this command needs the server (the `serve` extra): refused before any work.
    with MissingExtraError.raised_for("serve", feature="agc serve"):
        import uvicorn  # noqa: PLC0415

        from agc.serve import create_app, uvicorn_config  # noqa: PLC0415 - starlette, uvicorn

        if protocol != "app-server":  # `auto` falls back to codex mcp-server
            import mcp  # noqa: PLC0415, F401

    if not is_loopback(host) and not allow_non_loopback:
        raise UsageError(
            f"--host {host} is not a loopback address",
            hint="Add --allow-non-loopback and set a bearer token in $" + token_env + ".",
        )
    token = os.environ.get(token_env) or None
    if token is not None and not all("!" <= char <= "~" for char in token):
        # A client's Authorization header carries visible ASCII only (RFC 6750's
        # b64token; the presented token is stripped): a token with a trailing
        # newline or a space would lock every client out with 401.
        raise UsageError(
            f"${token_env} holds a character a bearer token cannot have "
            "(white space, a control or non-ASCII character)",
            hint="A trailing newline from a file or a Secret is a common cause; "
            "agc never prints the value.",
        )
    if not is_loopback(host) and (token is None or len(token) < _MIN_TOKEN_CHARS):
        raise UsageError(
            f"listening on {host} needs a bearer token of at least {_MIN_TOKEN_CHARS} "
            f"characters in ${token_env}",
            hint="Generate one: python -c 'import secrets; print(secrets.token_urlsafe(32))'",
        )
    work = (workspace or Path.cwd()).resolve()
    home_default = os.environ.get("CODEX_HOME") or str(Path.home() / ".codex")
    home = (codex_home or Path(home_default)).expanduser().resolve()
    keys: tuple[str, ...] = (
        () if no_provider_key else tuple(provider_key_env or ("OPENAI_API_KEY",))
    )
    if protocol not in ("auto", "app-server", "mcp-server"):
        raise UsageError(f"--protocol {protocol!r} is not auto, app-server or mcp-server")
    config = ServeConfig(
        workspace=work,
        codex_home=home,
        codex_bin=codex_bin,
        protocol=protocol,  # type: ignore[arg-type]
        provider_key_env=keys,
        model=model,
        approval_policy=approval_policy,
        sandbox=sandbox,
        idle_timeout_ms=_seconds_ms(idle_timeout, 600_000),
        turn_timeout_ms=_seconds_ms(turn_timeout, 1_800_000),
        conversation_retention_ms=_seconds_ms(conversation_retention, 86_400_000),
        handshake_timeout_ms=_seconds_ms(handshake_timeout, 20_000),
        result_trace_limit=result_trace_limit,
        trace_page_limit=trace_page_limit,
        max_sessions=max_sessions,
        token_env=token_env,
        codex_log_dir=codex_log_dir.resolve() if codex_log_dir else None,
    )
    limits = connection_budget(
        HttpLimits(
            header_timeout_s=header_timeout,
            body_timeout_s=body_timeout,
            keep_alive_s=keep_alive_timeout,
            max_connections=max_connections,
        ),
        max_sessions=max_sessions,
    )
    key = signing_key_from(signing_key)
    ledger = (
        None
        if no_ledger
        else ledger_root_for(
            ledger_root,
            workspace=work,
            store_root=StoreLayout.at(store).root,
            insecure=insecure_ledger_in_workspace,
        )
    )
    sink = AuditSink(
        store=store,
        signing_key=key,
        ledger_root=ledger,
        log=lambda line: err_console.print(line, markup=False),
    )
    handle_leftovers(sink, store=store, signing_key=key, recover=recover)
    if codex_log_dir is not None:
        codex_log_dir.mkdir(parents=True, exist_ok=True)
    extensions = None
    if not no_extensions:
        ext_store = extensions_store if extensions_store is not None else store
        extensions = ServeExtensions(
            ext_store,
            codex_home=(extensions_home or StoreLayout.at(ext_store).root / "serve-codex-home")
            .expanduser()
            .absolute(),
            base_config=home / "config.toml",
            mcp_startup_wait_ms=int(mcp_startup_wait * 1000),
        )
        extensions()  # a store or home that cannot be projected is refused now
    supervisor = Supervisor(
        config,
        sink,
        extra_checks=[sink.check],
        client_version=agc.__version__,
        extensions=extensions,
    )
    sock = _bind(host, port)
    bound_port = int(sock.getsockname()[1])
    url = listen_url(host, bound_port)

    def started() -> None:
        if port_file is not None:
            data = json.dumps({"url": url, "port": bound_port, "pid": os.getpid()}).encode()
            atomic_write_bytes(port_file, data + b"\n", overwrite=True)
        auth = "bearer token required" if token else "no token (loopback)"
        err_console.print(
            f"agc serve: listening on {url} (provider codex-stdio, protocol {config.protocol}, "
            f"{auth}); workspace {work}; store {sink.layout.root}; "
            f"up to {limits.max_connections} connections",
            markup=False,
        )

    app = create_app(supervisor, token=token, on_startup=started)
    server = uvicorn.Server(
        uvicorn_config(
            app,
            limits,
            lifespan="on",
            log_level="warning",
            access_log=access_log,
            server_header=False,
            timeout_graceful_shutdown=60,
        )
    )
    stopped_by: list[int] = []

    # uvicorn shuts down gracefully on SIGINT/SIGTERM, then re-raises the signal with the
    # handlers it found: ours note it, so a clean stop exits 0 and not "killed".
    def note(number: int, frame: object) -> None:
        del frame
        stopped_by.append(number)

    previous = {sig: signal.signal(sig, note) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if stopped_by:
        err_console.print(
            f"agc serve: stopped ({signal.Signals(stopped_by[0]).name}); running turns were sealed",
            markup=False,
        )
    if not server.started:
        err_console.print(
            "agc serve: the server did not start (see the messages above)", markup=False
        )
        return int(ExitCode.INTERNAL)
    sys.stderr.flush()
    return int(ExitCode.OK)


def register(app: typer.Typer) -> None:
    """Add ``agc serve`` to the ``agc`` app."""
    from agc.cli.common import EPILOG  # noqa: PLC0415

    app.command(name="serve", epilog=EPILOG)(serve_command)
