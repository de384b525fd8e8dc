"""Resume: secret-free session snapshots and repair of broken tool-call histories.

See ``docs/resume.md``. The public API::

    save_snapshot / load_snapshot      sealed, secret-free session snapshots
    check_history / verify_history     the provider rules a history breaks
    repair_history / resume_session    a valid history again, with a report of changes
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from agc._core.lazy import lazy_names as _lazy_names

if _TYPE_CHECKING:
    from agc._core.redact import (
        redact_text,
        redact_value,
    )
    from agc.resume._formats import (
        FORMAT_NAMES,
        FormatName,
        History,
        detect_format,
        get_spec,
        load_history,
    )
    from agc.resume._formats.model import MAX_SNAPSHOT_BYTES
    from agc.resume._formats.stream import (
        SETTLE_MESSAGES,
        LineSequence,
        ScanStart,
        scan_session,
        scan_tail,
    )
    from agc.resume._next import (
        NextStep,
        NoNextStep,
        find_next_step,
        next_step,
    )
    from agc.resume._repair import (
        ACTIONS,
        STRATEGIES,
        Change,
        RepairReport,
        RepairResult,
        ResumeResult,
        Strategy,
        idempotency_key,
        repair_history,
        repair_loaded,
        repair_session,
        repair_streamed,
        resume_session,
        session_identity,
    )
    from agc.resume._snapshot import (
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
        pending_warnings,
        verify_history,
    )

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
    "NoNextStep",
    "RepairReport",
    "RepairResult",
    "ResumeResult",
    "ScanStart",
    "SessionSnapshot",
    "SnapshotSaveResult",
    "Strategy",
    "ToolCallState",
    "check_history",
    "check_loaded",
    "detect_format",
    "find_next_step",
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
    "repair_session",
    "repair_streamed",
    "resume_session",
    "save_snapshot",
    "scan_session",
    "scan_tail",
    "session_identity",
    "snapshot_path",
    "verify_history",
]


# Loaded on first use (PEP 562): `agc resume --check FILE` needs the formats and the
# validator, not the repair, the snapshots or the secret detector.
_HOMES: dict[str, tuple[str, ...]] = {
    "agc.resume._formats.model": ("MAX_SNAPSHOT_BYTES",),
    "agc.resume._formats": (
        "FORMAT_NAMES",
        "FormatName",
        "History",
        "detect_format",
        "get_spec",
        "load_history",
    ),
    "agc.resume._repair": (
        "ACTIONS",
        "STRATEGIES",
        "Change",
        "RepairReport",
        "RepairResult",
        "ResumeResult",
        "Strategy",
        "idempotency_key",
        "repair_history",
        "repair_loaded",
        "repair_session",
        "repair_streamed",
        "resume_session",
        "session_identity",
    ),
    "agc.resume._snapshot": (
        "SessionSnapshot",
        "SnapshotSaveResult",
        "ToolCallState",
        "has_snapshot",
        "load_snapshot",
        "load_snapshot_file",
        "save_snapshot",
        "snapshot_path",
    ),
    "agc.resume._validate": (
        "HistoryFinding",
        "HistoryFindingCode",
        "HistoryReport",
        "check_history",
        "check_loaded",
        "verify_history",
        "pending_warnings",
    ),
    "agc.resume._next": (
        "NextStep",
        "NoNextStep",
        "find_next_step",
        "next_step",
    ),
    "agc._core.redact": (
        "redact_text",
        "redact_value",
    ),
    "agc.resume._formats.stream": (
        "SETTLE_MESSAGES",
        "LineSequence",
        "ScanStart",
        "scan_session",
        "scan_tail",
    ),
}
_MODULE_OF = {name: (module, name) for module, names in _HOMES.items() for name in names}

__getattr__, __dir__ = _lazy_names(globals(), _MODULE_OF)
