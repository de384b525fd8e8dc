"""The command line: ``agc`` and ``agc-verify``. The only package that imports typer/rich.

Its front door is the two console-script entry points, each
``main(argv: list[str] | None = None) -> int``; the subcommands live in private modules.
"""

from __future__ import annotations

__all__ = ["agc_main", "agc_verify_main"]


def agc_main(argv: list[str] | None = None) -> int:
    """Run ``agc`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit code.

    ``agc hook …`` (run by a client on every hook event) starts without typer: it
    parses its own arguments (:mod:`agc.cli.hook`); its ``--help`` is typer's."""
    import sys  # noqa: PLC0415

    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["hook"] and not {"--help", "-h"} & set(args):
        from agc.cli.hook import run  # noqa: PLC0415 - the client waits for it

        return run(args[1:])
    from agc.cli.app import main  # noqa: PLC0415 - load typer only when agc runs

    return main(args)


def agc_verify_main(argv: list[str] | None = None) -> int:
    """Run ``agc-verify`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    from agc.cli.verify_main import main  # noqa: PLC0415 - agc-verify starts without typer

    return main(argv)
