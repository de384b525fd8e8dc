"""The turn ledger: a sanitized, sealed record of what a Codex agent did in each turn.

Seed 000 (``../shared/seeds/000_turn_audit_ledger.txt``) and issue 6. Per turn, an
append-only file ``.agent/runtime/direct-codex/turns/<clientTurnId>.jsonl`` under the
project root holds ``turn_start`` (the prompt's hash, the offered attachments and their
file hashes), one ``item`` per completed item (commands, MCP calls with an allow-list of
arguments, file changes, image views, web searches), ``turn_end`` (which offered files
were read, the first design action) and a seal; ``.agent/agent.db`` gets one summary
record per attempt. The format is in ``docs/ledger.md``.

Modules, by concern: :mod:`.events` (inputs), :mod:`.sanitize` (paths, commands,
text), :mod:`.project` (hashing files), :mod:`.policy` (the TOML allow-list),
:mod:`.records` (building records), :mod:`.classify` (turn_end, summary, §3 rows),
:mod:`.writer` (the turn file and its seals), :mod:`.db` (``agent.db``), :mod:`.check`
(reading, show and check).

Example::

    from agc.ledger import TurnRecorder, decode_lines

    recorder = TurnRecorder.start(".", "Abc123-def", prompt=text, attachments=files)
    for item in decode_lines(open("events.jsonl", "rb")):
        recorder.observe(item)
    outcome = recorder.finish(completed=True)      # never raises (fail-open, §7)
"""

from __future__ import annotations

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
from agc.ledger._events import CompletedItem, EventDecoder, decode_lines
from agc.ledger._policy import LedgerPolicy, builtin_policy, load_policy
from agc.ledger._writer import TurnOutcome, TurnRecorder

__all__ = [
    "ROW_LABELS",
    "CompletedItem",
    "EventDecoder",
    "LedgerFinding",
    "LedgerFindingCode",
    "LedgerPolicy",
    "LedgerReport",
    "TurnOutcome",
    "TurnRecorder",
    "TurnSummary",
    "builtin_policy",
    "check_turn_file",
    "decode_lines",
    "load_policy",
    "show_turn_file",
    "turn_log_relpath",
    "validate_client_turn_id",
    "verify_turn_file",
]
