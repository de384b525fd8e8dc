"""``agc record``, ``agc import``, ``agc watch``, ``agc seal`` and ``agc demo``: writing
evidence."""

from __future__ import annotations

import enum
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, BinaryIO, Final

import typer

from agc.cli._jsontext import json_document
from agc.cli._process import discard_stdout
from agc.cli.common import (
    EPILOG,
    StoreOption,
    byte_progress,
    emit_json,
    err_console,
    out_console,
    stop_code,
    write_new_file,
)
from agc.cli.keys import SigningKeyOption, signing_key_from
from agc.cli.verify import format_report
from agc.cli.write_policy import (
    LegalHoldOption,
    LockModeChoice,
    RetentionDaysOption,
    RetentionModeOption,
    policy_store,
    print_upload,
    retention_from,
    seal_to_store,
)
from agc.demo import DEMO_SESSION_ID, demo_run, demo_session
from agc.errors import (
    AgcError,
    FileUnreadableError,
    InputError,
    InputMissingError,
    RunExistsError,
    RunNotFoundError,
    StoreError,
    UnsealedRunError,
    UsageError,
    VerificationError,
)
from agc.exitcodes import ExitCode
from agc.flows import (
    SESSION_FOLDERS,
    ImportOutcome,
    PassThrough,
    RunId,
    StoreLayout,
    check_captured_run_kept,
    counted,
    describe_os_error,
    drain,
    explain_write_failure,
    import_session_file,
    import_sessions,
    open_store,
    recover_hint,
    refuse_importing_own_file,
    resolve_store,
    run_on_disk,
    session_companion,
    validate_new_run_id,
)
from agc.integrity import (
    IngestSummary,
    check_run,
    ingest_stream,
    iter_copy_lines,
    open_run,
    seal_file,
)
from agc.resume import check_loaded, load_history, repair_loaded

__all__ = ["register"]


class Kind(enum.StrEnum):
    transcript = "transcript"
    tool_events = "tool-events"


class AlgorithmChoice(enum.StrEnum):
    blake3 = "blake3"
    sha256 = "sha256"


RunIdOption = Annotated[
    str, typer.Option("--run-id", help="Run id: 1-128 of A-Z a-z 0-9 . _ -", show_default=False)
]
KindOption = Annotated[Kind, typer.Option("--kind", help="Which artifact the input is.")]
AlgorithmOption = Annotated[
    AlgorithmChoice, typer.Option("--algorithm", help="Digest algorithm of the seal.")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]
AllowEmptyOption = Annotated[
    bool,
    typer.Option(
        "--allow-empty",
        help="Seal a run even when the input holds no line (it never verifies complete).",
    ),
]


def _stopped(exc: KeyboardInterrupt, run_id: str, store: Path | None, kind: Kind) -> int:
    """One line on stderr after Ctrl-C / SIGTERM: what is on disk and how to seal it."""
    code, word = stop_code(exc)
    found = run_on_disk(run_id, store, kind.value)
    if found is None:
        err_console.print(f"{word}: nothing was recorded; run id {run_id} stays free", markup=False)
    else:
        path, records, size = found
        err_console.print(
            f"{word}: run {run_id} is NOT sealed; {counted(records, 'record', grouped=True)} "
            f"({counted(size, 'byte', grouped=True)}) of its "
            f"{kind.value} are on disk in {path}; seal them with `{recover_hint(run_id, store)}`",
            markup=False,
        )
    return int(code)


def _print_summary(summary: IngestSummary, as_json: bool, *, to_stderr: bool = False) -> None:
    """The summary on stdout, or on stderr when stdout carries the input (``--tee``)."""
    if as_json:
        if to_stderr:
            sys.stderr.write(json_document(summary.to_dict()) + "\n")
        else:
            emit_json(summary.to_dict())
        return
    console = err_console if to_stderr else out_console
    if summary.unchanged:
        console.print(
            f"run {summary.run_id}: already recorded with "
            f"{'this record' if summary.records == 1 else f'these {summary.records} records'} "
            "(the same input); nothing written",
            markup=False,
        )
        return
    console.print(
        f"run {summary.run_id}: {counted(summary.records, 'record')} written to "
        f"{summary.kind} ({counted(summary.invalid_lines, 'non-object line')} kept as "
        "'invalid' records), sealed",
        markup=False,
    )


def record_command(
    run_id: RunIdOption,
    kind: KindOption = Kind.transcript,
    store: StoreOption = None,
    algorithm: AlgorithmOption = AlgorithmChoice.blake3,
    signing_key: SigningKeyOption = None,
    as_json: JsonOption = False,
    allow_empty: AllowEmptyOption = False,
    retention_days: RetentionDaysOption = None,
    retention_mode: RetentionModeOption = LockModeChoice.COMPLIANCE,
    legal_hold: LegalHoldOption = False,
    tee: Annotated[
        bool,
        typer.Option(
            "--tee",
            help="Pass the input through to stdout as it is read (the summary goes to stderr).",
        ),
    ] = False,
) -> int:
    """Read JSONL from stdin and write it to a run, sealing at end of input.

    Every line becomes a record; a line that is not a JSON object is kept as a record
    that says so (with its text) and counted in the summary. A Codex rollout or `codex
    exec --json` stream, a Claude Code session or a Gemini CLI chat also fills the
    run's tool-events (one record per tool call and per result) and its attributes
    (client, session id, model…); any other input seals them empty. An empty input is
    refused (exit 2, nothing is sealed, the run id stays free) unless --allow-empty is
    given. Stopped by Ctrl-C or SIGTERM (exit 130/143), the records read so far stay on
    disk, unsealed: `agc recover RUN` seals them.

    Best effort: when the store fails (missing, full, read-only, locked), agc record
    still reads its input to the end, so the agent writing into the pipe never dies of
    SIGPIPE, says once what was not recorded, and exits 3 at the end.

    \b
    Examples:
      codex exec --json "fix the tests" | agc record --run-id fix-tests-42
      codex exec --json "…" | agc record --run-id r9 --tee | jq -c .type
      my-runner --events | agc record --run-id r7 --kind tool-events
      codex exec --json "…" | agc record --run-id r8 --store s3://evidence/team --retention-days 365
    """
    run_id = validate_new_run_id(run_id)
    target_store = policy_store(store, retention_days, retention_mode, legal_hold)
    if sys.stdin is None:  # started with standard input closed (`<&-`)
        raise InputError(
            "agc record has no standard input (it is closed)",
            hint="Pipe the agent's JSONL into agc record, or use agc import FILE.",
        )
    source = PassThrough(sys.stdin.buffer, sys.stdout.buffer if tee else None)
    key = signing_key_from(signing_key)
    try:
        summary = ingest_stream(
            source,  # type: ignore[arg-type]  # a binary stream: read, read1, fileno
            run_id,
            kind=kind.value,
            store=target_store,
            algorithm=algorithm.value,
            signing_key=key,
            allow_empty=allow_empty,
            companion=session_companion(),
        )
    except KeyboardInterrupt as exc:
        return _stopped(exc, run_id, store, kind)
    except AgcError as exc:
        _read_to_the_end(source, exc, run_id, store, kind)
        raise
    _print_summary(summary, as_json, to_stderr=tee)
    print_upload(summary.object_store)
    return int(ExitCode.OK)


def _read_to_the_end(
    source: PassThrough, exc: AgcError, run_id: str, store: Path | None, kind: Kind
) -> None:
    """After a failure to record: read the rest of the input (so its writer never gets
    SIGPIPE) and say once, on stderr, how much of it was not recorded."""
    if isinstance(exc, StoreError):
        explain_write_failure(exc, run_id, store, kind.value)
    drained = drain(source)  # ends at once when the input itself failed
    if source.bytes_read == 0:
        return  # an empty input: nothing was lost
    if isinstance(exc, (UnsealedRunError, RunExistsError)):
        # refused before the run was opened: not one byte of this input was written
        lost = "none of it was recorded"
    else:
        lost = f"the {drained:,} bytes read after the failure were NOT recorded"
    err_console.print(
        f"agc record: run {run_id} failed ({exc.code}); the input was still read to its "
        f"end ({source.bytes_read:,} bytes) so that its writer could finish, and {lost}",
        markup=False,
    )


def import_command(
    file: Annotated[
        Path,
        typer.Argument(
            help="JSONL file to copy into the store, or a folder of client session files."
        ),
    ],
    run_id: Annotated[
        str | None,
        typer.Option(
            "--run-id",
            help="Run id: 1-128 of A-Z a-z 0-9 . _ - (default for a client session file: "
            "<client>-<session id>).",
            show_default=False,
        ),
    ] = None,
    kind: KindOption = Kind.transcript,
    store: StoreOption = None,
    algorithm: AlgorithmOption = AlgorithmChoice.blake3,
    signing_key: SigningKeyOption = None,
    as_json: JsonOption = False,
    allow_empty: AllowEmptyOption = False,
    retention_days: RetentionDaysOption = None,
    retention_mode: RetentionModeOption = LockModeChoice.COMPLIANCE,
    legal_hold: LegalHoldOption = False,
) -> int:
    """Copy an existing JSONL file into the store through the writer, and seal it.

    An empty file is refused (exit 2, the run id stays free) unless --allow-empty. A
    client session file (Codex rollout, `codex exec --json` stream, Claude Code session,
    Gemini CLI chat) also fills the run's tool-events and attributes; without --run-id
    its run id is <client>-<session id>.

    A FOLDER (~/.codex/sessions, ~/.claude/projects, ~/.gemini/tmp) imports every client
    session file under it that is not in the store yet, each under the run id of its
    session; a file that grew since becomes a new segment of its run when the sealed
    records are exactly its first ones, and is reported `transcript-diverges` (exit 1,
    nothing written) when they are not. Files that are no client session are skipped.

    \b
    Examples:
      agc import ~/.codex/sessions/2026/11/30/rollout-x.jsonl --run-id rollout-1130
      agc import session.jsonl --run-id cc-1 --store ./evidence --json
      agc import session.jsonl --run-id cc-2 --store s3://evidence/team --legal-hold
      agc import ~/.claude/projects --store ./evidence
    """
    if file.is_dir() or (run_id is None and kind == Kind.transcript):
        if run_id is not None:
            raise UsageError(
                f"{file} is a folder: each session file in it gets the run id of its session",
                hint="Leave out --run-id, or import one file with it.",
            )
        if kind != Kind.transcript:
            raise UsageError("client session files are imported as transcripts")
        if retention_days is not None or legal_hold:
            raise UsageError(
                "--retention-days and --legal-hold go with --run-id (one file) for now"
            )
        key = signing_key_from(signing_key)
        if file.is_dir():
            outcomes = import_sessions(
                [file], store=store, algorithm=algorithm.value, signing_key=key
            )
            if not outcomes:
                err_console.print(
                    f"no client session files under {file} ({SESSION_FOLDERS}); nothing imported",
                    markup=False,
                )
        else:
            open_input(file, what="input file").close()
            outcomes = [
                import_session_file(file, store=store, algorithm=algorithm.value, signing_key=key)
            ]
            if outcomes[0].status == "skipped":
                raise UsageError(
                    f"{file} is not a client session file, so it has no session run id",
                    hint="Give --run-id.",
                )
        return _print_outcomes(outcomes, as_json)
    if run_id is None:
        raise UsageError("--run-id is required with --kind tool-events")
    run_id = validate_new_run_id(run_id)
    target_store = policy_store(store, retention_days, retention_mode, legal_hold)
    handle = open_input(file, what="input file")
    refuse_importing_own_file(handle, file, run_id, store=store, kind=kind.value)
    key = signing_key_from(signing_key)
    try:
        with handle, byte_progress(file.stat().st_size, f"importing {file.name}") as progress:
            summary = ingest_stream(
                handle,
                run_id,
                kind=kind.value,
                store=target_store,
                algorithm=algorithm.value,
                progress=progress,
                signing_key=key,
                allow_empty=allow_empty,
                companion=session_companion(),
            )
    except KeyboardInterrupt as exc:
        return _stopped(exc, run_id, store, kind)
    except StoreError as exc:
        explain_write_failure(exc, run_id, store, kind.value)
        raise
    _print_summary(summary, as_json)
    print_upload(summary.object_store)
    return int(ExitCode.OK)


def _print_outcomes(outcomes: list[ImportOutcome], as_json: bool, *, quiet: bool = False) -> int:
    """One line per session file (JSON: one document); the exit code: the highest of
    the failed files' (3 for a store that cannot be written …), else 1 when one diverges.

    ``quiet``: leave out files that were unchanged or skipped (``agc watch``)."""
    if as_json:
        emit_json([outcome.to_dict() for outcome in outcomes])
    for outcome in [] if as_json else outcomes:
        if quiet and outcome.status in {"unchanged", "skipped"}:
            continue
        if outcome.status == "skipped":
            text = "skipped: not a client session file"
        elif outcome.status == "diverges":
            text = (
                f"transcript-diverges: run {outcome.run_id} was sealed with other records "
                f"(first difference at record {outcome.line}); nothing written"
            )
        elif outcome.status == "failed" and outcome.error is not None:
            text = f"failed ({outcome.error.code}): {outcome.error.message}"
        elif outcome.status == "unsealed":
            text = (
                f"run {outcome.run_id} is not sealed: still being written (its hooks?), or "
                f"left by a crash (`agc recover {outcome.run_id}` seals it)"
            )
        elif outcome.status == "unchanged":
            text = f"run {outcome.run_id}: unchanged"
        else:
            text = (
                f"run {outcome.run_id}: {outcome.status}, "
                f"{counted(outcome.records, 'record', grouped=True)} and "
                f"{counted(outcome.tool_events, 'tool event', grouped=True)}"
            )
        out_console.print(f"{outcome.path}: {text}", markup=False)
    codes = [int(o.error.exit_code) for o in outcomes if o.error is not None]
    codes += [int(ExitCode.FINDINGS) for o in outcomes if o.status == "diverges"]
    return max(codes, default=int(ExitCode.OK))


def watch_command(
    folders: Annotated[
        list[Path], typer.Argument(help="Folders of client session files to keep imported.")
    ],
    interval: Annotated[
        float,
        typer.Option("--interval", help="Seconds between two looks at the folders.", min=0.1),
    ] = 5.0,
    once: Annotated[
        bool, typer.Option("--once", help="Look once, import what changed and exit.")
    ] = False,
    store: StoreOption = None,
    algorithm: AlgorithmOption = AlgorithmChoice.blake3,
    signing_key: SigningKeyOption = None,
    as_json: JsonOption = False,
) -> int:
    """Keep client session folders imported, for clients without hooks.

    Does what `agc import FOLDER` does, again every --interval seconds, for the files
    that changed since the last look: new sessions become runs, grown ones new
    segments, changed ones `transcript-diverges`. Prints one line per file it wrote
    (JSON: one document per look). Stop it with Ctrl-C (exit 130); with --once it exits
    after one look (exit 1 if a file diverges).

    \b
    Examples:
      agc watch ~/.codex/sessions ~/.gemini/tmp --store ./evidence
      agc watch ~/.claude/projects --interval 30 --once
    """
    key = signing_key_from(signing_key)
    seen: dict[Path, tuple[int, int]] = {}
    code = int(ExitCode.OK)
    try:
        while True:
            outcomes = import_sessions(
                folders, store=store, algorithm=algorithm.value, signing_key=key, seen=seen
            )
            changed = [o for o in outcomes if o.status not in {"unchanged", "skipped"}]
            if changed or not as_json:
                code = max(code, _print_outcomes(changed, as_json, quiet=True))
            if once:
                return code
            time.sleep(interval)
    except KeyboardInterrupt as exc:
        return int(stop_code(exc)[0])


def open_input(path: Path, *, what: str) -> BinaryIO:
    """Open a file the user named for reading, with the same errors for every command:
    missing is exit 2 (``input-missing``), a folder exit 2, unreadable exit 3."""
    try:
        return path.open("rb")
    except FileNotFoundError as exc:
        raise InputMissingError(f"{what} {path} does not exist") from exc
    except IsADirectoryError as exc:
        raise InputError(f"{what} {path} is a folder, not a file") from exc
    except OSError as exc:
        raise FileUnreadableError(
            f"{what} {path} cannot be read: {describe_os_error(exc)}"
        ) from exc


def export_command(
    run_id: Annotated[str, typer.Argument(help="The run recorded or imported with agc.")],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Write here (never over a file); default (or -) stdout.",
            show_default=False,
        ),
    ] = None,
    kind: Annotated[
        Kind, typer.Option("--kind", help="Which artifact of the run to write back.")
    ] = Kind.transcript,
    store: StoreOption = None,
    insecure_skip_verify: Annotated[
        bool,
        typer.Option(
            "--insecure-skip-verify",
            help="Export a run that does not verify (tampered or incomplete) as it is.",
        ),
    ] = False,
) -> int:
    """Write a recorded or imported run back as the JSONL file it was made from.

    The run is verified first (as agc-verify does) and refused when tampered or
    incomplete. Each record gives back its input line: lines that were JSON objects come
    back as compact JSON (byte for byte for the session files Codex and Claude Code
    write), other lines exactly as they were. See docs/resume.md for the limits.

    \b
    Examples:
      agc export rollout-1130 --out rollout-1130.jsonl
      agc export cc-1 --store ./evidence > session.jsonl
    """
    run_id = RunId(run_id)
    if out is not None and str(out) == "-":
        out = None  # `--out -`: standard output, as the default
    # The lines written are a copy of the artifact read once and checked against what
    # the verification judged: a file swapped after the check is refused, never written.
    report, kept = check_captured_run_kept(run_id, store, kind=kind.value)
    with kept:
        if any(finding.code == "run-missing" for finding in report.findings):
            # A mistyped run id or the wrong --store: nothing to export, not evidence
            # that failed its check (so no --insecure-skip-verify in the hint).
            raise RunNotFoundError(report.missing[0])
        if not report.complete:
            if not insecure_skip_verify:
                raise VerificationError(
                    f"run {run_id} does not verify ({'; '.join(report.missing)}): agc export "
                    "does not write back evidence that is tampered or incomplete",
                    report=report,
                    hint=f"See agc-verify {run_id}; --insecure-skip-verify exports it anyway.",
                )
            err_console.print(
                f"warning: --insecure-skip-verify: run {run_id} does not verify; exported as it is",
                markup=False,
            )
        if not kept.read:
            raise RunNotFoundError(
                f"run {run_id} has no {kind.value} file in the store ({kept.url})"
            )
        lines = iter_copy_lines(kept.file, run_id, kind=kind.value)
        if out is None:
            stdout = sys.stdout.buffer
            try:
                for line in lines:
                    stdout.write(line)
                stdout.flush()
            except BrokenPipeError:  # the reader is gone (`| head`): it wanted no more
                discard_stdout()
            return int(ExitCode.OK)
        data = b"".join(lines)
    write_new_file(out, data)
    err_console.print(f"run {run_id} ({kind.value}) written to {out}", markup=False)
    return int(ExitCode.OK)


def seal_command(
    file: Annotated[Path, typer.Argument(help="The closed file to seal.")],
    algorithm: AlgorithmOption = AlgorithmChoice.blake3,
    as_json: JsonOption = False,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Also put FILE and its sidecar in this s3:// store (under files/).",
            show_default=False,
        ),
    ] = None,
    retention_days: RetentionDaysOption = None,
    retention_mode: RetentionModeOption = LockModeChoice.COMPLIANCE,
    legal_hold: LegalHoldOption = False,
) -> int:
    """Write the checksum sidecar (FILE.b3 or FILE.sha256) for a closed file.

    Refuses (exit 1) if a sidecar exists and does not match; does nothing if it matches.

    \b
    Examples:
      agc seal transcript.jsonl && b3sum --check transcript.jsonl.b3
      agc seal events.jsonl --algorithm sha256
      agc seal report.jsonl --store s3://evidence/team --retention-days 2555
    """
    remote = None
    if store is not None:
        remote = open_store(store)
        if remote.folder is not None:  # the sidecar is written beside FILE already
            raise UsageError(
                "agc seal --store takes an s3:// store", hint="See docs/object-store.md."
            )
        remote = remote.with_policy(
            retention=retention_from(retention_days, retention_mode), legal_hold=legal_hold
        )
    elif retention_days is not None or legal_hold:
        raise UsageError("--retention-days and --legal-hold go with --store s3://…")
    result = seal_file(file, algorithm=algorithm.value)
    if remote is not None:
        uploaded = seal_to_store(remote, result.path, result.sidecar, as_json)
        if as_json:
            emit_json({**result.to_dict(), "object_store": uploaded})
            return int(ExitCode.OK)
    if as_json:
        emit_json(result.to_dict())
    else:
        verb = "sealed" if result.created else "already sealed (sidecar matches)"
        out_console.print(f"{verb}: {result.sidecar}", markup=False)
    return int(ExitCode.OK)


def demo_command(
    store: Annotated[
        Path | None,
        typer.Option(
            "--store",
            help="An empty or new folder for the demo: the store is FOLDER/store, the "
            "tampered copy FOLDER/tampered-store (default: $XDG_CACHE_HOME/agc/demo, else "
            "~/.cache/agc/demo, replaced by each demo).",
        ),
    ] = None,
) -> int:
    """Write a realistic agent run, seal it, verify it, tamper with a copy, verify again.

    Then check and repair a session whose agent was killed in the middle of a tool call.

    Progress goes to stderr, the verdicts to stdout; it exits 0 when the sealed run
    verifies, the tampered copy fails, the killed session is one the provider refuses
    and its repair one it accepts, as they should. Without --store the demo's
    files go to one folder of agc's cache (printed), which the next demo replaces:
    demos leave nothing else behind.

    \b
    Examples:
      agc demo
      agc demo --store ./agc-demo && agc-verify demo-fix-parser --store ./agc-demo/store
      agc demo --store ./agc-demo2 && agc runs --store ./agc-demo2/tampered-store
    """
    if store is not None:
        resolve_store(store)  # a folder: the demo copies it (an s3:// store is exit 2)
    workdir = _fresh_demo_folder() if store is None else store
    if store is not None and store.exists() and any(store.iterdir()):
        raise UsageError(f"{store} is not empty", hint="Give an empty or new folder.")
    good, tampered = workdir / "store", workdir / "tampered-store"
    run_id = "demo-fix-parser"
    say = err_console.print

    say(f"1. Writing run {run_id!r} to {good} (transcript + tool events, hashed as written)")
    with open_run(run_id, store=good) as run:
        for record in demo_run():
            writer = run.transcript if record.kind == "transcript" else run.tool_events
            writer.write(record.body)
    say("2. Sealed on close: sidecars and run manifest written. Verifying:")
    report = check_run(run_id, good)
    for line in format_report(report):
        out_console.print("   " + line, markup=False)

    say(f"3. Copying the store to {tampered} and changing one byte of the transcript")
    shutil.copytree(good, tampered)
    path = StoreLayout(tampered).artifact_path(run_id, "transcript")
    data = bytearray(path.read_bytes())
    index = data.index(b"empty input")
    data[index] = ord("E")
    path.write_bytes(bytes(data))
    say("4. Verifying the tampered copy:")
    bad = check_run(run_id, tampered)
    for line in format_report(bad):
        out_console.print("   " + line, markup=False)
    broken, fixed = _demo_resume(workdir, say)
    expected = report.complete and not bad.complete and broken and fixed
    say(
        "Demo finished: the sealed run verifies, the tampered copy fails, and the killed "
        "session's repair is one the provider accepts."
        if expected
        else "Demo did not behave as expected."
    )
    say(f"Try it yourself: agc-verify {run_id} --store {good}")
    session = workdir / "session" / f"{DEMO_SESSION_ID}.jsonl"
    say(f"  and: agc resume {session} --strategy synthesize --out fixed.jsonl")
    if store is None:
        say(f"The demo's files are in {workdir} (the next agc demo replaces them).")
    return int(ExitCode.OK if expected else ExitCode.INTERNAL)


def _demo_resume(workdir: Path, say: Callable[[str], None]) -> tuple[bool, bool]:
    """The demo's resume steps: a Claude Code session killed while a tool call ran,
    checked (the provider's refusal on stdout) and repaired with ``synthesize`` into
    ``fixed.jsonl`` beside it. Returns whether the check found it broken and whether
    the repair checks valid."""
    folder = workdir / "session"
    folder.mkdir()
    session = folder / f"{DEMO_SESSION_ID}.jsonl"
    session.write_bytes(demo_session())
    say(f"5. A Claude Code session whose agent was killed while a tool call ran: {session}")
    say("   Checking it as the provider will (agc resume FILE --check):")
    history = load_history(session.read_bytes(), source=session.name)
    checked = check_loaded(history)
    for finding in checked.findings:
        line = "" if finding.record is None else f"line {finding.record + 1}: "
        out_console.print(f"   {line}{finding.code}: {finding.message}", markup=False)
    fixed = folder / "fixed.jsonl"
    say(f"6. Repairing it into {fixed} (--strategy synthesize: the call gets a result")
    say("   saying it was interrupted and may have run, with a key to tell if it did):")
    result = repair_loaded(history, strategy="synthesize")
    fixed.write_bytes(result.data)
    for change in result.report.changes:
        key = f" [{change.idempotency_key}]" if change.idempotency_key else ""
        out_console.print(f"   {change.action} {change.tool_name or ''}{key}", markup=False)
    after = result.report.after
    out_console.print(
        f"   {fixed.name}: {'valid' if after.valid else 'still refused'}", markup=False
    )
    return not checked.valid, after.valid


_DEMO_MARK: Final = ".agc-demo"
"""The file that marks a folder as the default demo folder, which the next demo may
replace (a folder without it is never removed)."""


def _fresh_demo_folder() -> Path:
    """``$XDG_CACHE_HOME/agc/demo`` (else ``~/.cache/agc/demo``, the XDG Base Directory
    default), emptied: the previous demo's files are removed first.

    Raises:
        UsageError: the folder exists, is not empty and is not a demo's (no mark).
    """
    cache = os.environ.get("XDG_CACHE_HOME")
    folder = (Path(cache) if cache else Path.home() / ".cache") / "agc" / "demo"
    ours = folder.is_dir() and not folder.is_symlink() and (folder / _DEMO_MARK).is_file()
    empty = folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir())
    if (folder.exists() or folder.is_symlink()) and not (ours or empty):
        raise UsageError(
            f"{folder} exists and is not a folder agc demo made",
            hint="Remove it, or give the demo a folder of its own with --store.",
        )
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / _DEMO_MARK).write_text("agc demo: replaced by the next agc demo\n")
    return folder


def register(app: typer.Typer) -> None:
    """Add ``record``, ``import``, ``watch``, ``export``, ``seal`` and ``demo`` to the
    ``agc`` app."""
    app.command(name="record", epilog=EPILOG)(record_command)
    app.command(name="import", epilog=EPILOG)(import_command)
    app.command(name="watch", epilog=EPILOG)(watch_command)
    app.command(name="export", epilog=EPILOG)(export_command)
    app.command(name="seal", epilog=EPILOG)(seal_command)
    app.command(name="demo", epilog=EPILOG)(demo_command)
