"""Flows: the rules that combine agc's features, for library users and the command line.

Features (:mod:`agc.integrity`, :mod:`agc.resume`, :mod:`agc.ledger`,
:mod:`agc.extensions`, :mod:`agc.readiness`, :mod:`agc.serve`) never import each other;
what needs two of them lives here, built on their front doors only:

* resume only from verified evidence: :func:`history_from_run` (a recorded run,
  verified as ``agc-verify`` does, then unwrapped into its session),
  :func:`refuse_unverified`, :func:`refuse_unsigned_file`, :func:`has_recorded_run`
  (a store's snapshots are :func:`agc.resume.has_snapshot`);
* the audited serve sink: :class:`AuditSink` (each turn of :mod:`agc.serve` sealed as an
  agc run, with a turn ledger; :class:`DescriptorReserve`, the descriptors it keeps for
  sealing) and :func:`recover_turn_runs`; :class:`ServeExtensions` (the enabled items
  of an extension store, projected for the sessions of ``agc serve``);
* sealed readiness verdicts: :func:`seal_verdict`, :func:`verdict_statement`,
  :func:`check_sealed_verdict`, :func:`refuse_taken_run_id`;
* guards of recording and importing: :func:`explain_write_failure`,
  :func:`refuse_importing_own_file`, :func:`run_on_disk`, :func:`recover_hint`;
* recording from a pipe as best effort: :class:`PassThrough` (counts the input and
  copies it on for ``--tee``) and :func:`drain` (reads the rest after a store failure);
* new files a user names: :func:`write_new_file`, :func:`new_file_errors`,
  :func:`new_file_beside`; a file replaced with a backup kept: :func:`replace_in_place`;
* client sessions captured as they happen: :func:`capture_hook_event` (one hook event
  appended to its run, the run sealed at the session's end, every failure kept as a
  :class:`CaptureFailure`) and :func:`capture_failures`; :func:`hooks_status` (whether
  a client will run agc's hook, with the hook's last capture failure).
* client session files into runs: :func:`session_companion` (tool events and session
  facts filled while a session file is recorded or imported), :func:`import_sessions`
  and :func:`import_session_file` (whole folders, incrementally: new segments of grown
  files, ``transcript-diverges`` for changed ones), :func:`rollout_of_exec_run` (the
  rollout a run recorded from ``codex exec --json`` resumes from),
  :func:`recover_session_run` (a crashed session's run sealed with its session facts).

It also re-exports the few foundation helpers an edge (the command line, a service)
needs: run ids (:class:`RunId`: the edge turns a user's text into one once, and the
functions it calls take it without checking it again) and the store layout, bounded
reads, atomic writes, strict JSON (:func:`parse_json`).

Every name is loaded on first use (PEP 562): ``import agc.flows`` imports no feature,
so ``agc-verify`` does not pay for the serve stack.

Example::

    from contextlib import ExitStack
    from agc.flows import history_from_run
    from agc.resume import check_loaded

    with ExitStack() as stack:
        history, size = history_from_run("run-42", "/var/agc", stack=stack,
                                          max_bytes=256 << 20)   # VerificationError if tampered
        report = check_loaded(history)
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from agc._core.lazy import lazy_names as _lazy_names

if _TYPE_CHECKING:
    from agc._core.capture_failures import (
        CAPTURE_FAILURES,
        fallback_failures_path,
        is_captured_run_id,
    )
    from agc._core.fs import (
        MACHINE_ERRNOS,
        TEMP_SUFFIX,
        PreparedWrite,
        atomic_write_bytes,
        describe_os_error,
        read_limited,
    )
    from agc._core.json import has_lone_surrogate
    from agc._core.json import loads as parse_json
    from agc._core.report import SCHEMA_VERSION, JsonItems, listed
    from agc._core.storage import Retention, Store
    from agc._core.store import (
        ARTIFACT_KINDS,
        RunId,
        StoreLayout,
        open_store,
        resolve_store,
        validate_new_run_id,
        validate_run_id,
    )
    from agc._core.words import counted
    from agc.flows._crosscheck import (
        check_captured_run_kept,
        cross_check_audit,
        cross_check_capture,
        cross_check_store,
    )
    from agc.flows._evidence import (
        explain_write_failure,
        recover_hint,
        refuse_importing_own_file,
        run_on_disk,
    )
    from agc.flows._files import (
        keep_backup,
        new_file_beside,
        new_file_errors,
        processes_holding,
        replace_in_place,
        sync,
        write_new_file,
    )
    from agc.flows._hook import (
        CaptureFailure,
        HookOutcome,
        capture_failures,
        capture_hook_event,
        captured_session,
        record_capture_failure,
        recorded_session_file,
    )
    from agc.flows._hooks_status import SessionCapture, hooks_status, session_capture
    from agc.flows._import_sessions import (
        SESSION_FOLDERS,
        ExecRollout,
        ImportOutcome,
        SessionCompanion,
        SessionFile,
        codex_sessions_folder,
        complete_lines,
        identify_session,
        import_recorded_session_file,
        import_session_file,
        import_sessions,
        recover_session_run,
        rollout_of_exec_run,
        session_companion,
        session_file_hint,
    )
    from agc.flows._readiness import (
        SealedVerdictCheck,
        check_sealed_verdict,
        refuse_taken_run_id,
        seal_verdict,
        verdict_statement,
    )
    from agc.flows._record import PassThrough, drain
    from agc.flows._resume import (
        ProgressBar,
        has_recorded_run,
        history_from_run,
        refuse_unsigned_file,
        refuse_unverified,
        run_session,
        scan_history,
        streamable_size,
    )
    from agc.flows._serve import AuditSink, DescriptorReserve, recover_turn_runs
    from agc.flows._serve_extensions import DEFAULT_MCP_STARTUP_WAIT_MS, ServeExtensions
    from agc.flows._text import orjson_indented

__all__ = [
    "ARTIFACT_KINDS",
    "CAPTURE_FAILURES",
    "DEFAULT_MCP_STARTUP_WAIT_MS",
    "MACHINE_ERRNOS",
    "SCHEMA_VERSION",
    "SESSION_FOLDERS",
    "TEMP_SUFFIX",
    "AuditSink",
    "CaptureFailure",
    "DescriptorReserve",
    "ExecRollout",
    "HookOutcome",
    "ImportOutcome",
    "JsonItems",
    "PassThrough",
    "PreparedWrite",
    "ProgressBar",
    "Retention",
    "RunId",
    "SealedVerdictCheck",
    "ServeExtensions",
    "SessionCapture",
    "SessionCompanion",
    "SessionFile",
    "Store",
    "StoreLayout",
    "atomic_write_bytes",
    "capture_failures",
    "capture_hook_event",
    "captured_session",
    "check_captured_run_kept",
    "check_sealed_verdict",
    "codex_sessions_folder",
    "complete_lines",
    "counted",
    "cross_check_audit",
    "cross_check_capture",
    "cross_check_store",
    "describe_os_error",
    "drain",
    "explain_write_failure",
    "fallback_failures_path",
    "has_lone_surrogate",
    "has_recorded_run",
    "history_from_run",
    "hooks_status",
    "identify_session",
    "import_recorded_session_file",
    "import_session_file",
    "import_sessions",
    "is_captured_run_id",
    "keep_backup",
    "listed",
    "new_file_beside",
    "new_file_errors",
    "open_store",
    "orjson_indented",
    "parse_json",
    "processes_holding",
    "read_limited",
    "record_capture_failure",
    "recorded_session_file",
    "recover_hint",
    "recover_session_run",
    "recover_turn_runs",
    "refuse_importing_own_file",
    "refuse_taken_run_id",
    "refuse_unsigned_file",
    "refuse_unverified",
    "replace_in_place",
    "resolve_store",
    "rollout_of_exec_run",
    "run_on_disk",
    "run_session",
    "scan_history",
    "seal_verdict",
    "session_capture",
    "session_companion",
    "session_file_hint",
    "streamable_size",
    "sync",
    "validate_new_run_id",
    "validate_run_id",
    "verdict_statement",
    "write_new_file",
]

# name -> (module, attribute there)
_HOMES: dict[str, tuple[str, str]] = {
    "check_captured_run_kept": ("agc.flows._crosscheck", "check_captured_run_kept"),
    "cross_check_audit": ("agc.flows._crosscheck", "cross_check_audit"),
    "cross_check_capture": ("agc.flows._crosscheck", "cross_check_capture"),
    "cross_check_store": ("agc.flows._crosscheck", "cross_check_store"),
    "is_captured_run_id": ("agc._core.capture_failures", "is_captured_run_id"),
    **{
        name: ("agc._core.fs", name)
        for name in (
            "MACHINE_ERRNOS",
            "TEMP_SUFFIX",
            "PreparedWrite",
            "atomic_write_bytes",
            "capture_failures",
            "capture_hook_event",
            "describe_os_error",
            "read_limited",
        )
    },
    "parse_json": ("agc._core.json", "loads"),
    "SCHEMA_VERSION": ("agc._core.report", "SCHEMA_VERSION"),
    "JsonItems": ("agc._core.report", "JsonItems"),
    "listed": ("agc._core.report", "listed"),
    "has_lone_surrogate": ("agc._core.json", "has_lone_surrogate"),
    "counted": ("agc._core.words", "counted"),
    **{name: ("agc._core.storage", name) for name in ("Retention", "Store")},
    **{
        name: ("agc._core.store", name)
        for name in (
            "ARTIFACT_KINDS",
            "RunId",
            "StoreLayout",
            "open_store",
            "resolve_store",
            "validate_new_run_id",
            "validate_run_id",
        )
    },
    **{
        name: ("agc.flows._evidence", name)
        for name in (
            "explain_write_failure",
            "fallback_failures_path",
            "recover_hint",
            "refuse_importing_own_file",
            "run_on_disk",
        )
    },
    **{
        name: ("agc.flows._files", name)
        for name in (
            "keep_backup",
            "new_file_beside",
            "new_file_errors",
            "processes_holding",
            "replace_in_place",
            "sync",
            "write_new_file",
        )
    },
    **{
        name: ("agc.flows._hook", name)
        for name in (
            "CaptureFailure",
            "HookOutcome",
            "capture_failures",
            "capture_hook_event",
            "captured_session",
            "record_capture_failure",
            "recorded_session_file",
        )
    },
    **{
        name: ("agc.flows._hooks_status", name)
        for name in ("SessionCapture", "hooks_status", "session_capture")
    },
    **{
        name: ("agc._core.capture_failures", name)
        for name in ("CAPTURE_FAILURES", "fallback_failures_path")
    },
    **{
        name: ("agc.flows._import_sessions", name)
        for name in (
            "ExecRollout",
            "ImportOutcome",
            "SessionCompanion",
            "SessionFile",
            "codex_sessions_folder",
            "complete_lines",
            "identify_session",
            "import_recorded_session_file",
            "import_session_file",
            "import_sessions",
            "recover_session_run",
            "rollout_of_exec_run",
            "session_companion",
            "session_file_hint",
            "SESSION_FOLDERS",
        )
    },
    **{
        name: ("agc.flows._readiness", name)
        for name in (
            "SealedVerdictCheck",
            "check_sealed_verdict",
            "refuse_taken_run_id",
            "seal_verdict",
            "verdict_statement",
        )
    },
    **{
        name: ("agc.flows._resume", name)
        for name in (
            "ProgressBar",
            "has_recorded_run",
            "history_from_run",
            "refuse_unsigned_file",
            "refuse_unverified",
            "run_session",
            "scan_history",
            "streamable_size",
        )
    },
    **{name: ("agc.flows._record", name) for name in ("PassThrough", "drain")},
    **{
        name: ("agc.flows._serve", name)
        for name in ("AuditSink", "DescriptorReserve", "recover_turn_runs")
    },
    **{
        name: ("agc.flows._serve_extensions", name)
        for name in ("DEFAULT_MCP_STARTUP_WAIT_MS", "ServeExtensions")
    },
    "orjson_indented": ("agc.flows._text", "orjson_indented"),
}


__getattr__, __dir__ = _lazy_names(globals(), _HOMES)
