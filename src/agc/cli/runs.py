"""``agc runs``, ``agc show`` and ``agc diff``: what a store holds, a run's records read
back, and where they first differ from a file."""

from __future__ import annotations

import enum
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Final

import typer

from agc.cli.common import EPILOG, StoreOption, emit_json, err_console, write_lines
from agc.errors import RunNotFoundError, UsageError
from agc.exitcodes import ExitCode
from agc.flows import SCHEMA_VERSION, RunId, StoreLayout, captured_session, counted, open_store
from agc.integrity import (
    DiffSide,
    RunListing,
    diff_run,
    iter_records,
    list_runs,
    run_is_sealed,
    unwrap_record,
)

__all__ = ["format_runs", "register"]

JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]


class ShowKind(enum.StrEnum):
    transcript = "transcript"
    tool_events = "tool-events"


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_runs(runs: list[RunListing]) -> list[str]:
    """Aligned plain-text columns: run, state, records, bytes, signed, last write (UTC)."""
    header = ("RUN", "STATE", "RECORDS", "BYTES", "SIGNED", "LAST WRITE")
    rows = [
        (
            run.run_id,
            run.state,
            str(run.total_records),
            str(run.bytes),
            "signed" if run.signed else "unsigned",
            _when(run.last_write_ms),
        )
        for run in runs
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    right = {2, 3}  # numbers

    def line(row: tuple[str, ...]) -> str:
        cells = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        return "  ".join(cells).rstrip()

    return [line(header), *(line(row) for row in rows)]


def _with_session(run: RunListing, store: Path | None) -> dict[str, object]:
    """A run's JSON with the ``client`` and ``session_id`` of the session it captured
    (``null`` for a run that captured none)."""
    client, session_id = captured_session(run.run_id, run.attributes, store)
    return {**run.to_dict(), "client": client, "session_id": session_id}


def runs_command(store: StoreOption = None, as_json: JsonOption = False) -> int:
    """List the runs of a store: state, records, bytes, signature, last write.

    Nothing is verified (no file is hashed, so it is quick on a large store): `sealed`
    means the run's manifest is closed, `recovered` that `agc recover` closed it with
    bytes no crash checkpoint vouched for (agc-verify fails it unless
    --allow-recovered), `unsealed` that it is still being written, was
    stopped or crashed (`agc recover RUN` seals it), `damaged` that its manifest cannot
    be read, `legacy` that an earlier release sealed it in the legacy store format (a
    digest-only SHA-256 sidecar, no manifest). `agc-verify RUN` (or `--all`) checks the
    evidence. Newest first.

    \b
    Examples:
      agc runs
      agc runs --store ./evidence --json | jq -r '.runs[].run_id'
      agc runs --store s3://evidence/team      # uploaded runs, and runs staged for upload
    """
    runs = list_runs(store)
    where = open_store(store).url
    if as_json:
        emit_json(
            {
                "schema_version": SCHEMA_VERSION,
                "store": where,
                "runs": [_with_session(run, store) for run in runs],
            }
        )
        return int(ExitCode.OK)
    if not runs:
        err_console.print(f"no runs in store {where}", markup=False)
        return int(ExitCode.OK)
    write_lines(format_runs(runs))
    return int(ExitCode.OK)


def show_command(
    run_id: Annotated[str, typer.Argument(help="The run whose records to print.")],
    store: StoreOption = None,
    kind: Annotated[
        ShowKind, typer.Option("--kind", help="Which artifact to print.")
    ] = ShowKind.transcript,
    raw: Annotated[
        bool, typer.Option("--raw", help="Print the stored records as they are (with seq, ts).")
    ] = False,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow",
            "-f",
            help="Keep printing records as they are written, until the run is sealed.",
        ),
    ] = False,
    interval: Annotated[
        float,
        typer.Option("--interval", help="With --follow: seconds between checks.", min=0.01),
    ] = 0.25,
) -> int:
    """Print a run's records, one per line, as the agent wrote them.

    A line that `agc record`/`agc import` kept is printed unwrapped: its JSON payload,
    or the exact bytes of a line that was not a JSON object. Records are read as they
    are on disk and not verified (use `agc-verify RUN`). With --follow, like `tail -f`,
    wait for new records of a run still being written and stop once it is sealed
    (Ctrl-C stops earlier, exit 130).

    \b
    Examples:
      agc show fix-tests-42
      agc show fix-tests-42 --kind tool-events --raw
      agc show fix-tests-42 --follow | jq .type
    """
    layout = StoreLayout.at(store)
    if not follow and interval != 0.25:
        raise UsageError("--interval goes with --follow")
    run_id = RunId(run_id)
    path = layout.artifact_path(run_id, kind.value)
    if follow and not path.exists() and layout.root.is_dir():
        err_console.print(f"waiting for run {run_id} to start …", markup=False)
        while not path.exists():
            time.sleep(interval)
    sealed = run_is_sealed(layout, run_id, kind.value)
    if not sealed and not follow and path.exists():
        err_console.print(
            f"note: the {kind.value} of run {run_id} is not sealed (being written, or "
            "stopped: `agc recover` seals it); records shown as they are on disk",
            markup=False,
        )
    elif not sealed and path.exists():
        err_console.print(
            f"following run {run_id}: its {kind.value} is not sealed; records are shown as "
            "they are written, until it is sealed. A run whose writer crashed gets no more "
            f"(`agc recover {run_id}` seals it); Ctrl-C stops following",
            markup=False,
        )
    out = sys.stdout.buffer
    offset = 0
    try:
        while True:
            for line, end in iter_records(run_id, store, kind=kind.value, start=offset):
                out.write((line if raw else unwrap_record(line, kind.value)) + b"\n")
                offset = end
            out.flush()
            if not follow or sealed:
                break
            time.sleep(interval)
            # Sealed now? Read once more first: the last records came before the seal.
            sealed = run_is_sealed(layout, run_id, kind.value)
    except BrokenPipeError:
        return int(ExitCode.OK)
    except RunNotFoundError as exc:
        if not layout.root.is_dir():
            raise RunNotFoundError(f"store {layout.root} does not exist") from exc
        raise
    return int(ExitCode.OK)


_SHOWN: Final = 200
"""Characters of a differing line printed as text (``--json`` gives it whole)."""


def _shown(side: DiffSide | None, label: str) -> str:
    if side is None or side.text is None:
        return f"  {label}: (ends before line {side.line if side else '?'})"
    text = side.text.decode("utf-8", "replace")
    if not text.isprintable():  # a terminal control sequence is shown, never obeyed
        text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
    cut = text if len(text) <= _SHOWN else text[:_SHOWN] + f"… ({len(text)} characters)"
    return f"  {label} line {side.line}: {cut}"


def diff_command(
    run_id: Annotated[str, typer.Argument(help="The run whose records to compare.")],
    file: Annotated[
        Path, typer.Argument(help="The JSONL file to compare them with.", show_default=False)
    ],
    store: StoreOption = None,
    kind: Annotated[
        ShowKind, typer.Option("--kind", help="Which artifact of the run to compare.")
    ] = ShowKind.transcript,
    as_json: JsonOption = False,
) -> int:
    """Compare a run's records with a file and print the first line where they differ.

    The file is, say, the agent's own session file; each side's first differing line
    is printed. Exit 0 when equal, 1 when not. The run's records are unwrapped as
    `agc show` prints them; two lines are equal when their bytes are, or when both are
    JSON holding the same value. Line numbers are
    1-based, as `sed -n` counts them. Nothing is verified: `agc-verify RUN` says whether
    the records are the sealed ones (and names the lines where a change begins).

    \b
    Examples:
      agc diff fix-tests-42 ~/.codex/sessions/2026/05/01/rollout-fix-tests-42.jsonl
      agc diff fix-tests-42 session.jsonl --json | jq .line
    """
    layout = StoreLayout.at(store)
    run_id = RunId(run_id)
    if (
        not run_is_sealed(layout, run_id, kind.value)
        and layout.artifact_path(run_id, kind.value).exists()
    ):
        err_console.print(
            f"note: the {kind.value} of run {run_id} is not sealed (being written, or "
            "stopped: `agc recover` seals it); compared as it is on disk",
            markup=False,
        )
    try:
        result = diff_run(run_id, file, store, kind=kind.value)
    except RunNotFoundError as exc:
        if not layout.root.is_dir():
            raise RunNotFoundError(f"store {layout.root} does not exist") from exc
        raise
    if as_json:
        emit_json(result.to_dict())
    elif result.equal:
        write_lines([f"run {run_id} and {file} are equal ({counted(result.run_lines, 'line')})"])
    else:
        line = result.run.line if result.run else 0
        write_lines(
            [
                f"run {run_id} ({counted(result.run_lines, 'line')}) and {file} "
                f"({counted(result.file_lines, 'line')}) differ first at line {line}:",
                _shown(result.run, "run "),
                _shown(result.file_side, "file"),
            ]
        )
    return int(ExitCode.OK if result.equal else ExitCode.FINDINGS)


def register(app: typer.Typer) -> None:
    """Add ``runs``, ``show`` and ``diff`` to the ``agc`` app."""
    app.command(name="runs", epilog=EPILOG)(runs_command)
    app.command(name="show", epilog=EPILOG)(show_command)
    app.command(name="diff", epilog=EPILOG)(diff_command)
