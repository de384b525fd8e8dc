"""Entry point of the ``agc-verify`` console script, quick to start.

``agc-verify`` gates CI, where it runs once per run and its start-up time adds to every
check (``make bench`` measures it against ``b3sum --check``, process start included). The
common invocations, ``agc-verify RUN_ID [--store DIR] [--json]`` and
``agc-verify --all [--store DIR] [--json] [--jobs N]`` (when neither stdout nor stderr
is a terminal: no table, no progress bar), are therefore served here without importing
typer or rich (about 40 ms of imports). Both parse the arguments with the one grammar
(:mod:`agc.cli.verify_args`, on the standard library's argparse); everything else
(``--help``, a usage error, any other option) and every error is handed to the full
command, :func:`agc.cli.verify.main`, so output and exit codes are the same either way.
Both keep the stop state of :mod:`agc.cli._process`.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Final, NoReturn, TextIO

from agc.cli._jsontext import json_document
from agc.cli._process import (
    STOP,
    discard_stdout,
    notes_unraisable_stops,
    passes_undecodable_bytes,
    sigterm_raises,
)
from agc.cli.verify_args import ArgsError, VerifyOptions, parse, rendered_by_typer
from agc.cli.verify_text import format_report, format_store, recovery_hint, use_color
from agc.exitcodes import ExitCode
from agc.flows import cross_check_capture, cross_check_store, describe_os_error
from agc.integrity import check_run

__all__ = ["console", "main", "quick_options"]

# What the quick paths serve: a run (its id, --store, --json) and --all (--store,
# --json, --jobs); any other option is the full command's.
_RUN_FIELDS: Final = frozenset({"run_id", "store", "as_json"})
_ALL_FIELDS: Final = frozenset({"all_runs", "store", "as_json", "jobs"})
_DEFAULT: Final = VerifyOptions()


def quick_options(args: list[str]) -> VerifyOptions | None:
    """The options of ``args`` (:func:`agc.cli.verify_args.parse`) when a quick path
    serves them: ``RUN_ID [--store DIR] [--json]`` or ``--all [--store DIR] [--json]
    [--jobs N]``; else ``None`` (help, a refusal, any other option: the full command)."""
    if rendered_by_typer(args):
        return None
    try:
        options = parse(args)
    except ArgsError:
        return None
    given = {name for name, value in options._asdict().items() if value != getattr(_DEFAULT, name)}
    if options.run_id is not None and given <= _RUN_FIELDS:
        return options
    if options.all_runs and given <= _ALL_FIELDS:
        return options
    return None


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


def _verify_all(args: list[str], store: Path | None, as_json: bool, jobs: int | None) -> int:
    """``--all`` as the full command runs it, for plain output (see
    :func:`quick_options`)."""
    from agc.integrity import check_store  # noqa: PLC0415

    try:
        with sigterm_raises(STOP.raise_terminated), notes_unraisable_stops():
            report = check_store(store, jobs=jobs)
            report = cross_check_store(report, store)
            STOP.raise_if_stopped()
            if as_json:
                text = json_document(report.to_dict()) + "\n"
            else:
                lines = format_store(report, color=use_color(sys.stdout))
                text = "".join(line + "\n" for line in lines)
            # A stop while the report is written is reported as the full command does.
            failed = _write(text)
            STOP.raise_if_stopped()
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
    STOP.reset()
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except KeyboardInterrupt as exc:
        # Ctrl-C while a later part loads (the store checker, or typer and rich for the
        # full command) or between two steps: the word and exit code of any other stop.
        return _stopped(exc)


def _main(args: list[str]) -> int:
    options = quick_options(args)
    if os.environ.get("AGC_TRUSTED_KEYS"):
        # Trusted keys from the environment are the full command's business.
        return _full(args)
    if sys.stdout is None or sys.stderr is None:
        # Started with stdout or stderr closed (``>&-``, ``2>&-``): Python has no stream
        # for it, and what then happens is the full command's rule.
        return _full(args)
    with passes_undecodable_bytes():
        if options is None:
            return _full(args)
        if options.run_id is not None:
            return _verify_run(args, options.run_id, options.store, options.as_json)
        if _plain_streams():
            return _verify_all(args, options.store, options.as_json, options.jobs)
        return _full(args)


def _verify_run(args: list[str], run_id: str, store: Path | None, as_json: bool) -> int:
    """``RUN_ID [--store DIR] [--json]`` as the full command runs it (see
    :func:`quick_options`)."""
    try:
        with sigterm_raises(STOP.raise_terminated), notes_unraisable_stops():
            report = check_run(run_id, store)
            report = cross_check_capture(report, store)
            STOP.raise_if_stopped()
            if as_json:
                failed = _write(json_document(report.to_dict()) + "\n")
            else:
                lines = format_report(report, color=use_color(sys.stdout))
                failed = _write("".join(line + "\n" for line in lines))
                # The store as the full command names it: its option is a path
                # (``./evidence/`` reads ``evidence``).
                hint = recovery_hint(report, store=None if store is None else str(store))
                if failed is None and hint is not None:
                    _say(hint)
            STOP.raise_if_stopped()
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
    code, word = STOP.code(exc)
    _say(word)
    return int(code)


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
