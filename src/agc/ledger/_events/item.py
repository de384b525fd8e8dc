"""The one shape every input is turned into before records are built."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

__all__ = ["SKIPPED_ITEM_TYPES", "CompletedItem", "Source", "camel_case"]

Source = Literal["app-server", "exec", "rollout"]

SKIPPED_ITEM_TYPES: Final = frozenset(
    {
        "agentMessage",
        "userMessage",
        "plan",
        "reasoning",
        "contextCompaction",
        "hookPrompt",
        "todoList",
    }
)
"""Item types never recorded (the final answer is in the conversation file, and
reasoning is not this ledger's business). ``todoList`` is ``codex exec``'s plan."""


@dataclass(frozen=True)
class CompletedItem:
    """One completed item, reduced to the fields the ledger may use.

    Attributes:
        source: which input it came from.
        item_type: the app-server's camelCase type (``commandExecution``,
            ``mcpToolCall`` …);
            an unknown type keeps the input's own word.
        source_type: the input's own word (``command_execution``, ``function_call``…).
        item_id: the input's item id, unchecked (records clean it).
        status: the input's status, unchecked.
        fields: the allowed raw fields, in app-server camelCase: ``command``,
            ``exitCode``, ``durationMs``, ``commandActions``, ``server``, ``tool``,
            ``arguments``, ``hasError``, ``resultIsError``, ``changes`` (each with
            ``path``, ``kind``, ``movePath`` only), ``path``, ``query``, ``name``,
            ``namespace``, ``success``.
    """

    source: Source
    item_type: str
    source_type: str
    item_id: object = None
    status: object = None
    fields: Mapping[str, object] = field(default_factory=dict)


def camel_case(word: str) -> str:
    """``command_execution`` -> ``commandExecution``; camelCase input is unchanged."""
    head, *rest = word.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)
