"""What a turn file says: attempts, ``turn_end``, the ``agent.db`` summary and the
timeline row of an attempt. Pure: works on parsed records only.

Everything here is derived from the records already in the file, so ``agc ledger
check`` can recompute ``turn_end`` and compare.
"""

from __future__ import annotations

import hmac
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from agc._core.report import SCHEMA_VERSION
from agc.ledger._contract import (
    MAX_PREVIEW_CHARS,
    RECORD_DB_TURN,
    RECORD_ITEM,
    RECORD_ITEMS_TRUNCATED,
    RECORD_SEAL,
    RECORD_TURN_END,
    RECORD_TURN_START,
)
from agc.ledger._policy import LedgerPolicy

__all__ = [
    "ROW_LABELS",
    "Attempt",
    "OfferedFile",
    "Row",
    "TurnSummary",
    "db_summary",
    "derive_turn_end",
    "first_design",
    "offered_read",
    "read_evidence",
    "split_attempts",
    "summarize_attempt",
]

Row = Literal[
    "no-offered-files",
    "not-seen-opened-before-design",
    "not-seen-opened",
    "not-opened-before-design",
    "read-before-design",
    "listed-or-searched-only",
    "read-different-path",
    "read-no-design",
    "not-opened",
]
_NOT_SEEN: Final = (
    "this input holds no read actions, so reads by other means than the shell read "
    "commands agc recognizes are invisible in this input"
)
ROW_LABELS: Final[dict[Row, str]] = {
    "not-opened-before-design": "design began before any offered file was opened",
    "read-before-design": "an offered file was read before the first design action",
    "listed-or-searched-only": "offered files were only listed or searched, never read",
    "read-different-path": "a file of the same name was read at another path",
    "read-no-design": "an offered file was read; no design action in this attempt",
    "not-opened": "no offered file was opened; no design action in this attempt",
    "not-seen-opened-before-design": "design began before any offered file was seen "
    "opened; " + _NOT_SEEN,
    "not-seen-opened": "no offered file was seen opened; no design action in this attempt; "
    + _NOT_SEEN,
    "no-offered-files": "no file was offered in this turn",
}
"""The timeline rows (docs/ledger.md, "Commands"). Timeline facts, not verdicts."""

NO_READ_ACTION_SOURCES: Final = frozenset({"exec", "rollout"})
"""Inputs whose command items carry no read actions (``codex exec --json`` events and
rollout files hold only the command): a read there is known only when agc infers it
from the command's text, so a file with no read is "not seen opened", not "not
opened"."""


@dataclass
class Attempt:
    """One attempt of a turn: its ``turn_start`` and what follows until the next one.

    Attributes:
        number: 1 for the first attempt in the file.
        start: the ``turn_start`` record.
        items: its ``item`` records, in file order.
        truncated: its ``items_truncated`` record, if any.
        end: its ``turn_end`` record, if any.
        seal: its ``seal`` record, if any.
        other: records of other types (tolerated).
    """

    number: int
    start: Mapping[str, Any]
    items: list[Mapping[str, Any]] = field(default_factory=list)
    truncated: Mapping[str, Any] | None = None
    end: Mapping[str, Any] | None = None
    seal: Mapping[str, Any] | None = None
    other: list[Mapping[str, Any]] = field(default_factory=list)


def split_attempts(records: Iterable[Mapping[str, Any]]) -> tuple[list[Attempt], int]:
    """Group records into attempts; returns ``(attempts, records before the first
    turn_start)``. A later ``turn_start`` opens a new attempt."""
    attempts: list[Attempt] = []
    orphans = 0
    for record in records:
        kind = record.get("recordType")
        if kind == RECORD_TURN_START:
            attempts.append(Attempt(number=len(attempts) + 1, start=record))
            continue
        if not attempts:
            orphans += 1
            continue
        current = attempts[-1]
        if kind == RECORD_ITEM:
            current.items.append(record)
        elif kind == RECORD_ITEMS_TRUNCATED and current.truncated is None:
            current.truncated = record
        elif kind == RECORD_TURN_END and current.end is None:
            current.end = record
        elif kind == RECORD_SEAL and current.seal is None:
            current.seal = record
        else:
            current.other.append(record)
    return attempts, orphans


# -- read evidence and design actions ----------------------------------------------------


def read_evidence(item: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """``(path, contentSha256 or None)`` for every way ``item`` opened a path:
    ``read`` actions, reads inferred from the command (``inferredReads``),
    ``imageView``, and MCP ``path`` / ``localPaths`` arguments."""
    return [(path, digest) for path, digest, _ in _read_evidence(item)]


def _read_evidence(item: Mapping[str, Any]) -> list[tuple[str, str | None, bool]]:
    """:func:`read_evidence` with a third member: the read was inferred."""
    found: list[tuple[str, str | None, bool]] = []
    kind = item.get("itemType")
    if kind == "commandExecution":
        for action in _list(item.get("actions")):
            if action.get("type") == "read" and isinstance(action.get("path"), str):
                found.append((action["path"], _str(action.get("contentSha256")), False))
        for read in _list(item.get("inferredReads")):
            if isinstance(read.get("path"), str):
                found.append((read["path"], _str(read.get("contentSha256")), True))
    elif kind == "imageView" and isinstance(item.get("path"), str):
        found.append((item["path"], _str(item.get("contentSha256")), False))
    elif kind == "mcpToolCall":
        args = item.get("arguments")
        if isinstance(args, Mapping):
            if isinstance(args.get("path"), str):
                found.append((args["path"], None, False))
            found.extend((p, None, False) for p in args.get("localPaths", []) if isinstance(p, str))
    return found


def first_design(items: Sequence[Mapping[str, Any]], policy: LedgerPolicy) -> dict[str, Any] | None:
    """``firstDesign``: the first item that is a design MCP call, a design write (a
    write tool to a design path) or a file change of a design path, as ``policy``
    says; ``None`` when there is none. Lists, searches, reads, playtests and web
    searches never count."""
    for item in items:
        kind = item.get("itemType")
        seq = item.get("seq")
        if kind == "mcpToolCall":
            tool = item.get("tool")
            raw_args = item.get("arguments")
            args: Mapping[str, Any] = raw_args if isinstance(raw_args, Mapping) else {}
            if tool in policy.design_tools:
                design: dict[str, Any] = {"kind": f"mcp:{tool}", "seq": seq, "tool": tool}
                preview = args.get(policy.preview_argument)
                if isinstance(preview, str):
                    design["briefPreview"] = preview[:MAX_PREVIEW_CHARS]
                return design
            path = args.get("path")
            if tool in policy.write_tools and isinstance(path, str) and policy.is_design_path(path):
                return {"kind": f"write:{path}", "seq": seq, "tool": tool}
        elif kind == "fileChange":
            for change in _list(item.get("changes")):
                path = change.get("path")
                if isinstance(path, str) and policy.is_design_path(path):
                    return {"kind": f"fileChange:{path}", "seq": seq}
    return None


def offered_read(
    start: Mapping[str, Any], items: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """``offeredRead``: for each offered ``localPath``, whether this attempt read
    it; ``readInferred: true`` when every read of it was inferred from a command's
    text; ``contentSha256Match`` when both sides have a hash (true if any read's hash
    equals the offered one, compared with ``hmac.compare_digest``)."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for attachment in _list(start.get("attachments")):
        path = attachment.get("localPath")
        if not isinstance(path, str) or path in seen:
            continue
        seen.add(path)
        reads = [(h, i) for item in items for p, h, i in _read_evidence(item) if p == path]
        hashes = [h for h, _ in reads]
        entry: dict[str, Any] = {"localPath": path, "read": bool(reads)}
        if reads and all(inferred for _, inferred in reads):
            entry["readInferred"] = True
        offered_hash = _str(attachment.get("contentSha256"))
        comparable = [h for h in hashes if h is not None]
        if offered_hash is not None and comparable:
            entry["contentSha256Match"] = any(_same(offered_hash, h) for h in comparable)
        out.append(entry)
    return out


def derive_turn_end(attempt: Attempt, policy: LedgerPolicy) -> dict[str, Any]:
    """The derivable fields of ``turn_end``: ``itemCount``, ``itemsTruncated``,
    ``offeredRead``, ``firstDesign``. (``completed`` is the turn's outcome, not
    derivable; ``recordedAtMs`` is a time.)"""
    return {
        "itemCount": len(attempt.items),
        "itemsTruncated": attempt.truncated is not None,
        "offeredRead": offered_read(attempt.start, attempt.items),
        "firstDesign": first_design(attempt.items, policy),
    }


def db_summary(
    *,
    turn_end: Mapping[str, Any],
    start: Mapping[str, Any],
    turn_log: str,
    audit_write_failed: bool,
) -> dict[str, Any]:
    """The ``direct.codex.turn`` record for ``agent.db``: counts, offeredRead
    and firstDesign with only ``briefPreview`` (240 characters), never the file."""
    design = turn_end.get("firstDesign")
    brief: dict[str, Any] | None = None
    if isinstance(design, Mapping):
        brief = {"kind": design.get("kind"), "seq": design.get("seq")}
        if "briefPreview" in design:
            brief["briefPreview"] = str(design["briefPreview"])[:MAX_PREVIEW_CHARS]
    offered = _list(turn_end.get("offeredRead"))
    return {
        "recordType": RECORD_DB_TURN,
        "clientTurnId": start.get("clientTurnId"),
        "attempt": start.get("attempt"),
        "turnLog": turn_log,
        "sidecarPresent": start.get("sidecarPresent") is True,
        "offeredCount": len(offered),
        "offeredRead": [dict(o) for o in offered],
        "firstDesign": brief,
        "itemCount": turn_end.get("itemCount"),
        "itemsTruncated": turn_end.get("itemsTruncated") is True,
        "completed": turn_end.get("completed") is True,
        "auditWriteFailed": audit_write_failed,
    }


# -- the timeline row ---------------------------------------------------------------------


@dataclass(frozen=True)
class OfferedFile:
    """One offered file and what the attempt did with it.

    Attributes:
        local_path: the project-relative path offered.
        name: the attachment's display name.
        read_seqs: ``seq`` of each item that read it.
        content_sha256_match: as in ``offeredRead``.
        listed_or_searched_seqs: ``seq`` of items that listed a folder holding it or
            searched for its name.
        other_path_reads: ``(seq, path)`` of reads of a file with the same name at
            another path.
        inferred_read_seqs: the members of ``read_seqs`` whose read was inferred
            from the command's text (``inferredReads``), not reported by the input.
    """

    local_path: str
    name: str | None
    read_seqs: tuple[int, ...]
    content_sha256_match: bool | None
    listed_or_searched_seqs: tuple[int, ...]
    other_path_reads: tuple[tuple[int, str], ...]
    inferred_read_seqs: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "localPath": self.local_path,
            "name": self.name,
            "read": bool(self.read_seqs),
            "readSeqs": list(self.read_seqs),
            "inferredReadSeqs": list(self.inferred_read_seqs),
            "contentSha256Match": self.content_sha256_match,
            "listedOrSearchedSeqs": list(self.listed_or_searched_seqs),
            "otherPathReads": [{"seq": s, "path": p} for s, p in self.other_path_reads],
        }


@dataclass(frozen=True)
class TurnSummary:
    """What ``agc ledger show`` prints for one attempt.

    Attributes:
        client_turn_id: the turn.
        attempt: the attempt number; ``attempts``: how many the file holds.
        completed: from ``turn_end`` (``None`` when the attempt has none).
        item_counts: items by ``itemType``.
        items_truncated: whether the 256-item limit was hit.
        offered: the offered files.
        first_design: ``firstDesign`` recomputed.
        row: the timeline row; ``row_label``: its words.
        sealed: the attempt has its seal record (an attempt without one was
            interrupted, or appended after the last seal; whether a seal verifies is
            ``agc ledger check``'s to say).
        reads_visible: the attempt's input reports reads (``False`` when its items
            come from ``codex exec --json`` or a rollout, which hold no read actions:
            only reads inferred from commands are seen).
        sidecar_present: ``turn_start.sidecarPresent``.
        rejected_attachments: each offered attachment whose ``localPath`` was
            rejected: ``{"name", "reason"}``.
        attachments_omitted: ``turn_start.attachmentsOmitted`` (beyond the first 8).
    """

    client_turn_id: str | None
    attempt: int
    attempts: int
    completed: bool | None
    item_counts: Mapping[str, int]
    items_truncated: bool
    offered: tuple[OfferedFile, ...]
    first_design: Mapping[str, Any] | None
    row: Row
    row_label: str
    sealed: bool = False
    reads_visible: bool = True
    sidecar_present: bool = False
    rejected_attachments: tuple[Mapping[str, Any], ...] = ()
    attachments_omitted: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "clientTurnId": self.client_turn_id,
            "attempt": self.attempt,
            "attempts": self.attempts,
            "completed": self.completed,
            "itemCounts": dict(self.item_counts),
            "itemsTruncated": self.items_truncated,
            "offered": [o.to_dict() for o in self.offered],
            "firstDesign": dict(self.first_design) if self.first_design else None,
            "row": self.row,
            "rowLabel": self.row_label,
            "sealed": self.sealed,
            "readsVisible": self.reads_visible,
            "sidecarPresent": self.sidecar_present,
            "rejectedAttachments": [dict(r) for r in self.rejected_attachments],
            "attachmentsOmitted": self.attachments_omitted,
        }


def summarize_attempt(attempt: Attempt, attempts: int, policy: LedgerPolicy) -> TurnSummary:
    """Summarize one attempt and place it in a timeline row.

    Rows, first match wins: no offered file -> ``no-offered-files``; an offered file
    read before the first design action (or with none) -> ``read-before-design`` /
    ``read-no-design``; a same-name file read elsewhere -> ``read-different-path``;
    only lists or searches reaching an offered file, and no read of one (not even after
    the design action) -> ``listed-or-searched-only``;
    otherwise ``not-opened-before-design`` (a design action came first) or
    ``not-opened``; in an input with no read actions (any item from ``codex exec
    --json`` or a rollout), ``not-seen-opened-before-design`` / ``not-seen-opened``
    instead, as a read there is seen only when inferred from a command's text.
    """
    design = first_design(attempt.items, policy)
    design_seq = design.get("seq") if design else None
    offered = tuple(
        _offered_file(attachment, attempt)
        for attachment in _list(attempt.start.get("attachments"))
        if isinstance(attachment.get("localPath"), str)
    )
    visible = not any(item.get("source") in NO_READ_ACTION_SOURCES for item in attempt.items)
    row = _row(offered, design_seq, reads_visible=visible)
    start = attempt.start
    rejected = tuple(
        {"name": _str(a.get("name")), "reason": _str(a.get("pathRejectedReason"))}
        for a in _list(start.get("attachments"))
        if a.get("pathRejected") is True
    )
    omitted = start.get("attachmentsOmitted")
    end = attempt.end
    counts = Counter(str(item.get("itemType")) for item in attempt.items)
    return TurnSummary(
        client_turn_id=_str(attempt.start.get("clientTurnId")),
        attempt=attempt.number,
        attempts=attempts,
        completed=end.get("completed") if end is not None else None,
        item_counts=dict(sorted(counts.items())),
        items_truncated=attempt.truncated is not None,
        offered=offered,
        first_design=design,
        row=row,
        row_label=ROW_LABELS[row],
        sealed=attempt.seal is not None,
        reads_visible=visible,
        sidecar_present=start.get("sidecarPresent") is True,
        rejected_attachments=rejected,
        attachments_omitted=omitted if isinstance(omitted, int) and omitted > 0 else 0,
    )


def _row(offered: Sequence[OfferedFile], design_seq: object, *, reads_visible: bool) -> Row:
    if not offered:
        return "no-offered-files"
    limit = design_seq if isinstance(design_seq, int) else None
    if any(s < limit for o in offered for s in o.read_seqs) if limit is not None else False:
        return "read-before-design"
    if limit is None and any(o.read_seqs for o in offered):
        return "read-no-design"
    if any(o.other_path_reads for o in offered):
        return "read-different-path"
    if any(o.listed_or_searched_seqs for o in offered) and not any(o.read_seqs for o in offered):
        return "listed-or-searched-only"
    if not reads_visible:
        return "not-seen-opened-before-design" if limit is not None else "not-seen-opened"
    return "not-opened-before-design" if limit is not None else "not-opened"


def _offered_file(attachment: Mapping[str, Any], attempt: Attempt) -> OfferedFile:
    path = str(attachment["localPath"])
    names = {path.rsplit("/", 1)[-1]}
    if isinstance(attachment.get("name"), str):
        names.add(attachment["name"])
    offered_hash = _str(attachment.get("contentSha256"))
    reads: list[int] = []
    inferred_reads: list[int] = []
    hashes: list[str] = []
    others: list[tuple[int, str]] = []
    touched: list[int] = []
    for item in attempt.items:
        raw_seq = item.get("seq")
        seq = raw_seq if isinstance(raw_seq, int) else 0
        for read_path, digest, inferred in _read_evidence(item):
            if read_path == path:
                reads.append(seq)
                if inferred:
                    inferred_reads.append(seq)
                if digest is not None:
                    hashes.append(digest)
            elif read_path.rsplit("/", 1)[-1] in names:
                others.append((seq, read_path))
        if _reaches(item, path, names):
            touched.append(seq)
    match = None
    if offered_hash is not None and hashes:
        match = any(_same(offered_hash, h) for h in hashes)
    return OfferedFile(
        local_path=path,
        name=_str(attachment.get("name")),
        read_seqs=tuple(reads),
        content_sha256_match=match,
        listed_or_searched_seqs=tuple(touched),
        other_path_reads=tuple(others),
        inferred_read_seqs=tuple(inferred_reads),
    )


def _reaches(item: Mapping[str, Any], path: str, names: set[str]) -> bool:
    """Did a list or search in ``item`` reach ``path`` (its folder, or its name)?"""

    def under(folder: object) -> bool:
        if not isinstance(folder, str):
            return False
        return folder in {".", path} or path.startswith(folder.rstrip("/") + "/")

    def names_it(query: object) -> bool:
        return isinstance(query, str) and any(n and n in query for n in names)

    if item.get("itemType") == "commandExecution":
        for action in _list(item.get("actions")):
            if action.get("type") == "listFiles" and under(action.get("path")):
                return True
            if action.get("type") == "search" and (
                names_it(action.get("query")) or under(action.get("path"))
            ):
                return True
    if item.get("itemType") == "mcpToolCall" and item.get("tool") == "agc_list_project_files":
        args = item.get("arguments")
        if isinstance(args, Mapping) and (
            under(args.get("path")) or names_it(args.get("query")) or "path" not in args
        ):
            return True
    return False


def _list(value: object) -> list[Mapping[str, Any]]:
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, Mapping)]


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _same(a: str, b: str) -> bool:
    return bool(a) and bool(b) and hmac.compare_digest(a.encode(), b.encode())
