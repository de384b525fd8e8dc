"""The command line: ``agc`` and ``agc-verify``. The only package that imports typer/rich.

Its front door is the two console-script entry points, each
``main(argv: list[str] | None = None) -> int``; the subcommands live in private modules.
"""

from __future__ import annotations

import os
import sys

__all__ = ["agc_main", "agc_verify_main"]

_HELP_FILE = os.path.join(os.path.dirname(__file__), "agc-help.txt")
"""``agc --help`` as typer renders it to a pipe or a file at the default width: the text
:func:`agc_main` prints without loading typer (a test proves it equal to the live one)."""


def agc_main(argv: list[str] | None = None) -> int:
    """Run ``agc`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit code.

    Three invocations start without typer (about 60 ms of imports): ``agc hook …`` (run
    by a client on every hook event) parses its own arguments (:mod:`agc.cli.hook`; its
    ``--help`` is typer's), ``agc --help`` to a pipe or a file is printed from
    :data:`_HELP_FILE` (:func:`_plain_help`), and ``agc resume TARGET [--check]
    [--json]`` is read by :func:`agc.cli.resume.quick_arguments` (any other list of
    ``agc resume`` is typer's)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["hook"] and not {"--help", "-h"} & set(args):
        from agc.cli.hook import run  # noqa: PLC0415 - the client waits for it

        return run(args[1:])
    if args in (["--help"], ["-h"]):
        code = _plain_help()
        if code is not None:
            return code
    if args[:1] == ["resume"]:
        from agc.cli.resume import quick_main  # noqa: PLC0415 - only for this command

        code = quick_main(args[1:])
        if code is not None:
            return code
    from agc.cli.app import main  # noqa: PLC0415 - load typer only when agc runs

    return main(args)


def _plain_help() -> int | None:
    """Print ``agc --help`` from :data:`_HELP_FILE` when typer would print that very text;
    ``None`` to leave it to typer.

    That is when stdout is not a terminal and ``COLUMNS`` is not set (click then wraps
    at its default width; a terminal's width or ``COLUMNS`` is typer's business), and no
    shell completion is asked for (``_AGC_COMPLETE``, which click answers instead of
    the help). The outcomes of a failed write are typer's: a reader that went away gives
    exit 1 and nothing more; any other error (a full disk, stdout opened read-only) is
    left to typer, which meets it again and reports it (exit 3).
    """
    stdout = sys.stdout
    if stdout is None or "COLUMNS" in os.environ or "_AGC_COMPLETE" in os.environ:
        return None
    try:
        if stdout.isatty():
            return None
        with open(_HELP_FILE, encoding="utf-8") as file:
            text = file.read()
    except (OSError, ValueError):  # stdout closed or replaced; no help file
        return None
    try:
        stdout.write(text)
        stdout.flush()
    except BrokenPipeError:
        from agc.cli._process import discard_stdout  # noqa: PLC0415 - only then

        discard_stdout()
        return 1
    except (OSError, UnicodeEncodeError):
        # A full disk or a stdout opened for reading: typer meets the same error on the
        # same stream and reports it. A stream that cannot encode the text took none of
        # it (the text is encoded whole before it is written): typer answers.
        return None
    return 0


def agc_verify_main(argv: list[str] | None = None) -> int:
    """Run ``agc-verify`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    from agc.cli.verify_main import main  # noqa: PLC0415 - agc-verify starts without typer

    return main(argv)
