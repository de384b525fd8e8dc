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
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from agc._core.capture_failures import is_captured_run_id
from agc.errors import AgcError
from agc.integrity import Finding, RunReport, StoreReport, iter_records

if TYPE_CHECKING:
    from agc.capture import Divergence, ToolEvent

__all__ = ["cross_check_capture", "cross_check_store"]

_WITNESSES: Final = ("transcript", "tool-events")


def cross_check_capture(
    report: RunReport, store: str | os.PathLike[str] | None = None
) -> RunReport:
    """``report`` with a ``transcript-diverges`` error for each tool call only one of
    the run's witnesses has, when the run is a client session captured by hooks.

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
    if any(f.severity == "error" and f.artifact in _WITNESSES for f in report.findings):
        return report
    # The client formats are read only for a captured run: agc-verify of any other run
    # does not pay for them.
    from agc.capture import SessionParser, ToolEvent, compare_calls  # noqa: PLC0415

    try:
        hooked = [
            ToolEvent.from_record(record)
            for record in _records(report.run_id, store, "tool-events")
            if record.get("source") == "hook"
        ]
        if not hooked:
            return report
        parser = SessionParser(session_id=hooked[0].session_id)
        recorded: list[ToolEvent] = []
        for record in _records(report.run_id, store, "transcript"):
            number = record.get("line")
            recorded += parser.feed(
                record.get("payload"), number if isinstance(number, int) else None
            )
        recorded += parser.finish()
    except (AgcError, OSError, ValueError):
        return report  # a record agc cannot read is the verifier's finding, not this one's
    findings = [_finding(d) for d in compare_calls(hooked, recorded)]
    if not findings:
        return report
    artifacts = tuple(
        replace(entry, findings=(*entry.findings, *findings))
        if entry.kind == "transcript"
        else entry
        for entry in report.artifacts
    )
    return replace(report, findings=(*report.findings, *findings), artifacts=artifacts)


def cross_check_store(
    report: StoreReport, store: str | os.PathLike[str] | None = None
) -> StoreReport:
    """``report`` with each captured run cross-checked (:func:`cross_check_capture`)."""
    if not any(is_captured_run_id(run.run_id) for run in report.runs):
        return report
    return replace(report, runs=tuple(cross_check_capture(run, store) for run in report.runs))


def _records(
    run_id: str, store: str | os.PathLike[str] | None, kind: Any
) -> Iterator[dict[str, Any]]:
    """The JSON-object records of one artifact of the run, in order."""
    for line, _ in iter_records(run_id, store, kind=kind):
        record = json.loads(line)
        if isinstance(record, dict):
            yield record


def _finding(divergence: Divergence) -> Finding[Any]:
    witness = "hooks" if divergence.kind == "missing-from-transcript" else "transcript"
    return Finding(
        "transcript-diverges",
        divergence.describe(),
        artifact="transcript",
        lines=None if divergence.line is None else (divergence.line, divergence.line),
        actual={"witness": witness, "tool": divergence.tool, "call_id": divergence.call_id},
    )


def _is_folder(store: object) -> bool:
    return store is None or (isinstance(store, str | os.PathLike) and "://" not in str(store))
