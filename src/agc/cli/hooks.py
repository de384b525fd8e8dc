"""``agc hooks install / status / uninstall``: agc's capture hook in the clients' own
configuration."""

from __future__ import annotations

import contextlib
import os
import shlex
import socket
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from agc.capture import (
    BACKGROUND_EVENTS,
    CLIENT_EVENTS,
    CLIENTS,
    ClientHooks,
    ClientName,
    HooksChange,
    Scope,
    check_hooks,
    find_codex,
    hook_client_command,
    hook_command,
    http_settings_path,
    install_hooks,
    keep_http_hook,
    listener_owner,
    port_listening,
    read_http_hook,
    retire_http_hook,
    retired_http_port,
    uninstall_hooks,
)
from agc.cli.common import EPILOG, emit_json, err_console, new_app, write_lines
from agc.errors import StoreError, UsageError
from agc.exitcodes import ExitCode
from agc.flows import hooks_status

__all__ = ["HOOK_CLIENT_SCRIPT", "register"]

HOOK_CLIENT_SCRIPT = Path(__file__).absolute().with_name("_hookclient.py")
"""agc's hook client, the script the installed hook command runs (standard library only)."""

ClientChoice = Literal["claude-code", "codex", "gemini"]
ClientOption = Annotated[
    ClientChoice,
    typer.Option("--client", help="The agent client: claude-code, codex or gemini."),
]
ScopeOption = Annotated[
    Literal["user", "project"],
    typer.Option(
        "--scope",
        help="user: the client's settings in your home; project: the project's own "
        "(.claude/, .codex/, .gemini/ in --project).",
    ),
]
ProjectOption = Annotated[
    Path | None,
    typer.Option(
        "--project",
        help="The project folder for --scope project (default: the working folder).",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]
CodexOption = Annotated[
    str | None,
    typer.Option(
        "--codex",
        help="The Codex program to ask which hooks it will run (its app server's "
        "hooks/list; default: codex on PATH; --codex '' asks none).",
        show_default=False,
    ),
]


def _codex_program(option: str | None) -> str | None:
    if option is None:
        return find_codex()
    return option or None


hooks_app = new_app(
    name="hooks",
    help_text="Install agc's capture hook into Claude Code, Codex or the Gemini CLI, check "
    "that the client will run it, take it out.",
)


def _agc_executable(option: Path) -> str:
    """The absolute path of the agc executable ``--agc`` names.

    Raises:
        UsageError: it is not an executable file.
    """
    candidate = option.absolute()
    if not (candidate.is_file() and os.access(candidate, os.X_OK)):
        raise UsageError(
            f"no agc executable at {candidate}", hint="Give its path with --agc /path/to/agc."
        )
    return str(candidate)


def _store_text(store: str | None) -> str | None:
    """A store folder as an absolute path (the hook runs in the client's working folder);
    an ``s3://`` store as given."""
    if store is None or "://" in store:
        return store
    return str(Path(store).expanduser().absolute())


def _print_change(change: HooksChange, *, removing: bool = False) -> None:
    lines = []
    for file in change.files:
        if not file.changed and removing and not os.path.lexists(file.path):
            lines.append(f"{file.path}: does not exist, nothing to remove")
            continue
        if not file.changed:
            lines.append(f"{file.path}: unchanged")
            continue
        what = "created" if file.created else "updated"
        backup = f" (backup: {file.backup})" if file.backup else ""
        lines.append(f"{file.path}: {what}{backup}")
    if change.command is not None:
        lines.append(f"hook command: {change.command}")
    if change.codex_says is not None:
        lines.append(f"Codex says agc's hooks are: {change.codex_says}")
    write_lines(lines)


@hooks_app.command("install", epilog=EPILOG)
def install_command(
    client: ClientOption,
    scope: ScopeOption = "user",
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="The store the hook writes to (default: the hook's $AGC_HOME, else ~/.agc).",
            show_default=False,
        ),
    ] = None,
    project: ProjectOption = None,
    codex: CodexOption = None,
    agc: Annotated[
        Path | None,
        typer.Option(
            "--agc",
            help="Run the hook as `AGC hook` (a whole agc process per event) rather than "
            "the hook client of this agc.",
            show_default=False,
        ),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            help="Claude Code, user scope: the port on 127.0.0.1 its tool events are sent "
            "to (default: the one chosen at the first install, a free one then).",
            show_default=False,
        ),
    ] = None,
    as_json: JsonOption = False,
) -> int:
    """Add agc's capture hook to the client's own hook configuration.

    The hook is agc's hook client (`PYTHON -I -S …/agc/cli/_hookclient.py --client
    CLIENT`), which hands each event to a resident agc capture process, or with --agc,
    `AGC hook --client CLIENT`. For Claude Code (user scope, the hook client) the
    per-tool-call events are HTTP hooks to agc's resident capture process on
    127.0.0.1 (authenticated by a secret kept in $XDG_STATE_HOME/agc/hook-http.json;
    the settings file is made readable by you alone). One handler for every event agc
    captures, after your own hooks, which are kept; the file is backed up
    (FILE.agc-backup-TIME) before it is changed, and a file that is not valid in the
    client's format is refused (exit 2) with nothing written. Installing
    again changes nothing, or only the command. For Codex the hooks are also trusted in
    $CODEX_HOME/config.toml (the digest Codex's own /hooks review writes), so Codex runs
    them; when a codex program is found it is asked (hooks/list) whether it will.

    \b
    Examples:
      agc hooks install --client claude-code
      agc hooks install --client codex --store ~/evidence
      agc hooks install --client gemini --scope project --project ~/src/app
    """
    target = _store_text(store)
    if (
        target is not None
        and "://" not in target
        and os.path.lexists(target)
        and not os.path.isdir(target)
    ):
        raise UsageError(
            f"--store {store} is not a folder: every event the hook captured would be lost",
            hint="Name a store folder (made on the first capture if it does not exist), "
            "or leave --store out for the default store.",
        )
    if target is not None and "://" not in target and not os.path.lexists(target):
        # made now, so that `agc runs --store` and `agc-verify --all` read it before the
        # first event is captured (an empty store, not a missing one)
        try:
            os.makedirs(target, mode=0o700)
        except OSError as exc:
            raise StoreError(
                f"--store {store}: cannot create the folder: {exc.strerror or exc}"
            ) from exc
    over_http = client == "claude-code" and scope == "user" and agc is None
    if port is not None and not over_http:
        raise UsageError(
            "--port is for Claude Code's HTTP hooks (--client claude-code --scope user, "
            "without --agc)"
        )
    before = check_hooks(client, scope, project=project)
    http = keep_http_hook(port=port) if over_http else None
    if agc is not None:
        command = hook_command(_agc_executable(agc), client, store=target)
    else:
        command = hook_client_command(
            sys.executable,
            str(HOOK_CLIENT_SCRIPT),
            client,
            store=target,
            http_port=None if http is None else http.port,
        )
    program = _codex_program(codex) if client == "codex" else None
    change = install_hooks(
        client,
        scope,
        command=command,
        project=project,
        codex=program,
        http=None if http is None else http.handler(client, target),
    )
    if as_json:
        emit_json(change.to_dict())
    else:
        _print_change(change)
        if http is not None:
            events = ", ".join(e for e in CLIENT_EVENTS[client] if e in BACKGROUND_EVENTS[client])
            write_lines(
                [
                    f"HTTP hooks ({events}): http://127.0.0.1:{http.port}/agc-hook "
                    f"(secret kept in {http_settings_path()})"
                ]
            )
    if before.command is not None and before.store != target:
        err_console.print(
            f"note: the hook now writes to {target or 'the default store'}; it wrote to "
            f"{before.store or 'the default store'}, where the runs captured so far stay",
            markup=False,
        )
    return int(ExitCode.OK)


@hooks_app.command("uninstall", epilog=EPILOG)
def uninstall_command(
    client: ClientOption,
    scope: ScopeOption = "user",
    project: ProjectOption = None,
    as_json: JsonOption = False,
) -> int:
    """Take agc's hook out of the client's configuration; your own hooks are kept.

    The file is backed up before it is changed. For Codex agc's trust entries go too,
    and your hooks that move up keep their trust. When no Claude Code settings (user
    scope, and the project's) hold agc's HTTP hooks any more, their secret is retired
    ($XDG_STATE_HOME/agc/hook-http.json: agc's listener refuses it from then on, so the
    settings' backups that hold it open nothing), and agc's capture process and its
    port keeper let the port go and exit.

    \b
    Examples:
      agc hooks uninstall --client codex
    """
    before = check_hooks(client, scope, project=project)
    change = uninstall_hooks(client, scope, project=project)
    retired = _retire_http(before, project) if client == "claude-code" else None
    if as_json:
        emit_json(change.to_dict() | ({} if retired is None else {"http_hooks": retired}))
    else:
        _print_change(change, removing=True)
        if retired is not None:
            write_lines(_retired_lines(retired))
    return int(ExitCode.OK)


def _retire_http(before: ClientHooks, project: Path | None) -> dict[str, Any]:
    """After an uninstall of Claude Code's hooks: when no settings looked at (user scope,
    and the project's) hold agc's HTTP hooks any more, retire their secret
    (:func:`agc.capture.retire_http_hook`), tell agc's resident capture process to let
    the port go and exit, and take the port back from its keeper (which then exits);
    ``{"secret_retired", "port", "still_installed", "stopped", "listening"}``."""
    from agc.cli._hookclient import (  # noqa: PLC0415
        installation_key,
        retire_resident,
        socket_dir,
        take_kept,
    )

    using = [
        status.config
        for status in (
            check_hooks("claude-code", "user"),
            check_hooks("claude-code", "project", project=project),
        )
        if status.http
    ]
    said: dict[str, Any] = {
        "secret_retired": False,
        "port": None,
        "still_installed": using,
        "stopped": [],
        "listening": None,
    }
    if using:
        return said
    port = retire_http_hook()
    if port is None:
        return said
    said |= {"secret_retired": True, "port": port}
    state = str(http_settings_path().parent.parent)
    stopped: set[str] = set()
    folder = socket_dir(os.environ)
    keys = {installation_key(sys.executable, str(HOOK_CLIENT_SCRIPT))}
    removed = _hook_client_of(before.command)
    if removed is not None:
        with contextlib.suppress(OSError):
            keys.add(installation_key(*removed))
    for key in sorted(keys):
        ports = None if folder is None else retire_resident(folder, key, state)
        if ports is not None and port in ports:
            stopped.add("resident")
    kept = take_kept(os.path.join(state, "agc"), port)
    if isinstance(kept, socket.socket):
        kept.close()
        stopped.add("keeper")
    said["stopped"] = sorted(stopped)
    listening = port_listening(port)
    said["listening"] = listening and listener_owner(port) == os.getuid()
    return said


def _retired_lines(retired: Mapping[str, Any]) -> list[str]:
    """What :func:`_retire_http` did, in words."""
    if retired["still_installed"]:
        return [
            "agc's HTTP hooks are still installed in "
            f"{', '.join(retired['still_installed'])}: their secret stays kept"
        ]
    if not retired["secret_retired"]:
        return []
    port = retired["port"]
    names = {"resident": "resident", "keeper": "port keeper"}
    stopped = " and ".join(names[name] for name in retired["stopped"])
    lines = [
        (
            f"stopped agc's capture process ({stopped}) on 127.0.0.1:{port}"
            if stopped
            else f"no agc capture process listened on 127.0.0.1:{port}"
        )
        + f"; the HTTP hooks' secret is retired ({http_settings_path()}): agc refuses it "
        "from now on, so the settings' backups that hold it open nothing"
    ]
    if retired["listening"]:
        lines.append(
            f"note: a process of yours still listens on 127.0.0.1:{port}: agc's capture "
            "process of another agc installation (which may take the retired secret until "
            "it exits, after 5 idle minutes), or another program; `agc hooks status "
            "--client claude-code` says whether it still runs"
        )
    return lines


def _hook_client_of(command: str | None) -> tuple[str, str] | None:
    """``(interpreter, script)`` of an installed hook command that runs agc's hook client,
    ``None`` for another command (``agc hook``) or none."""
    try:
        words = shlex.split(command or "")
    except ValueError:
        return None
    script = next((w for w in words[1:] if Path(w).name == HOOK_CLIENT_SCRIPT.name), None)
    return None if script is None else (words[0], script)


def _status_lines(status: ClientHooks, store: str | None = None) -> list[str]:
    verdict = {
        True: "will run agc's hook",
        False: "will NOT run agc's hook",
        None: "cannot be confirmed to run agc's hook",
    }[status.verdict]
    lines = [f"{status.client} ({status.scope}): {verdict}", f"  config: {status.config}"]
    if status.command is not None:
        found = "" if status.command_found else "  (program not found)"
        lines.append(f"  command: {status.command}{found}")
        lines.append(f"  events: {', '.join(status.events)}")
        if status.background:
            lines.append(f"  in the background: {', '.join(status.background)}")
        if status.http:
            lines.append(f"  over HTTP to 127.0.0.1:{status.port}: {', '.join(status.http)}")
        if status.outdated:
            lines.append(
                "  note: agc's hooks are not installed as this agc installs them "
                f"(agc hooks install --client {status.client} to bring them up to date)"
            )
    for entry in status.trust:
        said = (status.codex_says or {}).get(entry.key)
        codex_word = (
            " by agc's digest (Codex not asked)"
            if status.codex_says is None
            else f" (Codex says: {said or 'not listed'})"
        )
        lines.append(f"  codex trust {entry.event}: {entry.status}{codex_word}")
    lines.extend(f"  problem: {problem}" for problem in status.problems)
    if status.unconfirmed is not None:
        lines.append(f"  unconfirmed: {status.unconfirmed}")
    if store is not None and status.command is not None and status.store != store:
        writes = status.store or "the default store"
        lines.append(f"  note: the hook writes to {writes}, not {store}")
    lines.extend(_resident_lines(status))
    lines.extend(_leftover_lines(_leftover(status)))
    failure = status.last_failure
    if failure is not None:
        lines.append(
            f"  last capture failure: {failure.get('code')}: {failure.get('message')}"
            + _failure_context(failure)
        )
    return lines


def _resident(status: ClientHooks) -> dict[str, Any] | None:
    """Whether the resident capture process the installed hook command hands its events
    to answers, and for HTTP hooks whether their port is listening:
    ``{"running", "socket", "http_listening"}`` (``None`` when it cannot be told), or
    ``None`` when no hook is installed. A hook command that is ``agc hook`` itself (one
    process per event) has no resident: ``running`` is ``None`` and ``socket`` too."""
    if status.command is None:
        return None
    from agc.cli._hookclient import resident_answers  # noqa: PLC0415

    client = _hook_client_of(status.command)
    answer = resident_answers(*client) if client is not None else None
    return {
        "running": None if answer is None else answer[0],
        "socket": None if answer is None else answer[1],
        "http_listening": None if status.port is None else port_listening(status.port),
    }


def _leftover(status: ClientHooks) -> dict[str, Any] | None:
    """For Claude Code's user scope without agc's HTTP hooks: the secret of this state
    folder (``kept``, or ``retired`` by an uninstall) and whether a process of the user
    still listens on its port (agc's capture process or its port keeper);
    ``{"state", "port", "listening"}``, ``None`` when there is no such secret or the
    hooks are installed (:func:`_resident` says it then)."""
    if status.client != "claude-code" or status.scope != "user" or status.http:
        return None
    kept = read_http_hook()
    port = kept.port if kept is not None else retired_http_port()
    if port is None:
        return None
    listening = port_listening(port)
    if listening:
        listening = listener_owner(port) == os.getuid()
    state = "kept" if kept is not None else "retired"
    return {"state": state, "port": port, "listening": listening}


def _leftover_lines(found: Mapping[str, Any] | None) -> list[str]:
    """What :func:`_leftover` found, in words."""
    if found is None:
        return []
    port = found["port"]
    if found["state"] == "retired":
        lines = [f"  HTTP hooks' secret: retired (agc hooks uninstall; port {port})"]
    else:
        lines = [
            f"  HTTP hooks' secret: still kept in {http_settings_path()} though no settings "
            "here hold agc's HTTP hooks (agc hooks uninstall --client claude-code retires it)"
        ]
    process = {
        True: f"still runs (a process of yours listens on 127.0.0.1:{port})",
        False: f"none runs (nothing of yours listens on 127.0.0.1:{port})",
        None: "cannot be told (/proc/net/tcp cannot be read)",
    }[found["listening"]]
    lines.append(f"  agc capture process of this state folder: {process}")
    return lines


def _resident_lines(status: ClientHooks) -> list[str]:
    """What :func:`_resident` found, in words."""
    found = _resident(status)
    if found is None:
        return []
    running = found["running"]
    if found["socket"] is None and running is None:
        line = "  resident capture process: none (the hook command captures each event itself)"
    elif running:
        line = f"  resident capture process: running (socket {found['socket']})"
    else:
        line = (
            "  resident capture process: not running (the client's next synchronous hook "
            "event starts it)"
        )
    lines = [line]
    listening = found["http_listening"]
    if listening is not None:
        where = f"127.0.0.1:{status.port}"
        lines.append(
            f"  HTTP listener on {where}: listening"
            if listening
            else f"  HTTP listener on {where}: not listening (tool events sent over HTTP "
            "now are lost until the session's next synchronous hook event makes the "
            "resident listen; that event keeps the gap as a capture failure)"
        )
    return lines


def _failure_context(failure: Mapping[str, Any]) -> str:
    """`` (run R, event E, at 2026-12-07T03:51:07Z)`` with what the failure names (a
    failure before the event was read names no run or event); the time is UTC."""
    parts = []
    if failure.get("run_id"):
        parts.append(f"run {failure['run_id']}")
    if failure.get("hook"):
        parts.append(f"event {failure['hook']}")
    ts = failure.get("ts")
    if isinstance(ts, int) and not isinstance(ts, bool):
        when = datetime.fromtimestamp(ts / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        parts.append(f"at {when}")
    return f" ({', '.join(parts)})" if parts else ""


@hooks_app.command("status", epilog=EPILOG)
def status_command(
    client: Annotated[
        ClientChoice | None,
        typer.Option("--client", help="Only this client (default: every client)."),
    ] = None,
    scope: ScopeOption = "user",
    project: ProjectOption = None,
    codex: CodexOption = None,
    store: Annotated[
        Path | None,
        typer.Option(
            "--store",
            help="Show the last capture failure kept for this store folder (default: the "
            "store the installed hook command names).",
            show_default=False,
        ),
    ] = None,
    as_json: JsonOption = False,
) -> int:
    """Say, per client, whether it will run agc's hook: installed for every event, the
    command's program there, for Codex each hook trusted (Codex itself asked when a
    codex program is found; else it cannot be confirmed); and the hook's last capture
    failure in the store its command names (or --store).

    Exit 0 when the client asked for (without --client: every client that has agc's
    hook, and at least one) will run it; 1 when not, or when it cannot be confirmed.

    \b
    Examples:
      agc hooks status
      agc hooks status --client codex --json
      agc hooks status --store ~/evidence
    """
    clients: tuple[ClientName, ...] = (client,) if client is not None else CLIENTS
    scope_value: Scope = scope
    program = _codex_program(codex)
    folder = None if store is None else str(store.absolute())
    found = [
        hooks_status(
            name,
            scope_value,
            project=project,
            codex=program if name == "codex" else None,
            store=folder,
        )
        for name in clients
    ]
    considered = found if client is not None else [s for s in found if s.installed]
    ok = bool(considered) and all(status.will_run for status in considered)
    if as_json:
        clients_json = [
            {**status.to_dict(), "resident": _resident(status), "http_secret": _leftover(status)}
            for status in found
        ]
        emit_json({"ok": ok, "clients": clients_json})
    else:
        write_lines([line for status in found for line in _status_lines(status, folder)])
    return int(ExitCode.OK if ok else ExitCode.FINDINGS)


def register(app: typer.Typer) -> None:
    """Add ``hooks`` to the ``agc`` app."""
    app.add_typer(hooks_app)
