"""``agc-verify <runId>`` / ``agc verify <runId>``: the compliance gate."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agc.cli.common import EPILOG, emit_json, new_app, out_console, run_app
from agc.cli.ledger import run_check
from agc.exitcodes import ExitCode
from agc.integrity.verify import RunReport, check_run

__all__ = ["format_report", "main", "verify_command"]

VERIFY_HELP = """Check that a run's evidence is complete and untouched.

Exit 0 only when every artifact (transcript, tool events) is present, sealed and
matches its seal, and the transcript holds at least one record.

An argument that contains a "/" is not a run id but the path of a turn ledger file
(.agent/runtime/direct-codex/turns/<id>.jsonl), checked as `agc ledger check` does.

\b
Examples:
  agc-verify fix-tests-42
  agc-verify fix-tests-42 --store ./evidence --json
  agc-verify .agent/runtime/direct-codex/turns/Abc123-def.jsonl
"""

StoreOption = Annotated[
    Path | None,
    typer.Option(
        "--store",
        help="Store folder (default: $AGC_HOME, else ~/.agc).",
        show_default=False,
    ),
]


def format_report(report: RunReport) -> list[str]:
    """Human lines: one per artifact (``OK`` / ``FAIL`` with the reason), then a summary."""
    lines: list[str] = []
    by_artifact: dict[str | None, list[str]] = {}
    for finding in report.findings:
        prefix = "" if finding.severity == "error" else "warning: "
        by_artifact.setdefault(finding.artifact, []).append(prefix + finding.message)
    for note in by_artifact.get("manifest", []):
        lines.append(f"FAIL manifest     {note}")
    for artifact in report.artifacts:
        name = f"{artifact.kind:<12}"
        notes = by_artifact.get(artifact.kind, [])
        if artifact.ok:
            facts = (
                f"{artifact.records} records, {artifact.bytes} bytes, "
                f"{artifact.algorithm} {artifact.digest[:16]}…"
                if artifact.digest
                else "legacy shared file"
            )
            lines.append(f"OK   {name} {facts}")
            lines.extend(f"     {name} {note}" for note in notes)
        else:
            lines.append(f"FAIL {name} {'; '.join(notes)}")
    errors = len(report.missing)
    verdict = "complete" if report.complete else f"INCOMPLETE ({errors} finding(s))"
    legacy = " (legacy seed-004 store)" if report.legacy else ""
    lines.append(f"run {report.run_id}: {verdict}{legacy}")
    return lines


def verify_command(
    run_id: Annotated[
        str,
        typer.Argument(
            help="The run id to verify (or a turn ledger file path).", show_default=False
        ),
    ],
    store: StoreOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the report as JSON on stdout.")
    ] = False,
) -> int:
    """Check that a run's evidence is complete and untouched."""
    if "/" in run_id:  # never a run id: the path of a turn ledger file
        return run_check(Path(run_id), policy=None, as_json=as_json)
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
