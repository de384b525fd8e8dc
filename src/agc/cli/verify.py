"""``agc-verify <runId>`` / ``agc verify <runId>``: the compliance gate."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agc.cli.common import EPILOG, emit_json, new_app, out_console, run_app
from agc.cli.verify_text import format_report
from agc.exitcodes import ExitCode
from agc.integrity.verify import check_run

__all__ = ["format_report", "main", "verify_command"]

VERIFY_HELP = """Check that a run's evidence is complete and untouched.

Exit 0 only when every artifact (transcript, tool events) is present, sealed and
matches its seal, and the transcript holds at least one record.

\b
Examples:
  agc-verify fix-tests-42
  agc-verify fix-tests-42 --store ./evidence --json
"""

StoreOption = Annotated[
    Path | None,
    typer.Option(
        "--store",
        help="Store folder (default: $AGC_HOME, else ~/.agc).",
        show_default=False,
    ),
]


def verify_command(
    run_id: Annotated[str, typer.Argument(help="The run id to verify.", show_default=False)],
    store: StoreOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the report as JSON on stdout.")
    ] = False,
) -> int:
    """Check that a run's evidence is complete and untouched."""
    report = check_run(run_id, store)
    if as_json:
        emit_json(report.to_dict())
    else:
        for line in format_report(report):
            out_console.print(line, markup=False)
    return int(ExitCode.OK if report.complete else ExitCode.FINDINGS)


verify_command.__doc__ = VERIFY_HELP

app = new_app(name="agc-verify", help_text=VERIFY_HELP)
app.command(name="verify", help=VERIFY_HELP, epilog=EPILOG)(verify_command)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``agc-verify`` console script; returns the exit code."""
    return run_app(app, argv, prog_name="agc-verify")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
