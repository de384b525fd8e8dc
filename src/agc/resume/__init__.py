"""Resume: secret-free session snapshots and repair of broken tool-call histories.

See ``docs/resume.md``. The public API::

    save_snapshot / load_snapshot      sealed, secret-free session snapshots
    check_history / verify_history     the provider rules a history breaks
    repair_history / resume_session    a valid history again, with a report of changes
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from agc.resume._formats import FORMAT_NAMES, FormatName, detect_format, load_history
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
    resume_session,
    session_identity,
)
from agc.resume._snapshot import (
    SessionSnapshot,
    SnapshotSaveResult,
    ToolCallState,
    load_snapshot,
    load_snapshot_file,
    save_snapshot,
)
from agc.resume._validate import (
    HistoryFinding,
    HistoryFindingCode,
    HistoryReport,
    check_history,
    verify_history,
)

if _TYPE_CHECKING:
    from agc.resume._formats import History
    from agc.resume._validate import check_loaded

__all__ = [
    "ACTIONS",
    "FORMAT_NAMES",
    "STRATEGIES",
    "Change",
    "FormatName",
    "History",
    "HistoryFinding",
    "HistoryFindingCode",
    "HistoryReport",
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
    "idempotency_key",
    "load_history",
    "load_snapshot",
    "load_snapshot_file",
    "redact_text",
    "redact_value",
    "repair_history",
    "repair_loaded",
    "resume_session",
    "save_snapshot",
    "session_identity",
    "verify_history",
]


def __getattr__(name: str) -> object:
    # The secret detector compiles a few hundred patterns at import (~10 ms): load it
    # only when a snapshot or a repair needs it, not for ``agc resume --check``.
    if name in ("redact_text", "redact_value"):
        from agc._core import redact  # noqa: PLC0415

        value: object = getattr(redact, name)
        globals()[name] = value
        return value
    # A history read from a file, and its check (PEP 562: loaded on first use).
    if name in ("History", "check_loaded"):
        import importlib  # noqa: PLC0415

        home = "agc.resume._formats" if name == "History" else "agc.resume._validate"
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
