"""``agc ledger record|show|check``: the turn ledger on the command line."""

from __future__ import annotations

import enum
import itertools
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, BinaryIO, Final

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agc.cli.common import (
    EPILOG,
    byte_progress,
    emit_json,
    err_console,
    new_app,
    out_console,
    trusted_keys_from,
)
from agc.errors import (
    EmptyInputError,
    FileUnreadableError,
    InputError,
    InputMissingError,
    JsonInvalidError,
    TurnIdInvalidError,
    UsageError,
)
from agc.exitcodes import ExitCode
from agc.flows import counted, describe_os_error, parse_json, read_limited
from agc.ledger import (
    KEPT_STRING_BYTES,
    MAX_READ_LINE_BYTES,
    DecodeStats,
    LedgerReport,
    OverlongLine,
    Project,
    TurnOutcome,
    TurnSummary,
    check_turn_file,
    event_lines,
    load_policy,
    record_turn,
    show_turn_file,
    validate_client_turn_id,
)

if TYPE_CHECKING:
    from agc.integrity import SigningKey

__all__ = ["format_check", "register", "run_check"]

_MAX_ATTACHMENTS_BYTES = 1024 * 1024
_MAX_PROMPT_BYTES = 16 * 1024 * 1024


class FormatChoice(enum.StrEnum):
    auto = "auto"
    app_server = "app-server"
    exec = "exec"
    rollout = "rollout"


JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]
PolicyOption = Annotated[
    str | None,
    typer.Option(
        "--policy",
        metavar="generic|direct-project|FILE",
        help="Ledger policy: a preset (generic, the default; direct-project) or a policy "
        "TOML file (which MCP arguments are kept, what counts as the first design action).",
        show_default=False,
    ),
]
SigningKeyOption = Annotated[
    Path | None,
    typer.Option(
        "--signing-key",
        help="Ed25519 private key (PEM) to sign the attempt's seal record; also $AGC_SIGNING_KEY.",
        show_default=False,
    ),
]
TrustedKeyOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--trusted-key",
        help="Trusted Ed25519 public key (PEM), or a folder of them; repeatable. Also: "
        "$AGC_TRUSTED_KEYS folder. Any trusted key requires every seal record signed.",
        show_default=False,
        metavar="<path>",
    ),
]
RequireSignatureOption = Annotated[
    bool,
    typer.Option(
        "--require-signature",
        help="Fail unless every seal record is signed by a trusted key and the last one "
        "closes the file (implied by any trusted key).",
    ),
]
TurnFileArgument = Annotated[
    Path, typer.Argument(help="A turn file: .agent/runtime/direct-codex/turns/<id>.jsonl")
]


def refuse_run_artifact(turn_file: Path) -> None:
    """Refuse a run's sealed transcript or tool-events file given as a turn file.

    ``<store>/audit/transcripts/<runId>.jsonl`` (with the run's manifest beside it) is
    agc evidence, checked by ``agc-verify RUN``; read as a turn file it would only give
    a list of findings about missing turn records.

    Raises:
        InputError: the file is a run's artifact in a store (exit 2).
    """
    parts = turn_file.parts
    if len(parts) < 3 or parts[-3] != "audit" or not parts[-1].endswith(".jsonl"):
        return
    kinds = {"transcripts": "transcript", "tool-events": "tool-events"}
    run_id = parts[-1].removesuffix(".jsonl")
    store = Path(*parts[:-3]) if len(parts) > 3 else Path()
    manifest = store / "audit" / "manifests" / f"{run_id}.json"
    if parts[-2] not in kinds or not manifest.is_file():
        return
    raise InputError(
        f"{turn_file} is the {kinds[parts[-2]]} file of agc run {run_id!r}, not a turn file",
        hint=f"Check the run with `agc-verify {run_id} --store {store}`; turn files are "
        "<project>/.agent/runtime/direct-codex/turns/<clientTurnId>.jsonl.",
    )


def _read_prompt(path: Path) -> str:
    data = read_limited(path, what="prompt file", max_bytes=_MAX_PROMPT_BYTES)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"prompt file {path} is not UTF-8 ({exc.reason})") from exc


_ATTACHMENT_MEMBERS: Final = frozenset({"name", "localPath", "mediaType", "size", "status"})
"""The members of an offered attachment the ledger records."""


def _read_attachments(path: Path | None) -> list[object]:
    if path is None:
        return []
    data = read_limited(path, what="attachments file", max_bytes=_MAX_ATTACHMENTS_BYTES)
    try:
        value = parse_json(data, allow_lone_surrogates=True)
    except JsonInvalidError as exc:
        raise InputError(f"attachments file {path} is not JSON: {exc.message}") from exc
    hint = 'Give a JSON array like [{"name": "spec.md", "localPath": "docs/spec.md"}].'
    if not isinstance(value, list):
        raise InputError(f"attachments file {path} must hold a JSON array", hint=hint)
    for index, entry in enumerate(value):
        if not isinstance(entry, dict):
            raise InputError(
                f"attachments file {path}: entry {index} is not a JSON object", hint=hint
            )
        if entry and not entry.keys() & _ATTACHMENT_MEMBERS:
            # every member unknown (`{"path": …}`): recorded, it would be an empty entry
            raise InputError(
                f"attachments file {path}: entry {index} has none of the members "
                f"{', '.join(sorted(_ATTACHMENT_MEMBERS))} (it has "
                f"{', '.join(sorted(map(str, entry)))})",
                hint=hint,
            )
    return value


def record_command(
    project: Annotated[
        Path, typer.Option("--project", help="The project root (where .agent/ lives).")
    ],
    turn_id: Annotated[
        str, typer.Option("--turn-id", help="clientTurnId: 6-160 of A-Z a-z 0-9 -.")
    ],
    prompt_file: Annotated[
        Path, typer.Option("--prompt-file", help="The user's original prompt text (UTF-8).")
    ],
    attachments: Annotated[
        Path | None,
        typer.Option(
            "--attachments",
            help="JSON array of attachment objects (name, localPath, mediaType, size, status).",
        ),
    ] = None,
    policy: PolicyOption = None,
    input_file: Annotated[
        Path | None, typer.Option("--input", help="Read events from this file, not stdin.")
    ] = None,
    input_format: Annotated[
        FormatChoice, typer.Option("--format", help="Input kind; auto detects each line.")
    ] = FormatChoice.auto,
    agent_roots: Annotated[
        list[str] | None,
        typer.Option(
            "--agent-root",
            metavar="DIR",
            help="Absolute path the agent had as project root, when auditing a past run "
            "from another place (repeatable).",
        ),
    ] = None,
    completed: Annotated[
        bool | None,
        typer.Option(
            "--completed/--not-completed",
            help="The turn's outcome; default: what the input says (turn completed).",
            show_default=False,
        ),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="Exit 3 when a ledger write (turn file or agent.db) failed (default: fail-open).",
        ),
    ] = False,
    signing_key: SigningKeyOption = None,
    as_json: JsonOption = False,
) -> int:
    """Record one turn from Codex events into the project's turn ledger.

    Reads app-server notifications, `codex exec --json` events or a Codex rollout
    (detected line by line), writes .agent/runtime/direct-codex/turns/<ID>.jsonl
    (a new attempt if it exists), seals it and appends the summary to .agent/agent.db.
    A failed ledger write is reported and does not fail the command (fail-open)
    unless --strict is given. The default policy, generic, keeps no MCP arguments
    and counts the first file change as the first design action; --policy names another
    preset (direct-project) or a policy file.

    \b
    Examples:
      codex exec --json "add a README section on setup" | agc ledger record --project . \\
          --turn-id Abc123-def --prompt-file prompt.txt --attachments files.json
      agc ledger record --project . --turn-id past-run-1 --prompt-file p.txt \\
          --input ~/.codex/sessions/2026/11/30/rollout-x.jsonl --agent-root /old/path
      agc ledger record --project . --turn-id Abc123-def --prompt-file prompt.txt \\
          --input events.jsonl --signing-key ~/.config/agc/keys/signing-key.pem
    """
    try:
        client_turn_id = validate_client_turn_id(turn_id)
    except TurnIdInvalidError as exc:  # the option's name, not the contract's field
        exc.message = exc.message.replace("clientTurnId", "--turn-id")
        raise
    key = _signing_key(signing_key)
    prompt = _read_prompt(prompt_file)
    attachment_list = _read_attachments(attachments)
    chosen_policy = load_policy(policy)
    roots = list(agent_roots or [])
    for root in roots:
        if not (root.startswith(("/", "\\")) or (len(root) > 2 and root[1] == ":")):
            raise UsageError(f"--agent-root {root!r} is not an absolute path")
    if input_file is not None and not input_file.exists():
        raise InputMissingError(f"input file {input_file} does not exist")
    if input_file is not None and not input_file.is_file():
        raise InputError(f"input file {input_file} is not a file")
    stream: BinaryIO
    if input_file is None:
        stream, size, where = sys.stdin.buffer, None, "stdin"
    else:
        try:
            stream = input_file.open("rb")
        except OSError as exc:
            raise FileUnreadableError(
                f"input file {input_file} cannot be read: {describe_os_error(exc)}"
            ) from exc
        size, where = os.fstat(stream.fileno()).st_size, str(input_file)
    try:
        Project(project)  # a missing project folder is named before an empty input
        lines = _refuse_empty(stream, where)
        with byte_progress(size, "recording turn") as progress:
            outcome = record_turn(
                lines,
                project=project,
                client_turn_id=client_turn_id,
                prompt=prompt,
                attachments=attachment_list,
                policy=chosen_policy,
                input_format=input_format.value,
                agent_roots=roots,
                completed=completed,
                source=where,
                on_progress=progress,
                signing_key=key,
            )
    finally:
        if input_file is not None:
            stream.close()
    _print_outcome(outcome, as_json, where)
    if strict and (outcome.audit_write_failed or not outcome.db_written):
        return int(ExitCode.UNREADABLE)
    return int(ExitCode.OK)


def _refuse_empty(stream: BinaryIO, where: str) -> Iterator[bytes | OverlongLine]:
    """The lines of ``stream`` (:func:`agc.ledger.event_lines`: a line over 1 MiB is
    never held whole), after making sure it holds more than white space (blank lines,
    however many or long, are counted, not held).

    Raises:
        EmptyInputError: the input has no byte but white space (exit 2); nothing is
            recorded, as an empty input is no evidence of a turn.
        FileUnreadableError: reading it failed (exit 3), naming it.
    """
    lines = event_lines(stream)
    blank: list[bytes | OverlongLine] = []  # blank lines, each kept as b"\n" (counted)
    while True:
        try:
            line = next(lines, None)
        except OSError as exc:
            raise FileUnreadableError(
                f"input {where} cannot be read: {describe_os_error(exc)}"
            ) from exc
        if line is None:
            raise EmptyInputError(
                f"input {where} is empty: no event to record",
                hint="Give the Codex events of the turn (app-server, codex exec --json "
                "or a rollout); nothing was recorded.",
            )
        if isinstance(line, OverlongLine):
            if line.shrunk is None or line.shrunk.strip():
                return itertools.chain(blank, [line], lines)
            blank.append(line)  # white space only, however long (its copy is a space)
        elif line.strip():
            return itertools.chain(blank, [line], lines)
        else:
            blank.append(b"\n")


def _print_outcome(outcome: TurnOutcome, as_json: bool, where: str) -> None:
    for error in outcome.errors:
        err_console.print(f"warning: {error}", markup=False)
    overlong = outcome.input.overlong_lines if outcome.input is not None else []
    if overlong:
        shown = ", ".join(map(str, overlong[:10])) + (" …" if len(overlong) > 10 else "")
        err_console.print(
            f"warning: input {where}: {len(overlong)} line(s) longer than "
            f"{MAX_READ_LINE_BYTES} bytes (line {shown}) were read in pieces and decoded "
            f"with each string cut to its first {KEPT_STRING_BYTES} bytes (a line still "
            "longer once cut is only counted: an event on it is not in the ledger)",
            markup=False,
        )
    if as_json:
        emit_json(outcome.to_dict())
        return
    stats = outcome.input or DecodeStats()
    state = "sealed" if outcome.seal is not None else "NOT sealed"
    out_console.print(
        f"turn {outcome.client_turn_id} attempt {outcome.attempt}: {outcome.item_count} item(s)"
        f"{' (truncated at 256)' if outcome.items_truncated else ''}, "
        f"completed={str(outcome.completed).lower()}, {state}: {outcome.turn_log}",
        markup=False,
    )
    out_console.print(
        f"input: {stats.lines} line(s), {stats.items} completed item(s), "
        f"{stats.invalid_lines} not JSON, {stats.ignored_lines} ignored"
        + (
            f", {len(stats.overlong_lines)} over 1 MiB (strings cut)"
            if stats.overlong_lines
            else ""
        ),
        markup=False,
    )
    if outcome.audit_write_failed:
        out_console.print("auditWriteFailed: true (see the warnings above)", markup=False)
    if not outcome.db_written:
        out_console.print("agent.db summary NOT written (see the warnings above)", markup=False)


def show_command(
    turn_file: TurnFileArgument,
    attempt: Annotated[
        int | None, typer.Option("--attempt", help="Which attempt (default: the last).")
    ] = None,
    policy: PolicyOption = None,
    as_json: JsonOption = False,
) -> int:
    """Show one attempt: offered files, whether and when each was read, the first
    design action, item counts, and the attempt's timeline row (a fact, not a verdict).
    Each attempt is recomputed with the preset it was recorded with, unless --policy
    is given.

    \b
    Examples:
      agc ledger show .agent/runtime/direct-codex/turns/Abc123-def.jsonl
      agc ledger show .agent/runtime/direct-codex/turns/Abc123-def.jsonl --attempt 1 --json
    """
    refuse_run_artifact(turn_file)
    chosen = None if policy is None else load_policy(policy)
    summary = show_turn_file(turn_file, attempt=attempt, policy=chosen)
    if as_json:
        emit_json(summary.to_dict())
    else:
        _print_summary(summary)
    return int(ExitCode.OK)


def _print_summary(summary: TurnSummary) -> None:
    completed = (
        "unknown (no turn_end)"
        if summary.completed is None
        else ("yes" if summary.completed else "no")
    )
    # An attempt with no seal record was cut short or appended after the last seal:
    # its turn_end is not evidence, whatever it says.
    sealed = "yes" if summary.sealed else "NO (no seal record; see `agc ledger check`)"
    out_console.print(
        f"turn {summary.client_turn_id}: attempt {summary.attempt} of {summary.attempts}, "
        f"completed: {completed}, sealed: {sealed}",
        markup=False,
    )
    # Piped, plain columns (as `agc runs` and `agc-verify --all` print): no box drawing
    # for a script or a log to wade through; the box only on a terminal.
    table = Table() if out_console.is_terminal else Table(box=None, pad_edge=False)
    # Paths are data: the column is as wide as the longest one, never cut or wrapped.
    longest = max((len(o.local_path) + 2 for o in summary.offered), default=10)
    table.add_column("localPath", no_wrap=True, min_width=longest)
    unseen = "not seen" if not summary.reads_visible else "no"
    columns = ("read", "read at seq", "before design", "sha256 match", "listed/searched at")
    for column in columns:
        table.add_column(column)
    design_seq = summary.first_design.get("seq") if summary.first_design else None
    for offered in summary.offered:
        match = offered.content_sha256_match
        if not offered.read_seqs:
            before = "-"
        elif not isinstance(design_seq, int):
            before = "no design"
        else:
            before = "yes" if min(offered.read_seqs) < design_seq else "no"
        table.add_row(
            Text(offered.local_path),
            _read_cell(offered.read_seqs, offered.inferred_read_seqs, unseen),
            Text(", ".join(map(str, offered.read_seqs)) or "-"),
            before,
            "-" if match is None else ("yes" if match else "NO"),
            Text(", ".join(map(str, offered.listed_or_searched_seqs)) or "-"),
        )
        for seq, path in offered.other_path_reads:
            table.add_row(Text(f"  same name read at {path}"), "", str(seq), "", "", "")
    out_console.print(
        f"Offered: attachment details sent: {'yes' if summary.sidecar_present else 'no'}, "
        f"{len(summary.offered)} file(s) with a path, "
        f"{len(summary.rejected_attachments)} rejected, "
        f"{summary.attachments_omitted} omitted (beyond the first 8)",
        markup=False,
    )
    for rejected in summary.rejected_attachments:
        out_console.print(
            f"  rejected: {rejected.get('name') or '(no name)'}: "
            f"{rejected.get('reason') or 'unknown reason'}",
            markup=False,
        )
    if not summary.reads_visible:
        out_console.print(
            "Reads: this input (codex exec --json or a rollout) holds no read actions; "
            "reads are inferred from shell commands, other reads are invisible",
            markup=False,
        )
    if summary.offered:
        out_console.print("Offered files:", markup=False)
        # Rendered at its natural width (the console's may be 80 when piped).
        wide = Console(file=sys.stdout, width=max(out_console.width, longest + 90))
        wide.print(table)
    else:
        out_console.print("Offered files: none", markup=False)
    design = summary.first_design
    if design is None:
        out_console.print("First design action: none", markup=False)
    else:
        preview = design.get("briefPreview")
        out_console.print(
            f"First design action: seq {design.get('seq')} {design.get('kind')}"
            + (f' brief: "{preview}"' if preview else ""),
            markup=False,
        )
    counts = ", ".join(f"{kind} {n}" for kind, n in summary.item_counts.items()) or "none"
    truncated = " (truncated at 256)" if summary.items_truncated else ""
    out_console.print(f"Items: {counts}{truncated}", markup=False)
    out_console.print(f"Timeline: {summary.row}: {summary.row_label}", markup=False)


def _read_cell(seqs: tuple[int, ...], inferred: tuple[int, ...], unseen: str) -> str:
    """``yes``, ``yes (inferred)`` when every read was inferred from a command, or
    ``unseen`` (``no``, or ``not seen`` in an input with no read actions)."""
    if not seqs:
        return unseen
    return "yes (inferred)" if len(inferred) == len(seqs) else "yes"


def check_command(
    turn_file: TurnFileArgument,
    policy: PolicyOption = None,
    trusted_key: TrustedKeyOption = None,
    require_signature: RequireSignatureOption = False,
    as_json: JsonOption = False,
) -> int:
    """Check a turn file: its seal and per-attempt seal records, the records, and every
    turn_end recomputed from turn_start and the items. Exit 0 only when all agree.

    With a trusted key (--trusted-key, $AGC_TRUSTED_KEYS) every seal record must also
    carry a valid signature by one of them, and the file must end with one, so that a
    file rewritten and re-sealed without the key fails.

    \b
    Examples:
      agc ledger check .agent/runtime/direct-codex/turns/Abc123-def.jsonl
      agc ledger check .agent/runtime/direct-codex/turns/Abc123-def.jsonl --json
      agc ledger check .agent/runtime/direct-codex/turns/Abc123-def.jsonl \\
          --trusted-key ~/.config/agc/keys/signing-key.pub.pem
    """
    return run_check(
        turn_file,
        policy=policy,
        as_json=as_json,
        trusted_key=trusted_key,
        require_signature=require_signature,
    )


def run_check(
    turn_file: Path,
    *,
    policy: str | None,
    as_json: bool,
    trusted_key: list[Path] | None = None,
    require_signature: bool = False,
) -> int:
    """Check a turn file and print the report; the exit code."""
    refuse_run_artifact(turn_file)
    report = check_turn_file(
        turn_file,
        policy=None if policy is None else load_policy(policy),
        trusted_keys=trusted_keys_from(trusted_key),
        require_signature=require_signature,
    )
    if as_json:
        emit_json(report.to_dict())
    else:
        for line in format_check(report):
            out_console.print(line, markup=False)
    return int(ExitCode.OK if report.ok else ExitCode.FINDINGS)


def _signing_key(option: Path | None) -> SigningKey | None:
    from agc.cli.keys import signing_key_from  # noqa: PLC0415 - cryptography when signing

    return signing_key_from(option)


def format_check(report: LedgerReport) -> list[str]:
    """Human lines: one per finding, then the verdict."""
    lines: list[str] = []
    for finding in report.findings:
        tag = "FAIL" if finding.severity == "error" else "warn"
        lines.append(f"{tag} {finding.code:<18} {finding.message}")
    seal = f"{report.algorithm} {report.digest}" if report.digest else "no seal"
    verdict = (
        "ok"
        if report.ok
        else f"FAILED ({sum(f.severity == 'error' for f in report.findings)} finding(s))"
    )
    lines.append(
        f"{report.path}: {verdict}; {counted(report.attempts, 'attempt')}, "
        f"{counted(report.records, 'record')}, {counted(report.bytes, 'byte')}, {seal}, "
        f"{report.signature}"
    )
    return lines


def register(app: typer.Typer) -> None:
    """Add ``agc ledger record|show|check`` to the ``agc`` app."""
    ledger = new_app(
        name="ledger",
        help_text=(
            "The turn ledger: a sanitized, sealed per-turn record of what a Codex agent "
            "did. Files live under <project>/.agent/runtime/direct-codex/turns/."
        ),
    )
    ledger.command(name="record", epilog=EPILOG)(record_command)
    ledger.command(name="show", epilog=EPILOG)(show_command)
    ledger.command(name="check", epilog=EPILOG)(check_command)
    app.add_typer(ledger, name="ledger")
