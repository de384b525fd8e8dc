"""Codex rollout session files (``~/.codex/sessions/…/rollout-*.jsonl``).

Lines are ``{timestamp, type, payload}``. A tool call is a ``response_item`` of type
``function_call`` / ``custom_tool_call`` / ``local_shell_call`` and completes with the
``*_output`` item of the same ``call_id``; ``web_search_call`` completes on its own.
The item is emitted when its output arrives (the rollout's ``item/completed``); the
output's text is never kept (only its beginning is compared, to tell an output that
``agc resume --strategy synthesize`` wrote for an interrupted call: that item's status
is ``interrupted``). A call with no output by the end of the input (a run interrupted
mid-tool) is emitted at the end with status ``incomplete``.

Rollouts of the first Codex CLI releases (before the ``RolloutItem`` line, 2025) hold
the same Responses API items bare, one per line, after a ``{"id", "timestamp",
"instructions"}`` session line and with ``{"record_type": "state"}`` lines between: a
line with no ``payload`` whose ``type`` is a response item's is read as that item.

Function names map to the app-server's item types: ``exec_command`` / ``shell`` and
``local_shell_call`` to ``commandExecution``, ``apply_patch`` to ``fileChange`` (paths
from the patch's ``*** Add/Update/Delete File:`` headers, never its lines),
``view_image`` to ``imageView``, ``mcp__<server>__<tool>`` to ``mcpToolCall``; any
other function is a ``functionCall`` with its ``name``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any, Final

from agc.errors import JsonInvalidError
from agc.ledger._events.item import CompletedItem, is_synthesized_output
from agc.ledger._fastjson import loads_event_text
from agc.ledger._lines import uncut
from agc.ledger._prefix import loads_prefix

__all__ = ["BARE_ITEM_TYPES", "ROLLOUT_LINE_TYPES", "RolloutAdapter"]

ROLLOUT_LINE_TYPES: Final = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)
_FAILED_KINDS: Final = frozenset({"turn_aborted", "task_failed"})
_CALL_TYPES: Final = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
_OUTPUT_TYPES: Final = frozenset({"function_call_output", "custom_tool_call_output"})
_SHELL_FUNCTIONS: Final = frozenset({"shell", "container.exec", "shell_command", "local_shell"})
BARE_ITEM_TYPES: Final = frozenset(
    {*_CALL_TYPES, *_OUTPUT_TYPES, "web_search_call", "message", "reasoning"}
)
"""``type`` of a response item written bare, one per line, by the first rollouts."""
_PATCH_HEADER_RE: Final = re.compile(
    r"^\*\*\* (Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.MULTILINE
)
_PATCH_KINDS: Final = {"Add": "add", "Update": "update", "Delete": "delete"}


def _arguments(raw: object, *, cut: bool) -> tuple[object, tuple[str | int, ...] | None]:
    """Function-call arguments: a JSON string parsed, anything else as is; with the
    path of the values the string's cut fell in (``None``: nothing of them was cut;
    ``()``: the arguments as a whole only).

    On the cut copy of an overlong line (``cut``), a string of arguments that ends in
    the cut mark is read as far as it is whole (:func:`loads_prefix`): its whole
    members, and the beginning of the one the cut fell in, which is named."""
    if not isinstance(raw, str):
        return raw, None
    text, was_cut = uncut(raw) if cut else (raw, False)
    if was_cut:
        found = loads_prefix(text)
        if found is None:
            return None, None
        return found.value, found.open_path
    try:
        return loads_event_text(raw), None
    except JsonInvalidError:
        return None, None


def _cut_patch(patch: object, *, cut: bool) -> tuple[object, bool]:
    """A patch's text (``apply_patch`` input), and whether the copy cut it: its last
    line, which the cut may have shortened, is then left out."""
    if not (cut and isinstance(patch, str)):
        return patch, False
    kept, was_cut = uncut(patch)
    return (kept[: kept.rfind("\n") + 1], True) if was_cut else (patch, False)


def _command(value: object) -> object:
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        return shlex.join(value)
    return value


def _patch_changes(patch: object) -> list[dict[str, object]] | None:
    if not isinstance(patch, str):
        return None
    changes: list[dict[str, object]] = []
    for match in _PATCH_HEADER_RE.finditer(patch):
        if match.group(3) is not None:
            if changes:
                changes[-1]["movePath"] = match.group(3).strip()
            continue
        changes.append({"path": match.group(2).strip(), "kind": _PATCH_KINDS[match.group(1)]})
    return changes


def _from_call(payload: Mapping[str, Any], *, cut: bool = False) -> CompletedItem:
    """The item of a call. ``cut``: the payload is from the cut copy of an overlong
    line (a string ending in the cut mark was cut): a command the cut fell in is kept
    with ``commandCut``, a patch with ``changesCut``, other cut arguments are left out."""
    kind = str(payload.get("type"))
    raw_name = payload.get("name")
    name = raw_name if isinstance(raw_name, str) else None
    call_id = payload.get("call_id", payload.get("id"))
    if kind == "local_shell_call":
        action = payload.get("action")
        parts = action.get("command") if isinstance(action, Mapping) else None
        was_cut = False
        if cut and isinstance(parts, list) and parts and isinstance(parts[-1], str):
            last, was_cut = uncut(parts[-1])  # only strings are cut: the list is whole
            parts = [*parts[:-1], last]
        command = _command(parts)
        fields: dict[str, object] = {} if command is None else {"command": command}
        if was_cut and command is not None:
            fields["commandCut"] = True
        return CompletedItem("rollout", "commandExecution", kind, call_id, None, fields)
    raw_args = payload.get("input") if kind == "custom_tool_call" else payload.get("arguments")
    args, open_path = (raw_args, None) if kind != "function_call" else _arguments(raw_args, cut=cut)
    open_member = open_path[0] if open_path else None  # the member the cut fell in
    mapping = args if isinstance(args, Mapping) else {}
    if name == "exec_command" or name in _SHELL_FUNCTIONS:
        key = "cmd" if "cmd" in mapping else "command"
        command = _command(mapping.get(key))
        fields = {} if command is None else {"command": command}
        # `exec_command` runs its `cmd` member: arguments cut before they end may have
        # lost a `cmd` after a `command`, so a `command` then is not known to be what ran.
        unsure = bool(open_path) and name == "exec_command" and key != "cmd"
        if command is not None and (open_member == key or unsure):
            fields["commandCut"] = True
        return CompletedItem("rollout", "commandExecution", kind, call_id, None, fields)
    if name == "apply_patch":
        if mapping:
            patch, patch_cut = mapping.get("input"), open_member == "input"
            if patch_cut and isinstance(patch, str):
                patch = patch[: patch.rfind("\n") + 1]
        else:
            patch, patch_cut = _cut_patch(raw_args, cut=cut)
        changes = _patch_changes(patch)
        fields = {} if changes is None else {"changes": changes}
        if changes is not None and patch_cut:
            fields["changesCut"] = True
        return CompletedItem("rollout", "fileChange", kind, call_id, None, fields)
    if open_member is not None and mapping:  # that member is incomplete: left out
        mapping = {k: v for k, v in mapping.items() if k != open_member}
        args = mapping
    if name == "view_image":
        fields = {"path": mapping["path"]} if "path" in mapping else {}
        return CompletedItem("rollout", "imageView", kind, call_id, None, fields)
    if isinstance(name, str) and name.startswith("mcp__") and name.count("__") >= 2:
        server, _, tool = name[len("mcp__") :].partition("__")
        fields = {"server": server, "tool": tool}
        if args is not None:
            fields["arguments"] = args
        return CompletedItem("rollout", "mcpToolCall", kind, call_id, None, fields)
    fields = {"name": name}
    if "namespace" in payload:
        fields["namespace"] = payload["namespace"]
    return CompletedItem("rollout", "functionCall", kind, call_id, None, fields)


_COUNTED: Final = CompletedItem("rollout", "functionCall", "function_call", None, "completed", {})
"""The item given once only the number of items matters (a type that is recorded, as
every rollout call's is)."""
_COUNTED_KINDS: Final = frozenset({*_CALL_TYPES, *_OUTPUT_TYPES, "web_search_call"})


class RolloutAdapter:
    """Pairs rollout calls with their outputs; see the module docstring."""

    def __init__(self) -> None:
        self._pending: dict[str, tuple[CompletedItem, object]] = {}
        self.completed: bool | None = None
        # Set when the items' contents no longer matter (the ledger is full): calls
        # then give _COUNTED items, so that only their number is kept.
        self.counting_only = False

    def feed(self, line: Mapping[str, Any], *, cut: bool = False) -> list[CompletedItem]:
        """Items completed by this rollout line (usually none or one). ``cut``: the line
        is the cut copy of an overlong line (:class:`agc.ledger._lines.OverlongLine`)."""
        payload = line.get("payload")
        line_type = line.get("type")
        if payload is None and line_type in BARE_ITEM_TYPES:
            payload, line_type = line, "response_item"  # a first-release rollout line
        # type() first: every parsed line is a dict, and an ABC check costs more.
        if type(payload) is not dict and not isinstance(payload, Mapping):
            return []
        kind = payload.get("type")
        if not isinstance(kind, str):
            return []
        if line_type == "event_msg":
            if kind == "task_complete":
                self.completed = True
            elif kind in _FAILED_KINDS:
                self.completed = False
            return []
        if line_type != "response_item":
            return []
        if self.counting_only and kind in _COUNTED_KINDS:
            return self._count(kind, payload)
        if kind in _CALL_TYPES:
            item = _from_call(payload, cut=cut)
            call_id = payload.get("call_id", payload.get("id"))
            if isinstance(call_id, str) and call_id:
                self._pending[call_id] = (item, payload.get("status"))
                return []
            return [_with_status(item, payload.get("status") or "completed")]
        if kind in _OUTPUT_TYPES:
            call_id = payload.get("call_id")
            found = self._pending.pop(call_id, None) if isinstance(call_id, str) else None
            if found is None:
                return []
            item, status = found
            if is_synthesized_output(payload.get("output")):
                # agc resume answered the interrupted call: it did not complete
                return [_with_status(item, "interrupted", synthesized=True)]
            return [_with_status(item, status if isinstance(status, str) else "completed")]
        if kind == "web_search_call":
            action = payload.get("action")
            query = action.get("query") if isinstance(action, Mapping) else None
            fields = {} if query is None else {"query": query}
            item = CompletedItem(
                "rollout", "webSearch", "web_search_call", payload.get("id"), None, fields
            )
            return [_with_status(item, payload.get("status") or "completed")]
        return []

    def _count(self, kind: str, payload: Mapping[str, Any]) -> list[CompletedItem]:
        """:meth:`feed` of a call, output or web search giving the same number of items,
        each :data:`_COUNTED` (no arguments parsed, no fields copied)."""
        if kind in _CALL_TYPES:
            call_id = payload.get("call_id", payload.get("id"))
            if isinstance(call_id, str) and call_id:
                self._pending[call_id] = (_COUNTED, None)
                return []
            return [_COUNTED]
        if kind in _OUTPUT_TYPES:
            call_id = payload.get("call_id")
            found = self._pending.pop(call_id, None) if isinstance(call_id, str) else None
            return [] if found is None else [_COUNTED]
        return [_COUNTED]  # web_search_call

    def finish(self) -> list[CompletedItem]:
        """Calls that never got an output, with status ``incomplete``, in call order."""
        left = [_with_status(item, "incomplete") for item, _ in self._pending.values()]
        self._pending.clear()
        return left


def _with_status(
    item: CompletedItem, status: object, *, synthesized: bool = False
) -> CompletedItem:
    return CompletedItem(
        item.source,
        item.item_type,
        item.source_type,
        item.item_id,
        status,
        item.fields,
        synthesized=synthesized,
    )
