"""``agc-verify <runId>`` / ``agc verify <runId>`` / ``--all``: the compliance gate."""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer
from rich.text import Text
from typer._click import Context
from typer._click.exceptions import BadOptionUsage
from typer._click.exceptions import UsageError as ClickUsageError

from agc.cli._command import Command
from agc.cli._jsontext import json_text
from agc.cli.common import (
    EPILOG,
    VersionOption,
    emit_json,
    err_console,
    new_app,
    out_console,
    rich_err_console,
    run_app,
    trusted_keys_from,
    write_lines,
)
from agc.cli.verify_args import PARAMS, ArgsError, Param, VerifyOptions, parse, rendered_by_typer
from agc.cli.verify_text import (
    STYLES,
    format_report,
    format_store,
    recovery_hint,
    store_summary,
    use_color,
)
from agc.errors import UsageError
from agc.exitcodes import ExitCode
from agc.flows import cross_check_capture, cross_check_store
from agc.integrity import StoreReport, category_of, check_run, check_store, finding_text

if TYPE_CHECKING:
    # Imported where used: `agc-verify --all` starts without cryptography, the ledger
    # and rich's progress and table (a table only on a terminal).
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

__all__ = [
    "GrammarCommand",
    "command_function",
    "format_report",
    "json_text",
    "main",
    "parse_head",
    "trusted_keys_from",
    "verify_options",
]

VERIFY_HELP = """Check that a run's evidence is complete and untouched.

Exit 0 only when every artifact (transcript, tool events) is present, sealed and
matches its seal, and the transcript holds at least one record. With --all, check
every run of the store and the store-wide chain, and print the chain head: one plain
line per run when stdout is not a terminal (failing runs first), a table on one. With
--turn-file, check a turn ledger file as `agc ledger check` does (with --trusted-key
or --require-signature: its seal records' signatures too). Like `sha256sum -c`:
--quiet prints only failures, --status prints nothing (the exit code says it all).
A run id that begins with '-' (agc no longer creates one) goes after `--`.

\b
Examples:
  agc-verify fix-tests-42
  agc-verify fix-tests-42 --store ./evidence --json
  agc-verify fix-tests-42 --status && deploy
  agc-verify fix-tests-42 --trusted-key ~/.config/agc/keys --require-signature
  agc-verify --all --quiet
  agc-verify --all --expect-head 3f1c…   # 64 hex digits: fail if the store was rolled back
  agc-verify --turn-file .agent/runtime/direct-codex/turns/Abc123-def.jsonl
  agc-verify -- -old-run-id
  agc-verify --all --store s3://evidence/team --jobs 8 --retention-days 365
  agc-verify --all --store s3://evidence/team --scheduler tcp://10.0.0.5:8786 \\
      --inventory s3://inventory/evidence/daily/2026-11-30T00-00Z/manifest.json
"""

_HEAD: Final = re.compile(r"[0-9a-fA-F]{64}")


def _print_table(report: StoreReport) -> None:
    """``--all`` on a terminal: a table (rich); failing runs first."""
    from rich.table import Table  # noqa: PLC0415 - only on a terminal

    table = Table(title=Text(f"store {report.store}"), show_lines=False)
    for column in ("run", "verdict", "signature", "findings"):
        table.add_column(column, overflow="fold")
    for run in sorted(report.runs, key=lambda r: (r.complete, r.run_id)):
        verdict = run.verdict
        # Text, not markup: findings quote store content ("[/]" would crash rich).
        table.add_row(
            Text(run.run_id),
            Text(verdict.word, style=STYLES[verdict.category]),
            Text(run.signature),
            Text("; ".join(finding_text(f) for f in run.errors)),
        )
    out_console.print(table)
    for finding in report.findings:
        if finding.severity == "error":
            line = f"store        {finding_text(finding)}"
            out_console.print(Text("FAIL", STYLES[category_of(finding.code)]), Text(line))
        else:
            line = f"store        {finding_text(finding, code=False)}"
            out_console.print(Text("warn", "yellow"), Text(line))
    summary = store_summary(report, color=use_color(sys.stdout))
    out_console.print(Text.from_ansi(summary))


def _trusted(paths: list[Path] | None) -> Mapping[str, Ed25519PublicKey] | None:
    """:func:`trusted_keys_from` with notes printed (for other commands' options)."""
    return trusted_keys_from(paths)


def _check_options(
    *,
    run_id: str | None,
    all_runs: bool,
    turn_file: Path | None,
    store: Path | None,
    as_json: bool,
    quiet: bool,
    status: bool,
    allow_unsigned: bool,
    expect_head: str | None,
    allow_recovered: bool = False,
) -> str | None:
    """Refuse options that do not apply (never silently ignored); return the expected
    head in lower case."""
    if as_json and (quiet or status):
        raise UsageError("--json prints the whole report; it does not go with --quiet/--status")
    if turn_file is not None:
        if run_id is not None or all_runs:
            raise UsageError("give a run id, --all or --turn-file, not several")
        given = [
            name
            for name, used in (
                ("--allow-unsigned", allow_unsigned),
                ("--allow-recovered", allow_recovered),
                ("--expect-head", expect_head is not None),
                ("--store", store is not None),
            )
            if used
        ]
        if given:
            raise UsageError(
                f"{' and '.join(given)} {'does' if len(given) == 1 else 'do'} not apply "
                "to --turn-file",
                hint="A turn file is checked against its own seal records and their "
                "signatures; it is not in a store.",
            )
        return None
    if all_runs and run_id is not None:
        raise UsageError("give a run id or --all, not both")
    if not all_runs and run_id is None:
        raise UsageError("missing run id", hint="Give a run id, or --all for the whole store.")
    if expect_head is None:
        return None
    if not all_runs:
        raise UsageError("--expect-head goes with --all")
    return parse_head(expect_head)


def parse_head(value: str) -> str:
    """A pinned chain head: 64 hex digits in either case, returned in lower case.

    Raises:
        UsageError: anything else (never read as "the store was rolled back").
    """
    if _HEAD.fullmatch(value) is None:
        raise UsageError(
            f"--expect-head {value!r} is not a chain head digest",
            hint="Give the 64 hex digits printed as 'chain head' by an earlier "
            "`agc-verify --all`; on the very first check there is none yet: leave "
            "--expect-head out.",
        )
    return value.lower()


def verify_options(options: VerifyOptions) -> int:
    """Run the check ``options`` ask for (parsed by :func:`agc.cli.verify_args.parse`);
    returns the exit code.

    Raises:
        UsageError: options that do not go together, a bad ``--expect-head``.
        AgcError: what the check raises (an unreadable store …).
    """
    run_id, store, as_json = options.run_id, options.store, options.as_json
    quiet, status, jobs = options.quiet, options.status, options.jobs
    expect_head = _check_options(
        run_id=run_id,
        all_runs=options.all_runs,
        turn_file=options.turn_file,
        store=store,
        as_json=as_json,
        quiet=quiet,
        status=status,
        allow_unsigned=options.allow_unsigned,
        expect_head=options.expect_head,
        allow_recovered=options.allow_recovered,
    )
    quiet = quiet or status
    retention = None
    if options.retention_days is not None:
        from agc.flows import Retention  # noqa: PLC0415

        mode = options.retention_mode.upper()
        retention = Retention(mode, options.retention_days)  # type: ignore[arg-type]
    scheduler, inventory = options.scheduler, options.inventory
    scale = {"jobs": jobs, "scheduler": scheduler, "inventory": inventory, "retention": retention}
    if options.turn_file is not None:
        from agc.cli.ledger import format_check, refuse_run_artifact  # noqa: PLC0415
        from agc.ledger import check_turn_file  # noqa: PLC0415

        refuse_run_artifact(options.turn_file)
        ledger_report = check_turn_file(
            options.turn_file,
            policy=None,  # each attempt's own preset, as `agc ledger check` does
            trusted_keys=trusted_keys_from(options.trusted_key, quiet=status),
            require_signature=options.require_signature,
        )
        if as_json:
            emit_json(ledger_report.to_dict())
        elif not status:
            lines = format_check(ledger_report)
            if quiet:
                lines = [] if ledger_report.ok else [x for x in lines if not x.startswith("warn")]
            write_lines(lines)
        return int(ExitCode.OK if ledger_report.ok else ExitCode.FINDINGS)
    trusted = trusted_keys_from(options.trusted_key, quiet=status, store=store)
    if options.all_runs:
        return _verify_store(
            store,
            trusted,
            options.require_signature,
            options.allow_unsigned,
            options.allow_recovered,
            expect_head,
            as_json,
            quiet,
            status,
            scale,
        )
    assert run_id is not None
    if jobs is not None or scheduler is not None or inventory is not None:
        raise UsageError("--jobs, --scheduler and --inventory go with --all")
    if retention is not None:
        from agc.cli.verify_scale import check_run_with_retention  # noqa: PLC0415

        report = check_run_with_retention(
            run_id,
            store,
            retention,
            trusted,
            options.require_signature,
            options.allow_unsigned,
            options.allow_recovered,
        )
    else:
        report = check_run(
            run_id,
            store,
            trusted_keys=trusted,
            require_signature=options.require_signature,
            allow_unsigned=options.allow_unsigned,
            allow_recovered=options.allow_recovered,
        )
    report = cross_check_capture(report, store)
    if as_json:
        emit_json(report.to_dict())
    elif not status:
        write_lines(format_report(report, color=use_color(sys.stdout), quiet=quiet))
        hint = recovery_hint(report, store=str(store) if store is not None else None)
        if hint is not None:
            err_console.print(hint, markup=False)
    return int(ExitCode.OK if report.complete else ExitCode.FINDINGS)


def _verify_store(
    store: Path | None,
    trusted: Mapping[str, Ed25519PublicKey] | None,
    require_signature: bool,
    allow_unsigned: bool,
    allow_recovered: bool,
    expect_head: str | None,
    as_json: bool,
    quiet: bool,
    status: bool,
    scale: Mapping[str, Any],
) -> int:
    def run(progress: Callable[[int, int], None] | None) -> StoreReport:
        report = check_store(
            store,
            trusted_keys=trusted,
            require_signature=require_signature,
            allow_unsigned=allow_unsigned,
            allow_recovered=allow_recovered,
            expect_head=expect_head,
            progress=progress,
            **scale,
        )
        return cross_check_store(report, store)

    if err_console.is_terminal and not status:
        from rich.progress import (  # noqa: PLC0415 - only on a terminal
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
        )

        columns = (TextColumn("verifying"), BarColumn(), MofNCompleteColumn())
        with Progress(*columns, console=rich_err_console(), transient=True) as bar:
            task = bar.add_task("runs", total=None)
            report = run(lambda done, total: bar.update(task, completed=done, total=total))
    else:
        report = run(None)
    if as_json:
        emit_json(report.to_dict())
    elif status:
        pass
    elif out_console.is_terminal and not quiet:
        _print_table(report)
    else:
        write_lines(format_store(report, color=use_color(sys.stdout), quiet=quiet))
    return int(ExitCode.OK if report.complete else ExitCode.FINDINGS)


def _typer_parameter(param: Param) -> inspect.Parameter:
    """The typer parameter of one grammar entry, for :func:`command_function`."""
    default = _DEFAULTS.get(param.dest, False)
    if param.kind == "version":
        return inspect.Parameter(param.dest, _KEYWORD, default=False, annotation=VersionOption)
    info: Any
    kind: Any
    if param.kind == "argument":
        info = typer.Argument(help=param.help, show_default=param.show_default)
        kind = param.type | None
    else:
        extra: dict[str, Any] = {}
        if param.metavar is not None:
            extra["metavar"] = param.metavar
        if param.minimum is not None:
            extra["min"] = param.minimum
        info = typer.Option(*param.names, help=param.help, show_default=param.show_default, **extra)
        if param.kind == "flag":
            kind = bool
        elif param.kind == "values":
            kind = list[param.type] | None  # type: ignore[name-defined]
        else:
            kind = param.type if default is not None else param.type | None
    annotation = Annotated[kind, info]
    return inspect.Parameter(param.dest, _KEYWORD, default=default, annotation=annotation)


_KEYWORD: Final = inspect.Parameter.KEYWORD_ONLY
_DEFAULTS: Final = VerifyOptions._field_defaults


def command_function() -> Callable[..., int]:
    """The function typer builds the ``verify`` command from: one parameter per entry
    of :data:`~agc.cli.verify_args.PARAMS`, in its order. typer reads it for the help,
    ``--version``, shell completion and an empty argument list; every other argument
    list is parsed by the grammar (:class:`GrammarCommand`)."""

    def verify(**values: Any) -> int:
        """Check that a run's evidence is complete and untouched."""
        values.pop("version", None)
        return verify_options(VerifyOptions(**values))

    parameters = [_typer_parameter(param) for param in PARAMS]
    verify.__signature__ = inspect.Signature(parameters, return_annotation=int)  # type: ignore[attr-defined]
    verify.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": int}
    return verify


class GrammarCommand(Command):
    """typer's command whose arguments the grammar parses (:mod:`agc.cli.verify_args`):
    click only answers what :func:`~agc.cli.verify_args.rendered_by_typer` names (help,
    ``--version``, shell completion, no argument) and words a refusal."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        if ctx.resilient_parsing or rendered_by_typer(args):
            return super().parse_args(ctx, args)
        known = tuple(
            name
            for param in self.get_params(ctx)
            for name in param.opts
            if name.startswith("--") and "completion" in name
        )
        try:
            ctx.meta[_OPTIONS] = parse(args, known=known)
        except ArgsError as exc:
            if exc.about_option:
                raise BadOptionUsage("", exc.message, ctx) from None
            raise ClickUsageError(exc.message, ctx) from None
        return []

    def invoke(self, ctx: Context) -> Any:
        options = ctx.meta.get(_OPTIONS)
        if options is None:  # typer parsed (no argument): its defaults
            return super().invoke(ctx)
        return verify_options(options)


_OPTIONS: Final = "agc.verify.options"

app = new_app(name="agc-verify", help_text=VERIFY_HELP, completion=True)
app.command(name="verify", help=VERIFY_HELP, epilog=EPILOG, cls=GrammarCommand)(command_function())


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``agc-verify`` console script; returns the exit code."""
    return run_app(app, argv, prog_name="agc-verify")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
