"""Entry point of the ``agc-verify`` console script, quick to start.

``agc-verify`` gates CI, where it runs once per run and its start-up time adds to every
check (``make bench`` measures it against ``b3sum --check``, process start included). The
common invocations, ``agc-verify RUN_ID [--store DIR] [--json]``, are therefore served
here without importing typer or rich (about 40 ms of imports). Everything else
(``--help``, a usage error, any other option) and every error is handed to the full
command, :func:`agc.cli.verify.main`, so output and exit codes are the same either way.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import NoReturn

from agc._core.fs import describe_os_error
from agc.cli.verify_text import format_report, recovery_hint, use_color
from agc.exitcodes import ExitCode
from agc.integrity._verify import check_run

__all__ = ["console", "main", "parse_simple"]


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


def _full(args: list[str]) -> int:
    from agc.cli.verify import main as full_main  # noqa: PLC0415 - typer only when needed

    return full_main(args)


def main(argv: list[str] | None = None) -> int:
    """Run ``agc-verify``; returns the exit code (see :mod:`agc.exitcodes`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    simple = parse_simple(args)
    if simple is None or os.environ.get("AGC_TRUSTED_KEYS"):
        # Trusted keys from the environment are the full command's business.
        return _full(args)
    run_id, store, as_json = simple
    try:
        report = check_run(run_id, store)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return int(ExitCode.INTERRUPTED)
    except Exception:
        # Bad run id, unreadable store, a bug: the full command reports it its usual way.
        return _full(args)
    try:
        if as_json:
            sys.stdout.write(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n")
        else:
            lines = format_report(report, color=use_color(sys.stdout))
            sys.stdout.write("".join(line + "\n" for line in lines))
            hint = recovery_hint(report, store=store)
            if hint is not None:
                sys.stderr.write(hint + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        _discard_stdout()
    except OSError as exc:
        return _stdout_failed(exc)
    return int(ExitCode.OK if report.complete else ExitCode.FINDINGS)


def _discard_stdout() -> None:
    """The reader of stdout is gone (``agc-verify RUN | head -1``): the rest of the output
    goes to /dev/null and the verdict keeps its exit code, as in the full command."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


def _stdout_failed(exc: OSError) -> int:
    """stdout cannot be written (a full disk, an I/O error): the full command's message
    and exit 3, never a verdict."""
    _discard_stdout()  # what is still buffered cannot be written either
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
        sys.stdout.flush()
    except BrokenPipeError:
        _discard_stdout()
    except OSError as exc:
        code = _stdout_failed(exc)
    with contextlib.suppress(OSError):
        sys.stderr.flush()  # nowhere left to say it otherwise
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    console()
