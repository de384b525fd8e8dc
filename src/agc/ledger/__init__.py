"""The turn ledger: a sanitized, sealed record of what a Codex agent did in each turn.

Per turn, an append-only file ``.agent/runtime/direct-codex/turns/<clientTurnId>.jsonl``
under the project root holds ``turn_start`` (the prompt's hash, the offered attachments
and their file hashes), one ``item`` per completed item (commands, MCP calls with an
allow-list of arguments, file changes, image views, web searches), ``turn_end`` (which
offered files were read, the first design action) and a seal; ``.agent/agent.db`` gets
one summary record per attempt. Inputs are the Codex CLI's own streams: app-server
JSON-RPC notifications, ``codex exec --json`` events and rollout session files. The
format is in ``docs/ledger.md``.

Modules, by concern: :mod:`._events` (inputs), :mod:`._sanitize` (paths, commands,
text), :mod:`._project` (hashing files), :mod:`._policy` (presets and policy files),
:mod:`._records` (building records), :mod:`._classify` (turn_end, summary, timeline
rows), :mod:`._writer` (the turn file and its seals), :mod:`._turn` (one turn from a
stream), :mod:`._db` (``agent.db``), :mod:`._check` (reading, show and check).

Example::

    from agc.ledger import check_turn_file, record_turn

    with open("events.jsonl", "rb") as events:
        outcome = record_turn(events, project=".", client_turn_id="Abc123-def",
                              prompt=text, attachments=files)   # write failures never raise
    report = check_turn_file(outcome.turn_file)                 # never raises on findings
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from agc._core.lazy import lazy_names as _lazy_names
from agc.ledger._check import (
    LedgerFinding,
    LedgerFindingCode,
    LedgerReport,
    check_turn_file,
    show_turn_file,
    verify_turn_file,
)
from agc.ledger._classify import ROW_LABELS, TurnSummary
from agc.ledger._contract import turn_log_relpath, validate_client_turn_id
from agc.ledger._events import CompletedItem, DecodeStats, EventDecoder, decode_lines
from agc.ledger._lines import KEPT_STRING_BYTES, MAX_READ_LINE_BYTES, OverlongLine, event_lines
from agc.ledger._policy import (
    DEFAULT_PRESET,
    POLICY_PRESETS,
    LedgerPolicy,
    default_policy,
    load_policy,
    preset_policy,
)
from agc.ledger._project import Project
from agc.ledger._turn import record_turn
from agc.ledger._writer import TurnOutcome, TurnRecorder

if _TYPE_CHECKING:
    from agc.ledger._check import LedgerFile, judge_turn_file, read_turn_file
    from agc.ledger._contract import FORBIDDEN_KEYS
    from agc.ledger._db import AgentDb
    from agc.ledger._policy import parse_policy

__all__ = [
    "DEFAULT_PRESET",
    "FORBIDDEN_KEYS",
    "KEPT_STRING_BYTES",
    "MAX_READ_LINE_BYTES",
    "POLICY_PRESETS",
    "ROW_LABELS",
    "AgentDb",
    "CompletedItem",
    "DecodeStats",
    "EventDecoder",
    "LedgerFile",
    "LedgerFinding",
    "LedgerFindingCode",
    "LedgerPolicy",
    "LedgerReport",
    "OverlongLine",
    "Project",
    "TurnOutcome",
    "TurnRecorder",
    "TurnSummary",
    "check_turn_file",
    "decode_lines",
    "default_policy",
    "event_lines",
    "judge_turn_file",
    "load_policy",
    "parse_policy",
    "preset_policy",
    "read_turn_file",
    "record_turn",
    "show_turn_file",
    "turn_log_relpath",
    "validate_client_turn_id",
    "verify_turn_file",
]

# Loaded on first use (PEP 562): the lower-level pieces, for reading and judging a turn
# file in separate steps, parsing a policy from bytes, or reading ``agent.db``.
_LAZY = {
    "FORBIDDEN_KEYS": "agc.ledger._contract",
    "AgentDb": "agc.ledger._db",
    "LedgerFile": "agc.ledger._check",
    "judge_turn_file": "agc.ledger._check",
    "read_turn_file": "agc.ledger._check",
    "parse_policy": "agc.ledger._policy",
}


__getattr__, __dir__ = _lazy_names(globals(), {name: (home, name) for name, home in _LAZY.items()})
