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
                         chain: the store was rolled back, forked or rewritten
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

import gc
import re
from collections.abc import Callable, Container, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, get_args

from agc._core.fs import is_temp_name
from agc._core.report import Finding, Report
from agc._core.signature_rule import signature_required
from agc._core.storage import ObjectVersion, Retention, Store
from agc._core.store import (
    ARTIFACT_DIRS,
    ARTIFACT_KINDS,
    LEGACY_TOOL_EVENTS,
    ArtifactKind,
    StoreArg,
    StoreLayout,
    is_run_id,
    is_unmade_default,
    open_store,
)
from agc.errors import (
    ManifestInvalidError,
    StoreError,
    UnsafePathError,
    UsageError,
)
from agc.integrity._chain import ChainEntry, manifest_digest
from agc.integrity._judge import RunReport
from agc.integrity._manifest import RunManifest
from agc.integrity._parallel import map_checks, resolve_jobs, start_checks
from agc.integrity._run_chain import judge_run_links, superseded_problems
from agc.integrity._run_reader import UNREAD, RunCheck, RunItem, verify_policy
from agc.integrity._store_view import StoreView
from agc.integrity._verdict import count_verdicts
from agc.integrity._version_findings import ObjectStoreFindingCode

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

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
    ObjectStoreFindingCode,
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
        good = sum(r.complete for r in self.runs)  # each run's verdict computed once
        return {
            "store": self.store,
            "complete": not self.errors and good == len(self.runs),
            "summary": {
                "runs": len(self.runs),
                "complete": good,
                "incomplete": len(self.runs) - good,
                "verdicts": {
                    v.word: n for v, n in count_verdicts(r.verdict for r in self.runs).items()
                },
                "head": self.head,
                "head_position": self.head_position,
            },
            "findings": [f.to_dict(_FINDING_KEYS) for f in self.findings],
            "runs": [r.to_dict() for r in self.runs],
        }


def _listed_runs(view: StoreView) -> set[str]:
    """Run ids named by files in the store: an artifact file ``<run>.jsonl`` or a
    manifest ``<run>.json`` (any other name is judged by :func:`_discover`)."""
    runs: set[str] = set()
    for kind in ARTIFACT_KINDS:
        for name in view.list_dir(ARTIFACT_DIRS[kind]) or []:
            if name.endswith(".jsonl"):
                match = _ARTIFACT_FILE.fullmatch(name)
                if match is not None and match.group("run") not in {".", ".."}:
                    runs.add(match.group("run"))
    for name in view.list_dir("audit/manifests") or []:
        match = _MANIFEST_FILE.fullmatch(name)
        # A run id may start with a dot (.x -> .x.json); only . and .. are no run ids.
        if match is not None and match.group("run") and match.group("run") not in {".", ".."}:
            runs.add(match.group("run"))
    return runs


def _discover(view: StoreView, findings: list[_Finding], runs: Container[str]) -> None:
    """Stray files (that :func:`_listed_runs` and the manifests of ``runs`` do not
    explain) become ``unexpected``."""
    for name in view.list_dir("audit") or []:
        if name in view.known_audit or _CHAIN_QUARANTINE.fullmatch(name):
            continue
        if name == "chain-pending.json":
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
    # Sidecars, checkpoints and quarantine files: (run, kind, name, folder, whether it
    # is a quarantine file).
    companions: list[tuple[str, ArtifactKind, str, str, bool]] = []
    for kind in ARTIFACT_KINDS:
        folder = ARTIFACT_DIRS[kind]
        for name in view.list_dir(folder) or []:
            match = _ARTIFACT_FILE.fullmatch(name)
            run = None if match is None else match.group("run")
            if run is None or run in {".", ".."}:
                findings.append(_unexpected(f"{folder}/{name}"))
            elif not name.endswith(".jsonl"):
                quarantine = match is not None and match.group("quarantine") is not None
                companions.append((run, kind, name, folder, quarantine))
    for name in view.list_dir("audit/manifests") or []:
        match = _MANIFEST_FILE.fullmatch(name)
        name_run = match and (match.group("run") or match.group("lock") or match.group("archived"))
        if match is None or name_run in {".", ".."}:
            findings.append(_unexpected(f"audit/manifests/{name}"))
    for run_id, kind, name, folder, quarantine in companions:
        if run_id not in runs:
            # beside no artifact file, no manifest
            findings.append(_unexpected(f"{folder}/{name}"))
        elif quarantine and not _quarantine_listed(view, run_id, kind, name):
            findings.append(_unexpected(f"{folder}/{name}"))


def _quarantine_listed(view: StoreView, run_id: str, kind: ArtifactKind, name: str) -> bool:
    """Whether the run's manifest records ``name`` as the artifact's quarantine file."""
    try:
        manifest = view.read_manifest(run_id)
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


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector (reference counting still frees everything).

    A store check allocates a few dozen objects per run and keeps every report, so the
    collector's full passes over a growing heap cost some 10% of ``--all``'s time; the
    reports, manifests and findings hold no reference cycles for it to find.

    Afterwards, what survived is moved to the oldest generation at once (``freeze`` then
    ``unfreeze``, two list splices): left in the youngest, the first collection after
    the check would walk all of it (some 70 ms for 10,000 runs). Skipped when the
    program froze objects of its own, which ``unfreeze`` would release.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def check_store(
    store: StoreArg | Store = None,
    *,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
    allow_unsigned: bool = False,
    allow_recovered: bool = False,
    expect_head: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    jobs: int | None = 1,
    scheduler: str | None = None,
    inventory: str | None = None,
    retention: Retention | None = None,
) -> StoreReport:
    """Check every run of a store and the store chain; never raises on findings.

    Args:
        store: a store folder, an object store (``s3://bucket/prefix``) or any
            :class:`~agc._core.storage.Store`, as :func:`~agc._core.store.open_store` takes.
        trusted_keys, require_signature, allow_unsigned: as :func:`check_run` (with
            trusted keys, every run must be signed by one of them).
        allow_recovered: as :func:`check_run`: recovered runs with bytes no crash
            checkpoint vouched for pass.
        expect_head: a head digest pinned from outside; if the chain does not contain
            it, the store was rolled back, forked or rewritten (``head-not-in-chain``).
        progress: called with ``(runs done, runs total)``.
        jobs: check the runs in this many local processes (the chain is checked once,
            here; the report is the same in any case); ``None``: every usable core for
            a store of 512 runs or more, else one process.
        scheduler: run the per-run checks on this Dask distributed scheduler
            (``tcp://HOST:PORT``) instead.
        inventory: object stores: take the run list and the object versions from this S3
            Inventory report (``manifest.json``, an ``s3://`` URL or a file) instead of
            listing the bucket.
        retention: object stores: the retention every object must have (default: the
            bucket's default retention rule).

    Raises:
        UsageError: ``inventory`` or ``retention`` for a folder store, bad ``jobs``.
        StoreError: the store cannot be read.
    """
    with _cyclic_gc_paused():
        return _check_any_store(
            store,
            trusted_keys=trusted_keys,
            require_signature=require_signature,
            allow_unsigned=allow_unsigned,
            allow_recovered=allow_recovered,
            expect_head=expect_head,
            progress=progress,
            jobs=jobs,
            scheduler=scheduler,
            inventory=inventory,
            retention=retention,
        )


def _check_any_store(
    store: StoreArg | Store,
    *,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None,
    require_signature: bool,
    allow_unsigned: bool,
    allow_recovered: bool,
    expect_head: str | None,
    progress: Callable[[int, int], None] | None,
    jobs: int | None,
    scheduler: str | None,
    inventory: str | None,
    retention: Retention | None,
) -> StoreReport:
    required = signature_required(
        trusted_keys, require_signature=require_signature, allow_unsigned=allow_unsigned
    )
    raw_keys = _raw_keys(trusted_keys)
    opened = open_store(store)
    root = opened.folder
    if root is None:
        # A store written object by object: each run's objects and versions are checked
        # (in workers when asked), the chain and the head once, by the view.
        policy = verify_policy(opened, retention)
        listing = None if inventory is None else _inventory(inventory, opened)
        object_view = StoreView(opened, policy, listing)
        shared = opened.exists(LEGACY_TOOL_EVENTS)
        object_check = RunCheck(opened, raw_keys, required, policy, allow_recovered, shared)

        def object_runs(run_ids: list[str]) -> list[RunReport]:
            items = [object_view.run_item(run_id) for run_id in run_ids]
            found = map_checks(
                object_check, items, jobs=jobs, scheduler=scheduler, progress=progress
            )
            return [report for report, _ in found]

        return _check_store(object_view, object_runs, expect_head)
    if inventory is not None or retention is not None:
        raise UsageError("--inventory and --retention-days go with an s3:// store")
    layout = StoreLayout(root)
    if not layout.root.is_dir() and not is_unmade_default(store):
        raise StoreError(f"store {layout.root} does not exist or is not a folder")
    view = StoreView(opened)

    def start_local(first: list[str]) -> _StartedRuns:
        shared = layout.legacy_tool_events_path.name in (view.list_dir("audit") or ())
        workers = resolve_jobs(jobs, len(first))
        policy = verify_policy(opened)
        check = RunCheck(opened, raw_keys, required, policy, allow_recovered, shared)
        here = replace(check, keys=trusted_keys)
        started = None
        if scheduler is None:
            # The workers start on the runs the listing names while this process reads
            # the chain; it then takes its share of the runs.
            items = [_folder_item(view, run_id) for run_id in first]
            started = start_checks(
                check if workers > 1 else here, items, jobs=workers, progress=progress
            )

        def results(extra: list[str]) -> list[RunReport]:
            if started is None:
                ordered = sorted([*first, *extra])
                items = [_folder_item(view, run_id) for run_id in ordered]
                found = map_checks(
                    check, items, jobs=workers, scheduler=scheduler, progress=progress
                )
            else:
                # Runs only the chain names (deleted ones) are checked here, after.
                offset = len(first)

                def more(done: int, total: int) -> None:
                    if progress is not None:
                        progress(offset + done, offset + total)

                later = [_folder_item(view, run_id) for run_id in extra]
                by_run = dict(zip(first, started.results(), strict=True))
                by_run.update(zip(extra, map_checks(here, later, progress=more), strict=True))
                ordered = sorted(by_run)
                found = [by_run[run_id] for run_id in ordered]
            # The chain is judged against the manifests the runs were judged by (one read).
            view.remember(zip(ordered, (manifest for _, manifest in found), strict=True))
            return [report for report, _ in found]

        return _StartedRuns(results, started.close if started is not None else None)

    try:
        return _check_store(view, None, expect_head, start_runs=start_local)
    except OSError as exc:
        # A folder or chain file of the store cannot be read: exit 3, never a verdict.
        raise StoreError(f"cannot read {exc.filename or layout.root}: {exc.strerror}") from exc


def _inventory(location: str, store: Store) -> list[ObjectVersion]:
    """The versions an S3 Inventory report of ``store``'s bucket lists.

    Raises:
        UsageError: ``store`` is not in an S3 bucket (an inventory is S3's own report).
        StoreError: the report cannot be read.
    """
    from agc._core.objstore import ObjectStore  # noqa: PLC0415 - boto3
    from agc.integrity._inventory import read_inventory  # noqa: PLC0415 - boto3

    if not isinstance(store, ObjectStore):
        raise UsageError(f"--inventory goes with an s3:// store, not {store.url}")
    return read_inventory(location, store)


def _raw_keys(trusted_keys: Mapping[str, Ed25519PublicKey] | None) -> dict[str, bytes]:
    """Trusted keys as raw bytes: what is sent to worker processes (keys do not pickle)."""
    if not trusted_keys:
        return {}  # cryptography not imported for an unsigned check
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415

    return {
        key_id: key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        for key_id, key in (trusted_keys or {}).items()
    }


def _folder_item(view: StoreView, run_id: str) -> RunItem:
    """A run of a folder store for :class:`~agc.integrity._run_reader.RunCheck`: the
    paths of its artifact files and sidecars in the listing (what it does not name is
    not looked for); its manifest is read by the check."""
    listed = view.listed_names(run_id)
    present = {f"{ARTIFACT_DIRS[k]}/{name}" for k, names in listed.items() for name in names}
    return run_id, None, present, UNREAD


@dataclass(frozen=True)
class _StartedRuns:
    """Run checks under way (see ``start_runs`` of :func:`_check_store`)."""

    results: Callable[[list[str]], list[RunReport]]
    """The reports of the runs started and of these further ones, in run-id order."""
    close: Callable[[], None] | None = None
    """Stop what is still running (the results are not wanted)."""


def _check_store(
    view: StoreView,
    check_runs: Callable[[list[str]], list[RunReport]] | None,
    expect_head: str | None,
    *,
    start_runs: Callable[[list[str]], _StartedRuns] | None = None,
    judge_links: bool = True,
) -> StoreReport:
    """The store report; the runs are checked by ``check_runs`` (every run, in run-id
    order, once the chain is read), or started by ``start_runs`` on the runs the
    listing names before the chain is read, and completed with those only the chain
    names. ``judge_links``: judge each run's report against its links (false when
    ``check_runs`` gives reports that ``check_run`` judged so already)."""
    findings: list[_Finding] = []
    view.store_findings(findings)
    run_ids = _listed_runs(view)
    started = start_runs(sorted(run_ids)) if start_runs is not None else None
    try:
        _discover(view, findings, run_ids)
        view.prefetch(sorted(run_ids))
        entries = view.read_chain(findings)
        chained = {entry.run_id for entry in entries if is_run_id(entry.run_id)}
        ordered = sorted(run_ids | chained)
        if started is not None:
            reports = started.results(sorted(chained - run_ids))
        else:
            assert check_runs is not None
            reports = check_runs(ordered)
    finally:
        if started is not None and started.close is not None:
            started.close()

    if not ordered:
        findings.append(
            Finding(
                "empty",
                "the store holds no run (an empty store is never verified)",
                artifact="store",
            )
        )
    if judge_links:
        reports = _judge_links(view, reports, entries)
    _check_chain(view, entries, findings)
    head = view.read_head()
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
                "the expected head is not in the chain: the store was rolled back, forked "
                "or rewritten",
                artifact="store",
                expected={"digest": expect_head},
                actual={"digest": entries[-1].manifest_digest if entries else None},
            )
        )
    return StoreReport(
        store=view.label,
        runs=tuple(reports),
        findings=tuple(findings),
        head=entries[-1].manifest_digest if entries else None,
        head_position=entries[-1].position if entries else 0,
    )


def _judge_links(
    view: StoreView, reports: list[RunReport], entries: list[ChainEntry]
) -> list[RunReport]:
    """Each run's report judged against its own links, as ``agc-verify RUN`` judges it
    (:func:`~agc.integrity._run_chain.judge_run_links`), from the one read of the chain."""
    links: dict[str, list[ChainEntry]] = {}
    for entry in entries:
        links.setdefault(entry.run_id, []).append(entry)
    pending = view.pending_link()
    judged: list[RunReport] = []
    for report in reports:
        run_id = report.run_id
        manifest: RunManifest | str | None
        try:
            manifest = view.read_manifest(run_id)
        except ManifestInvalidError as exc:
            manifest = exc.message
        except (UnsafePathError, StoreError):
            manifest = "unusable"  # the run's own report says what is wrong with it

        named = (
            (manifest.chain or {}).get("position") if isinstance(manifest, RunManifest) else None
        )
        judged.append(
            judge_run_links(
                report,
                manifest,
                links.get(run_id, ()),
                partial(_archived_or_none, view, run_id),
                partial(view.archived_name, run_id),
                link_pending=pending is not None and pending == (run_id, named),
            )
        )
    return judged


def _archived_or_none(view: StoreView, run_id: str, position: int) -> RunManifest | None:
    """The manifest kept for a link, ``None`` when absent or unusable."""
    try:
        return view.read_archived(run_id, position)
    except (ManifestInvalidError, UnsafePathError, StoreError):
        return None


def _check_chain(view: StoreView, entries: list[Any], findings: list[_Finding]) -> None:
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
        if not is_run_id(entry.run_id):
            continue
        if latest_position.get(entry.run_id) != entry.position:
            _check_superseded(view, entry, findings)
            continue
        try:
            manifest = view.read_manifest(entry.run_id)
        except (ManifestInvalidError, UnsafePathError, StoreError):
            continue  # the run's own report says what is wrong with it
        if manifest is None:
            if any(view.artifact_exists(entry.run_id, kind) for kind in ARTIFACT_KINDS):
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
            _check_superseded(view, entry, findings)
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
    digests = {(e.run_id, e.position): e.manifest_digest for e in entries}
    for name in view.list_dir("audit/manifests") or []:
        match = _MANIFEST_FILE.fullmatch(name)
        if match is None or not is_run_id(match.group("archived") or match.group("run") or ""):
            continue  # a lock file, or a stray name (_discover reports it)
        if match.group("archived"):
            key = (match.group("archived"), int(match.group("position")))
            if key not in superseded and not _archive_of_latest(
                view, key, latest_position, digests
            ):
                findings.append(_unexpected(f"audit/manifests/{name}"))
            continue
        run_id = match.group("run")
        try:
            manifest = view.read_manifest(run_id)
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


def _archive_of_latest(
    view: StoreView,
    key: tuple[str, int],
    latest_position: Mapping[str, int],
    digests: Mapping[tuple[str, int], str],
) -> bool:
    """Whether ``<run>@<n>.json`` is the manifest of the run's latest link ``n``: kept
    by a re-open whose new segment is not sealed yet (the run reports it unsealed), or
    left by a re-open killed before it marked the manifest (the next re-open adopts it).
    Either way it hashes to the link; anything else in that name is unexpected."""
    run_id, position = key
    if latest_position.get(run_id) != position:
        return False
    try:
        archived = view.read_archived(run_id, position)
    except (ManifestInvalidError, UnsafePathError, StoreError):
        return False
    return archived is not None and manifest_digest(archived) == digests[key]


def _check_superseded(view: StoreView, entry: Any, findings: list[_Finding]) -> None:
    """A link superseded by a later seal of the same run (a re-opened segment).

    Its manifest was archived when the run was re-opened; it must still hash to the
    link's digest, and the run's current seals must extend it
    (:func:`~agc.integrity._run_chain.superseded_problems`).
    """
    try:
        archived = view.read_archived(entry.run_id, entry.position)
    except (ManifestInvalidError, UnsafePathError, StoreError):
        archived = None
    readable = True
    try:
        current = view.read_manifest(entry.run_id)
    except (ManifestInvalidError, UnsafePathError, StoreError):
        current, readable = None, False  # the run's own report says what is wrong with it
    name = view.archived_name(entry.run_id, entry.position)
    problems = superseded_problems(entry, archived, current, name, segments=readable)
    for kind, message, expected in problems:
        code: StoreFindingCode = "chain-broken" if kind == "broken" else "manifest-replaced"
        findings.append(Finding(code, message, artifact="store", expected=expected))
