"""The write policy on the command line: what a store keeps each written object under,
and what a write reports.

The options of the write policy (``--retention-days``, ``--retention-mode``,
``--legal-hold``: retention and legal hold of each object, for a store whose objects
carry them, such as an ``s3://`` store with Object Lock), the store that applies them,
the one stderr line printed after a run was uploaded, and ``agc seal --store``, which
puts a sealed file and its sidecar in such a store. See docs/object-store.md.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated, Any

import typer

from agc.cli.common import err_console, out_console
from agc.errors import UsageError
from agc.flows import Retention, Store, open_store

__all__ = [
    "LegalHoldOption",
    "RetentionDaysOption",
    "RetentionModeOption",
    "policy_store",
    "print_upload",
    "retention_from",
    "seal_to_store",
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
) -> Store:
    """The store a ``--store`` value names (also from ``$AGC_HOME``), asking the write
    policy of every object written to it (:meth:`Store.with_policy`).

    Raises:
        UsageError: an ``s3://`` URL that is not valid; a retention or legal hold asked
            of a store whose objects cannot carry one (a folder).
    """
    opened = open_store(store)
    try:
        return opened.with_policy(retention=retention_from(days, mode), legal_hold=legal_hold)
    except UsageError as exc:
        raise UsageError(
            "--retention-days and --legal-hold go with an s3:// store", hint=exc.hint
        ) from exc


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


def seal_to_store(store: Store, file: Path, sidecar: Path, as_json: bool) -> dict[str, Any]:
    """``agc seal FILE --store s3://…``: put FILE and its sidecar under ``files/`` of
    ``store`` (a store that is not a folder) and print where they went unless ``as_json``.

    Returns:
        The upload's dict (``object``, ``uploaded`` …), as :func:`agc.integrity.upload_sealed_file`.
    """
    from agc.integrity import upload_sealed_file  # noqa: PLC0415

    result = upload_sealed_file(store, file, sidecar)
    if not as_json:
        verb = "uploaded" if result["uploaded"] else "already in the store (same bytes)"
        out_console.print(f"{verb}: {result['object']}", markup=False)
    return result
