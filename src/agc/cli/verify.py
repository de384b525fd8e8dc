"""``agc-verify <runId>`` / ``agc verify <runId>`` / ``--all``: the compliance gate."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table
from rich.text import Text

from agc.cli.common import EPILOG, emit_json, err_console, new_app, out_console, run_app
from agc.cli.ledger import run_check
from agc.cli.verify_text import format_report
from agc.errors import UsageError
from agc.exitcodes import ExitCode
from agc.integrity._signing import load_trusted_keys
from agc.integrity._store_verify import StoreReport, check_store
from agc.integrity._verify import check_run

__all__ = ["format_report", "main", "verify_command"]

VERIFY_HELP = """Check that a run's evidence is complete and untouched.

Exit 0 only when every artifact (transcript, tool events) is present, sealed and
matches its seal, and the transcript holds at least one record. With --all, check
every run of the store and the store-wide chain, and print the chain head. With
--turn-file, check a turn ledger file as `agc ledger check` does.

\b
Examples:
  agc-verify fix-tests-42
  agc-verify fix-tests-42 --store ./evidence --json
  agc-verify fix-tests-42 --trusted-key ci.pub.pem --require-signature
  agc-verify --all --expect-head 3f1c…   # fail if the store was rolled back
  agc-verify --turn-file .agent/runtime/direct-codex/turns/Abc123-def.jsonl
  agc-verify --all --store s3://evidence/team --jobs 8 --retention-days 365
  agc-verify --all --store s3://evidence/team --scheduler tcp://10.0.0.5:8786 \\
      --inventory s3://inventory/evidence/daily/2026-11-30T00-00Z/manifest.json
"""

StoreOption = Annotated[
    Path | None,
    typer.Option(
        "--store",
        help="Store folder or s3://bucket/prefix (default: $AGC_HOME, else ~/.agc).",
        show_default=False,
    ),
]


def _print_store(report: StoreReport) -> None:
    table = Table(title=Text(f"store {report.store}"), show_lines=False)
    for column in ("run", "verdict", "signature", "findings"):
        table.add_column(column)
    for run in report.runs:
        verdict = "complete" if run.complete else "INCOMPLETE"
        # Text, not markup: findings quote store content ("[/]" would crash rich).
        cells = (run.run_id, verdict, run.signature, "; ".join(run.missing))
        table.add_row(*(Text(cell) for cell in cells))
    out_console.print(table)
    for finding in report.findings:
        out_console.print(f"FAIL store        {finding.message}", markup=False)
    total = len(report.runs)
    good = sum(r.complete for r in report.runs)
    verdict = "complete" if report.complete else "INCOMPLETE"
    out_console.print(
        f"store: {verdict}; {good}/{total} runs complete; "
        f"chain head {report.head or '(empty)'} at position {report.head_position}",
        markup=False,
    )


def _trusted(paths: list[Path] | None) -> Mapping[str, Ed25519PublicKey] | None:
    folder = os.environ.get("AGC_TRUSTED_KEYS")
    if not paths and not folder:
        return None
    return load_trusted_keys(paths or [], folder=Path(folder) if folder else None)


def verify_command(
    run_id: Annotated[
        str | None,
        typer.Argument(help="The run id to verify (omit with --all).", show_default=False),
    ] = None,
    store: StoreOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the report as JSON on stdout.")
    ] = False,
    all_runs: Annotated[
        bool, typer.Option("--all", help="Check every run of the store and the chain.")
    ] = False,
    trusted_key: Annotated[
        list[Path] | None,
        typer.Option(
            "--trusted-key",
            help="Trusted Ed25519 public key (PEM); repeatable. Also: $AGC_TRUSTED_KEYS folder.",
            show_default=False,
            metavar="<path>",
        ),
    ] = None,
    require_signature: Annotated[
        bool,
        typer.Option(
            "--require-signature",
            help="A run without a valid signature fails (implied by any trusted key).",
        ),
    ] = False,
    allow_unsigned: Annotated[
        bool,
        typer.Option(
            "--allow-unsigned",
            help="With trusted keys: let unsigned runs pass (signed ones are still checked).",
        ),
    ] = False,
    expect_head: Annotated[
        str | None,
        typer.Option(
            "--expect-head",
            help="With --all: fail unless the chain contains this head digest.",
            show_default=False,
        ),
    ] = None,
    turn_file: Annotated[
        Path | None,
        typer.Option(
            "--turn-file",
            help="Check a turn ledger file (.agent/runtime/direct-codex/turns/<id>.jsonl).",
            show_default=False,
        ),
    ] = None,
    jobs: Annotated[
        int,
        typer.Option("--jobs", "-j", help="With --all: check runs in N processes.", min=1),
    ] = 1,
    scheduler: Annotated[
        str | None,
        typer.Option(
            "--scheduler",
            help="With --all: run the per-run checks on this Dask scheduler (tcp://HOST:PORT).",
            show_default=False,
        ),
    ] = None,
    inventory: Annotated[
        str | None,
        typer.Option(
            "--inventory",
            help="With --all on s3://: the run list from this S3 Inventory manifest.json.",
            show_default=False,
        ),
    ] = None,
    retention_days: Annotated[
        int | None,
        typer.Option(
            "--retention-days",
            help="s3:// stores: every object must be retained at least N days "
            "(default: the bucket's default retention).",
            show_default=False,
            min=1,
        ),
    ] = None,
    retention_mode: Annotated[
        str,
        typer.Option("--retention-mode", help="With --retention-days: COMPLIANCE or GOVERNANCE."),
    ] = "COMPLIANCE",
) -> int:
    """Check that a run's evidence is complete and untouched."""
    retention = None
    if retention_days is not None:
        from agc._core.objstore import Retention  # noqa: PLC0415

        retention = Retention(retention_mode.upper(), retention_days)  # type: ignore[arg-type]
    scale = {"jobs": jobs, "scheduler": scheduler, "inventory": inventory, "retention": retention}
    if turn_file is not None:
        if run_id is not None or all_runs:
            raise UsageError("give a run id, --all or --turn-file, not several")
        return run_check(turn_file, policy=None, as_json=as_json)
    trusted = _trusted(trusted_key)
    if all_runs:
        if run_id is not None:
            raise UsageError("give a run id or --all, not both")
        return _verify_store(
            store, trusted, require_signature, allow_unsigned, expect_head, as_json, scale
        )
    if run_id is None:
        raise UsageError("missing run id", hint="Give a run id, or --all for the whole store.")
    if expect_head is not None:
        raise UsageError("--expect-head goes with --all")
    if jobs != 1 or scheduler is not None or inventory is not None:
        raise UsageError("--jobs, --scheduler and --inventory go with --all")
    if retention is not None:
        from agc.cli.verify_scale import check_run_with_retention  # noqa: PLC0415

        report = check_run_with_retention(
            run_id, store, retention, trusted, require_signature, allow_unsigned
        )
    else:
        report = check_run(
            run_id,
            store,
            trusted_keys=trusted,
            require_signature=require_signature,
            allow_unsigned=allow_unsigned,
        )
    if as_json:
        emit_json(report.to_dict())
    else:
        for line in format_report(report):
            out_console.print(line, markup=False)
    return int(ExitCode.OK if report.complete else ExitCode.FINDINGS)


def _verify_store(
    store: Path | None,
    trusted: Mapping[str, Ed25519PublicKey] | None,
    require_signature: bool,
    allow_unsigned: bool,
    expect_head: str | None,
    as_json: bool,
    scale: Mapping[str, Any],
) -> int:
    def run(progress: Callable[[int, int], None] | None) -> StoreReport:
        return check_store(
            store,
            trusted_keys=trusted,
            require_signature=require_signature,
            allow_unsigned=allow_unsigned,
            expect_head=expect_head,
            progress=progress,
            **scale,
        )

    if err_console.is_terminal:
        columns = (TextColumn("verifying"), BarColumn(), MofNCompleteColumn())
        with Progress(*columns, console=err_console, transient=True) as bar:
            task = bar.add_task("runs", total=None)
            report = run(lambda done, total: bar.update(task, completed=done, total=total))
    else:
        report = run(None)
    if as_json:
        emit_json(report.to_dict())
    else:
        _print_store(report)
    return int(ExitCode.OK if report.complete else ExitCode.FINDINGS)


app = new_app(name="agc-verify", help_text=VERIFY_HELP)
app.command(name="verify", help=VERIFY_HELP, epilog=EPILOG)(verify_command)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``agc-verify`` console script; returns the exit code."""
    return run_app(app, argv, prog_name="agc-verify")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
