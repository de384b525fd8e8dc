"""The turn ledger's record contract: record types, limits and the turn-id rule.

The record types, the per-record limits, the ``clientTurnId`` rule and where the
per-turn file lives. The record format is documented in ``docs/ledger.md``.
"""

from __future__ import annotations

import re
from typing import Final

from agc.errors import TurnIdInvalidError

__all__ = [
    "AGENT_DB_PARTS",
    "DB_RECORD_SCHEMA_VERSION",
    "FORBIDDEN_KEYS",
    "MAX_ACTIONS",
    "MAX_ATTACHMENTS",
    "MAX_CHANGES",
    "MAX_COMMAND_CHARS",
    "MAX_DB_RECORD_BYTES",
    "MAX_DESIGN_TEXT_CHARS",
    "MAX_HASH_BYTES",
    "MAX_ITEMS",
    "MAX_LINE_BYTES",
    "MAX_LIST_ITEMS",
    "MAX_PREVIEW_CHARS",
    "MAX_WEB_QUERY_CHARS",
    "RECORD_DB_TURN",
    "RECORD_ITEM",
    "RECORD_ITEMS_TRUNCATED",
    "RECORD_SEAL",
    "RECORD_TURN_END",
    "RECORD_TURN_START",
    "TURNS_DIR_PARTS",
    "turn_log_relpath",
    "validate_client_turn_id",
]

RECORD_TURN_START: Final = "direct.codex.turn_start"
RECORD_ITEM: Final = "direct.codex.item"
RECORD_ITEMS_TRUNCATED: Final = "direct.codex.items_truncated"
RECORD_TURN_END: Final = "direct.codex.turn_end"
RECORD_SEAL: Final = "direct.codex.seal"
"""agc's addition: the per-attempt seal record (docs/ledger.md, "Sealing")."""
RECORD_DB_TURN: Final = "direct.codex.turn"
DB_RECORD_SCHEMA_VERSION: Final = 1

FORBIDDEN_KEYS: Final = frozenset(
    {
        "aggregatedOutput",
        "aggregated_output",
        "formattedOutput",
        "stdout",
        "stderr",
        "output",
        "result",
        "diff",
        "content",
        "contentItems",
        "error",
    }
)
"""Keys never allowed in a turn file (outputs, results, error text, diffs,
file content); ``check`` reports them and no policy rule may write them."""

MAX_ITEMS: Final = 256
"""Items per attempt; the next one writes ``items_truncated`` once."""
MAX_COMMAND_CHARS: Final = 240
MAX_DESIGN_TEXT_CHARS: Final = 4000
"""``brief`` and generation ``prompt``; also the cap on any policy text."""
MAX_PREVIEW_CHARS: Final = 240
"""``briefPreview``."""
MAX_WEB_QUERY_CHARS: Final = 400
MAX_HASH_BYTES: Final = 2 * 1024 * 1024
"""Files larger than this are not hashed: ``hashSkipped: "too-large"``."""
MAX_ATTACHMENTS: Final = 8
MAX_LIST_ITEMS: Final = 8
"""``assetIds`` / ``localPaths``."""
MAX_ACTIONS: Final = 64
"""The bound on ``actions[]`` per command (records stay bounded); the rest is counted
in ``actionsOmitted``."""
MAX_CHANGES: Final = 64
"""agc's bound on ``changes[]`` per file change, rest counted in ``changesOmitted``."""
MAX_LINE_BYTES: Final = 256 * 1024
"""The line limit of the turn file: a longer item record
keeps its structure and loses its text fields (``fieldsOmitted: "too-large"``)."""
MAX_DB_RECORD_BYTES: Final = 1024 * 1024
"""One ``agent.db`` record."""

TURNS_DIR_PARTS: Final = (".agent", "runtime", "direct-codex", "turns")
AGENT_DB_PARTS: Final = (".agent", "agent.db")

_TURN_ID_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{5,159}")


def validate_client_turn_id(raw: object) -> str:
    """Return the normalized ``clientTurnId``: ``raw`` trimmed, if it follows the rule.

    The rule: after trimming surrounding whitespace, 6-160 ASCII letters, digits or
    ``-``, the first a letter or digit. The normalized id is the file name as is.

    Raises:
        TurnIdInvalidError: not a string, or it breaks the rule (the message says how).
    """
    if not isinstance(raw, str):
        raise TurnIdInvalidError(f"clientTurnId must be a string, not {type(raw).__name__}")
    value = raw.strip()
    if _TURN_ID_RE.fullmatch(value) is not None:
        return value
    if not 6 <= len(value) <= 160:
        raise TurnIdInvalidError(
            f"clientTurnId is {len(value)} characters long after trimming; 6-160 are allowed"
        )
    if not value[0].isascii() or not value[0].isalnum():
        raise TurnIdInvalidError("clientTurnId must start with an ASCII letter or digit")
    bad = next(ch for ch in value if not (ch.isascii() and (ch.isalnum() or ch == "-")))
    raise TurnIdInvalidError(f"clientTurnId contains the character {bad!r}")


def turn_log_relpath(client_turn_id: str) -> str:
    """``.agent/runtime/direct-codex/turns/<clientTurnId>.jsonl`` (project-relative POSIX).

    Raises:
        TurnIdInvalidError: the id breaks the rule.
    """
    return "/".join((*TURNS_DIR_PARTS, f"{validate_client_turn_id(client_turn_id)}.jsonl"))
