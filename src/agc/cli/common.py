"""Shared plumbing for agc's commands: running a typer app in process, error output.

Every entry point is ``main(argv: list[str] | None = None) -> int`` built on
:func:`run_app`, so tests call commands in process and get the exit code back. Exit
codes come only from :mod:`agc.exitcodes`; an unexpected exception exits 4 with a
traceback on stderr and is never reported as a verification verdict.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

from agc.errors import AgcError
from agc.exitcodes import ExitCode, exit_code_help

__all__ = [
    "EPILOG",
    "byte_progress",
    "emit_json",
    "err_console",
    "new_app",
    "out_console",
    "report_error",
    "run_app",
]

# click's "\b" keeps the table's line breaks when it re-wraps the epilog.
EPILOG = "\b\n" + exit_code_help()


def _discard_stdout() -> None:
    """The reader of stdout is gone (``agc-verify --all | head -1``): send the rest of
    the output to /dev/null and let the command return its own exit code. rich and
    click would exit 1 here, which reads as "findings" even for a complete run."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


class _StdoutConsole(Console):
    def on_broken_pipe(self) -> None:
        self.quiet = True
        _discard_stdout()


err_console = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)
out_console = _StdoutConsole(highlight=False, soft_wrap=True, emoji=False)


def new_app(*, name: str, help_text: str) -> typer.Typer:
    """A typer app configured the agc way: no rich tracebacks, exit codes in ``--help``."""
    return typer.Typer(
        name=name,
        help=help_text,
        epilog=EPILOG,
        add_completion=False,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )


@contextmanager
def byte_progress(total: int | None, label: str) -> Iterator[Callable[[int], None] | None]:
    """A progress bar for ``total`` bytes on stderr when it is a terminal; else ``None``.

    Yields a callback taking the number of bytes done so far.
    """
    if not err_console.is_terminal or not total:
        yield None
        return
    columns = (BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err_console, transient=True) as progress:
        task = progress.add_task(label, total=total)
        yield lambda done: progress.update(task, completed=done)


def emit_json(data: Any) -> None:
    """Write one JSON document to stdout (data goes to stdout, messages to stderr)."""
    text = json.dumps(data, indent=2, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from the input: keep it escaped
        text = json.dumps(data, indent=2)
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        _discard_stdout()


def report_error(exc: AgcError, *, as_json: bool = False) -> int:
    """Print an agc error (message and hint) to stderr; return its exit code."""
    if as_json:
        emit_json({"error": exc.to_dict()})
    err_console.print(f"error: {exc.message}", markup=False)
    if exc.hint:
        err_console.print(f"hint: {exc.hint}", markup=False)
    return int(exc.exit_code)


def run_app(app: typer.Typer, argv: list[str] | None, *, prog_name: str) -> int:
    """Run a typer app in process and map every outcome to an :class:`ExitCode`.

    Commands return an ``int`` exit code (``None`` means 0).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    try:
        result = app(args=args, prog_name=prog_name, standalone_mode=False)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.TyperException as exc:
        # Typer's usage errors (unknown option, missing argument …) print themselves.
        show = getattr(exc, "show", None)
        if callable(show):
            show(file=sys.stderr)
        else:
            err_console.print(f"error: {exc.format_message()}", markup=False)
        return int(ExitCode.USAGE)
    except typer.Abort:
        err_console.print("aborted", markup=False)
        return int(ExitCode.USAGE)
    except AgcError as exc:
        return report_error(exc, as_json=as_json)
    except KeyboardInterrupt:
        err_console.print("interrupted", markup=False)
        return int(ExitCode.INTERNAL)
    except Exception:
        traceback.print_exc(file=sys.stderr)
        err_console.print(
            "internal error: agc failed unexpectedly; this is a bug, not a verdict",
            markup=False,
        )
        return int(ExitCode.INTERNAL)
    if result is None:
        return int(ExitCode.OK)
    return int(result)
