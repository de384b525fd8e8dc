"""Command-line pieces for object stores (``--store s3://bucket/prefix``).

The options of the write policy (``--retention-days``, ``--retention-mode``,
``--legal-hold``) and of the verifier (the same retention as a policy to check), and
``agc recover`` / ``agc seal`` for an object store. See docs/object-store.md.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated, Any

import typer

from agc.cli.common import emit_json, err_console, out_console
from agc.errors import UsageError
from agc.exitcodes import ExitCode
from agc.flows import ObjectStore, Retention, object_store_of
from agc.integrity import SigningKey

__all__ = [
    "LegalHoldOption",
    "RetentionDaysOption",
    "RetentionModeOption",
    "policy_store",
    "print_upload",
    "recover_remote",
    "retention_from",
    "seal_to_object_store",
]


class LockModeChoice(enum.StrEnum):
    COMPLIANCE = "COMPLIANCE"
    GOVERNANCE = "GOVERNANCE"


RetentionDaysOption = Annotated[
    int | None,
    typer.Option(
        "--retention-days",
        help="s3:// stores: Object Lock retention of each object, in days "
        "(default: the bucket's default retention). Also $AGC_RETENTION_DAYS.",
        envvar="AGC_RETENTION_DAYS",
        show_default=False,
        min=1,
        max=36500,
    ),
]
RetentionModeOption = Annotated[
    LockModeChoice,
    typer.Option(
        "--retention-mode",
        help="s3:// stores: COMPLIANCE (nobody can shorten it) or GOVERNANCE.",
        envvar="AGC_RETENTION_MODE",
        case_sensitive=False,
    ),
]
LegalHoldOption = Annotated[
    bool,
    typer.Option("--legal-hold", help="s3:// stores: an Object Lock legal hold on each object."),
]


def retention_from(days: int | None, mode: LockModeChoice) -> Retention | None:
    return None if days is None else Retention(mode.value, days)


def policy_store(
    store: Path | None, days: int | None, mode: LockModeChoice, legal_hold: bool
) -> Path | ObjectStore | None:
    """The ``--store`` value with the write policy: an :class:`ObjectStore` for an
    ``s3://`` store (also from ``$AGC_HOME``), else the folder unchanged.

    Raises:
        UsageError: a retention or legal hold for a folder store.
    """
    remote = object_store_of(store)
    if remote is None:
        if days is not None or legal_hold:
            raise UsageError("--retention-days and --legal-hold go with an s3:// store")
        return store
    return remote.with_policy(retention=retention_from(days, mode), legal_hold=legal_hold)


def print_upload(upload: Any) -> None:
    """One line on stderr: where the run went, its chain position, its protection."""
    if not upload:
        return
    lock = upload.get("object_lock", {})
    retention = lock.get("retention")
    protection = (
        f"retained {retention['mode']} {retention['days']} days" if retention else "no retention"
    ) + (", legal hold" if lock.get("legal_hold") else "")
    err_console.print(
        f"uploaded to {upload['store']} at chain position {upload['position']} ({protection})",
        markup=False,
    )
    if not retention and not lock.get("legal_hold"):
        err_console.print(
            "warning: the objects have no Object Lock retention: they can be deleted "
            "(give --retention-days, or set a default retention on the bucket)",
            markup=False,
        )


def recover_remote(
    store: ObjectStore, run_id: str | None, signing_key: SigningKey | None, as_json: bool
) -> int:
    """``agc recover [RUN] --store s3://…``."""
    from agc.integrity import recover_run, recover_store  # noqa: PLC0415

    if run_id is None:
        healed = recover_store(store, signing_key=signing_key)
        if as_json:
            emit_json(healed.to_dict())
            return int(ExitCode.OK)
        if healed.linked:
            out_console.print(f"chain: completed the interrupted link of run {healed.linked}")
        for uploaded in healed.uploaded:
            out_console.print(f"uploaded staged run {uploaded}", markup=False)
        for failed, why in healed.failed:
            out_console.print(f"not uploaded: {failed}: {why}", markup=False)
        verdict = "healed" if healed.changed else "nothing to repair"
        out_console.print(f"store {healed.store}: {verdict}", markup=False)
        return int(ExitCode.FINDINGS if healed.failed else ExitCode.OK)
    report = recover_run(run_id, store, signing_key=signing_key)
    if as_json:
        emit_json(report.to_dict())  # with the upload, as "object_store"
        return int(ExitCode.OK)
    for artifact in report.artifacts:
        out_console.print(
            f"{artifact.kind:<12} {artifact.action}: {artifact.records} records, "
            f"{artifact.bytes} bytes",
            markup=False,
        )
    print_upload(report.object_store)
    out_console.print(f"run {run_id}: sealed and uploaded", markup=False)
    return int(ExitCode.OK)


def seal_to_object_store(
    store: ObjectStore, file: Path, sidecar: Path, as_json: bool
) -> dict[str, Any]:
    """``agc seal FILE --store s3://…``: put FILE and its sidecar under ``files/``."""
    from agc.integrity import upload_sealed_file  # noqa: PLC0415

    result = upload_sealed_file(store, file, sidecar)
    if not as_json:
        verb = "uploaded" if result["uploaded"] else "already in the store (same bytes)"
        out_console.print(f"{verb}: {result['object']}", markup=False)
    return result
