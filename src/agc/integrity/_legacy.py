"""The legacy store format: read and checked, never trusted more than it deserves.

Stores written before run manifests existed differ from agc's format in two ways:

* a transcript is sealed by ``<runId>.jsonl.sha256`` holding only the hex SHA-256 of the
  file (no file name, final newline optional), and the run has no manifest, so a file
  deleted with its sidecar cannot be told from one never written;
* tool events of every run were appended to one shared file, ``audit/tool-events.jsonl``,
  each record naming its ``run_id``. No digest covers that file: its records cannot be
  verified, and anyone who can write the store can add records in any run's name.

This module is the only place that knows about that format. The verifier asks it once
per run (:func:`detect_legacy_run`) and, for a legacy run, lets it judge the artifacts
(:meth:`LegacyRun.judge`); ``agc runs``, ``agc show`` and ``agc recover`` ask the run
reader's ``is_legacy_store_run``, which decides the same without hashing anything. Records of the
shared file are reported as unverified (``unverified-records``, a warning) for every run
they name and never counted as, or merged with, a run's verified tool events.
:func:`read_legacy_tool_events` reads them for a caller who asks for them by name.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Container, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

from agc._core.digest import Algorithm
from agc._core.record import FrozenRecord, record
from agc._core.report import Finding
from agc._core.sidecar import Sidecar
from agc._core.storage import Store
from agc._core.store import LEGACY_TOOL_EVENTS, StoreLayout, validate_run_id
from agc.errors import StoreError, UnsafePathError
from agc.integrity._store_io import iter_json_lines, iter_json_objects

if TYPE_CHECKING:
    from agc.integrity._observation import ArtifactObservation

__all__ = [
    "EVERY_RUN",
    "LegacyFindingCode",
    "LegacyRun",
    "chained_run_ids",
    "count_legacy_tool_events",
    "detect_legacy_run",
    "has_legacy_sidecars",
    "read_legacy_tool_events",
    "unverified_records_finding",
]

LegacyFindingCode = Literal["legacy-format", "unverified-records"]
"""The finding codes only this module emits."""

_DetectCode = Literal["manifest-missing"]
C = TypeVar("C", bound=str)


def read_legacy_tool_events(
    run_id: str, store: str | os.PathLike[str] | None = None
) -> Iterator[dict[str, Any]]:
    """Yield the records of the shared ``audit/tool-events.jsonl`` whose ``run_id`` is
    ``run_id``: UNVERIFIED records (no seal covers the shared file).

    Lines that are not JSON objects are skipped.

    Raises:
        RunIdInvalidError: bad run id.
        UnsafePathError: the shared file is a symlink.
        StoreError: it is not a regular file (a FIFO, a folder) or cannot be read.
    """
    run_id = validate_run_id(run_id)
    layout = StoreLayout.at(store)
    for event in iter_json_objects(layout.legacy_tool_events_path):
        if event.get("run_id") == run_id:
            yield event


def count_legacy_tool_events(store: Store, run_id: str) -> int:
    """How many records of the shared file name ``run_id`` (0 when there is no such
    file), in any store; lines that are not JSON objects are skipped.

    Raises:
        StoreError: the shared file is a symlink, not a regular file (a FIFO, a folder)
            or cannot be read: the verifier cannot look (exit 3), as for any store file
            it cannot read; never a usage error.
    """
    run_id = validate_run_id(run_id)
    where = store.url_of(LEGACY_TOOL_EVENTS)
    odd = store.odd_entry(LEGACY_TOOL_EVENTS)
    if odd is not None:
        raise StoreError(
            f"{where} is a symlink; agc does not follow it"
            if odd == "symlink"
            else f"{where} is not a regular file"
        )
    try:
        with store.stream(LEGACY_TOOL_EVENTS) as found:
            if found is None:
                return 0
            return sum(1 for record in iter_json_lines(found[0]) if record.get("run_id") == run_id)
    except UnsafePathError as exc:
        raise StoreError(exc.message, hint=exc.hint) from exc


def unverified_records_finding(count: int) -> Finding[LegacyFindingCode]:
    """The warning for ``count`` records of the shared file that name the run."""
    return Finding(
        "unverified-records",
        f"{count} tool-event record(s) for this run in the legacy shared "
        "audit/tool-events.jsonl cannot be verified (no seal covers that file); "
        "they are not part of the verified run",
        "warning",
        artifact="tool-events",
        actual={"records": count},
    )


@record
class LegacyRun(FrozenRecord):
    """A run in the legacy format: no manifest, a digest-only SHA-256 transcript sidecar.

    Attributes:
        shared_records: records of the shared tool-events file that name the run.
    """

    shared_records: int

    def judge(
        self, obs: ArtifactObservation, modern: Sequence[Finding[C]]
    ) -> list[Finding[C | LegacyFindingCode]]:
        """The findings for one artifact of a legacy run, given what the verifier found
        judging it without a manifest (``modern``).

        Tool events kept only in the shared file are not a missing file: the verifier
        reports them as unverified records (:func:`unverified_records_finding`), so here
        they have no finding; with no record for the run in the shared file they stay
        ``missing``. A legacy sidecar that counted adds a ``legacy-format`` warning.
        """
        if obs.kind == "tool-events" and obs.file_type == "absent" and self.shared_records:
            return []
        findings: list[Finding[C | LegacyFindingCode]] = list(modern)
        counted = obs.sidecars.get(obs.algorithm) if obs.algorithm is not None else None
        if isinstance(counted, Sidecar) and counted.legacy:
            findings.append(
                Finding(
                    "legacy-format",
                    f"{obs.kind} has a legacy digest-only SHA-256 sidecar (no file name, "
                    "no run manifest: a deleted file cannot be told from one never written)",
                    "warning",
                    artifact=obs.kind,
                )
            )
        return findings


def detect_legacy_run(
    transcript: ArtifactObservation,
    *,
    linked: Callable[[], bool],
    shared_records: int,
) -> tuple[LegacyRun | None, list[Finding[_DetectCode]]]:
    """Whether a run without a manifest is in the legacy format, in any store.

    It is when its transcript's only sidecar is a digest-only SHA-256 one, unless the
    store chain links the run: a chained run had a manifest, so it is a run whose
    manifest was removed and whose sidecars were rewritten in the legacy format (a
    downgrade), reported as ``manifest-missing``.

    Call it only for a run that has no manifest and no manifest finding.

    Args:
        transcript: the observation of the run's transcript.
        linked: whether the store's chain links the run (called only for a legacy
            sidecar; a chain that cannot be read counts as linking it: a store with a
            damaged chain is not a legacy store). The chain's form is the store's: a
            log in a folder (:func:`chained_run_ids`), link objects in an object store.
        shared_records: records of the legacy shared tool-events file naming the run
            (:func:`count_legacy_tool_events`; 0 where the store has no such file).

    Raises:
        StoreError: as ``linked``.
    """
    if not has_legacy_sidecars(transcript.sidecars):
        return None, []
    if linked():
        return None, [
            Finding(
                "manifest-missing",
                "run manifest missing (the store chain links this run)",
                artifact="manifest",
            )
        ]
    return LegacyRun(shared_records=shared_records), []


def has_legacy_sidecars(sidecars: Mapping[Algorithm, Sidecar | str]) -> bool:
    """Whether a transcript's sidecars (by algorithm; a string: one that cannot be read)
    are the legacy store format's: a digest-only SHA-256 sidecar and no BLAKE3 one."""
    sidecar = sidecars.get("sha256")
    return isinstance(sidecar, Sidecar) and sidecar.legacy and "blake3" not in sidecars


class _EveryRun(Container[str]):
    """What an unreadable chain links: every run (see :func:`chained_run_ids`)."""

    def __contains__(self, run_id: object) -> bool:
        return True


EVERY_RUN: Final[Container[str]] = _EveryRun()
"""What a chain that cannot be read links: every run id."""


def chained_run_ids(layout: StoreLayout) -> Container[str]:
    """The run ids ``audit/chain.jsonl`` links, read once (for a listing of many runs
    asking whether each is a legacy one). A log that cannot be read as a file links
    every run, as for :func:`detect_legacy_run`: a store with a damaged chain is not a
    legacy store."""
    from agc.integrity._chain import read_chain  # noqa: PLC0415 - only for a legacy sidecar

    try:
        entries, _ = read_chain(layout)
    except FileNotFoundError:
        return frozenset()
    except (UnsafePathError, StoreError, OSError):
        return EVERY_RUN
    return frozenset(entry.run_id for entry in entries)
