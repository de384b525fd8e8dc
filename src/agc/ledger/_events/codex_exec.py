"""``codex exec --json`` events: ``item.started`` / ``item.completed`` with snake_case
items (Codex ``exec`` crate, ``exec_events.rs``: ``ThreadEvent``).

Items carry fewer fields than the app-server's: ``command_execution`` has ``command``,
``exit_code`` and ``status`` but no ``commandActions``; ``mcp_tool_call`` has
``server``, ``tool`` and (in newer versions) ``arguments``. What is there is recorded;
nothing is invented. An item that started and never completed (the agent was killed)
is recorded at the end of the input with status ``incomplete``, from its
``item.started`` event. An output agc synthesized for an interrupted call is recorded
with status ``interrupted``, never as the command's own completion.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from agc.ledger._events.appserver import pick_fields
from agc.ledger._events.item import CompletedItem, camel_case, is_synthesized_output

__all__ = ["COMPLETED_TYPE", "STARTED_TYPE", "item_from_event"]

COMPLETED_TYPE: Final = "item.completed"
STARTED_TYPE: Final = "item.started"
_RENAMES: Final = {"exit_code": "exitCode", "duration_ms": "durationMs"}


def item_from_event(event: Mapping[str, Any]) -> CompletedItem | None:
    """The item of an ``item.completed`` or ``item.started`` event (status as the
    event says), else ``None``."""
    if event.get("type") not in {COMPLETED_TYPE, STARTED_TYPE}:
        return None
    item = event.get("item")
    if not isinstance(item, Mapping):
        return None
    raw_type = item.get("type", item.get("item_type"))
    source_type = raw_type if isinstance(raw_type, str) else "unknown"
    item_type = camel_case(source_type)
    renamed = {_RENAMES.get(str(key), str(key)): value for key, value in item.items()}
    synthesized = is_synthesized_output(item.get("aggregated_output")) or is_synthesized_output(
        item.get("result")
    )
    return CompletedItem(
        source="exec",
        item_type=item_type,
        source_type=source_type,
        item_id=item.get("id"),
        status="interrupted" if synthesized else item.get("status", "completed"),
        fields=pick_fields(item_type, renamed),
        synthesized=synthesized,
    )
