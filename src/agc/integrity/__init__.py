"""Integrity: sealed append-only JSONL writers, sidecars, manifests and the verifier.

The names below are loaded on first use (PEP 562), so that ``agc-verify``, which needs
only the verifier, does not pay for importing the writer.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agc.integrity.hashing import ALGORITHMS, DEFAULT_ALGORITHM, Algorithm
    from agc.integrity.manifest import ArtifactSeal, RunManifest
    from agc.integrity.verify import (
        ArtifactReport,
        Finding,
        RunReport,
        check_run,
        read_tool_events,
        verify_run,
    )
    from agc.integrity.writer import (
        FileSeal,
        FsyncPolicy,
        JsonlFileWriter,
        JsonlWriter,
        RunWriters,
        ToolEventWriter,
        TranscriptWriter,
        open_run,
    )

__all__ = [
    "ALGORITHMS",
    "DEFAULT_ALGORITHM",
    "Algorithm",
    "ArtifactReport",
    "ArtifactSeal",
    "FileSeal",
    "Finding",
    "FsyncPolicy",
    "JsonlFileWriter",
    "JsonlWriter",
    "RunManifest",
    "RunReport",
    "RunWriters",
    "ToolEventWriter",
    "TranscriptWriter",
    "check_run",
    "open_run",
    "read_tool_events",
    "verify_run",
]

_HOMES = {
    "agc.integrity.hashing": ("ALGORITHMS", "DEFAULT_ALGORITHM", "Algorithm"),
    "agc.integrity.manifest": ("ArtifactSeal", "RunManifest"),
    "agc.integrity.verify": (
        "ArtifactReport",
        "Finding",
        "RunReport",
        "check_run",
        "read_tool_events",
        "verify_run",
    ),
    "agc.integrity.writer": (
        "FileSeal",
        "FsyncPolicy",
        "JsonlFileWriter",
        "JsonlWriter",
        "RunWriters",
        "ToolEventWriter",
        "TranscriptWriter",
        "open_run",
    ),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
