"""``agc hook``: the one command every installed client hook runs.

A client (Claude Code, the Codex CLI, the Gemini CLI) starts it for each hook event with
the event JSON on stdin. Its contract with the client is fixed: exit 0, nothing on
stdout (Claude Code adds a ``SessionStart`` hook's stdout to the model's context and
blocks a tool call on exit 2), done quickly. So it parses its own few arguments
(:func:`run`, without typer: the installed command line is read on every tool call),
and every problem, a bad argument included, is kept as a capture failure for
``agc hooks status`` and ``agc-verify`` and said in one line on stderr.

A client always sends the event on a pipe: a standard input that is a terminal means a
person typed ``agc hook``. Their bad arguments are a usage error (exit 2, the usage on
stderr, nothing kept, stdin not read); a client's never are (exit 0: Claude Code and the
Gemini CLI block the agent's action on a hook's exit 2, and show any other non-zero
exit as a hook error).
"""

import contextlib
import os
import re
import sys
from typing import Annotated, BinaryIO, Final

from agc.capture import CLIENTS, MAX_HOOK_EVENT_BYTES, ClientName
from agc.exitcodes import ExitCode
from agc.flows import capture_hook_event, record_capture_failure

__all__ = ["HOOK_HELP", "keep_failure", "register", "run"]

_SESSION: Final = re.compile(rb'"session_id"\s*:\s*("(?:[^"\\]|\\.){1,400}")')

HOOK_HELP: Final = """Capture one client hook event into its session's run.

Installed by `agc hooks install` as the hook command of every event; it reads the
event JSON the client sends on stdin, appends it to the run of the session
(`<client>-<session id>`) with a crash checkpoint, and at the session's end seals the
client's own session file as the run's transcript. It never stops the client: it
exits 0 and prints nothing on stdout, whatever fails; a failure is kept (in the store's
capture/failures.jsonl, else $XDG_STATE_HOME/agc/capture-failures.jsonl) and the run is
then never complete for agc-verify. Typed at a terminal (stdin is one, so no
client runs it), bad arguments exit 2 with the usage instead.

\b
Examples:
  agc hook --client claude-code < event.json
  agc hook --client codex --store ~/evidence < event.json
"""


def _parse(args: list[str]) -> tuple[ClientName | None, str | None, str | None]:
    """``(client, store, problem)`` from ``--client X [--store S] [--http PORT]``
    (``--opt=value`` too; ``--http``: the port agc's HTTP hooks of the session go to,
    read by the hook client, see :mod:`agc.cli._hookclient`)."""
    values: dict[str, str] = {}
    rest = list(args)
    while rest:
        word = rest.pop(0)
        name, eq, value = word.partition("=")
        if name not in {"--client", "--store", "--http"}:
            return None, values.get("--store"), f"unknown argument {word!r}"
        if not eq:
            if not rest:
                return None, values.get("--store"), f"{name} needs a value"
            value = rest.pop(0)
        values[name] = value
    client, store = values.get("--client"), values.get("--store")
    port = values.get("--http")
    if port is not None and not (port.isdigit() and 0 < int(port) < 65536):
        return None, store, f"--http {port!r} is not a TCP port (1-65535)"
    if client is None:
        return None, store, "--client is required"
    for known in CLIENTS:
        if client == known:
            return known, store, None
    return None, store, f"unknown client {client!r}; known: {', '.join(CLIENTS)}"


USAGE: Final = "agc hook --client claude-code|codex|gemini [--store S] < event.json"


def _is_terminal(stdin: BinaryIO | None) -> bool:
    """Whether ``stdin`` is a terminal (a person, not a client, runs the hook)."""
    try:
        return stdin is not None and stdin.isatty()
    except (OSError, ValueError):
        return False


def _read_event(stdin: BinaryIO | None) -> bytes:
    """The event bytes (one byte past the limit at most, so a larger event is refused
    whole); empty when stdin is closed or unreadable."""
    if stdin is None:
        return b""
    try:
        return stdin.read(MAX_HOOK_EVENT_BYTES + 1)
    except (OSError, ValueError):
        return b""


def run(
    args: list[str],
    *,
    stdin: BinaryIO | None = None,
    retry: bool = False,
    unheard: str | None = None,
) -> int:
    """``agc hook ARGS``: capture the event on ``stdin`` (default: the process's stdin);
    ``retry`` and ``unheard``: see :func:`agc.flows.capture_hook_event`.

    Returns 0, except for bad arguments typed at a terminal: 2 (see the module
    docstring)."""
    if stdin is None:
        stdin = sys.stdin.buffer if sys.stdin is not None else None
    problem = _parse(args)[2]
    if problem is not None and _is_terminal(stdin):
        _say(f"agc hook: {problem}\nusage: {USAGE}\n")
        return int(ExitCode.USAGE)
    message = capture(args, _read_event(stdin), retry=retry, unheard=unheard)
    if message:
        _say(message)
    return 0


def capture(
    args: list[str],
    data: bytes,
    *,
    retry: bool = False,
    origin: tuple[str, str, str] | None = None,
    unheard: str | None = None,
) -> str:
    """Capture one event for the command line ``agc hook ARGS``; the line to say on
    stderr (empty when nothing failed). Never raises.

    ``origin`` is ``(cwd, store, state)`` of the hook process when another process
    captures for it (the resident capture process): its working folder (a relative
    ``--store`` is taken from there), the store when ``--store`` names none
    (``$AGC_HOME``, else ``~/.agc``, in the hook's environment) and its
    ``$XDG_STATE_HOME`` folder (the fallback failure file). ``unheard``: see
    :func:`agc.flows.capture_hook_event`."""
    client, store, problem = _parse(args)
    environ = None
    if origin is not None:
        cwd, default, state = origin
        store = store or default
        if "://" not in store:
            store = os.path.join(cwd, store)
        environ = {"XDG_STATE_HOME": state}
    if problem is not None or client is None:
        outcome = record_capture_failure(
            store=store,
            code="usage",
            message=f"{' '.join(['agc hook', *args])}: {problem}",
            environ=environ,
        )
    else:
        outcome = capture_hook_event(
            client, data, store=store, environ=environ, retry=retry, unheard=unheard
        )
    failure = outcome.failure
    if failure is None:
        return ""
    where = f"kept in {outcome.kept_at}" if outcome.kept_at else "could not be kept anywhere"
    return f"agc hook: event not captured whole: {failure.message} ({where})\n"


def keep_failure(
    args: list[str],
    origin: tuple[str, str, str],
    data: bytes,
    message: str,
    *,
    code: str = "hook-event-invalid",
) -> None:
    """Keep a failure (``code``; by default ``hook-event-invalid``: an event that is not
    captured) for the store ``args`` and ``origin`` name, naming the run when the bytes
    that came name the session. Never raises."""
    from agc.capture import run_id_for  # noqa: PLC0415
    from agc.errors import AgcError  # noqa: PLC0415
    from agc.flows import parse_json  # noqa: PLC0415

    client, store, _ = _parse(args)
    cwd, default, state = origin
    store = store or default
    if "://" not in store:
        store = os.path.join(cwd, store)
    run_id = None
    found = _SESSION.search(data)
    if client is not None and found is not None:
        with contextlib.suppress(AgcError, ValueError, TypeError):
            session = parse_json(found.group(1))
            if isinstance(session, str):
                run_id = run_id_for(client, session)
    record_capture_failure(
        store=store,
        code=code,
        message=message,
        client=client or "unknown",
        run_id=run_id,
        environ={"XDG_STATE_HOME": state},
    )


def _say(text: str) -> None:
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # a closed stderr does not stop the client either


def register(app: object) -> None:
    """Add ``agc hook`` to the ``agc`` app (its arguments are parsed by :func:`run`)."""
    import typer  # noqa: PLC0415 - only the typer app needs it

    from agc.cli.common import EPILOG  # noqa: PLC0415 - imports typer

    assert isinstance(app, typer.Typer)

    @app.command(
        name="hook",
        help=HOOK_HELP,
        epilog=EPILOG,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )
    def hook_command(
        args: Annotated[
            list[str] | None,
            typer.Argument(help="--client claude-code|codex|gemini [--store S]"),
        ] = None,
    ) -> int:
        return run(list(args or []))


def main(argv: list[str] | None = None) -> int:
    """``agc hook`` without the ``agc`` app: ``argv`` is what follows ``hook``."""
    return run(list(sys.argv[2:] if argv is None else argv))
