"""Integrity: sealed append-only JSONL writers, sidecars, manifests and the verifier.

The names below are loaded on first use (PEP 562), so that ``agc-verify``, which needs
only the verifier, does not pay for importing the writer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from agc._core.lazy import lazy_names as _lazy_names

if _TYPE_CHECKING:
    from agc._core.digest import ALGORITHMS, DEFAULT_ALGORITHM, Algorithm
    from agc._core.jsonl import FileSeal, FsyncPolicy, JsonlFileWriter
    from agc.integrity._audit import (
        audit_csv,
        audit_html,
        build_audit,
    )
    from agc.integrity._chain import chain_pending_path
    from agc.integrity._diff import (
        DiffSide,
        diff_run,
    )
    from agc.integrity._export import (
        export_copy,
        export_session,
        iter_copy_lines,
        iter_session_lines,
    )
    from agc.integrity._extend import Extension, extend_run, sealed_prefix_differs
    from agc.integrity._ingest import (
        Companion,
        IngestSummary,
        ingest_lines,
        ingest_stream,
    )
    from agc.integrity._kept import KeptArtifact, check_run_kept
    from agc.integrity._legacy import read_legacy_tool_events
    from agc.integrity._manifest import ArtifactSeal, RunManifest
    from agc.integrity._recover import (
        RecoveryReport,
        recover_run,
        recover_store,
    )
    from agc.integrity._run_reader import (
        check_object_run,
        list_run_versions,
        verify_policy,
    )
    from agc.integrity._runs import (
        RunListing,
        iter_records,
        list_runs,
        run_is_sealed,
        unwrap_record,
    )
    from agc.integrity._seal import seal_file
    from agc.integrity._signing import (
        SigningKey,
        generate_keypair,
        load_signing_key,
        load_trusted_keys,
    )
    from agc.integrity._store_io import read_manifest, read_run_manifest
    from agc.integrity._store_verify import (
        StoreFindingCode,
        StoreReport,
        check_store,
    )
    from agc.integrity._upload import upload_sealed_file
    from agc.integrity._verdict import (
        Verdict,
        VerdictCategory,
        category_of,
        count_verdicts,
        finding_text,
        most_severe,
        verdict_of,
    )
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
    "Companion",
    "DiffSide",
    "Extension",
    "FileSeal",
    "Finding",
    "FsyncPolicy",
    "IngestSummary",
    "JsonlFileWriter",
    "JsonlWriter",
    "KeptArtifact",
    "RecoveryReport",
    "RunFindingCode",
    "RunListing",
    "RunManifest",
    "RunReport",
    "RunWriters",
    "SigningKey",
    "StoreFindingCode",
    "StoreReport",
    "ToolEventWriter",
    "TranscriptWriter",
    "Verdict",
    "VerdictCategory",
    "audit_csv",
    "audit_html",
    "build_audit",
    "category_of",
    "chain_pending_path",
    "check_object_run",
    "check_run",
    "check_run_kept",
    "check_store",
    "count_verdicts",
    "diff_run",
    "export_copy",
    "export_session",
    "extend_run",
    "finding_text",
    "generate_keypair",
    "ingest_lines",
    "ingest_stream",
    "iter_copy_lines",
    "iter_records",
    "iter_session_lines",
    "list_run_versions",
    "list_runs",
    "load_signing_key",
    "load_trusted_keys",
    "most_severe",
    "open_run",
    "read_legacy_tool_events",
    "read_manifest",
    "read_run_manifest",
    "read_tool_events",
    "recover_run",
    "recover_store",
    "run_is_sealed",
    "seal_file",
    "sealed_prefix_differs",
    "unwrap_record",
    "upload_sealed_file",
    "verdict_of",
    "verify_policy",
    "verify_run",
]

_HOMES = {
    "agc._core.digest": ("ALGORITHMS", "DEFAULT_ALGORITHM", "Algorithm"),
    "agc.integrity._audit": (
        "audit_csv",
        "audit_html",
        "build_audit",
    ),
    "agc.integrity._chain": ("chain_pending_path",),
    "agc.integrity._diff": (
        "DiffSide",
        "diff_run",
    ),
    "agc.integrity._extend": ("Extension", "extend_run", "sealed_prefix_differs"),
    "agc.integrity._ingest": (
        "Companion",
        "IngestSummary",
        "ingest_stream",
        "ingest_lines",
    ),
    "agc.integrity._recover": (
        "RecoveryReport",
        "recover_run",
        "recover_store",
    ),
    "agc.integrity._runs": (
        "RunListing",
        "iter_records",
        "list_runs",
        "run_is_sealed",
        "unwrap_record",
    ),
    "agc.integrity._upload": ("upload_sealed_file",),
    "agc.integrity._run_reader": (
        "check_object_run",
        "list_run_versions",
        "verify_policy",
    ),
    "agc.integrity._seal": ("seal_file",),
    "agc.integrity._store_verify": (
        "StoreFindingCode",
        "StoreReport",
        "check_store",
    ),
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
    "agc.integrity._store_io": ("read_manifest", "read_run_manifest"),
    "agc.integrity._verdict": (
        "Verdict",
        "VerdictCategory",
        "category_of",
        "count_verdicts",
        "finding_text",
        "most_severe",
        "verdict_of",
    ),
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
_MODULE_OF = {name: (module, name) for module, names in _HOMES.items() for name in names}


__getattr__, __dir__ = _lazy_names(globals(), _MODULE_OF)
