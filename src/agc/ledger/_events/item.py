"""The one shape every input is turned into before records are built."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

__all__ = [
    "SKIPPED_ITEM_TYPES",
    "SYNTHESIZED_OUTPUT_PREFIX",
    "CompletedItem",
    "Source",
    "camel_case",
    "is_synthesized_output",
    "shell_script",
]

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
        "error",
    }
)
"""Item types never recorded (the final answer is in the conversation file, and
reasoning is not this ledger's business). ``todoList`` is ``codex exec``'s plan;
``error`` is a warning ``codex exec`` shows as an item (a retried stream, unknown model
metadata), not something the agent did."""


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
        synthesized: see the attribute's note.
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
    synthesized: bool = False
    """Its output was not the tool's: ``agc resume --strategy synthesize`` answered a
    call that was interrupted (the item's status is then ``interrupted``)."""


def camel_case(word: str) -> str:
    """``command_execution`` -> ``commandExecution``; camelCase input is unchanged."""
    head, *rest = word.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


SYNTHESIZED_OUTPUT_PREFIX: Final = "agc resume: this tool call was interrupted"
"""How the result ``agc resume --strategy synthesize`` writes for an interrupted call
begins (docs/resume.md, "synthesize")."""


def is_synthesized_output(output: object) -> bool:
    """True for a tool output that agc synthesized for an interrupted call: a string,
    or a list of content parts (``{"type": "input_text", "text": …}``, MCP
    ``{"type": "text", "text": …}``) or an MCP result ``{"content": […]}``, whose text
    begins with :data:`SYNTHESIZED_OUTPUT_PREFIX`. Only the beginning is compared;
    nothing of the output is kept."""
    if isinstance(output, Mapping):
        output = output.get("content", output.get("output"))
    if isinstance(output, list) and output:
        first = output[0]
        output = first.get("text") if isinstance(first, Mapping) else first
    return isinstance(output, str) and output.lstrip().startswith(SYNTHESIZED_OUTPUT_PREFIX)


_SHELLS: Final = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish"})
_POWERSHELLS: Final = frozenset({"pwsh", "pwsh.exe", "powershell", "powershell.exe"})


_LONG_COMMAND: Final = 256 * 1024
# "bash -lc '<script>'" with the script single-quoted as POSIX shells read it (a quote
# inside written '\''): the one wrapper shape read without shlex in a long command.
_QUOTED_WRAPPER: Final = re.compile(
    r"(?P<shell>[^\s'\"\\]+)[ \t]+(?:-c|-lc)[ \t]+'(?P<script>(?:[^']|'\\'')*+)'"
)


def shell_script(command: str) -> str:
    """The script of a command Codex wrapped in a shell, else the command as is.

    Codex runs a model's command through the user's shell and reports the whole argv
    joined (``bash -lc 'cat x'``, ``/bin/zsh -lc 'cat x'``, ``powershell.exe
    -NoProfile -Command …``), while a rollout's ``exec_command`` call holds only the
    script (``cat x``). The ledger records the script, so that the same command reads
    the same from every input.

    A command longer than 256 KiB is not given to :func:`shlex.split` (its time grows
    with the square of the length: hours for 100 MB); only ``<shell> -c|-lc '<script>'``
    is unwrapped then, which gives what :func:`shlex.split` would.
    """
    if len(command) > _LONG_COMMAND:
        quoted = _QUOTED_WRAPPER.fullmatch(command)
        if quoted is None or quoted.group("shell").rsplit("/", 1)[-1] not in _SHELLS:
            return command
        return quoted.group("script").replace("'\\''", "'")
    try:
        argv = shlex.split(command)
    except ValueError:
        return command
    if len(argv) == 3 and argv[0].rsplit("/", 1)[-1] in _SHELLS and argv[1] in {"-c", "-lc"}:
        return argv[2]
    if argv and argv[0].replace("\\", "/").rsplit("/", 1)[-1].lower() in _POWERSHELLS:
        rest = [a for a in argv[1:] if a.lower() not in {"-noprofile", "-nologo"}]
        if len(rest) == 2 and rest[0].lower() in {"-command", "-c"}:
            return rest[1]
    return command
