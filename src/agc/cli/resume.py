"""``agc resume``: check and repair a saved history (snapshot, session file, JSON array)."""

from __future__ import annotations

import enum
import json
import os
import shlex
import stat
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from contextvars import ContextVar
from functools import partial
from itertools import chain, islice
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any, BinaryIO, Final, NamedTuple

from agc import resume as _resume
from agc.cli._process import discard_stdout
from agc.cli.common import (
    EPILOG,
    byte_progress,
    emit_json,
    err_console,
    new_file_errors,
    out_console,
    refuse_ambiguous,
    run_command,
    stop_code,
    trusted_keys_from,
    typer_argument,
    typer_option,
    with_typer_params,
    write_new_file,
)
from agc.errors import (
    FileUnreadableError,
    FileWriteError,
    HistoryEmptyError,
    HistoryFormatError,
    InPlaceRefusedError,
    InputError,
    InputMissingError,
    JsonInvalidError,
    SnapshotNotFoundError,
    UsageError,
)
from agc.exitcodes import ExitCode
from agc.flows import (
    SCHEMA_VERSION,
    JsonItems,
    counted,
    describe_os_error,
    has_recorded_run,
    new_file_beside,
    parse_json,
    refuse_unsigned_file,
    replace_in_place,
    run_session,
    scan_history,
    streamable_size,
    sync,
)

if TYPE_CHECKING:
    import typer
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from rich.console import Console

    from agc.cli.common import StoreOption
    from agc.flows import ExecRollout, SessionCapture
    from agc.resume import (
        Change,
        FormatName,
        History,
        HistoryReport,
        NextStep,
        RepairReport,
        SessionSnapshot,
        Strategy,
        ToolCallState,
    )

__all__ = ["quick_arguments", "quick_main", "register", "resume_command"]

_MAX_INPUT_BYTES: Final = _resume.MAX_SNAPSHOT_BYTES
_STATUS_BYTES: Final = 8 * 1024 * 1024  # show a status line on stderr above this size
_PATH_HINTS: Final = ("/", "\\", ".json", ".jsonl", ".zst")


class StrategyChoice(enum.StrEnum):
    STRIP = "strip"
    SYNTHESIZE = "synthesize"


class FormatChoice(enum.StrEnum):
    openai_chat = "openai-chat"
    anthropic = "anthropic"
    openai_responses = "openai-responses"
    codex_rollout = "codex-rollout"
    claude_code = "claude-code"
    gemini_chat = "gemini-chat"


_STRATEGIES: Final[dict[StrategyChoice, Strategy]] = {
    StrategyChoice.STRIP: "strip",
    StrategyChoice.SYNTHESIZE: "synthesize",
}
_FORMATS: Final[dict[FormatChoice, FormatName]] = {
    FormatChoice.openai_chat: "openai-chat",
    FormatChoice.anthropic: "anthropic",
    FormatChoice.openai_responses: "openai-responses",
    FormatChoice.codex_rollout: "codex-rollout",
    FormatChoice.claude_code: "claude-code",
    FormatChoice.gemini_chat: "gemini-chat",
}

RESUME_HELP = """Check a saved history and repair it so the model provider accepts it again.

TARGET is a run id or a FILE. A run id names its snapshot in the store or, when it has
none, a run recorded with agc record / agc import: that run is verified first (refused
when tampered or incomplete), and its records are unwrapped into the session file they
came from (in an s3:// store, the very bytes the verification read). A FILE is a
snapshot, a session file (Codex rollout, Claude Code JSONL, Gemini CLI session
(~/.gemini/tmp/…/chats/session-….jsonl) or `claude -p --output-format stream-json`
output) or a JSON array of messages/items in one of the three API formats.
With a trusted key (--trusted-key, $AGC_TRUSTED_KEYS) a snapshot must be signed by one
of them (its FILE.sig), and a recorded run too, as agc-verify checks it; a FILE that is
no snapshot is unsigned; --allow-unsigned accepts unsigned ones (signed ones are still
checked).
agc prints what was wrong (as the provider would say it) and what the repair changed:
each in-flight call stripped or answered, with its tool name, arguments and an
idempotency key, so you decide whether to run it again; and, for a client's session
file, where that client reads it and the command that resumes it.
Without --out or --in-place the repair is only reported: nothing is written, and a
history the provider would reject exits 1, as with --check (0 when it needs no repair).

\b
Examples:
  agc resume fix-tests-42                      # the repair (strip) reported, not written
  agc resume fix-tests-42 --check              # exit 1 if the provider would reject it
  agc import rollout-….jsonl --run-id r9 && agc resume r9 --strategy synthesize --out fixed.jsonl
  agc resume r9 --store s3://acme-evidence/agents --check   # a run recorded to S3
  agc resume fix-tests-42 --trusted-key ~/.config/agc/keys/signing-key.pub.pem   # signed only
  agc resume ~/.claude/projects/x/s.jsonl --strategy synthesize --out fixed.jsonl
  agc resume ~/.claude/projects/x/s.jsonl --in-place   # over the file, original kept beside it
  agc resume rollout-….jsonl --json            # the report as JSON on stdout
  agc resume history.json --format anthropic --out repaired.json
"""


@contextmanager
def _working(label: str, size: int) -> Iterator[None]:
    """A status spinner on stderr for large inputs, only when stderr is a terminal."""
    if size < _STATUS_BYTES or not err_console.is_terminal:  # rich only for a large input
        yield
        return
    with err_console.status(label):
        yield


class _Sink:
    """A binary file whose write errors are those of writing the repair where it goes:
    ``--out FILE``, beside the file ``--in-place`` replaces, or the repair's temporary
    copy in ``$TMPDIR`` (a full disk is exit 3; see :func:`agc.cli.common.new_file_errors`
    and :func:`_copy_errors`)."""

    def __init__(self, handle: IO[bytes], out: Path | None, in_place: Path | None) -> None:
        self._handle = handle
        self._errors: Callable[[], AbstractContextManager[None]]
        if out is not None:
            self._errors = partial(new_file_errors, out, option="--out")
        elif in_place is not None:
            self._errors = partial(new_file_errors, in_place, option="--in-place")
        else:
            self._errors = _copy_errors

    def write(self, data: bytes) -> int:
        with self._errors():
            return self._handle.write(data)

    def flush(self) -> None:
        with self._errors():
            self._handle.flush()

    def seek(self, offset: int, whence: int = 0, /) -> int:
        with self._errors():
            return self._handle.seek(offset, whence)

    def truncate(self, size: int | None = None, /) -> int:
        with self._errors():
            return self._handle.truncate(size)


@contextmanager
def _copy_errors() -> Iterator[None]:
    """The errors of writing the temporary copy a repair not written to a file (no
    ``--out FILE`` nor ``--in-place``) is checked in, in ``$TMPDIR``
    (:func:`tempfile.gettempdir`), as ``file-write-failed`` (exit 3) naming that folder
    and what to do instead: ``--check``, which writes nothing, or another ``TMPDIR``.

    Raises:
        FileWriteError: the copy cannot be created or written (disk full, quota,
            permissions).
    """
    import tempfile  # noqa: PLC0415 - only for a repair written nowhere

    folder = tempfile.gettempdir()
    try:
        yield
    except OSError as exc:
        raise FileWriteError(
            f"the repair's temporary copy in {folder} ($TMPDIR), where it is checked "
            f"before anything is given out, cannot be written: {describe_os_error(exc)}",
            path=folder,
            errno=exc.errno,
            hint=(
                "Nothing was written and the file is unchanged. Check the file without "
                "repairing it with --check (it needs no copy), or put the copy elsewhere: "
                "TMPDIR=FOLDER agc resume ..."
            ),
        ) from exc


_REPORT_ON_STDERR: ContextVar[bool] = ContextVar("_REPORT_ON_STDERR", default=False)
"""True while a repair goes to standard output (``--out -``): the report goes to stderr."""


def _report() -> Console:
    """Where a repair's report goes: stdout, or stderr when stdout carries the history."""
    return err_console if _REPORT_ON_STDERR.get() else out_console


_STDOUT_CUT: ContextVar[bool] = ContextVar("_STDOUT_CUT", default=False)
"""Whether the reader of standard output closed it before ``--out -`` gave the whole
repair (then the command must not say it was written)."""


def _to_stdout(data: Iterable[bytes]) -> None:
    """Write the repaired history to standard output (``--out -``). A reader that is
    gone wanted no more (``agc resume … --out - | head``: not an error, as for
    ``agc export``), but then the repair was not delivered whole: :data:`_STDOUT_CUT`.

    Raises:
        FileWriteError: standard output cannot be written (the disk behind it is full,
            an I/O error); ``path`` is ``"-"``.
    """
    stdout = sys.stdout.buffer
    with _stdout_takes(
        "the repaired history",
        hint="what standard output took of it is not the repair: free disk space there, "
        "or write it with --out FILE",
    ):
        try:
            for chunk in data:
                stdout.write(chunk)
            stdout.flush()
        except BrokenPipeError:
            discard_stdout()
            _STDOUT_CUT.set(True)


@contextmanager
def _stdout_takes(what: str, *, done: str | None = None, hint: str) -> Iterator[None]:
    """Standard output that does not take ``what`` the block writes to it (a full disk
    behind it, an I/O error) is :class:`~agc.errors.FileWriteError` on ``-`` (exit 3)
    naming it, and saying ``done``, what the command wrote before, which stands. A
    reader that went away (a broken pipe) is left to the block."""
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise FileWriteError(
            f"standard output: {what} was not written whole ({describe_os_error(exc)})"
            + (f"; {done}" if done else ""),
            path="-",
            errno=exc.errno,
            hint=hint,
        ) from exc


def _looks_like_path(target: str) -> bool:
    return any(hint in target for hint in _PATH_HINTS)


_KINDS: Final = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _require_regular_file(path: Path) -> None:
    """Refuse a FILE that is not a regular file (a FIFO, a device, a socket, a folder),
    never waiting on it: it is opened non-blocking (a FIFO with no writer does not
    block the open) and judged by fstat, before anything reads it.

    Raises:
        InputMissingError: it does not exist (a dangling symlink) (exit 2).
        InputError: it is not a regular file (exit 2).
        FileUnreadableError: it cannot be opened (permissions, an I/O error) (exit 3).
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError as exc:
        raise InputMissingError(f"{path} does not exist") from exc
    except OSError as exc:
        raise FileUnreadableError(f"{path} cannot be read: {describe_os_error(exc)}") from exc
    try:
        mode = os.fstat(fd).st_mode
    finally:
        os.close(fd)
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise InputError(f"{path} is a folder, not a file")
    kind = next((name for test, name in _KINDS if test(mode)), "not a file")
    raise InputError(
        f"{path} is {kind}, not a regular file; agc resume reads a session file, a "
        "snapshot or a JSON array from a regular file and never waits on another kind",
        hint="Save the history to a file first (command > history.jsonl) and name that file.",
    )


def _read_input(path: Path) -> bytes:
    """Read a FILE given on the command line (symlinks followed: it is the user's file).

    Raises:
        InputMissingError: it does not exist (exit 2).
        InputError: it is a folder or too large (exit 2).
        FileUnreadableError: it exists but cannot be read: permissions, an I/O error
            (exit 3, as for every command's input).
    """
    too_large = InputError(f"{path} is larger than {_MAX_INPUT_BYTES} bytes")
    try:
        with path.open("rb") as handle:
            info = os.fstat(handle.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise InputError(f"{path} is a folder, not a file")
            if info.st_size > _MAX_INPUT_BYTES:
                raise too_large
            if stat.S_ISREG(info.st_mode):
                data = handle.read()  # one buffer of the file's size
            else:  # a pipe or a device has no size: read up to the limit, no further
                data = _read_bounded(handle, _MAX_INPUT_BYTES + 1)
        if len(data) > _MAX_INPUT_BYTES:
            raise too_large
        return data
    except IsADirectoryError as exc:
        raise InputError(f"{path} is a folder, not a file") from exc
    except FileNotFoundError as exc:
        raise InputMissingError(f"{path} does not exist") from exc
    except OSError as exc:
        raise FileUnreadableError(f"{path} cannot be read: {describe_os_error(exc)}") from exc


def _read_bounded(handle: BinaryIO, limit: int) -> bytes:
    """At most ``limit`` bytes of a stream, read in 1 MiB chunks."""
    chunks: list[bytes] = []
    total = 0
    while total < limit:
        chunk = handle.read(min(1 << 20, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


class _Trust(NamedTuple):
    """The signature options of one command: trusted keys and the two switches (a named
    tuple, not a dataclass: quicker to define at each start of ``agc resume``)."""

    keys: Mapping[str, Ed25519PublicKey] | None
    require_signature: bool
    allow_unsigned: bool

    def as_kwargs(self) -> dict[str, Any]:
        """``trusted_keys``, ``require_signature``, ``allow_unsigned`` for a loader."""
        return {
            "trusted_keys": self.keys,
            "require_signature": self.require_signature,
            "allow_unsigned": self.allow_unsigned,
        }


def _note(text: str) -> None:
    err_console.print(_printable(f"warning: {text}"), markup=False)


def _warn(line: str) -> None:
    err_console.print(line, markup=False)


def _require_messages(
    history: History, source: str, wanted: str | None, *, recorded_run: bool = False
) -> None:
    """Refuse a history with no message: an empty input never counts as valid.

    ``recorded_run``: ``source`` is a run id whose records were read (no snapshot), so
    the hint names what such a run must hold instead of asking for its run id.
    """
    if history.messages or history.settled is not None:
        return
    records = len(history.records)
    if not records:
        problem = f"{source} holds no messages: the history is empty"
    elif wanted is not None:
        noun = "line" if _resume.get_spec(history.format).line_based else "item"
        problem = (
            f"{source}: none of its {records} {noun}(s) is a {wanted} message, so there is "
            "nothing to check"
        )
    else:
        problem = (
            f"{source} holds no {history.format} message ({records} record(s), none of "
            "them a message), so there is nothing to check"
        )
    if recorded_run:
        raise HistoryEmptyError(
            problem,
            hint=f"Run {source} holds no message to resume: import the session file the "
            "agent saved (a Codex rollout, a Claude Code session) under a new run id and "
            "resume that run.",
        )
    raise HistoryEmptyError(problem)


def _refuse_emptied(report: RepairReport, source: str) -> None:
    """Refuse a repair that left no message: an empty history is never valid (it is
    refused as input, and no provider accepts it), so it is not written as repaired.

    Raises:
        HistoryEmptyError: every message was dropped (exit 2).
    """
    if report.after.messages:
        return
    dropped = sum(1 for change in report.changes if change.action == "stripped")
    raise HistoryEmptyError(
        f"{source}: the repair leaves no message ({dropped} call(s) stripped, every message "
        "dropped), so there is nothing to resume; nothing was written",
        hint="--strategy synthesize keeps the calls, answered as interrupted.",
    )


def _is_snapshot(path: Path, data: bytes) -> bool:
    if data.startswith(b"\x28\xb5\x2f\xfd") or path.name.endswith(".json.zst"):
        return True
    if not data.lstrip().startswith(b"{"):
        return False
    try:
        document = parse_json(data, allow_lone_surrogates=True)
    except JsonInvalidError:
        return False
    return isinstance(document, dict) and "toolCallState" in document and "messages" in document


def _from_snapshot(snapshot: SessionSnapshot, wanted: str | None) -> History:
    if wanted is not None and wanted != snapshot.format:
        raise HistoryFormatError(
            f"the snapshot of run {snapshot.run_id} holds {snapshot.format} messages, not {wanted}"
        )
    return _resume.get_spec(snapshot.format).read(snapshot.messages)


def _where(history: History, index: int | None, record: int | None) -> str:
    """``line N`` (1-based, as editors count; the JSON's ``line``) for session files,
    else ``message N`` (0-based, as the provider's ``messages.N``)."""
    if _resume.get_spec(history.format).line_based and record is not None:
        return f"line {record + 1}"
    return f"message {index}"


def _printable(text: str) -> str:
    """``text`` with control and format characters escaped (``\\x1b``, ``\\n``).

    Call ids, tool names and arguments come from the history file (or the model): an
    escape sequence in them must not drive the terminal, and a line stays one line.
    """
    return "".join(
        ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _print_findings(history: History, report: HistoryReport, limit: int) -> None:
    """The report's verdict; its findings counted per code, then the first ``limit``."""
    say = _report().print
    say(
        f"{report.format}: {counted(report.messages, 'message')}, "
        f"{counted(report.calls, 'tool call')}, {counted(report.results, 'tool result')}",
        markup=False,
    )
    findings = report.findings  # the first `limit` at least, beside the counts of all
    if report.valid:
        say("valid: the provider would accept this history", markup=False)
        for finding in findings[:limit]:  # warnings only
            where = _where(history, finding.message_index, finding.record)
            text = f"  {where}: {finding.code} ({finding.severity}): {finding.message}"
            say(_printable(text), markup=False)
        _print_more(report.total, limit, "warning")
        return
    say(f"{report.total} problem(s), as the provider would report them:", markup=False)
    _print_counts(Counter(report.code_counts()))
    for finding in findings[:limit]:
        where = _where(history, finding.message_index, finding.record)
        say(_printable(f"  {where}: {finding.code}: {finding.message}"), markup=False)
    _print_more(report.total, limit, "problem")


def _print_counts(counts: Counter[str]) -> None:
    """Counts per code (or action), the most frequent first."""
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        _report().print(f"  {count:>8}  {code}", markup=False)


def _print_more(total: int, limit: int, noun: str) -> None:
    if total > limit:
        _report().print(
            f"  … and {total - limit} more {noun}(s) (--max-findings N prints more; --json "
            "lists them all)",
            markup=False,
        )


class _Chained:
    """The items of each of ``parts`` in turn, read again from them each time it is
    iterated (a re-iterable :func:`itertools.chain`)."""

    __slots__ = ("_parts",)

    def __init__(self, *parts: Iterable[str]) -> None:
        self._parts = parts

    def __iter__(self) -> Iterator[str]:
        return chain.from_iterable(self._parts)


class _UnreadLines:
    """One sentence per line of a Claude Code or Codex session file that is not a JSON
    object (a corrupt line, JSON of another type), the torn last line aside (a finding
    of its own): no message is read from it and a repair copies it as it is.

    Made as they are read (iterated, in order, any number of times) from the line
    numbers the history holds (bounded however many): no sentence is kept, and a
    line is read again only when its sentence is asked for."""

    __slots__ = ("_history",)

    def __init__(self, history: History) -> None:
        self._history = history

    def __len__(self) -> int:
        history = self._history
        if history.lines is None:
            return 0
        unread = history.unread
        count = len(unread)
        if count and history.torn is not None and unread[-1] == history.torn:
            count -= 1  # in order: the torn last line can only be the last
        return count

    def __iter__(self) -> Iterator[str]:
        history = self._history
        lines = history.lines
        if lines is None:
            return
        for index in history.unread:
            if index == history.torn:
                continue
            yield _unread_sentence(lines, index)

    def first(self, limit: int) -> list[str]:
        """The first ``limit`` sentences (only those are made)."""
        return list(islice(self, max(limit, 0)))


def _unread_sentence(lines: Sequence[Any], index: int) -> str:
    """The sentence of line ``index`` (0-based) of ``lines``, not a JSON object."""
    try:
        value = parse_json(lines[index], allow_lone_surrogates=True)
    except JsonInvalidError:
        what = "is not JSON"
        if index == 0 and lines[0].startswith("\ufeff"):
            what = (
                "is not JSON: it starts with a UTF-8 byte-order mark (bytes EF BB BF), "
                "which JSON parsers, the clients' too, do not skip (remove those 3 bytes)"
            )
    else:
        kind = {list: "an array", str: "a string", bool: "a boolean"}.get(type(value))
        what = f"is JSON but not an object ({kind or 'a number' if value is not None else 'null'})"
    return f"line {index + 1} {what}: agc reads no message from it and copies it as it is"


def _print_unread(unread: _UnreadLines, limit: int) -> None:
    """The lines that are not JSON objects on stderr: their count, then the first
    ``limit`` (the only ones described)."""
    total = len(unread)
    if not total:
        return
    _print_capped(
        f"warning: {counted(total, 'line')} of the session file not a JSON object; "
        "no message is read from them, and a repair copies them as they are:",
        unread.first(limit),
        total,
    )


def _print_capped(header: str, shown: list[str], total: int) -> None:
    """``header`` on stderr, then the items ``shown`` (indented) and a count of the
    rest of ``total``."""
    say = err_console.print
    say(header, markup=False)
    for text in shown:
        say(_printable(f"  {text}"), markup=False)
    if total > len(shown):
        say(f"  … and {total - len(shown)} more (--json lists them all)", markup=False)


def _print_warnings(warnings: tuple[str, ...]) -> None:
    for warning in warnings:
        err_console.print(_printable(f"warning: {warning}"), markup=False)


def _print_change(history: History, change: Change) -> None:
    where = _where(history, change.message_index, change.record)
    line = f"  {where}: {change.action}"
    if change.call_id is not None:
        line += f" {change.call_id}"
    if change.tool_name is not None:
        line += f" {change.tool_name}"
        # A torn line's input is lost with it; a dropped result names its call's tool only.
        if change.action not in {
            "dropped-torn-line",
            "dropped-duplicate-result",
            "dropped-orphan-result",
        }:
            line += f" {_short(change.arguments)}"
    if change.idempotency_key is not None and change.action in {
        "stripped",
        "synthesized",
        "dropped-duplicate-call",
    }:
        line += f" [{change.idempotency_key}]"
    _report().print(_printable(line + f": {change.reason}"), markup=False)


_REMOVED: Final = frozenset({"stripped", "dropped-duplicate-call"})


class _RemovedCalls:
    """The calls the repair removed that may have run, whatever removed them: stripped
    calls (a call without a result, the in-flight one), later calls dropped for
    reusing an earlier call's id (under either strategy: providers refuse two calls
    with one id) and calls whose torn last line was dropped. Read from the report's
    changes each time it is iterated (those of a long session may be in a temporary
    file)."""

    def __init__(self, report: RepairReport) -> None:
        self._changes = report.changes

    def __iter__(self) -> Iterator[Change]:
        for change in self._changes:
            if change.action in _REMOVED or (
                # a torn call's (its key made); a torn result names its call, kept
                change.action == "dropped-torn-line" and change.idempotency_key is not None
            ):
                yield change


def _print_removed(report: RepairReport, limit: int) -> None:
    """Name on stderr the calls ``strip`` removed that may have run (tool, redacted
    input, idempotency key): the first ``limit`` and a count of the rest."""
    shown: list[Change] = []
    total = 0
    actions: set[str] = set()
    for change in _RemovedCalls(report):  # in one pass: the first `limit` held
        total += 1
        actions.add(change.action)
        if len(shown) < limit:
            shown.append(change)
    if not total:
        return
    _print_capped(
        f"warning: {total} tool call(s) removed that may have run; the model is not "
        "told and may run them again:",
        [
            " ".join(
                [
                    change.tool_name or "(unknown tool)",
                    *([] if change.arguments is None else [_short(change.arguments, 60)]),
                    f"[{change.idempotency_key or 'no key'}]",
                ]
            )
            for change in shown
        ],
        total,
    )
    say = err_console.print
    if "dropped-duplicate-call" in actions:
        say(
            "note: a call that reuses an earlier call's id is removed under either "
            "strategy (providers refuse two calls with one id); its key is its own",
            markup=False,
        )
    if report.strategy == "strip" and actions - {"dropped-duplicate-call"}:
        say(
            "hint: --strategy synthesize keeps the stripped ones in the history, answered "
            "as interrupted, so the model sees them",
            markup=False,
        )


def _write_out(out: Path, source: Path | None, data: bytes) -> None:
    """Write the repaired history to ``out``, never over the input or any file.

    Raises:
        UsageError: ``out`` is the input (exit 2).
        FileExistsRefusedError, InputError, FileWriteError, StoreError: see
            :func:`agc.cli.common.write_new_file`.
    """
    if source is not None and _same_file(out, source):
        raise UsageError(f"--out {out} is the input; agc never writes over its input")
    write_new_file(out, data, mode=_out_mode(source))


def _out_mode(source: Path | None) -> int:
    """The permission bits ``--out`` is created with (the umask masks them, as for
    cp): those of the FILE repaired, so the repair has the readers its input had (and
    ``--in-place`` keeps); 0600 for a run or snapshot read from the store, or a FILE
    no longer there."""
    if source is None:
        return 0o600
    try:
        return stat.S_IMODE(os.stat(source).st_mode) & 0o777
    except OSError:
        return 0o600


def _same_file(out: Path, source: Path) -> bool:
    """Whether ``out`` names ``source`` (by path, or an existing hard link or symlink to
    it); a path that cannot be looked at (too long, a symlink loop) is not the input."""
    if os.path.realpath(out) == os.path.realpath(source):
        return True
    try:
        return os.path.samefile(out, source)
    except (OSError, ValueError):
        return False


StrategyOption = Annotated[
    StrategyChoice,
    typer_option(
        "--strategy",
        help="strip: remove calls without a result; synthesize: answer them as interrupted.",
    ),
]
FormatOption = Annotated[
    FormatChoice | None,
    typer_option("--format", help="The history's format (default: detected).", show_default=False),
]
CheckOption = Annotated[
    bool, typer_option("--check", help="Only validate: exit 1 if the provider would reject it.")
]
JsonOption = Annotated[bool, typer_option("--json", help="Print the report as JSON on stdout.")]
OutOption = Annotated[
    Path | None,
    typer_option(
        "--out",
        help="Write the repaired history here (never over the input; the input FILE's "
        "permissions, masked by the umask; - for stdout). Without --out or --in-place "
        "nothing is written and a broken history exits 1.",
        show_default=False,
    ),
]
InPlaceOption = Annotated[
    bool,
    typer_option(
        "--in-place",
        help="Replace FILE with its repair, atomically, after keeping the original beside it "
        "(FILE.agc-backup-<time>); refused while another process has FILE open or when it "
        "changes during the repair.",
    ),
]
InsecureOption = Annotated[
    bool,
    typer_option(
        "--insecure-skip-verify",
        help="Use a snapshot without checking its checksum sidecar, or a recorded run "
        "that does not verify (tampered or incomplete): either is then used as it is, "
        "with a warning.",
    ),
]


TrustedKeyOption = Annotated[
    list[Path] | None,
    typer_option(
        "--trusted-key",
        help="Trusted Ed25519 public key (PEM), or a folder of them (private keys in it are "
        "skipped); repeatable. Also: $AGC_TRUSTED_KEYS folder. Any trusted key requires "
        "the snapshot (or the recorded run) to be signed by one of them.",
        show_default=False,
        metavar="<path>",
    ),
]
RequireSignatureOption = Annotated[
    bool,
    typer_option(
        "--require-signature",
        help="A snapshot or run without a valid signature is refused (implied by any trusted key).",
    ),
]
MaxFindingsOption = Annotated[
    int,
    typer_option(
        "--max-findings",
        min=0,
        help="Print at most N problems, changes and removed calls (after their counts); "
        "--json lists them all.",
        metavar="N",
    ),
]
AllowUnsignedOption = Annotated[
    bool,
    typer_option(
        "--allow-unsigned",
        help="With trusted keys: accept an unsigned snapshot or run (signed ones are still "
        "checked).",
    ),
]


def resume_command(
    target: Annotated[str, typer_argument(help="A run id (its snapshot in the store) or a FILE.")],
    strategy: StrategyOption = StrategyChoice.STRIP,
    format: FormatOption = None,
    check: CheckOption = False,
    as_json: JsonOption = False,
    out: OutOption = None,
    in_place: InPlaceOption = False,
    store: StoreOption = None,
    insecure_skip_verify: InsecureOption = False,
    trusted_key: TrustedKeyOption = None,
    require_signature: RequireSignatureOption = False,
    allow_unsigned: AllowUnsignedOption = False,
    max_findings: MaxFindingsOption = 20,
) -> int:
    """Check (``--check``) or repair a history; see :data:`RESUME_HELP` and docs/resume.md.

    TARGET is read as a FILE when that path exists, else as a run id.

    Raises:
        UsageError: ``--check`` with ``--out``; ``--out`` is the input or exists;
            ``--require-signature`` with ``--allow-unsigned``.
        InputError, HistoryFormatError, Snapshot*Error, UnsignedError,
            BadSignatureError, UnknownKeyError: see docs/resume.md.
    """
    to_stdout = out is not None and str(out) == "-"
    if to_stdout and as_json:
        raise UsageError(
            "--out - writes the repaired history to standard output, where --json writes "
            "its report: give --out FILE, or leave out --json"
        )
    if check and (out is not None or in_place):
        option = "--out" if out is not None else "--in-place"
        raise UsageError(f"--check only validates; it writes nothing, so {option} cannot be used")
    if in_place and out is not None:
        raise UsageError(
            "--in-place writes the repair over FILE; --out writes it elsewhere: give one"
        )
    if require_signature and allow_unsigned:
        raise UsageError("--require-signature and --allow-unsigned contradict each other")
    trust = _Trust(
        trusted_keys_from(trusted_key, store=store),
        require_signature=require_signature,
        allow_unsigned=allow_unsigned,
    )
    wanted = _FORMATS[format] if format is not None else None
    source: Path | None = None
    stamp: tuple[int, ...] | None = None  # a file read whole: its identity when read
    state: ToolCallState | None = None  # known only from a snapshot
    run_id: str | None = None
    snapshot: SessionSnapshot | None = None
    size = 0  # input bytes, for the status line
    read_from: tuple[Path, str] | None = None  # a session file read as it is repaired
    path = Path(target)

    def scan(file: Path, name: str) -> History | None:
        """A session file read line by line for a check (in parts), else ``None``: it
        is read as it is repaired (``read_from``)."""
        nonlocal read_from
        if not check:
            read_from = (file, name)
            return None
        return scan_history(
            file,
            source=name,
            format=wanted,
            size=size,
            progress=byte_progress,
            settle=_resume.SETTLE_MESSAGES,
            checked=True,
            keep=None if as_json else max_findings,
        )

    refuse_ambiguous(
        target,
        is_run=lambda name: has_recorded_run(name, store) or _resume.has_snapshot(name, store),
        run_what=f"run {target} in the store",
    )
    with _format_hint(wanted), ExitStack() as stack:
        if os.path.lexists(path):
            source = path
            _require_regular_file(path)
            streamed = streamable_size(path, wanted)
            if streamed is not None:
                refuse_unsigned_file(path, insecure=insecure_skip_verify, **trust.as_kwargs())
                size = streamed
                history = scan(path, str(path))
            else:
                stamp = _stamp(path)
                data = _read_input(path)
                size = len(data)
                if _is_snapshot(path, data):
                    if in_place:
                        raise UsageError(
                            f"--in-place: {path} is a snapshot, sealed by its sidecar; "
                            "write its repair elsewhere with --out"
                        )
                    snapshot = _resume.load_snapshot_file(
                        path,
                        insecure_skip_verify=insecure_skip_verify,
                        on_note=_note,
                        **trust.as_kwargs(),
                    )
                    history = _from_snapshot(snapshot, wanted)
                    state = snapshot.tool_call_state
                else:
                    refuse_unsigned_file(path, insecure=insecure_skip_verify, **trust.as_kwargs())
                    with _working(f"reading {path.name}", len(data)):
                        history = _resume.load_history(data, source=str(path), format=wanted)
                del data
        elif target == "-":
            raise UsageError(
                "TARGET -: agc resume reads a session file (by its path: a repair checks "
                "and may copy its lines again) or a run id, not standard input",
                hint="save the history to a file first (`cat > session.jsonl`), then "
                "`agc resume session.jsonl`",
            )
        elif _looks_like_path(target):
            raise InputMissingError(
                f"{target} does not exist", hint="Name an existing file or a run id."
            )
        elif in_place:
            raise UsageError(
                f"--in-place replaces a FILE; {target} names a run in the store, "
                "whose evidence agc never changes: write its repair with --out"
            )
        else:
            from agc.flows import RunId  # noqa: PLC0415 - the store layer, not for a FILE

            run_id = RunId(target)
            try:
                snapshot = _resume.load_snapshot(
                    run_id,
                    store,
                    insecure_skip_verify=insecure_skip_verify,
                    on_note=_note,
                    **trust.as_kwargs(),
                )
            except SnapshotNotFoundError as exc:
                if not has_recorded_run(run_id, store):
                    # A run id names a snapshot or a recorded run: say that neither is
                    # there, or a user who mistyped a recorded run's id hunts for snapshots.
                    raise SnapshotNotFoundError(
                        f"{exc.message}, and no run {run_id} recorded with agc record / agc import",
                        hint="Check the run id and --store; `agc runs` lists the recorded "
                        "runs, snapshots live in <store>/sessions/.",
                    ) from exc
                snapshot = None
                # the capture flows load the writer side (signing): only on this path
                from agc.flows import rollout_of_exec_run  # noqa: PLC0415

                rollout = rollout_of_exec_run(run_id, store)
                if rollout is not None:
                    source = _exec_rollout(run_id, rollout)
                if source is not None:
                    _require_regular_file(source)
                    refuse_unsigned_file(source, insecure=insecure_skip_verify, **trust.as_kwargs())
                    streamed = streamable_size(source, wanted)
                    if streamed is None:
                        data = _read_input(source)
                        size = len(data)
                        history = _resume.load_history(data, source=str(source), format=wanted)
                    else:
                        size = streamed
                        history = scan(source, str(source))
                else:
                    recorded = (
                        run_id if rollout is None or rollout.run_id is None else rollout.run_id
                    )
                    found, size = run_session(
                        recorded,
                        store,
                        stack=stack,
                        format=wanted,
                        max_bytes=_MAX_INPUT_BYTES,
                        insecure_skip_verify=insecure_skip_verify,
                        on_warning=_warn,
                        **trust.as_kwargs(),
                    )
                    # A session file is read as a FILE is: a check in parts, a repair
                    # as it is read (a Gemini CLI session in parts).
                    history = scan(found, f"run {recorded}") if isinstance(found, Path) else found
            if snapshot is not None:
                if has_recorded_run(run_id, store):
                    # Two things answer to the id: say which one this is.
                    _warn(
                        f"note: {run_id} names a snapshot and a recorded run; the snapshot "
                        f"(sealed on its own) is resumed, not the run: `agc-verify {run_id}` "
                        "judges the run"
                    )
                history = _from_snapshot(snapshot, wanted)
                state = snapshot.tool_call_state
        session_id = snapshot.session_id if snapshot is not None else None
        if insecure_skip_verify and snapshot is not None:
            err_console.print(
                "warning: --insecure-skip-verify: the snapshot's seal was not checked, "
                "nor its signature",
                markup=False,
            )

        def require(history: History) -> None:
            _require_messages(
                history,
                target if source is None else str(source),
                wanted,
                recorded_run=source is None and snapshot is None,
            )

        if history is not None:
            require(history)
        if check:
            assert history is not None  # read above for a check
            in_place_ok = source is not None and snapshot is None
            return _check(
                history, target, state, as_json=as_json, limit=max_findings, file=in_place_ok
            )
        token = _REPORT_ON_STDERR.set(to_stdout)
        cut = _STDOUT_CUT.set(False)
        left = _left_if_stopped(out, source if in_place else None, to_stdout=to_stdout)
        try:
            return _repair(
                history,
                target,
                _Output(source, None if to_stdout else out, in_place, stamp, to_stdout, read_from),
                strategy,
                state,
                session_id,
                size,
                as_json=as_json,
                limit=max_findings,
                wanted=wanted,
                require=require,
            )
        except KeyboardInterrupt as exc:
            code, word = stop_code(exc)
            err_console.print(_printable(word + left()), markup=False)
            return int(code)
        finally:
            _STDOUT_CUT.reset(cut)
            _REPORT_ON_STDERR.reset(token)
    raise AssertionError("unreachable")  # pragma: no cover - the block returns


def _left_if_stopped(
    out: Path | None, replaced: Path | None, *, to_stdout: bool
) -> Callable[[], str]:
    """What a repair stopped by Ctrl-C or SIGTERM leaves, said after the stop's word:
    taken before the repair, told when it stops (``: nothing written (OUT not made)``,
    ``: FILE unchanged``, ``: nothing written``). ``""`` when it cannot be said: part of
    the repair may have gone to standard output, or ``--out FILE`` / ``--in-place`` was
    done before the stop."""
    if to_stdout:
        return lambda: ""
    if out is not None:
        existed = os.path.lexists(out)
        return lambda: (
            "" if existed or os.path.lexists(out) else f": nothing written ({out} not made)"
        )
    if replaced is not None:
        try:
            before = _stamp(replaced)
        except OSError:
            return lambda: ""
        return lambda: f": {replaced} unchanged" if _stamp_or_none(replaced) == before else ""
    return lambda: ": nothing written"


def _stamp_or_none(path: Path) -> tuple[int, ...] | None:
    try:
        return _stamp(path)
    except OSError:
        return None


@contextmanager
def _format_hint(wanted: FormatName | None) -> Iterator[None]:
    """With ``--format`` given, a history that is not in that format gets a hint to
    leave it out (the format is detected) or name the right one, not to name one."""
    try:
        yield
    except HistoryFormatError as exc:
        if wanted is None or exc.hint != HistoryFormatError.default_hint:
            raise
        raise type(exc)(
            exc.message,
            hint=f"Leave out --format {wanted} to let agc detect the format, or name the "
            "right one: openai-chat, anthropic, openai-responses, codex-rollout, "
            "claude-code or gemini-chat.",
        ) from exc


def _exec_rollout(run_id: str, rollout: ExecRollout) -> Path | None:
    """Say which history a run recorded from ``codex exec --json`` resumes from (the
    stream holds none): the rollout file of its thread, or the run that captured it.

    Raises:
        HistoryFormatError: neither is there.
    """
    if rollout.path is None and rollout.run_id is None:
        raise HistoryFormatError(
            f"run {run_id} was recorded from a `codex exec --json` stream, which holds no "
            f"resumable history, and neither the rollout of its thread {rollout.thread_id} "
            f"(under {rollout.looked_in}) nor a run codex-{rollout.thread_id} is there",
            hint="Set CODEX_HOME to the Codex home that ran it, or import its rollout.",
        )
    err_console.print(
        f"run {run_id} was recorded from a `codex exec --json` stream (thread "
        f"{rollout.thread_id}): resuming from {rollout.describe()}",
        markup=False,
    )
    return rollout.path


def _check(
    history: History,
    target: str,
    state: ToolCallState | None,
    *,
    as_json: bool,
    limit: int,
    file: bool = False,
) -> int:
    """Validate only; a history the provider would reject gets a hint (stderr) naming
    the repair: ``--out``, or for a ``file`` that is no snapshot ``--in-place`` too."""
    report = _resume.check_loaded(history, keep=None if as_json else limit)
    warnings = _resume.pending_warnings(history.messages, state)
    unread = _UnreadLines(history)
    with _report_to_stdout(None):
        if as_json:
            emit_json(
                {
                    **report.to_streamed(),
                    "source": target,
                    "tool_call_state": state.to_dict() if state is not None else None,
                    # the sentences of unread lines are ASCII: a lone surrogate only in `warnings`
                    "warnings": JsonItems(
                        _Chained(warnings, unread),
                        str,
                        escapes=None if any(not text.isascii() for text in warnings) else False,
                    ),
                }
            )
        else:
            _print_findings(history, report, limit)
            if state is not None and state.in_flight:
                out_console.print(
                    _printable(
                        f"the snapshot says call {state.pending_tool_call_id} was in flight"
                    ),
                    markup=False,
                )
            _print_warnings(warnings)
            _print_unread(unread, limit)
            if not report.valid:
                quoted = shlex.quote(target)
                err_console.print(
                    _printable(
                        f"hint: `agc resume {quoted} --out FIXED` writes the repair to FIXED"
                        + (
                            f", `agc resume {quoted} --in-place` over the file (keeping a backup)"
                            if file
                            else ""
                        )
                    ),
                    markup=False,
                )
    return int(ExitCode.OK if report.valid else ExitCode.FINDINGS)


class _Output(NamedTuple):
    """Where a repair goes: ``out`` (a new file), over ``source`` (``in_place``), or
    nowhere (checked all the same); ``stamp`` is a file-read-whole's identity when read;
    ``read_from``: the session file (and its name in messages) read as it is repaired,
    when it was not read before (a named tuple, as :class:`_Trust`)."""

    source: Path | None
    out: Path | None
    in_place: bool
    stamp: tuple[int, ...] | None
    to_stdout: bool = False
    read_from: tuple[Path, str] | None = None  # the session file read as it is repaired

    def unchanged(self) -> None:
        """Raise :class:`InPlaceRefusedError` when ``source`` changed since it was read
        (only ``--in-place`` calls this: the refusal of a file another process holds)."""
        assert self.source is not None  # in place: a FILE
        if self.stamp is not None and _stamp(self.source) != self.stamp:
            raise InPlaceRefusedError(
                f"{self.source} changed while agc repaired it (another program wrote to it); "
                "it was left as it is",
                hint="Stop the agent that writes this session, then run agc resume again.",
            )


def _stamp(path: Path) -> tuple[int, ...]:
    """What changes when a file is written or replaced: device, inode, size, mtime, and
    the change time (a writer can set the mtime back, never the change time)."""
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _repair(
    history: History | None,
    target: str,
    output: _Output,
    strategy: StrategyChoice,
    state: ToolCallState | None,
    session_id: str | None,
    size: int,
    *,
    as_json: bool,
    limit: int,
    wanted: FormatName | None = None,
    require: Callable[[History], None] | None = None,
) -> int:
    """Repair ``history``, or (``None``) the session file ``output.read_from``, read as
    it is repaired (:func:`_repair_streamed`; ``require`` judges the history read)."""
    source, out = output.source, output.out
    where = target if source is None else str(source)
    chosen = _STRATEGIES[strategy]
    if out is not None and source is not None and _same_file(out, source):
        raise UsageError(
            f"--out {out} is the input; agc never writes over its input "
            "(--in-place replaces it, keeping a backup)"
        )
    backup: Path | None = None
    if history is None or _is_streamed(history):
        report, backup, history = _repair_streamed(
            history,
            output,
            chosen,
            state,
            session_id,
            size,
            where,
            wanted=wanted,
            keep=None if as_json else limit,
            require=require,
        )
    else:
        with _working("repairing", size):
            result = _resume.repair_loaded(
                history, strategy=chosen, tool_call_state=state, session_id=session_id
            )
        _refuse_emptied(result.report, where)
        if out is not None:
            _write_out(out, source, result.data)
        elif output.to_stdout:
            _to_stdout([result.data])
        elif output.in_place and result.report.changes:
            assert source is not None  # --in-place is refused for a run
            with replace_in_place(source, unchanged=output.unchanged) as (handle, _, commit):
                with new_file_errors(source, option="--in-place"):
                    handle.write(result.data)
                backup = commit()
        report = result.report
    found = _resume.find_next_step(history)
    step, missing = (found, None) if isinstance(found, _resume.NextStep) else (None, found)
    if (
        report.changes
        and not _written(output, backup)
        and (missing is None or missing.session_file)
    ):
        # The client's file is as broken as it was: its resume command would send that.
        step, missing = None, _resume.NoNextStep(_NOT_WRITTEN)
    captured = None
    if step is not None and backup is not None and source is not None:
        # The file replaced may be one agc's hooks are capturing: how its run now verifies.
        from agc.flows import session_capture  # noqa: PLC0415 - an in-place repair only

        captured = session_capture(
            step.client,
            step.session_id,
            source,
            project=Path(step.cwd) if step.cwd else None,
        )
    if as_json:
        if captured is not None and backup is not None:  # said on stderr with --json too
            _print_captured(captured, source, backup)
        document = {
            "schema_version": SCHEMA_VERSION,
            "source": target,
            "out": str(out) if out is not None else None,
            "in_place": output.in_place,
            "backup": str(backup) if backup is not None else None,
            "next_step": step.to_dict() if step is not None else None,
            "no_next_step": None if missing is None else missing.reason,
            "captured_run": None if captured is None else captured.to_dict(),
            "report": report.to_streamed(),
            "removed_calls": JsonItems(_RemovedCalls(report), report.change_dict),
            "warnings": JsonItems(_UnreadLines(history), str, escapes=False),
        }
        with _report_to_stdout(_done(output, backup)):
            emit_json(document)
        return _repair_exit(report, output, backup)
    with _report_to_stdout(_done(output, backup)):
        _print_report(history, report, strategy, limit)
    say = err_console.print
    if out is not None:
        say(f"repaired history written to {out} (valid)", markup=False)
    elif output.to_stdout and _STDOUT_CUT.get():
        say(
            "standard output was closed by its reader before the repaired history was "
            "written whole: it was not delivered (write it with --out FILE)",
            markup=False,
        )
    elif output.to_stdout:
        say("repaired history written to standard output (valid)", markup=False)
    elif backup is not None:
        say(
            f"{source} replaced by its repair (valid); the original is kept at {backup}",
            markup=False,
        )
        if captured is not None:
            _print_captured(captured, source, backup)
    elif output.in_place:
        say(f"{source} left as it is: nothing to repair", markup=False)
    elif report.changes:
        say(
            "nothing written: give --out FILE to write the repaired history"
            + (", or --in-place to replace the file (keeping a backup)" if source else ""),
            markup=False,
        )
    if step is not None:
        _print_next(step, output, repaired=out or (source if backup is not None else None))
    elif missing is not None and missing.session_file and missing.reason != _NOT_WRITTEN:
        say(_printable(f"next: no resume step: {missing.reason}"), markup=False)
    return _repair_exit(report, output, backup)


_NOT_WRITTEN: Final = (
    "nothing written: the repair is written by --out FILE or --in-place; resumed as it is, "
    "the file is sent as broken as it is"
)
"""Why a repair written nowhere has no next step (``no_next_step`` in ``--json``)."""


def _print_report(
    history: History, report: RepairReport, strategy: StrategyChoice, limit: int
) -> None:
    """A repair's report as text: the findings, the changes, the warnings and the calls
    removed (the first ``limit`` of each beside their counts)."""
    _print_findings(history, report.before, limit)
    if report.changes:
        _report().print(
            f"{report.change_total} change(s), strategy {strategy.value}:", markup=False
        )
        _print_counts(Counter(report.action_counts()))
        for change in report.changes[:limit]:
            _print_change(history, change)
        _print_more(report.change_total, limit, "change")
    else:
        _report().print("no change needed", markup=False)
    _print_warnings(report.notices)
    _print_unread(_UnreadLines(history), limit)
    _print_removed(report, limit)


def _done(output: _Output, backup: Path | None) -> str:
    """What a repair wrote, in words (for an error that comes after it)."""
    if output.out is not None:
        return f"the repaired history was written to {output.out}"
    if backup is not None:
        return f"{output.source} was repaired in place (the original is in {backup})"
    return "nothing was written"


def _report_to_stdout(done: str | None) -> AbstractContextManager[None]:
    """:func:`_stdout_takes` of a report (``done``: what the command wrote before it)."""
    return _stdout_takes(
        "the report",
        done=done,
        hint="free disk space behind standard output, or send it elsewhere (`> FILE`)",
    )


def _written(output: _Output, backup: Path | None) -> bool:
    """Whether the repair was written: to ``--out`` (a file, or stdout whose reader took
    it whole) or over the file."""
    delivered = output.to_stdout and not _STDOUT_CUT.get()
    return output.out is not None or delivered or backup is not None


def _repair_exit(report: RepairReport, output: _Output, backup: Path | None) -> int:
    """The exit code of a repair: 1 (findings) when the history was one the provider
    would reject and its repair was written nowhere (neither ``--out`` nor
    ``--in-place``: the history is left as broken as it was, as ``--check`` says it),
    else 0."""
    if not report.before.valid and not _written(output, backup):
        return int(ExitCode.FINDINGS)
    return int(ExitCode.OK)


_CLIENT_NAMES: Final = {"claude-code": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI"}


def _print_captured(captured: SessionCapture, source: Path | None, backup: Path) -> None:
    """How the run agc's hooks capture the session replaced in place now verifies, and
    what to do (stderr)."""
    run, line = captured.run_id, captured.changed_line
    about = (
        f"{source} is the session file of run {run}, which agc's hooks capture into "
        f"store {captured.store}"
    )
    if line is None:
        err_console.print(
            _printable(
                f"note: {about}. The repair only added lines after what the run's seals "
                "took, so the run still verifies: its next seal (the session's next turn "
                "end) adds them."
            ),
            markup=False,
        )
        return
    err_console.print(
        _printable(
            f"warning: {about}. The repair changed line {line} of what the run's seals "
            f"took, so from the session's next turn end on, agc-verify {run} fails "
            "(transcript-diverges: the seal keeps a session-file-changed failure) and "
            "the run is never complete again; it keeps the session as sealed before the "
            "repair, which is the record of this change. To keep the run verifiable "
            f"instead, put the original back before the session goes on: "
            f"mv -- {backup} {source}"
        ),
        markup=False,
    )


def _print_next(step: NextStep, output: _Output, repaired: Path | None) -> None:
    """Where the client reads the session and the command that resumes it (stderr)."""
    say = err_console.print
    client = _CLIENT_NAMES[step.client]
    at_home = repaired is not None and _same_file(repaired, step.path)
    reads = f"next: {client} reads session {step.session_id} from {step.path}"
    if at_home or repaired is None:
        say(_printable(reads), markup=False)
    elif output.source is not None and _same_file(output.source, step.path):
        say(
            _printable(
                f"{reads}. To put the repair there, run: agc resume {output.source} "
                "--in-place (it keeps a backup of the file)"
            ),
            markup=False,
        )
    else:
        aside = step.aside()
        first = "run" if aside is None else f"moving the session before it aside to {aside}, run"
        say(
            _printable(f"{reads}. To put the repair there, {first}: {step.copy_command(repaired)}"),
            markup=False,
        )
    for command in step.commands:
        say(_printable(f"  resume with: {command}"), markup=False)
    if step.note is not None:
        say(_printable(f"  note: {step.note}"), markup=False)
    missing = step.missing_cwd()
    if missing is not None:
        say(_printable(f"  note: {missing}"), markup=False)


def _is_streamed(history: History) -> bool:
    return isinstance(history.records, _resume.LineSequence)


def _repair_streamed(
    history: History | None,
    output: _Output,
    strategy: Strategy,
    state: ToolCallState | None,
    session_id: str | None,
    size: int,
    where: str,
    *,
    wanted: FormatName | None = None,
    keep: int | None = None,
    require: Callable[[History], None] | None = None,
) -> tuple[RepairReport, Path | None, History]:
    """Repair a streamed session file, written as it is made to ``--out``, to a file
    beside the input (``--in-place``), or to a private temporary file (the output is
    checked all the same). Returns the report, in place the backup's path, and the
    history. ``history`` ``None``: the file ``output.read_from`` is read as it is
    repaired (:func:`agc.resume.repair_session`: a Gemini CLI session in parts, its
    report holding the first ``keep`` changes; another read whole first)."""
    read: list[History] = [] if history is None else [history]

    def unchanged() -> None:
        records = read[0].records
        assert isinstance(records, _resume.LineSequence)  # _is_streamed
        try:
            records.check_unchanged()
        except InputError as exc:
            if not output.in_place:
                raise
            # Refused as a file another process holds open is: the same class (exit 3).
            raise InPlaceRefusedError(
                f"{exc.message}; it was left as it is", hint=exc.hint
            ) from exc

    out = output.out
    with ExitStack() as stack:
        commit: Callable[[], Path | None] | None = None
        new: BinaryIO
        handle: IO[bytes]
        if out is not None:
            new, path, prepared = stack.enter_context(
                new_file_beside(out, mode=_out_mode(output.source))
            )
            handle = new

            def commit() -> None:
                with new_file_errors(out):
                    sync(new)
                    prepared.commit(overwrite=False)

        elif output.in_place:
            assert output.source is not None  # --in-place is refused for a run
            handle, path, commit = stack.enter_context(
                replace_in_place(output.source, unchanged=unchanged)
            )
        else:
            import tempfile  # noqa: PLC0415 - only for a repair written nowhere

            with _copy_errors():
                temporary = stack.enter_context(
                    tempfile.NamedTemporaryFile(prefix="agc-resume-", suffix=".jsonl")
                )
            handle, path = temporary, Path(temporary.name)
        sink = _Sink(handle, out, output.source if output.in_place else None)

        def read_back() -> History:
            return _resume.scan_session(
                path,
                source="repaired history",
                # not read yet: repair_session reads back a Gemini CLI session's parts
                # or a Codex rollout repaired in runs (the format told as it is read)
                format=read[0].format if read else None,
                settle=_resume.SETTLE_MESSAGES,
                checked=True,
            )

        def read_tail(start: _resume.ScanStart) -> History:
            return _resume.scan_tail(
                path,
                start,
                source="repaired history",
                format=start.format,
                settle=_resume.SETTLE_MESSAGES,
            )

        parted: RepairReport | None = None
        if not read:
            assert output.read_from is not None  # a session file read as it is repaired
            source, name = output.read_from
            with ExitStack() as reading:
                bar = reading.enter_context(
                    byte_progress(size if size >= _STATUS_BYTES else None, f"reading {source.name}")
                )
                try:
                    history, parted = _resume.repair_session(
                        source,
                        sink,
                        read_back,
                        read_tail=read_tail,
                        source=name,
                        format=wanted,
                        strategy=strategy,
                        session_id=session_id,
                        keep=keep,
                        settle=_resume.SETTLE_MESSAGES,
                        progress=bar,
                    )
                except OSError as exc:  # a write error is the sink's AgcError
                    raise FileUnreadableError(
                        f"{name} cannot be read: {describe_os_error(exc)}"
                    ) from exc
            read.append(history)
            if require is not None:
                require(history)
        history = read[0]
        if parted is not None:
            report = parted
        else:
            with _working("repairing", size):
                report = _resume.repair_streamed(
                    history,
                    sink,
                    read_back,
                    strategy=strategy,
                    tool_call_state=state,
                    session_id=session_id,
                    read_tail=read_tail,
                )
        _refuse_emptied(report, where)
        unchanged()
        backup = None
        if commit is not None and (out is not None or report.changes):
            backup = commit()
        if output.to_stdout:  # checked whole before a byte of it is given out
            handle.flush()
            with path.open("rb") as written:
                _to_stdout(iter(lambda: written.read(1 << 20), b""))
        return report, backup, history


_QUICK_FLAGS: Final = {"--check": "check", "--json": "as_json"}


def quick_arguments(args: list[str]) -> dict[str, Any] | None:
    """The arguments of ``agc resume ARGS`` for :func:`resume_command` when they are
    only a TARGET that does not begin with ``-`` and the flags ``--check`` and
    ``--json`` (each any number of times, in any order): what typer would pass for the
    parameters they name, the others left to their defaults (a test proves it equal to
    typer's parse on such lists). ``None`` for any other list (help, any other option,
    ``--``, no TARGET or several), and while a shell completion is asked for
    (``_AGC_COMPLETE``): typer parses those."""
    if "_AGC_COMPLETE" in os.environ:
        return None
    values: dict[str, Any] = {}
    for arg in args:
        flag = _QUICK_FLAGS.get(arg)
        if flag is not None:
            values[flag] = True
        elif arg.startswith("-") or "target" in values:
            return None
        else:
            values["target"] = arg
    return values if "target" in values else None


def quick_main(args: list[str]) -> int | None:
    """Run ``agc resume ARGS`` without typer when :func:`quick_arguments` reads them
    (as :func:`agc.cli.app.main` would run it: same output, exit codes and errors);
    ``None`` to leave them to typer."""
    values = quick_arguments(args)
    if values is None:
        return None
    return run_command(lambda: resume_command(**values), ["resume", *args])


def register(app: typer.Typer) -> None:
    """Add ``resume`` to the ``agc`` app."""
    from agc.cli.common import StoreOption  # noqa: PLC0415 - typer's, made now

    command = with_typer_params(resume_command, StoreOption=StoreOption)
    app.command(name="resume", help=RESUME_HELP, epilog=EPILOG)(command)
