"""Integrity: sealed append-only JSONL writers, sidecars, manifests and the verifier."""

from __future__ import annotations

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
