"""Entry point of the ``agc-verify`` console script, quick to start.

``agc-verify`` gates CI, where it runs once per run and its start-up time adds to every
check (``make bench`` measures it against ``b3sum --check``, process start included). The
common invocations, ``agc-verify RUN_ID [--store DIR] [--json]`` and
``agc-verify --all [--store DIR] [--json] [--jobs N]`` (when neither stdout nor stderr
is a terminal: no table, no progress bar), are therefore served here without importing
typer or rich (about 40 ms of imports). Everything else (``--help``, a usage error, any
other option) and every error is handed to the full command,
:func:`agc.cli.verify.main`, so output and exit codes are the same either way.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from pathlib import Path
from types import FrameType
from typing import Final, NoReturn, TextIO

from agc.cli._jsontext import json_document
from agc.cli._process import (
    discard_stdout,
    notes_unraisable_stops,
    passes_undecodable_bytes,
    raise_unraisable_stop,
    sigterm_raises,
)
from agc.cli.verify_text import format_report, format_store, recovery_hint, use_color
from agc.exitcodes import ExitCode
from agc.flows import describe_os_error
from agc.integrity import check_run

__all__ = ["console", "main", "parse_all", "parse_simple"]

_JOBS: Final = re.compile(r"[1-9][0-9]{0,5}")


def parse_simple(args: list[str]) -> tuple[str, str | None, bool] | None:
    """``(run_id, store, as_json)`` for ``RUN_ID [--store DIR] [--json]``, else ``None``.

    Any other shape (help, unknown options, a second argument, an empty value) returns
    ``None`` and goes to the full command.
    """
    run_id: str | None = None
    store: str | None = None
    as_json = False
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--json" and not as_json:
            as_json = True
        elif arg == "--store" and store is None and index + 1 < len(args):
            index += 1
            store = args[index]
            if not store or store.startswith("-"):
                return None
        elif arg.startswith("--store=") and store is None and len(arg) > len("--store="):
            store = arg.removeprefix("--store=")
        elif not arg.startswith("-") and run_id is None and arg:
            run_id = arg
        else:
            return None
        index += 1
    if run_id is None:
        return None
    return run_id, store, as_json


def parse_all(args: list[str]) -> tuple[str | None, bool, int | None] | None:
    """``(store, as_json, jobs)`` for ``--all [--store DIR] [--json] [--jobs N]``, else
    ``None`` (``-j N`` and ``--store=DIR``, ``--jobs=N`` too; each at most once; ``N`` a
    plain positive decimal). Any other shape goes to the full command."""
    all_runs = as_json = False
    store: str | None = None
    jobs: str | None = None
    index = 0
    while index < len(args):
        arg = args[index]
        name, equals, value = arg.partition("=")
        if arg == "--all" and not all_runs:
            all_runs = True
        elif arg == "--json" and not as_json:
            as_json = True
        elif name == "--store" and store is None:
            if not equals:
                index += 1
                value = args[index] if index < len(args) else ""
            if not value or value.startswith("-"):
                return None
            store = value
        elif (name == "--jobs" or (arg == "-j" and not equals)) and jobs is None:
            if not equals:
                index += 1
                value = args[index] if index < len(args) else ""
            if _JOBS.fullmatch(value) is None:
                return None
            jobs = value
        else:
            return None
        index += 1
    if not all_runs:
        return None
    return store, as_json, None if jobs is None else int(jobs)


def _terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or replaced stream
        return False


def _plain_streams() -> bool:
    """Neither stdout nor stderr is a terminal, as rich would judge it (so the full
    command would print plain lines and no progress bar)."""
    if "TTY_COMPATIBLE" in os.environ or "FORCE_COLOR" in os.environ:
        return False
    return not _terminal(sys.stdout) and not _terminal(sys.stderr)


class _Terminated(KeyboardInterrupt):
    """SIGTERM while a check runs, raised like Ctrl-C (the full command does the same)."""


class _StopState:
    """Whether SIGTERM arrived during the current check."""

    terminated = False


_stop = _StopState()


def _raise_terminated(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001
    _stop.terminated = True
    raise _Terminated


def _stop_if_stopped() -> None:
    """Raise a stop again whose exception was swallowed on its way (a library's at-fork
    hook or ``__del__``: "Exception ignored in …"; an ``except BaseException`` for
    SIGTERM), so the check stops instead of reporting as if no one had asked it to."""
    raise_unraisable_stop()
    if _stop.terminated:
        raise _Terminated


def _write(text: str) -> int | None:
    """Write to stdout; a reader that went away (``| head``) gets nothing more. Returns
    exit 3 when stdout cannot be written otherwise (a full disk), else ``None``."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        discard_stdout()
    except OSError as exc:
        return _stdout_failed(exc)
    return None


def _verify_all(args: list[str], store: str | None, as_json: bool, jobs: int | None) -> int:
    """``--all`` as the full command runs it, for plain output (see :func:`parse_all`)."""
    from agc.integrity import check_store  # noqa: PLC0415

    try:
        with sigterm_raises(_raise_terminated), notes_unraisable_stops():
            report = check_store(Path(store) if store is not None else None, jobs=jobs)
            _stop_if_stopped()
            if as_json:
                text = json_document(report.to_dict()) + "\n"
            else:
                lines = format_store(report, color=use_color(sys.stdout))
                text = "".join(line + "\n" for line in lines)
            # A stop while the report is written is reported as the full command does.
            failed = _write(text)
            _stop_if_stopped()
    except KeyboardInterrupt as exc:
        return _stopped(exc)
    except Exception:
        # An unreadable store, a bad --jobs, a bug: the full command reports it its way.
        return _full(args)
    if failed is not None:
        return failed
    return int(ExitCode.OK if report.complete else ExitCode.FINDINGS)


def _full(args: list[str]) -> int:
    from agc.cli.verify import main as full_main  # noqa: PLC0415 - typer only when needed

    return full_main(args)


def main(argv: list[str] | None = None) -> int:
    """Run ``agc-verify``; returns the exit code (see :mod:`agc.exitcodes`)."""
    _stop.terminated = False
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except KeyboardInterrupt as exc:
        # Ctrl-C while a later part loads (the store checker, or typer and rich for the
        # full command) or between two steps: the word and exit code of any other stop.
        return _stopped(exc)


def _main(args: list[str]) -> int:
    simple = parse_simple(args)
    if os.environ.get("AGC_TRUSTED_KEYS"):
        # Trusted keys from the environment are the full command's business.
        return _full(args)
    if sys.stdout is None or sys.stderr is None:
        # Started with stdout or stderr closed (``>&-``, ``2>&-``): Python has no stream
        # for it, and what then happens is the full command's rule.
        return _full(args)
    with passes_undecodable_bytes():
        if simple is None:
            every = parse_all(args)
            if every is not None and _plain_streams():
                return _verify_all(args, *every)
            return _full(args)
        return _verify_run(args, *simple)


def _verify_run(args: list[str], run_id: str, store: str | None, as_json: bool) -> int:
    """``RUN_ID [--store DIR] [--json]`` as the full command runs it (see
    :func:`parse_simple`)."""
    try:
        with sigterm_raises(_raise_terminated), notes_unraisable_stops():
            report = check_run(run_id, store)
            _stop_if_stopped()
            if as_json:
                failed = _write(json_document(report.to_dict()) + "\n")
            else:
                lines = format_report(report, color=use_color(sys.stdout))
                failed = _write("".join(line + "\n" for line in lines))
                # The store as the full command names it: its option is a path
                # (``./evidence/`` reads ``evidence``).
                hint = recovery_hint(report, store=None if store is None else str(Path(store)))
                if failed is None and hint is not None:
                    _say(hint)
            _stop_if_stopped()
    except KeyboardInterrupt as exc:
        return _stopped(exc)
    except Exception:
        # Bad run id, unreadable store, a bug: the full command reports it its usual way.
        return _full(args)
    if failed is not None:
        return failed
    return int(ExitCode.OK if report.complete else ExitCode.FINDINGS)


def _say(line: str) -> None:
    """A line on stderr. Once the report is written, a stderr that cannot take it
    (``2>/dev/full``, closed) is nowhere to say it: never a reason to hand over to the
    full command, which would print the report again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(line + "\n")


def _stopped(exc: KeyboardInterrupt) -> int:
    """Ctrl-C or SIGTERM: the word and the exit code the full command gives."""
    terminated = isinstance(exc, _Terminated)
    _say("terminated" if terminated else "interrupted")
    return int(ExitCode.TERMINATED if terminated else ExitCode.INTERRUPTED)


def _stdout_failed(exc: OSError) -> int:
    """stdout cannot be written (a full disk, an I/O error): the full command's message
    and exit 3, never a verdict."""
    discard_stdout()  # what is still buffered cannot be written either
    if sys.stderr is not None:  # else started with stderr closed: nowhere to say it
        sys.stderr.write(
            f"error: {describe_os_error(exc)}\n"
            "hint: free disk space or fix the permissions, then run the command again\n"
        )
    return int(ExitCode.UNREADABLE)


def console() -> NoReturn:
    """The ``agc-verify`` console script: :func:`main`, then a process exit that skips
    the interpreter's teardown.

    By the time :func:`main` returns, the verdict is decided, its output written and
    flushed, and nothing is open for writing (agc-verify only reads; a worker pool or a
    Dask client is closed by then); what is left is tearing down some hundred modules,
    about 5 ms of a 40 ms check that CI runs once per run. Anything still buffered on
    stdout or stderr is flushed first; a failure there is :func:`main`'s rule (a reader
    gone: the exit code stays; a full disk: exit 3).
    """
    code = main()
    try:
        if sys.stdout is not None:  # None: started with stdout closed
            sys.stdout.flush()
    except BrokenPipeError:
        discard_stdout()
    except OSError as exc:
        code = _stdout_failed(exc)
    with contextlib.suppress(OSError):
        if sys.stderr is not None:
            sys.stderr.flush()  # nowhere left to say it otherwise
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    console()
