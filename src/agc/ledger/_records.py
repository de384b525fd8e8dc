"""Building the turn file's records (docs/ledger.md, "Records"). Pure.

The only outside effect is the ``hash_file`` callback (``Project.hash_file`` in real
use), passed in so that these functions stay testable without a disk.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from agc._core import json as strict_json
from agc.errors import JsonInvalidError
from agc.ledger._contract import (
    MAX_ACTIONS,
    MAX_ATTACHMENTS,
    MAX_CHANGES,
    MAX_COMMAND_CHARS,
    MAX_ITEMS,
    MAX_LINE_BYTES,
    MAX_PREVIEW_CHARS,
    MAX_WEB_QUERY_CHARS,
    RECORD_ITEM,
    RECORD_ITEMS_TRUNCATED,
    RECORD_SEAL,
    RECORD_TURN_START,
)
from agc.ledger._events.item import SKIPPED_ITEM_TYPES, CompletedItem, shell_script
from agc.ledger._policy import ArgRule, LedgerPolicy
from agc.ledger._project import FileHash
from agc.ledger._sanitize import (
    PathSanitizer,
    clean_media_type,
    clean_name,
    clean_token,
    sha256_text,
)
from agc.ledger._shell_reads import inferred_reads

__all__ = [
    "RecordContext",
    "encode_record",
    "item_record",
    "items_truncated_record",
    "seal_record",
    "turn_start_record",
]

_STATUS_RE: Final = re.compile(r"[A-Za-z][A-Za-z_-]{0,31}")
_CHANGE_KINDS: Final = frozenset({"add", "delete", "update"})
_ACTION_TYPES: Final = {"read": "read", "listFiles": "listFiles", "list_files": "listFiles"}


@dataclass(frozen=True)
class RecordContext:
    """What every record builder needs.

    Attributes:
        client_turn_id: the validated ``clientTurnId``.
        sanitizer: makes paths project-relative.
        hash_file: hashes a cleaned project-relative path (``Project.hash_file``).
        policy: the MCP allow-list and design rules.
    """

    client_turn_id: str
    sanitizer: PathSanitizer
    hash_file: Callable[[str], FileHash]
    policy: LedgerPolicy


def encode_record(record: Mapping[str, Any]) -> bytes:
    """The record's line as the writer writes it (compact UTF-8 JSON, no newline)."""
    return json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


# -- turn_start -----------------------------------------------------------------------


def turn_start_record(
    ctx: RecordContext,
    *,
    prompt: str,
    attachments: Sequence[object],
    attempt: int,
    recorded_at_ms: int,
) -> dict[str, Any]:
    """``direct.codex.turn_start``: the prompt's hash and length, the first 8 cleaned
    attachments with their file hashes, ``attachmentsOmitted`` and ``sidecarPresent``.

    ``promptSha256`` hashes the user's original text as UTF-8; ``promptChars`` counts
    its characters (code points).
    """
    kept = [_attachment(ctx, raw) for raw in attachments[:MAX_ATTACHMENTS]]
    sidecar = any(a.get("localPath") is not None or a.get("status") is not None for a in kept)
    return {
        "recordType": RECORD_TURN_START,
        "clientTurnId": ctx.client_turn_id,
        "attempt": attempt,
        "recordedAtMs": recorded_at_ms,
        "sidecarPresent": sidecar,
        "promptSha256": sha256_text(prompt),
        "promptChars": len(prompt),
        "attachments": kept,
        "attachmentsOmitted": max(0, len(attachments) - MAX_ATTACHMENTS),
        "policySha256": ctx.policy.sha256,
    }


def _attachment(ctx: RecordContext, raw: object) -> dict[str, Any]:
    entry = raw if isinstance(raw, Mapping) else {}
    size = entry.get("size")
    status = entry.get("status")
    out: dict[str, Any] = {
        "name": clean_name(entry.get("name")),
        "localPath": None,
        "mediaType": clean_media_type(entry.get("mediaType")),
        "size": size if _is_count(size) else None,
        "status": status if isinstance(status, str) and _STATUS_RE.fullmatch(status) else None,
    }
    if entry.get("localPath") is None:
        return out
    out.update(_path_with_hash(ctx, entry.get("localPath"), key="localPath"))
    return out


def _path_with_hash(ctx: RecordContext, raw: object, *, key: str) -> dict[str, Any]:
    """``{key, contentSha256?, hashSkipped}`` or ``{pathRejected, pathRejectedReason}``."""
    cleaned = ctx.sanitizer.clean(raw)
    if cleaned.path is None:
        return {"pathRejected": True, "pathRejectedReason": cleaned.rejected}
    hashed = ctx.hash_file(cleaned.path)
    if hashed.rejected is not None:
        return {"pathRejected": True, "pathRejectedReason": hashed.rejected}
    out: dict[str, Any] = {key: cleaned.path}
    if hashed.content_sha256 is not None:
        out["contentSha256"] = hashed.content_sha256
    out["hashSkipped"] = hashed.hash_skipped
    return out


# -- item -----------------------------------------------------------------------------


def item_record(
    ctx: RecordContext, item: CompletedItem, *, seq: int, recorded_at_ms: int
) -> dict[str, Any] | None:
    """``direct.codex.item`` for one completed item, or ``None`` for a type never
    recorded (messages, plans, reasoning …).

    Common fields (``seq``, ``itemId``, ``itemType``, ``status``, ``source``) always;
    the per-type fields (docs/ledger.md, "direct.codex.item"); for an unknown type
    nothing else. A record
    whose line would exceed 256 KiB first has its argument texts cut to 240
    characters; if still too long it keeps its common fields and says
    ``fieldsOmitted: "too-large"``.
    """
    if item.item_type in SKIPPED_ITEM_TYPES:
        return None
    status = item.status
    record: dict[str, Any] = {
        "recordType": RECORD_ITEM,
        "clientTurnId": ctx.client_turn_id,
        "seq": seq,
        "itemId": clean_token(item.item_id),
        "itemType": _item_type(item),
        "status": status if isinstance(status, str) and _STATUS_RE.fullmatch(status) else None,
        "recordedAtMs": recorded_at_ms,
        "source": item.source,
    }
    if item.source_type != item.item_type:
        record["sourceType"] = clean_token(item.source_type) or "unknown"
    if item.synthesized:
        # agc wrote this output for an interrupted call: no exit code or duration of
        # the tool's own is known
        record["outputSynthesized"] = True
    builder = _BUILDERS.get(item.item_type)
    if builder is None:
        return record
    built = builder(ctx, item.fields)
    if item.item_type == "commandExecution" and item.source != "app-server":
        built.update(_inferred_reads(ctx, item.fields))
    if item.synthesized:
        built = {k: v for k, v in built.items() if k not in {"exitCode", "durationMs", "errorKind"}}
    full = {**record, **built}
    if len(encode_record(full)) <= MAX_LINE_BYTES:
        return full
    # Cut the text fields, keep the structure; only if that is not enough, the
    # record keeps its common fields.
    shortened = _shorten_texts(full)
    if len(encode_record(shortened)) <= MAX_LINE_BYTES:
        return shortened
    return {**record, "fieldsOmitted": "too-large"}


def _item_type(item: CompletedItem) -> str:
    """The item's camelCase type, or ``unknown``. An unknown type is judged as the input
    wrote it too: camel-casing drops its underscores, and with them a token's prefix
    (``ghp_…`` becomes ``ghpA1…``, which no secret rule knows)."""
    if clean_token(item.source_type) is None:
        return "unknown"
    return clean_token(item.item_type) or "unknown"


def _shorten_texts(record: dict[str, Any]) -> dict[str, Any]:
    """Cut every argument text to ``briefPreview`` length, marking ``<key>Truncated``."""
    args = record.get("arguments")
    if not isinstance(args, dict):
        return record
    cut = dict(args)
    for key, value in args.items():
        if isinstance(value, str) and len(value) > MAX_PREVIEW_CHARS:
            cut[key] = value[:MAX_PREVIEW_CHARS]
            cut[f"{key}Truncated"] = True
    return {**record, "arguments": cut}


def _command_execution(ctx: RecordContext, fields: Mapping[str, object]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "command" in fields:
        raw = fields["command"]
        # the script a Codex shell wrapper runs ("bash -lc 'x'" -> "x"), as a rollout holds it
        script = shell_script(raw) if isinstance(raw, str) else raw
        command = ctx.sanitizer.clean_command(script, max_chars=MAX_COMMAND_CHARS)
        if command.text is not None:
            out["command"] = command.text
            if command.truncated or fields.get("commandCut") is True:
                out["commandTruncated"] = True
        elif command.redacted:
            out["commandRedacted"] = True
    _copy_int(fields, out, "exitCode", signed=True)
    _copy_int(fields, out, "durationMs")
    actions = fields.get("commandActions")
    if isinstance(actions, list):
        out["actions"] = [_action(ctx, a) for a in actions[:MAX_ACTIONS]]
        if len(actions) > MAX_ACTIONS:
            out["actionsOmitted"] = len(actions) - MAX_ACTIONS
    return out


def _inferred_reads(ctx: RecordContext, fields: Mapping[str, object]) -> dict[str, Any]:
    """``inferredReads`` of a command from an input with no read actions (``codex exec
    --json``, rollouts): the files its text names as read (:func:`inferred_reads`),
    each cleaned and hashed as a ``read`` action's path; a folder (``rg x src``) is no
    read of a file and is left out."""
    raw = fields.get("command")
    if not isinstance(raw, str) or "commandActions" in fields:
        return {}
    reads = []
    whole = fields.get("commandCut") is not True  # else the cut may have shortened its end
    for path in inferred_reads(shell_script(raw), whole=whole):
        read = _path_with_hash(ctx, path, key="path")
        if read.get("hashSkipped") != "not-a-file":
            reads.append(read)
    if not reads:
        return {}
    out: dict[str, Any] = {"inferredReads": reads[:MAX_ACTIONS]}
    if len(reads) > MAX_ACTIONS:
        out["inferredReadsOmitted"] = len(reads) - MAX_ACTIONS
    return out


def _action(ctx: RecordContext, raw: object) -> dict[str, Any]:
    action = raw if isinstance(raw, Mapping) else {}
    kind = _ACTION_TYPES.get(str(action.get("type")), str(action.get("type")))
    if kind == "read":
        return {"type": "read", **_path_with_hash(ctx, action.get("path"), key="path")}
    if kind == "listFiles":
        return {"type": "listFiles", **_optional_path(ctx, action.get("path"))}
    if kind == "search":
        query = ctx.sanitizer.clean_text(
            action.get("query"), max_chars=MAX_COMMAND_CHARS, single_line=True
        )
        return {"type": "search", "query": query.text, **_optional_path(ctx, action.get("path"))}
    return {"type": "unknown"}


def _optional_path(ctx: RecordContext, raw: object) -> dict[str, Any]:
    if raw is None:
        return {"path": None}
    cleaned = ctx.sanitizer.clean(raw)
    if cleaned.path is None:
        return {"pathRejected": True, "pathRejectedReason": cleaned.rejected}
    return {"path": cleaned.path}


def _mcp_tool_call(ctx: RecordContext, fields: Mapping[str, object]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    tool = clean_token(fields.get("tool"))
    if tool is None:
        out["toolRedacted"] = True
    out["tool"] = tool
    server = clean_token(fields.get("server"))
    if server is not None and server != ctx.policy.default_server:
        out["server"] = server
    _copy_int(fields, out, "durationMs")
    if fields.get("hasError") is True:
        out["errorKind"] = "error"
    elif fields.get("resultIsError") is True:
        out["errorKind"] = "resultIsError"
    rules = ctx.policy.tools.get(tool) if tool is not None else None
    if rules is not None:
        args = fields.get("arguments")
        if isinstance(args, str):
            try:
                args = strict_json.loads(args, allow_lone_surrogates=True)
            except JsonInvalidError:
                args = None
        out["arguments"] = _apply_rules(ctx, rules, args if isinstance(args, Mapping) else {})
    return out


def _apply_rules(
    ctx: RecordContext, rules: Sequence[ArgRule], args: Mapping[str, object]
) -> dict[str, Any]:
    """Keep only the allow-listed arguments, each in its cleaned form."""
    out: dict[str, Any] = {}
    for rule in rules:
        if rule.key not in args:
            continue
        value = args[rule.key]
        key = rule.key
        if rule.kind == "path":
            cleaned = ctx.sanitizer.clean(value)
            if cleaned.path is None:
                out[f"{key}Rejected"] = True
            else:
                out[key] = cleaned.path
        elif rule.kind == "paths" and isinstance(value, list):
            paths = [ctx.sanitizer.clean(v).path for v in value]
            good = [p for p in paths if p is not None]
            out[key] = good[: rule.max_items]
            if len(good) > rule.max_items:
                out[f"{key}Omitted"] = len(good) - rule.max_items
            if len(good) < len(paths):
                out[f"{key}Rejected"] = len(paths) - len(good)
        elif rule.kind == "ids" and isinstance(value, list):
            ids = [clean_token(v) for v in value]
            good_ids = [i for i in ids if i is not None]
            out[key] = good_ids[: rule.max_items]
            omitted = len(value) - min(len(good_ids), rule.max_items)
            if omitted:
                out[f"{key}Omitted"] = omitted
        elif rule.kind in {"text", "token"} and isinstance(value, str):
            text = ctx.sanitizer.clean_text(
                value, max_chars=rule.max_chars, single_line=rule.kind == "token"
            )
            out[key] = text.text
            if text.truncated:
                out[f"{key}Truncated"] = True
            if text.redacted:
                out[f"{key}Redacted"] = True
            if rule.chars:
                out[f"{key}Chars"] = len(value)
            if rule.sha256:
                out[f"{key}Sha256"] = sha256_text(value)
        elif rule.kind == "chars" and isinstance(value, str):
            out[f"{key}Chars"] = len(value)
        elif (rule.kind == "int" and _is_int(value)) or (
            rule.kind == "bool" and isinstance(value, bool)
        ):
            out[key] = value
    return out


def _file_change(ctx: RecordContext, fields: Mapping[str, object]) -> dict[str, Any]:
    changes = fields.get("changes")
    if not isinstance(changes, list):
        return {}
    out: dict[str, Any] = {"changes": [_change(ctx, c) for c in changes[:MAX_CHANGES]]}
    if len(changes) > MAX_CHANGES:
        out["changesOmitted"] = len(changes) - MAX_CHANGES
    if fields.get("changesCut") is True:  # the patch's end was cut off: more may be missing
        out["changesTruncated"] = True
    return out


def _change(ctx: RecordContext, raw: object) -> dict[str, Any]:
    change = raw if isinstance(raw, Mapping) else {}
    kind = change.get("kind")
    out: dict[str, Any] = {}
    cleaned = ctx.sanitizer.clean(change.get("path"))
    if cleaned.path is None:
        out["pathRejected"] = True
    else:
        out["path"] = cleaned.path
    out["kind"] = kind if isinstance(kind, str) and kind in _CHANGE_KINDS else "unknown"
    if change.get("movePath") is not None:
        moved = ctx.sanitizer.clean(change.get("movePath"))
        if moved.path is None:
            # A change whose paths cannot all be made relative loses its path.
            out.pop("path", None)
            out["pathRejected"] = True
        else:
            out["movePath"] = moved.path
    return out


def _image_view(ctx: RecordContext, fields: Mapping[str, object]) -> dict[str, Any]:
    if "path" not in fields:
        return {}
    return _path_with_hash(ctx, fields["path"], key="path")


def _web_search(ctx: RecordContext, fields: Mapping[str, object]) -> dict[str, Any]:
    if "query" not in fields:
        return {}
    query = ctx.sanitizer.clean_text(fields["query"], max_chars=MAX_WEB_QUERY_CHARS)
    return {"query": query.text}


def _function(ctx: RecordContext, fields: Mapping[str, object]) -> dict[str, Any]:  # noqa: ARG001 - one signature per item type
    out: dict[str, Any] = {}
    if "name" in fields:
        name = clean_token(fields["name"])
        out["name"] = name
        if name is None:
            out["nameRedacted"] = True
    if fields.get("namespace") is not None:
        out["namespace"] = clean_token(fields["namespace"])
    return out


def _dynamic_tool_call(ctx: RecordContext, fields: Mapping[str, object]) -> dict[str, Any]:  # noqa: ARG001 - one signature per item type
    out: dict[str, Any] = {"tool": clean_token(fields.get("tool"))}
    if fields.get("namespace") is not None:
        out["namespace"] = clean_token(fields["namespace"])
    _copy_int(fields, out, "durationMs")
    if isinstance(fields.get("success"), bool):
        out["success"] = fields["success"]
    return out


_BUILDERS: Final[dict[str, Callable[[RecordContext, Mapping[str, object]], dict[str, Any]]]] = {
    "commandExecution": _command_execution,
    "mcpToolCall": _mcp_tool_call,
    "fileChange": _file_change,
    "imageView": _image_view,
    "webSearch": _web_search,
    "functionCallOutput": _function,
    "functionCall": _function,
    "dynamicToolCall": _dynamic_tool_call,
}


# -- the rest ---------------------------------------------------------------------------


def items_truncated_record(ctx: RecordContext, *, recorded_at_ms: int) -> dict[str, Any]:
    """``direct.codex.items_truncated``, written once when item 257 arrives."""
    return {
        "recordType": RECORD_ITEMS_TRUNCATED,
        "clientTurnId": ctx.client_turn_id,
        "afterSeq": MAX_ITEMS,
        "recordedAtMs": recorded_at_ms,
    }


def seal_record(
    client_turn_id: str,
    *,
    attempt: int,
    algorithm: str,
    prefix_digest: str,
    prefix_bytes: int,
    prefix_records: int,
    recorded_at_ms: int,
) -> dict[str, Any]:
    """``direct.codex.seal``: the digest of every byte of the file before this line
    (agc's per-attempt seal, docs/ledger.md "Sealing")."""
    return {
        "recordType": RECORD_SEAL,
        "clientTurnId": client_turn_id,
        "attempt": attempt,
        "algorithm": algorithm,
        "prefixBytes": prefix_bytes,
        "prefixRecords": prefix_records,
        "prefixDigest": prefix_digest,
        "recordedAtMs": recorded_at_ms,
    }


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_count(value: object) -> bool:
    return _is_int(value) and 0 <= value < 2**53  # type: ignore[operator]


def _copy_int(
    fields: Mapping[str, object], out: dict[str, Any], key: str, *, signed: bool = False
) -> None:
    value = fields.get(key)
    if _is_int(value) and (signed or value >= 0) and abs(value) < 2**53:  # type: ignore[operator,arg-type]
        out[key] = value
