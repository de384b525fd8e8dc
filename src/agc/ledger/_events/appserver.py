"""Codex app-server ``item/completed`` notifications (JSON-RPC, camelCase items).

``params.item`` is a ``ThreadItem`` tagged by ``type``: ``commandExecution`` (with
``commandActions`` read/listFiles/search/unknown), ``mcpToolCall``, ``fileChange``,
``imageView``, ``webSearch``, ``dynamicToolCall``, … (Codex
``app-server-protocol`` v2, ``ThreadItem``). An ``item/started`` item that never gets
its ``item/completed`` is recorded at the end of the input as ``incomplete``. Other
methods are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from agc.ledger._events.item import CompletedItem, camel_case, is_synthesized_output

__all__ = ["COMPLETED_METHOD", "STARTED_METHOD", "item_from_notification", "pick_fields"]

COMPLETED_METHOD: Final = "item/completed"
STARTED_METHOD: Final = "item/started"

# The only keys copied, per item type. Never: aggregatedOutput, result, error (only
# whether it is set), diff, contentItems, output, image bytes.
_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "commandExecution": ("command", "exitCode", "durationMs", "commandActions"),
    "mcpToolCall": ("server", "tool", "arguments", "durationMs"),
    "dynamicToolCall": ("namespace", "tool", "arguments", "durationMs", "success"),
    "fileChange": ("changes",),
    "imageView": ("path",),
    "webSearch": ("query",),
    "functionCallOutput": ("name", "namespace"),
}


def pick_fields(item_type: str, item: Mapping[str, Any]) -> dict[str, object]:
    """Copy the allowed fields of ``item`` (camelCase keys) for ``item_type``."""
    allowed = _FIELDS.get(item_type, ())
    fields: dict[str, object] = {key: item[key] for key in allowed if key in item}
    changes = fields.get("changes")
    if item_type == "fileChange" and isinstance(changes, list):
        fields["changes"] = [_change(c) for c in changes]
    if item_type == "mcpToolCall":
        fields["hasError"] = item.get("error") is not None
        result = item.get("result")
        fields["resultIsError"] = isinstance(result, Mapping) and result.get("isError") is True
    actions = fields.get("commandActions")
    if item_type == "commandExecution" and isinstance(actions, list):
        fields["commandActions"] = [_action(a) for a in actions]
    return fields


def _change(change: object) -> dict[str, object]:
    if not isinstance(change, Mapping):
        return {}
    kept = {key: change[key] for key in ("path", "kind", "movePath", "move_path") if key in change}
    kind = kept.get("kind")
    if isinstance(kind, Mapping):  # v2: {"type": "update", "movePath": …}
        kept["kind"] = kind.get("type")
        if "movePath" in kind or "move_path" in kind:
            kept["movePath"] = kind.get("movePath", kind.get("move_path"))
    if "move_path" in kept:
        kept["movePath"] = kept.pop("move_path")
    return kept


def _action(action: object) -> dict[str, object]:
    if not isinstance(action, Mapping):
        return {}
    return {key: action[key] for key in ("type", "path", "query", "command") if key in action}


def item_from_notification(
    message: Mapping[str, Any], *, method: str = COMPLETED_METHOD
) -> CompletedItem | None:
    """The item of a ``method`` notification (``item/completed``, or
    ``item/started`` to remember an item that may never complete), else ``None``."""
    if message.get("method") != method:
        return None
    params = message.get("params")
    item = params.get("item") if isinstance(params, Mapping) else None
    if not isinstance(item, Mapping):
        return None
    raw_type = item.get("type")
    source_type = raw_type if isinstance(raw_type, str) else "unknown"
    item_type = camel_case(source_type)
    synthesized = is_synthesized_output(item.get("aggregatedOutput")) or is_synthesized_output(
        item.get("result")
    )
    return CompletedItem(
        source="app-server",
        item_type=item_type,
        source_type=source_type,
        item_id=item.get("id"),
        status="interrupted" if synthesized else item.get("status", "completed"),
        fields=pick_fields(item_type, item),
        synthesized=synthesized,
    )
