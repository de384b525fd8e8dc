"""One run judged against the store chain: its links must name exactly its manifest.

Every closed manifest is linked once into the store chain (:mod:`agc.integrity._chain`);
a run re-opened for a new segment is linked again, and the manifest of its earlier link
is kept as ``audit/manifests/<runId>@<position>.json``. So, for a run with links
``L1 … Ln`` (log order):

* its current closed manifest hashes to ``Ln``'s digest and names ``Ln``'s position and
  predecessor; an open one (re-opened, not sealed again) was archived for ``Ln``;
* the manifest kept for every earlier link hashes to that link, names it, and its seals
  are among the run's current segments (the files only grew).

Run-level finding codes added here (documented in ``docs/format.md``):

==============  ======================================================================
``replaced``    the run's manifest is not the one its chain link recorded, or a link
                of an earlier state has no kept manifest: its files were replaced
                (deleted and written again, or copied from another store)
``deleted``     the chain links the run but its manifest is gone (``expected``
                holds the link's ``position`` and ``manifest_digest``)
``unchained``   a closed manifest that the chain does not link (after a crash
                between writing the manifest and its link, ``agc recover`` links it)
==============  ======================================================================

The chain itself (order, predecessors, head) is judged store-wide by
``agc-verify --all``; here only the run's own links are read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, Literal

from agc._core.record import replace
from agc._core.report import Finding
from agc.integrity._chain import ChainEntry, manifest_digest
from agc.integrity._judge import ArtifactReport, RunFindingCode, RunReport
from agc.integrity._manifest import RunManifest

__all__ = ["judge_run_links", "superseded_problems"]

Problem = tuple[Literal["replaced", "broken"], str, dict[str, Any]]
"""What is wrong with a superseded link: its kind, the sentence, the expected values."""

_RUN_MISSING: Final = "run-missing"


def superseded_problems(
    entry: ChainEntry,
    archived: RunManifest | None,
    current: RunManifest | None,
    archive_name: str,
    *,
    segments: bool = True,
) -> list[Problem]:
    """What is wrong with a link that a later link of the same run superseded.

    A re-open keeps the linked manifest as ``archive_name``: it must hash to the link,
    name the link's own position and predecessor (``broken`` otherwise: history was
    spliced around it), and each artifact it sealed must be the run's current seal or
    one of its current segments. ``current``: the run's manifest now (``None``: none);
    ``segments``: whether to compare the seals with it (not when it was unreadable).
    """
    if archived is None or manifest_digest(archived) != entry.manifest_digest:
        return [
            (
                "replaced",
                f"run {entry.run_id} is linked at chain link {entry.position} and again "
                f"later, but the manifest of link {entry.position} is not kept as "
                f"audit/manifests/{archive_name} (a re-open keeps it) or differs from the "
                "link: the run was replaced",
                {"position": entry.position, "manifest_digest": entry.manifest_digest},
            )
        ]
    own = archived.chain or {}
    if own.get("position") != entry.position or own.get("prev") != entry.prev:
        return [
            (
                "broken",
                f"run {entry.run_id}: the manifest kept for chain link {entry.position} "
                "names another position or previous link",
                {"position": own.get("position"), "prev": own.get("prev")},
            )
        ]
    problems: list[Problem] = []
    for kind, earlier in archived.artifacts.items() if segments else ():
        seal = current.artifacts.get(kind) if current else None
        states = [] if seal is None else [{"digest": seal.digest, "bytes": seal.bytes}]
        states += [
            {"digest": s.get("digest"), "bytes": s.get("bytes")}
            for s in (seal.segments if seal else ())
        ]
        if {"digest": earlier.digest, "bytes": earlier.bytes} not in states:
            problems.append(
                (
                    "replaced",
                    f"run {entry.run_id}: the {kind} sealed at chain link {entry.position} "
                    "is not among the run's current segments",
                    {"digest": earlier.digest, "bytes": earlier.bytes},
                )
            )
    return problems


def judge_run_links(
    report: RunReport,
    manifest: RunManifest | str | None,
    links: Sequence[ChainEntry],
    read_archived: Callable[[int], RunManifest | None],
    archive_name: Callable[[int], str],
    *,
    link_pending: bool = False,
) -> RunReport:
    """``report`` with the findings of the run's chain links (see the module doc).

    Args:
        report: the run's report from its files.
        manifest: the manifest that report judged (a string: it was unusable, which the
            report says already; ``None``: the run has none).
        links: every link of the run, in log order.
        read_archived: the manifest kept for the link at a position (``None`` when
            absent or unusable).
        archive_name: its file name, for messages.
        link_pending: a crash-interrupted link of this run is recorded (the chain's
            intent names it at its manifest's position): an unlinked closed manifest is
            then not reported (the next seal or ``agc recover`` links it).
    """
    if isinstance(manifest, str):
        return report  # manifest-invalid / not-regular-file: failing already
    run_id = report.run_id
    found: list[Finding[RunFindingCode]] = []
    if not links:
        if manifest is not None and manifest.closed and not link_pending:
            named = (manifest.chain or {}).get("position")
            where = f" (it names chain link {named})" if named is not None else ""
            found.append(
                Finding(
                    "unchained",
                    f"run {run_id}: its closed manifest{where} is not linked by the store "
                    f"chain (after a crash, `agc recover {run_id}` links it; otherwise its "
                    "files were put into this store from elsewhere)",
                    artifact="manifest",
                )
            )
        return _with(report, found)
    last = links[-1]
    expected = {"position": last.position, "manifest_digest": last.manifest_digest}
    if manifest is None:
        if any(f.code == _RUN_MISSING for f in report.findings):
            return _deleted(report, links)
        found.append(
            Finding(
                "deleted",
                f"run manifest is gone: chain link {last.position} recorded it",
                artifact="manifest",
                expected=expected,
            )
        )
    elif manifest.closed:
        digest = manifest_digest(manifest)
        if digest != last.manifest_digest:
            found.append(
                Finding(
                    "replaced",
                    f"run {run_id} was replaced: its manifest is not the one chain link "
                    f"{last.position} recorded",
                    artifact="manifest",
                    expected=expected,
                    actual={"manifest_digest": digest},
                )
            )
        elif manifest.chain != {"position": last.position, "prev": last.prev}:
            found.append(
                Finding(
                    "replaced",
                    f"run {run_id}: its manifest names another chain link than link "
                    f"{last.position}, which records it",
                    artifact="manifest",
                    expected={"position": last.position, "prev": last.prev},
                    actual=dict(manifest.chain or {}),
                )
            )
    superseded = list(links[:-1])
    if manifest is not None and not manifest.closed:
        superseded.append(last)  # re-opened since its last link: archived then
    for entry in superseded:
        for _, message, wanted in superseded_problems(
            entry, read_archived(entry.position), manifest, archive_name(entry.position)
        ):
            found.append(Finding("replaced", message, artifact="manifest", expected=wanted))
    return _with(report, found)


def _with(report: RunReport, found: list[Finding[RunFindingCode]]) -> RunReport:
    if not found:
        return report
    return replace(report, findings=(*report.findings, *found))


def _deleted(report: RunReport, links: Sequence[ChainEntry]) -> RunReport:
    """The report on a run the chain links and of which the store holds nothing: one
    ``deleted`` finding, which every artifact shares (none of them is there)."""
    last = links[-1]
    positions = ", ".join(str(e.position) for e in links)
    finding: Finding[RunFindingCode] = Finding(
        "deleted",
        f"run {report.run_id} was deleted: the store chain links it (link "
        f"{positions}) but the store holds none of its files",
        expected={"position": last.position, "manifest_digest": last.manifest_digest},
    )
    return replace(
        report,
        findings=(finding,),
        artifacts=tuple(
            ArtifactReport(a.kind, a.path, (finding,), None, None, None, None)
            for a in report.artifacts
        ),
    )
