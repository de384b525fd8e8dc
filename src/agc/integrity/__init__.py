"""Integrity: sealed append-only JSONL writers, sidecars, manifests and the verifier.

The names below are loaded on first use (PEP 562), so that ``agc-verify``, which needs
only the verifier, does not pay for importing the writer.
"""

from __future__ import annotations

import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

if _TYPE_CHECKING:
    from agc._core.digest import ALGORITHMS, DEFAULT_ALGORITHM, Algorithm
    from agc._core.jsonl import FileSeal, FsyncPolicy, JsonlFileWriter
    from agc.integrity._export import (
        export_copy,
        export_session,
        iter_copy_lines,
        iter_session_lines,
    )
    from agc.integrity._kept import KeptArtifact, check_run_kept
    from agc.integrity._legacy import read_legacy_tool_events
    from agc.integrity._manifest import ArtifactSeal, RunManifest
    from agc.integrity._signing import (
        SigningKey,
        generate_keypair,
        load_signing_key,
        load_trusted_keys,
    )
    from agc.integrity._store_io import read_run_manifest
    from agc.integrity._verdict import Verdict
    from agc.integrity._verify import (
        ArtifactReport,
        Finding,
        RunFindingCode,
        RunReport,
        check_run,
        read_tool_events,
        verify_run,
    )
    from agc.integrity._writer import (
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
    "KeptArtifact",
    "RunFindingCode",
    "RunManifest",
    "RunReport",
    "RunWriters",
    "SigningKey",
    "ToolEventWriter",
    "TranscriptWriter",
    "Verdict",
    "check_run",
    "check_run_kept",
    "export_copy",
    "export_session",
    "generate_keypair",
    "iter_copy_lines",
    "iter_session_lines",
    "load_signing_key",
    "load_trusted_keys",
    "open_run",
    "read_legacy_tool_events",
    "read_run_manifest",
    "read_tool_events",
    "verify_run",
]

_HOMES = {
    "agc._core.digest": ("ALGORITHMS", "DEFAULT_ALGORITHM", "Algorithm"),
    "agc.integrity._export": (
        "export_copy",
        "export_session",
        "iter_copy_lines",
        "iter_session_lines",
    ),
    "agc.integrity._kept": ("KeptArtifact", "check_run_kept"),
    "agc.integrity._legacy": ("read_legacy_tool_events",),
    "agc.integrity._manifest": ("ArtifactSeal", "RunManifest"),
    "agc.integrity._signing": (
        "SigningKey",
        "generate_keypair",
        "load_signing_key",
        "load_trusted_keys",
    ),
    "agc.integrity._store_io": ("read_run_manifest",),
    "agc.integrity._verdict": ("Verdict",),
    "agc.integrity._verify": (
        "ArtifactReport",
        "Finding",
        "RunFindingCode",
        "RunReport",
        "check_run",
        "read_tool_events",
        "verify_run",
    ),
    "agc._core.jsonl": ("FileSeal", "FsyncPolicy", "JsonlFileWriter"),
    "agc.integrity._writer": (
        "JsonlWriter",
        "RunWriters",
        "ToolEventWriter",
        "TranscriptWriter",
        "open_run",
    ),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> _Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
