"""``agc report``: an auditor's report of a store as one HTML page and/or CSV."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from agc import __version__
from agc.cli._process import discard_stdout, encode_as_given
from agc.cli.common import EPILOG, StoreOption, err_console
from agc.cli.verify import parse_head, trusted_keys_from
from agc.errors import FileExistsRefusedError, InputError, UsageError
from agc.exitcodes import ExitCode
from agc.flows import atomic_write_bytes, cross_check_audit
from agc.integrity import audit_csv, audit_html, build_audit, count_verdicts

__all__ = ["register"]


def _generated_ms() -> int:
    """Now, or ``$SOURCE_DATE_EPOCH`` (seconds) for a reproducible report."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        try:
            return int(epoch) * 1000
        except ValueError as exc:
            raise UsageError(f"SOURCE_DATE_EPOCH {epoch!r} is not a number of seconds") from exc
    return time.time_ns() // 1_000_000


def _write(target: Path, text: str, *, force: bool) -> None:
    if str(target) == "-":
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:  # the reader is gone (`| head`): the verdict stands
            discard_stdout()
        return
    try:
        atomic_write_bytes(target, encode_as_given(text), overwrite=force)
    except FileExistsRefusedError as exc:
        raise FileExistsRefusedError(
            f"{target} already exists", hint="Choose another file, or give --force to replace it."
        ) from exc
    except FileNotFoundError as exc:
        raise InputError(f"{target}: its folder does not exist") from exc
    except IsADirectoryError as exc:
        raise InputError(f"{target} is a folder") from exc


def report_command(
    runs: Annotated[
        list[str] | None,
        typer.Argument(help="Runs to report on (default: --all).", show_default=False),
    ] = None,
    all_runs: Annotated[
        bool, typer.Option("--all", help="Every run of the store and the store chain.")
    ] = False,
    html_file: Annotated[
        Path | None,
        typer.Option("--html", help="Write the HTML page here ('-': stdout).", show_default=False),
    ] = None,
    csv_file: Annotated[
        Path | None,
        typer.Option(
            "--csv", help="Write one CSV row per run here ('-': stdout).", show_default=False
        ),
    ] = None,
    store: StoreOption = None,
    trusted_key: Annotated[
        list[Path] | None,
        typer.Option(
            "--trusted-key",
            help="Trusted public key (PEM) or folder, as for agc-verify; repeatable.",
            show_default=False,
            metavar="<path>",
        ),
    ] = None,
    require_signature: Annotated[
        bool, typer.Option("--require-signature", help="A run without a valid signature fails.")
    ] = False,
    allow_unsigned: Annotated[
        bool,
        typer.Option(
            "--allow-unsigned", help="With trusted keys: let unsigned runs pass, as agc-verify."
        ),
    ] = False,
    allow_recovered: Annotated[
        bool,
        typer.Option(
            "--allow-recovered",
            help="Let runs that `agc recover` sealed with unvouched bytes pass, as agc-verify.",
        ),
    ] = False,
    expect_head: Annotated[
        str | None,
        typer.Option("--expect-head", help="With --all: the chain head pinned earlier (64 hex)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace existing report files.")] = False,
) -> int:
    """Write an auditor's report: one self-contained HTML page (--html) and/or CSV (--csv).

    The page shows the store, the chain head, each run's verdict, findings, signature
    and digests, and a timeline of the runs; failing runs come first. It loads nothing
    (no script, font or CDN) and opens offline. Exit 1 when a run or the store has
    findings, as agc-verify. $SOURCE_DATE_EPOCH fixes the "generated" time.

    \b
    Examples:
      agc report --all --html audit.html
      agc report fix-tests-42 other-run --csv runs.csv
      agc report --all --html audit.html --csv audit.csv --trusted-key ~/.config/agc/keys
      agc report --csv - | column -s, -t
    """
    if html_file is None and csv_file is None:
        raise UsageError("say what to write: --html FILE and/or --csv FILE")
    if runs and all_runs:
        raise UsageError("give run ids or --all, not both")
    if expect_head is not None and runs:
        raise UsageError("--expect-head goes with --all (the whole chain)")
    if str(html_file) == "-" and str(csv_file) == "-":
        raise UsageError("only one of --html and --csv can go to stdout")
    if (
        html_file is not None
        and csv_file is not None
        and str(html_file) != "-"
        and os.path.abspath(html_file) == os.path.abspath(csv_file)
    ):
        raise UsageError(
            f"--html and --csv both name {html_file}: one would replace the other",
            hint="Give each its own file.",
        )
    if expect_head is not None:
        expect_head = parse_head(expect_head)
    audit = build_audit(
        store,
        runs or None,
        trusted_keys=trusted_keys_from(trusted_key, store=store),
        require_signature=require_signature,
        allow_unsigned=allow_unsigned,
        allow_recovered=allow_recovered,
        expect_head=expect_head,
        generated_ms=_generated_ms(),
        generator=f"agc {__version__}",
    )
    audit = cross_check_audit(audit, store)  # a captured run's two witnesses, as agc-verify
    written = []
    if html_file is not None:
        _write(html_file, audit_html(audit), force=force)
        written.append(str(html_file))
    if csv_file is not None:
        _write(csv_file, audit_csv(audit), force=force)
        written.append(str(csv_file))
    failing = ", ".join(
        f"{count} {v.word}"
        for v, count in count_verdicts(run.report.verdict for run in audit.runs).items()
        if not v.ok
    )
    verdict = (
        "complete"
        if audit.complete
        else f"INCOMPLETE ({audit.failing} failing run(s){': ' if failing else ''}{failing})"
    )
    where = ", ".join(w for w in written if w != "-")
    err_console.print(
        f"report of {len(audit.runs)} run(s): {verdict}"
        + (f"; written to {where}" if where else ""),
        markup=False,
    )
    return int(ExitCode.OK if audit.complete else ExitCode.FINDINGS)


def register(app: typer.Typer) -> None:
    """Add ``report`` to the ``agc`` app."""
    app.command(name="report", epilog=EPILOG)(report_command)
