"""Resume: secret-free session snapshots and repair of broken tool-call histories.

See ``docs/resume.md``. The public API::

    save_snapshot / load_snapshot      sealed, secret-free session snapshots
    check_history / verify_history     the provider rules a history breaks
    repair_history / resume_session    a valid history again, with a report of changes
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from agc.resume._formats import (
    FORMAT_NAMES,
    FormatName,
    History,
    detect_format,
    get_spec,
    load_history,
)
from agc.resume._next import NextStep, next_step
from agc.resume._repair import (
    ACTIONS,
    STRATEGIES,
    Change,
    RepairReport,
    RepairResult,
    ResumeResult,
    Strategy,
    idempotency_key,
    pending_warnings,
    repair_history,
    repair_loaded,
    repair_streamed,
    resume_session,
    session_identity,
)
from agc.resume._snapshot import (
    MAX_SNAPSHOT_BYTES,
    SessionSnapshot,
    SnapshotSaveResult,
    ToolCallState,
    has_snapshot,
    load_snapshot,
    load_snapshot_file,
    save_snapshot,
    snapshot_path,
)
from agc.resume._validate import (
    HistoryFinding,
    HistoryFindingCode,
    HistoryReport,
    check_history,
    check_loaded,
    verify_history,
)

if _TYPE_CHECKING:
    from agc._core.redact import redact_text, redact_value
    from agc.resume._formats.stream import SETTLE_MESSAGES, LineSequence, scan_session

__all__ = [
    "ACTIONS",
    "FORMAT_NAMES",
    "MAX_SNAPSHOT_BYTES",
    "SETTLE_MESSAGES",
    "STRATEGIES",
    "Change",
    "FormatName",
    "History",
    "HistoryFinding",
    "HistoryFindingCode",
    "HistoryReport",
    "LineSequence",
    "NextStep",
    "RepairReport",
    "RepairResult",
    "ResumeResult",
    "SessionSnapshot",
    "SnapshotSaveResult",
    "Strategy",
    "ToolCallState",
    "check_history",
    "check_loaded",
    "detect_format",
    "get_spec",
    "has_snapshot",
    "idempotency_key",
    "load_history",
    "load_snapshot",
    "load_snapshot_file",
    "next_step",
    "pending_warnings",
    "redact_text",
    "redact_value",
    "repair_history",
    "repair_loaded",
    "repair_streamed",
    "resume_session",
    "save_snapshot",
    "scan_session",
    "session_identity",
    "snapshot_path",
    "verify_history",
]


def __getattr__(name: str) -> object:
    # The secret detector compiles a few hundred patterns at import (~10 ms): load it
    # only when a snapshot or a repair needs it, not for ``agc resume --check``; the
    # streaming reader of session files only when one is read line by line.
    value: object
    if name in ("redact_text", "redact_value"):
        from agc._core import redact  # noqa: PLC0415

        value = getattr(redact, name)
    elif name in ("LineSequence", "SETTLE_MESSAGES", "scan_session"):
        from agc.resume._formats import stream  # noqa: PLC0415

        value = getattr(stream, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
