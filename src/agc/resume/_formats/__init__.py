"""History formats: readers, writers and detection for the six supported formats.

``openai-chat``, ``anthropic`` and ``openai-responses`` are JSON arrays as sent to the
providers' APIs; ``codex-rollout``, ``claude-code`` and ``gemini-chat`` are the session files
the three agents keep on disk. Each is read into the neutral view of
:mod:`agc.resume._formats.model` and written back from it.
"""

from __future__ import annotations

from agc.resume._formats.detect import (
    SPECS,
    detect_format,
    dump_history,
    get_spec,
    load_history,
    read_history,
)
from agc.resume._formats.model import FORMAT_NAMES, Family, FormatName, FormatSpec, History

__all__ = [
    "FORMAT_NAMES",
    "SPECS",
    "Family",
    "FormatName",
    "FormatSpec",
    "History",
    "detect_format",
    "dump_history",
    "get_spec",
    "load_history",
    "read_history",
]
