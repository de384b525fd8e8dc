"""Flows: the rules that combine agc's features, for library users and the command line.

Features (:mod:`agc.integrity`, :mod:`agc.resume`, :mod:`agc.ledger`,
:mod:`agc.extensions`, :mod:`agc.readiness`, :mod:`agc.serve`) never import each other;
what needs two of them lives here, built on their front doors only:

* resume only from verified evidence: :func:`history_from_run` (a recorded run,
  verified as ``agc-verify`` does, then unwrapped into its session),
  :func:`refuse_unverified`, :func:`refuse_unsigned_file`, :func:`has_recorded_run`
  (a store's snapshots are :func:`agc.resume.has_snapshot`);
* the audited serve sink: :class:`AuditSink` (each turn of :mod:`agc.serve` sealed as an
  agc run, with a turn ledger) and :func:`recover_turn_runs`;
* sealed readiness verdicts: :func:`seal_verdict`, :func:`verdict_statement`,
  :func:`check_sealed_verdict`, :func:`refuse_taken_run_id`;
* guards of recording and importing: :func:`explain_write_failure`,
  :func:`refuse_importing_own_file`, :func:`run_on_disk`, :func:`recover_hint`;
* new files a user names: :func:`write_new_file`, :func:`new_file_errors`.

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
    from agc._core.fs import (
        MACHINE_ERRNOS,
        TEMP_SUFFIX,
        PreparedWrite,
        atomic_write_bytes,
        describe_os_error,
        read_limited,
    )
    from agc._core.json import loads as parse_json
    from agc._core.report import SCHEMA_VERSION
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
    from agc.flows._evidence import (
        explain_write_failure,
        recover_hint,
        refuse_importing_own_file,
        run_on_disk,
    )
    from agc.flows._files import new_file_errors, write_new_file
    from agc.flows._readiness import (
        SealedVerdictCheck,
        check_sealed_verdict,
        refuse_taken_run_id,
        seal_verdict,
        verdict_statement,
    )
    from agc.flows._resume import (
        ProgressBar,
        has_recorded_run,
        history_from_run,
        refuse_unsigned_file,
        refuse_unverified,
        scan_history,
        streamable_size,
    )
    from agc.flows._serve import AuditSink, recover_turn_runs
    from agc.flows._text import orjson_indented

__all__ = [
    "ARTIFACT_KINDS",
    "MACHINE_ERRNOS",
    "SCHEMA_VERSION",
    "TEMP_SUFFIX",
    "AuditSink",
    "PreparedWrite",
    "ProgressBar",
    "Retention",
    "RunId",
    "SealedVerdictCheck",
    "Store",
    "StoreLayout",
    "atomic_write_bytes",
    "check_sealed_verdict",
    "describe_os_error",
    "explain_write_failure",
    "has_recorded_run",
    "history_from_run",
    "new_file_errors",
    "open_store",
    "orjson_indented",
    "parse_json",
    "read_limited",
    "recover_hint",
    "recover_turn_runs",
    "refuse_importing_own_file",
    "refuse_taken_run_id",
    "refuse_unsigned_file",
    "refuse_unverified",
    "resolve_store",
    "run_on_disk",
    "scan_history",
    "seal_verdict",
    "streamable_size",
    "validate_new_run_id",
    "validate_run_id",
    "verdict_statement",
    "write_new_file",
]

# name -> (module, attribute there)
_HOMES: dict[str, tuple[str, str]] = {
    **{
        name: ("agc._core.fs", name)
        for name in (
            "MACHINE_ERRNOS",
            "TEMP_SUFFIX",
            "PreparedWrite",
            "atomic_write_bytes",
            "describe_os_error",
            "read_limited",
        )
    },
    "parse_json": ("agc._core.json", "loads"),
    "SCHEMA_VERSION": ("agc._core.report", "SCHEMA_VERSION"),
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
            "recover_hint",
            "refuse_importing_own_file",
            "run_on_disk",
        )
    },
    **{name: ("agc.flows._files", name) for name in ("new_file_errors", "write_new_file")},
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
            "scan_history",
            "streamable_size",
        )
    },
    **{name: ("agc.flows._serve", name) for name in ("AuditSink", "recover_turn_runs")},
    "orjson_indented": ("agc.flows._text", "orjson_indented"),
}


__getattr__, __dir__ = _lazy_names(globals(), _HOMES)
