"""``agc-verify --all``: every run of a store, the store chain, and stray files.

Store-level finding codes (beside each run's own findings):

=======================  ===============================================================
``run-deleted``          the chain links a run whose manifest and files are gone
``manifest-replaced``    a run's manifest differs from the digest its chain link recorded
``chain-broken``         links out of order, a link whose ``prev`` is not the digest of
                         the link before it, or a manifest whose own link disagrees
``chain-invalid``        an unreadable line in ``audit/chain.jsonl`` or a damaged head
``head-mismatch``        ``audit/chain-head.json`` does not name the last link
``head-not-in-chain``    the head pinned from outside (``--expect-head``) is not in the
                         chain: the store was rolled back or forked
``unchained``            a closed manifest that no chain link records
``unexpected``           a file that no manifest, sidecar or chain explains
``temp-file``            (warning) a temporary file of an atomic write: in progress, or
                         left by a killed writer (``agc recover`` removes leftovers)
``link-pending``         (warning) ``audit/chain-pending.json``: a link being made, or
                         interrupted (the next seal or ``agc recover`` completes it)
``empty``                the store holds no run (an empty store is never verified)
=======================  ===============================================================
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias, get_args

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from agc._core.fs import is_temp_name, read_small_file
from agc._core.report import Finding, Report
from agc._core.store import ARTIFACT_KINDS, ArtifactKind, StoreLayout, validate_run_id
from agc.errors import ManifestInvalidError, RunIdInvalidError, StoreError, UnsafePathError
from agc.integrity._chain import (
    chain_head_path,
    chain_lock_path,
    chain_log_path,
    chain_pending_path,
    manifest_digest,
    read_chain,
    read_head,
)
from agc.integrity._manifest import MAX_MANIFEST_BYTES, RunManifest
from agc.integrity._store_io import archived_manifest_path, read_manifest
from agc.integrity._verify import RunReport, check_run, signature_required

__all__ = ["StoreFindingCode", "StoreReport", "check_store"]

StoreFindingCode = Literal[
    "run-deleted",
    "manifest-replaced",
    "chain-broken",
    "chain-invalid",
    "head-mismatch",
    "head-not-in-chain",
    "unchained",
    "unexpected",
    "temp-file",
    "link-pending",
    "empty",
]
"""The store-level finding codes (documented in ``docs/evidence.md``)."""

_Finding: TypeAlias = Finding[StoreFindingCode]
_FINDING_KEYS: Final = ("code", "artifact", "severity", "message", "expected", "actual")

_RUN_ID: Final = r"[A-Za-z0-9._-]{1,128}"
_ARTIFACT_FILE: Final = re.compile(
    rf"(?P<run>{_RUN_ID})\.jsonl(\.b3|\.sha256|\.ckpt|(?P<quarantine>\.quarantine(-\d+)?))?"
)
_CHAIN_QUARANTINE: Final = re.compile(r"chain\.jsonl\.quarantine(-[1-9][0-9]*)?")
_MANIFEST_FILE: Final = re.compile(
    rf"(?P<run>{_RUN_ID})\.json|\.(?P<lock>{_RUN_ID})\.lock"
    rf"|(?P<archived>{_RUN_ID})@(?P<position>[1-9][0-9]*)\.json"
)


@dataclass(frozen=True)
class StoreReport(Report[StoreFindingCode]):
    """The verdict on a whole store.

    Attributes:
        store: the store folder.
        runs: one report per run, by run id.
        findings: store-level findings (chain, stray files).
        head: the chain head digest (``None`` for an empty chain) and its position.
    """

    CODES = frozenset(get_args(StoreFindingCode))

    store: str
    runs: tuple[RunReport, ...]
    findings: tuple[_Finding, ...]
    head: str | None
    head_position: int

    @property
    def complete(self) -> bool:
        """Every run complete and no store-level error finding."""
        return not self.errors and all(r.complete for r in self.runs)

    def _members(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "complete": self.complete,
            "summary": {
                "runs": len(self.runs),
                "complete": sum(r.complete for r in self.runs),
                "incomplete": sum(not r.complete for r in self.runs),
                "head": self.head,
                "head_position": self.head_position,
            },
            "findings": [f.to_dict(_FINDING_KEYS) for f in self.findings],
            "runs": [r.to_dict() for r in self.runs],
        }


def _discover(layout: StoreLayout, findings: list[_Finding]) -> set[str]:
    """Run ids named by files in the store; stray files become ``unexpected``."""
    runs: set[str] = set()
    known_audit = {
        "transcripts",
        "tool-events",
        "manifests",
        chain_log_path(layout).name,
        chain_head_path(layout).name,
        chain_lock_path(layout).name,
        layout.legacy_tool_events_path.name,
    }
    if layout.audit_dir.is_dir():
        for name in sorted(os.listdir(layout.audit_dir)):
            if name in known_audit or _CHAIN_QUARANTINE.fullmatch(name):
                continue
            if name == chain_pending_path(layout).name:
                findings.append(
                    Finding(
                        "link-pending",
                        "a chain link is being made or was interrupted by a crash "
                        "(audit/chain-pending.json); the next seal or `agc recover` completes it",
                        "warning",
                        artifact="store",
                    )
                )
            else:
                findings.append(_unexpected(f"audit/{name}"))
    # Sidecars, checkpoints and quarantine files: (run, kind, name, path in the store).
    companions: list[tuple[str, ArtifactKind, str, str]] = []
    for kind in ARTIFACT_KINDS:
        folder = layout.artifact_dir(kind)
        for name in sorted(os.listdir(folder)) if folder.is_dir() else []:
            relative = f"{folder.relative_to(layout.root)}/{name}"
            match = _ARTIFACT_FILE.fullmatch(name)
            if match is None or match.group("run") in {".", ".."}:
                findings.append(_unexpected(relative))
            elif name.endswith(".jsonl"):
                runs.add(match.group("run"))
            else:
                companions.append((match.group("run"), kind, name, relative))
    folder = layout.manifests_dir
    for name in sorted(os.listdir(folder)) if folder.is_dir() else []:
        match = _MANIFEST_FILE.fullmatch(name)
        name_run = match and (match.group("run") or match.group("lock") or match.group("archived"))
        if match is None or name_run in {".", ".."}:
            # A run id may start with a dot (.x -> .x.json); only . and .. are no run ids.
            findings.append(_unexpected(f"audit/manifests/{name}"))
        elif match.group("run"):
            runs.add(match.group("run"))
    for run_id, kind, name, relative in companions:
        if run_id not in runs:
            findings.append(_unexpected(relative))  # beside no artifact file, no manifest
        elif _is_quarantine_name(name) and not _quarantine_listed(layout, run_id, kind, name):
            findings.append(_unexpected(relative))
    return runs


def _is_quarantine_name(name: str) -> bool:
    match = _ARTIFACT_FILE.fullmatch(name)
    return match is not None and match.group("quarantine") is not None


def _quarantine_listed(layout: StoreLayout, run_id: str, kind: ArtifactKind, name: str) -> bool:
    """Whether the run's manifest records ``name`` as the artifact's quarantine file."""
    try:
        manifest = read_manifest(layout, run_id)
    except (ManifestInvalidError, UnsafePathError, StoreError):
        return True  # the run's own report says what is wrong with its manifest
    seal = manifest.artifacts.get(kind) if manifest is not None else None
    return seal is not None and (seal.quarantine or {}).get("file") == name


def _unexpected(relative: str) -> _Finding:
    # A name with control characters is quoted: it must not forge or hide report lines.
    shown = relative if relative.isprintable() else repr(relative)
    if is_temp_name(relative.rsplit("/", 1)[-1]):
        return Finding(
            "temp-file",
            f"temporary file {shown}: a write in progress, or left by a killed writer "
            "(`agc recover` removes leftovers)",
            "warning",
            artifact="store",
        )
    return Finding(
        "unexpected", f"unexpected file {shown} (no manifest lists it)", artifact="store"
    )


def check_store(
    store: str | os.PathLike[str] | None = None,
    *,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
    allow_unsigned: bool = False,
    expect_head: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> StoreReport:
    """Check every run of a store and the store chain; never raises on findings.

    Args:
        trusted_keys, require_signature, allow_unsigned: as :func:`check_run` (with
            trusted keys, every run must be signed by one of them).
        expect_head: a head digest pinned from outside; if the chain does not contain
            it, the store was rolled back or forked (``head-not-in-chain``).
        progress: called with ``(runs done, runs total)``.

    Raises:
        StoreError: the store cannot be read.
    """
    layout = StoreLayout.at(store)
    if not layout.root.is_dir():
        raise StoreError(f"store {layout.root} does not exist or is not a folder")
    try:
        required = signature_required(
            trusted_keys, require_signature=require_signature, allow_unsigned=allow_unsigned
        )
        return _check_store(layout, trusted_keys, required, expect_head, progress)
    except OSError as exc:
        # A folder or chain file of the store cannot be read: exit 3, never a verdict.
        raise StoreError(f"cannot read {exc.filename or layout.root}: {exc.strerror}") from exc


def _check_store(
    layout: StoreLayout,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None,
    require_signature: bool,
    expect_head: str | None,
    progress: Callable[[int, int], None] | None,
) -> StoreReport:
    findings: list[_Finding] = []
    run_ids = _discover(layout, findings)
    try:
        entries, unusable = read_chain(layout)
    except UnsafePathError:
        entries, unusable = [], 0
        findings.append(
            Finding(
                "chain-invalid",
                "audit/chain.jsonl is a symlink or not a regular file (not followed)",
                artifact="store",
            )
        )
    if unusable:
        findings.append(
            Finding(
                "chain-invalid",
                f"{unusable} unreadable line(s) in audit/chain.jsonl",
                artifact="store",
            )
        )
    run_ids |= {entry.run_id for entry in entries if _valid_run_id(entry.run_id)}

    reports: list[RunReport] = []
    ordered = sorted(run_ids)
    for done, run_id in enumerate(ordered, start=1):
        reports.append(
            check_run(
                run_id, layout.root, trusted_keys=trusted_keys, require_signature=require_signature
            )
        )
        if progress is not None:
            progress(done, len(ordered))

    if not ordered:
        findings.append(
            Finding(
                "empty",
                "the store holds no run (an empty store is never verified)",
                artifact="store",
            )
        )
    _check_chain(layout, entries, findings)
    head = read_head(layout)
    if head is None:
        findings.append(
            Finding("chain-invalid", "audit/chain-head.json is damaged", artifact="store")
        )
    else:
        last = entries[-1] if entries else None
        if (last is None and head.digest is not None) or (
            last is not None
            and (
                head.digest != last.manifest_digest
                or head.position != last.position
                or head.run_id != last.run_id
            )
        ):
            findings.append(
                Finding(
                    "head-mismatch",
                    "the chain head does not name the last link of audit/chain.jsonl",
                    artifact="store",
                    expected={"digest": last.manifest_digest if last else None},
                    actual={"digest": head.digest},
                )
            )
    if expect_head is not None and expect_head not in {e.manifest_digest for e in entries}:
        findings.append(
            Finding(
                "head-not-in-chain",
                "the expected head is not in the chain: the store was rolled back or forked",
                artifact="store",
                expected={"digest": expect_head},
                actual={"digest": entries[-1].manifest_digest if entries else None},
            )
        )
    return StoreReport(
        store=str(layout.root),
        runs=tuple(reports),
        findings=tuple(findings),
        head=entries[-1].manifest_digest if entries else None,
        head_position=entries[-1].position if entries else 0,
    )


def _valid_run_id(run_id: str) -> bool:
    try:
        validate_run_id(run_id)
    except RunIdInvalidError:
        return False
    return True


def _check_chain(layout: StoreLayout, entries: list[Any], findings: list[_Finding]) -> None:
    previous_digest: str | None = None
    latest_position: dict[str, int] = {}
    for entry in entries:
        latest_position[entry.run_id] = entry.position
    for index, entry in enumerate(entries, start=1):
        if entry.position != index or entry.prev != previous_digest:
            findings.append(
                Finding(
                    "chain-broken",
                    f"chain link {index} (run {entry.run_id}) does not follow link {index - 1}",
                    artifact="store",
                    expected={"position": index, "prev": previous_digest},
                    actual={"position": entry.position, "prev": entry.prev},
                )
            )
        previous_digest = entry.manifest_digest
        if not _valid_run_id(entry.run_id):
            continue
        if latest_position.get(entry.run_id) != entry.position:
            _check_superseded(layout, entry, findings)
            continue
        try:
            manifest = read_manifest(layout, entry.run_id)
        except (ManifestInvalidError, UnsafePathError, StoreError):
            continue  # the run's own report says what is wrong with it
        if manifest is None:
            if any(
                os.path.lexists(layout.artifact_path(entry.run_id, kind)) for kind in ARTIFACT_KINDS
            ):
                continue  # its files are there: the run's own report says manifest-missing
            findings.append(
                Finding(
                    "run-deleted",
                    f"run {entry.run_id} (chain link {entry.position}) was deleted",
                    artifact="store",
                    expected={"manifest_digest": entry.manifest_digest},
                )
            )
            continue
        if not manifest.closed:
            # Re-opened for a new segment since it was linked: the linked manifest was
            # archived then, and must still match this link.
            _check_superseded(layout, entry, findings)
            continue
        if manifest_digest(manifest) != entry.manifest_digest:
            findings.append(
                Finding(
                    "manifest-replaced",
                    f"manifest of run {entry.run_id} differs from its chain link",
                    artifact="store",
                    expected={"manifest_digest": entry.manifest_digest},
                    actual={"manifest_digest": manifest_digest(manifest)},
                )
            )
        elif (manifest.chain or {}).get("position") != entry.position:
            findings.append(
                Finding(
                    "chain-broken",
                    f"manifest of run {entry.run_id} names another chain position",
                    artifact="store",
                )
            )
        elif (manifest.chain or {}).get("prev") != entry.prev:
            # The manifest's own link (covered by its digest and signature) must name
            # the same predecessor as the log; otherwise the log was patched around a
            # replaced run.
            findings.append(
                Finding(
                    "chain-broken",
                    f"manifest of run {entry.run_id} names another previous link",
                    artifact="store",
                    expected={"prev": (manifest.chain or {}).get("prev")},
                    actual={"prev": entry.prev},
                )
            )
    linked = set(latest_position)
    superseded = {
        (e.run_id, e.position) for e in entries if latest_position[e.run_id] != e.position
    }
    manifests = layout.manifests_dir
    for name in sorted(os.listdir(manifests)) if manifests.is_dir() else []:
        match = _MANIFEST_FILE.fullmatch(name)
        if match is not None and match.group("archived"):
            if (match.group("archived"), int(match.group("position"))) not in superseded:
                findings.append(_unexpected(f"audit/manifests/{name}"))
            continue
        if match is None or not match.group("run"):
            continue
        run_id = match.group("run")
        try:
            manifest = read_manifest(layout, run_id)
        except (ManifestInvalidError, UnsafePathError, StoreError):
            continue
        if manifest is not None and manifest.closed and run_id not in linked:
            findings.append(
                Finding(
                    "unchained",
                    f"closed manifest of run {run_id} is not in the chain "
                    f"(after a crash, `agc recover {run_id}` links it)",
                    artifact="store",
                )
            )


def _check_superseded(layout: StoreLayout, entry: Any, findings: list[_Finding]) -> None:
    """A link superseded by a later seal of the same run (a re-opened segment).

    Its manifest was archived when the run was re-opened; it must still hash to the
    link's digest, and the run's current seals must extend it: each artifact's earlier
    seal is one of its current segments (whose file prefixes ``check_run`` verifies).
    """
    path = archived_manifest_path(layout, entry.run_id, entry.position)
    try:
        archived = RunManifest.from_bytes(
            read_small_file(path, max_bytes=MAX_MANIFEST_BYTES), expected_run_id=entry.run_id
        )
    except FileNotFoundError:
        archived = None
    except (ManifestInvalidError, UnsafePathError, StoreError):
        archived = None
    if archived is None or manifest_digest(archived) != entry.manifest_digest:
        findings.append(
            Finding(
                "manifest-replaced",
                f"run {entry.run_id}: the manifest of chain link {entry.position} (kept as "
                f"{path.name} when the run was re-opened) is missing or differs from the link",
                artifact="store",
                expected={"manifest_digest": entry.manifest_digest},
            )
        )
        return
    own = archived.chain or {}
    if own.get("position") != entry.position or own.get("prev") != entry.prev:
        # Its digest matches, so this is the manifest that was linked somewhere: the
        # link it names itself must be this one, or history was spliced around it.
        findings.append(
            Finding(
                "chain-broken",
                f"run {entry.run_id}: the manifest kept for chain link {entry.position} "
                "names another position or previous link",
                artifact="store",
                expected={"position": own.get("position"), "prev": own.get("prev")},
                actual={"position": entry.position, "prev": entry.prev},
            )
        )
        return
    try:
        current = read_manifest(layout, entry.run_id)
    except (ManifestInvalidError, UnsafePathError, StoreError):
        return  # the run's own report says what is wrong with it
    for kind, earlier in archived.artifacts.items():
        seal = current.artifacts.get(kind) if current else None
        states = [] if seal is None else [{"digest": seal.digest, "bytes": seal.bytes}]
        states += [
            {"digest": s.get("digest"), "bytes": s.get("bytes")}
            for s in (seal.segments if seal else ())
        ]
        if {"digest": earlier.digest, "bytes": earlier.bytes} not in states:
            findings.append(
                Finding(
                    "manifest-replaced",
                    f"run {entry.run_id}: the {kind} sealed at chain link {entry.position} "
                    "is not among the run's current segments",
                    artifact="store",
                    expected={"digest": earlier.digest, "bytes": earlier.bytes},
                )
            )
