"""A captured run's two witnesses held against each other: the calls its hooks recorded
as they fired, and the calls of the client's session file sealed as its transcript.

The evidence layer verifies that what was sealed is unchanged; it cannot tell that the
session file was already edited when it was sealed. The hooks can: they saw every call
as it happened, in another process, and their records were checkpointed at once. A call
only one side has (:func:`agc.capture.compare_calls`) is a ``transcript-diverges`` error
of the run, located at the transcript line of a call the hooks never saw.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

from agc._core.capture_failures import failure_lines, is_captured_run_id
from agc._core.record import replace
from agc._core.store import ArtifactKind, resolve_store
from agc.errors import AgcError
from agc.integrity import Finding, RunReport

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from agc.capture import Divergence, SessionFormat, ToolEvent
    from agc.integrity import Audit, KeptArtifact, StoreReport

__all__ = [
    "check_captured_run_kept",
    "cross_check_audit",
    "cross_check_capture",
    "cross_check_store",
]

_WITNESSES: Final = ("transcript", "tool-events")
_OURS: Final = frozenset({"capture-failed", "transcript-diverges", "hooks-stopped"})
"""Findings of capture (not of the seals): the witnesses are still read and compared."""


def cross_check_capture(
    report: RunReport, store: str | os.PathLike[str] | None = None
) -> RunReport:
    """``report`` with a ``transcript-diverges`` error for each tool call only one of
    the run's witnesses has, when the run is a client session captured by hooks; a
    warning for a call the hooks never saw that the session file answers with an error
    (a client refuses some calls before its hooks run: such a call never ran).

    Nothing is added (and nothing read) when the run is not named as a captured session
    (``<client>-<session id>``), when its transcript or tool events already have an
    error (their findings say what is wrong), when no hook record is in its tool events
    (a session file imported alone has one witness), or when the store is not a folder.

    Args:
        report: the run's report from :func:`agc.integrity.check_run`.
        store: the folder store the report is of.
    """
    if not is_captured_run_id(report.run_id) or not _is_folder(store):
        return report
    if any(
        f.severity == "error" and f.artifact in _WITNESSES and f.code not in _OURS
        for f in report.findings
    ):
        return report
    # The client formats are read only for a captured run: agc-verify of any other run
    # does not pay for them.
    from agc.capture import SessionParser, ToolEvent, compare_calls  # noqa: PLC0415

    try:
        events = [
            record
            for record in _records(report.run_id, store, "tool-events")
            if record.get("source") == "hook"
        ]
        hooked = [ToolEvent.from_record(record) for record in events]
        if not hooked:
            return report
        # The format is the client's the hooks name, not the file's first line's: a
        # line of another format first must not hide the calls after it.
        parser = SessionParser(
            format=_SESSION_FORMATS[hooked[0].client], session_id=hooked[0].session_id
        )
        recorded: list[ToolEvent] = []
        unreadable: list[int] = []
        for record in _records(report.run_id, store, "transcript"):
            number = record.get("line")
            if "invalid" in record and isinstance(number, int):
                unreadable.append(number)
            recorded += parser.feed(
                record.get("payload"), number if isinstance(number, int) else None
            )
        recorded += parser.finish()
    except (AgcError, OSError, ValueError):
        return report  # a record agc cannot read is the verifier's finding, not this one's
    # A record names its hook beside its failure: both make the failure's key.
    recorded_failures = [
        {**failure, "hook": record.get("hook")}
        for record in events
        if record.get("event") == "capture-failed"
        and isinstance(failure := record.get("failure"), dict)
    ]
    unheard = _unheard_lines(events)
    findings = [_finding(d, unheard=unheard) for d in compare_calls(hooked, recorded)]
    findings += [_unreadable(number) for number in unreadable]
    findings += _changed_findings(recorded_failures)
    report = _with_failures(report, store, recorded_failures)
    if not findings:
        return report
    artifacts = tuple(
        replace(entry, findings=(*entry.findings, *findings))
        if entry.kind == "transcript"
        else entry
        for entry in report.artifacts
    )
    return replace(report, findings=(*report.findings, *findings), artifacts=artifacts)


def check_captured_run_kept(
    run_id: str,
    store: str | os.PathLike[str] | None = None,
    *,
    kind: ArtifactKind = "transcript",
    max_bytes: int | None = None,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
    allow_unsigned: bool = False,
) -> tuple[RunReport, KeptArtifact]:
    """:func:`agc.integrity.check_run_kept` with the run judged as ``agc-verify RUN``
    judges it: a captured session whose witnesses disagree
    (:func:`cross_check_capture`) is not complete, so what reads a run's evidence back
    (resume from a run, export) refuses it as ``agc-verify`` fails it.

    Raises:
        As :func:`agc.integrity.check_run_kept`.
    """
    from agc.integrity import check_run_kept  # noqa: PLC0415 - the verifier on demand

    report, kept = check_run_kept(
        run_id,
        store,
        kind=kind,
        max_bytes=max_bytes,
        trusted_keys=trusted_keys,
        require_signature=require_signature,
        allow_unsigned=allow_unsigned,
    )
    return cross_check_capture(report, store), kept


def cross_check_store(
    report: StoreReport, store: str | os.PathLike[str] | None = None
) -> StoreReport:
    """``report`` with each captured run cross-checked (:func:`cross_check_capture`)."""
    if not any(is_captured_run_id(run.run_id) for run in report.runs):
        return report
    from dataclasses import replace as replaced  # noqa: PLC0415 - a store report is a dataclass

    return replaced(report, runs=tuple(cross_check_capture(run, store) for run in report.runs))


def cross_check_audit(audit: Audit, store: str | os.PathLike[str] | None = None) -> Audit:
    """``audit`` (:func:`agc.integrity.build_audit`) with each captured run cross-checked,
    so that the report calls a run what ``agc-verify`` calls it (failing runs first)."""
    if not any(is_captured_run_id(run.report.run_id) for run in audit.runs):
        return audit
    from dataclasses import replace as replaced  # noqa: PLC0415 - an audit is a dataclass

    runs = sorted(
        (replaced(run, report=cross_check_capture(run.report, store)) for run in audit.runs),
        key=lambda run: (run.report.complete, run.report.run_id),
    )
    complete = audit.complete and all(run.report.complete for run in runs)
    return replaced(audit, runs=tuple(runs), complete=complete)


def _records(
    run_id: str, store: str | os.PathLike[str] | None, kind: Any
) -> Iterator[dict[str, Any]]:
    """The JSON-object records of one artifact of the run, in order."""
    from agc.integrity import iter_records  # noqa: PLC0415 - only for a captured run

    for line, _ in iter_records(run_id, store, kind=kind):
        record = json.loads(line)
        if isinstance(record, dict):
            yield record


_SESSION_FORMATS: Final[Mapping[str, SessionFormat]] = {
    "claude-code": "claude-code",
    "codex": "codex-rollout",
    "gemini": "gemini-chat",
}
"""The session file each client's hooks name (``transcript_path``), by client."""


def _unreadable(line: int) -> Finding[Any]:
    """A session-file line strict JSON refuses: the client writes none, and the calls it
    may hold (a duplicated member that a lax reader accepts) cannot be held against the
    hooks."""
    return Finding(
        "transcript-diverges",
        f"line {line} of the sealed session file is not strict JSON (the client writes "
        "none), so the calls it may hold cannot be checked against the hooks",
        artifact="transcript",
        lines=(line, line),
        actual={"witness": "transcript", "tool": None, "call_id": None},
    )


_UNHEARD: Final = "hook-events-unheard"
"""The failure code of a session whose hook events sent over HTTP may have been lost."""


_Window = tuple[int, float]
"""Session-file lines ``(after, through]``: 1-based, ``through`` may be infinite."""


def _unheard_lines(events: list[dict[str, Any]]) -> list[_Window]:
    """The lines of the session file that may have been written while agc's listener
    could not hear the session's tool events, from the run's hook records in order.

    A ``hook-events-unheard`` failure is written before the synchronous event that found
    the gap; the gap began after the session's previous synchronous event, so after the
    last seal before the failure (a ``sealed`` record: the transcript then held the
    file's first ``lines`` lines), and ended before the first seal after it. The lines
    between those two seals (to the file's end when no seal came after) are the
    window: a call there that the hooks never saw may have been sent unheard. A call
    on a line sealed before the gap, or first sealed after a seal that followed it,
    was written while the hooks were heard."""
    windows: list[_Window] = []
    sealed = 0
    opened: int | None = None
    for record in events:
        kind = record.get("event")
        if kind == "sealed":
            member = record.get("sealed")
            lines = member.get("lines") if isinstance(member, dict) else None
            if isinstance(lines, int) and not isinstance(lines, bool):
                if opened is not None:
                    windows.append((opened, lines))
                    opened = None
                sealed = lines
        elif kind == "capture-failed" and opened is None:
            failure = record.get("failure")
            if isinstance(failure, dict) and failure.get("code") == _UNHEARD:
                opened = sealed
    if opened is not None:
        windows.append((opened, float("inf")))
    return windows


def _finding(divergence: Divergence, *, unheard: list[_Window] | None = None) -> Finding[Any]:
    """The finding of one divergence; a call the session file has and the hooks never
    saw, on a line of an ``unheard`` window (:func:`_unheard_lines`: agc's listener was
    not up for part of the session then; any window for a call of no known line), is
    ``hooks-stopped`` (unwitnessed, its capture failed), not ``transcript-diverges``
    (an edit): a call forged into a part of the session the hooks heard whole stays
    ``transcript-diverges``."""
    witness = {"missing-from-transcript": "hooks", "input-differs": "both"}.get(
        divergence.kind, "transcript"
    )
    where: dict[str, Any] = {
        # A call the file answers with an error may have been refused before any hook
        # ran (it never ran): said, but not held against the run.
        "severity": "warning" if divergence.refused else "error",
        "artifact": "transcript",
        "lines": None if divergence.line is None else (divergence.line, divergence.line),
        "actual": {"witness": witness, "tool": divergence.tool, "call_id": divergence.call_id},
    }
    if divergence.kind == "after-hooks":
        # Calls after the hooks' last event, in a session they were not seen to stop:
        # unwitnessed, not shown edited.
        return Finding("hooks-stopped", divergence.describe(), **where)
    if divergence.kind == "unseen-by-hooks" and _within(divergence.line, unheard or []):
        said = (
            f"{divergence.describe()}; agc's listener for the hooks was not up for part "
            f"of the session ({_UNHEARD}), so the hooks may have sent it unheard"
        )
        return Finding("hooks-stopped", said, **where)
    return Finding("transcript-diverges", divergence.describe(), **where)


def _within(line: int | None, windows: list[_Window]) -> bool:
    """Whether ``line`` falls in one of ``windows`` (any, for ``None``)."""
    if line is None:
        return bool(windows)
    return any(after < line <= through for after, through in windows)


_CHANGED: Final = "session-file-changed"
"""The failure code of a session file that no longer begins with what its run sealed."""


def _changed_findings(failures: list[dict[str, Any]]) -> list[Finding[Any]]:
    """One finding per changed line of the session file among the run's recorded
    failures: every seal after the change (each turn's end, the session's end) finds it
    again and records it again, and it is one change."""
    lines = dict.fromkeys(_changed_line(f) for f in failures if f.get("code") == _CHANGED)
    return [_changed(line) for line in lines]


def _changed_line(failure: Mapping[str, Any]) -> int | None:
    line = failure.get("line")
    return line if isinstance(line, int) and not isinstance(line, bool) else None


def _changed(line: int | None) -> Finding[Any]:
    """A seal that found the session file changed where an earlier seal had taken it
    (at ``line``, when known; the finding's location, not repeated in its message):
    its new lines were not sealed after it."""
    return Finding(
        "transcript-diverges",
        "the session file was changed where an earlier seal had taken it: the hooks "
        "sealed none of its lines after that",
        artifact="transcript",
        lines=None if line is None else (line, line),
        actual={"witness": "transcript", "tool": None, "call_id": None},
    )


def _with_failures(
    report: RunReport, store: str | os.PathLike[str] | None, recorded: list[dict[str, Any]]
) -> RunReport:
    """``report`` whose ``capture-failed`` error counts every failure of the run, those
    its own tool events hold (``capture-failed`` records, sealed with the run) and those
    kept beside the store (the run reader's finding), each once (by ``ts``, ``code``
    and ``hook``, as many times as the source holding it most): removing
    ``capture/failures.jsonl`` no longer hides a failure the run holds."""
    kept = _kept_failures(store, report.run_id)
    others = [f for f in recorded if f.get("code") != _CHANGED]
    if not others:
        return report
    # Each source holds a failure once, and two failures of one hook may share a
    # millisecond: a key counts as often as the source that holds it most.
    in_kept, in_run = Counter(map(_key, kept)), Counter(map(_key, others))
    total = sum(max(in_kept[key], in_run[key]) for key in in_kept.keys() | in_run.keys())
    codes = sorted({str(code) for _, code, _ in in_kept.keys() | in_run.keys()})
    finding: Finding[Any] = Finding(
        "capture-failed",
        f"{total} hook event(s) of this run's session could not be captured "
        f"({', '.join(codes)}); `agc hooks status` says why",
        artifact="tool-events",
        actual={"failures": total, "codes": codes},
    )
    findings = [f for f in report.findings if f.code != "capture-failed"]
    return replace(report, findings=(*findings, finding))


def _key(failure: Mapping[str, Any]) -> tuple[Any, str, Any]:
    return failure.get("ts"), str(failure.get("code")), failure.get("hook")


def _kept_failures(store: str | os.PathLike[str] | None, run_id: str) -> list[dict[str, Any]]:
    """The failure lines of the run ``run_id`` kept for the store folder (as the run
    reader reads them)."""
    try:
        folder = resolve_store(store).absolute()
    except AgcError:
        return []
    return failure_lines(folder, run_id=run_id)


def _is_folder(store: object) -> bool:
    return store is None or (isinstance(store, str | os.PathLike) and "://" not in str(store))
