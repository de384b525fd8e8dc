"""Write an ingested run back as the JSONL it was made from (``agc export``).

``agc record`` and ``agc import`` keep each input line as one record
(:func:`agc.integrity._ingest.line_to_record`): ``{"line": n, "payload": <object>}`` for
a JSON object, ``{"line": n, "invalid": <reason>, "text" | "text_b64": …}`` for any
other line, ``"bom": true`` on a first line that began with a byte-order mark.
:func:`iter_session_lines` undoes that, record by record:

* an ``invalid`` record gives back its exact bytes (``text`` as UTF-8, ``text_b64``
  decoded), with the byte-order mark restored on line 1;
* a ``payload`` record gives back the object as compact JSON (no spaces, UTF-8 kept,
  key order kept), which is how Codex and Claude Code write their session lines, so such
  a line comes back byte for byte. Limits: a line written with other spacing, escapes
  (``\\u00e9`` for ``é``, ``\\/``), number forms (``1.0``, ``1E5``, ``-0``) or a ``\\r``
  before its line break comes back as the same JSON value in compact form, not the same
  bytes.

Every line ends with ``\\n`` except a last ``invalid`` record that is not JSON at all: a
record that is not JSON at the end of an agent's file is a line a crash cut off, and it is
given back as it was, without a line break, so a reader still sees it as torn. (A last
line that was whole JSON but had no line break gets one: the record does not say.)
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable, Iterator
from typing import IO, Any, Final

from agc._core import json as strict_json
from agc._core.store import ArtifactKind, RunId, StoreLayout
from agc.errors import InputError, JsonInvalidError, RunNotFoundError, StoreError

__all__ = ["export_copy", "export_session", "iter_session_lines"]

_BOM: Final = b"\xef\xbb\xbf"


def _line(record: Any, position: int, source: str) -> tuple[bytes, bool]:
    """(the input line's bytes, whether it was an ``invalid`` record)."""
    if not isinstance(record, dict) or not isinstance(record.get("line"), int):
        raise InputError(
            f"{source}: record {position} is not a line that agc record/import kept "
            "(no 'line' number): only ingested runs can be exported",
            hint="Runs written through the Python writers hold records, not agent lines.",
        )
    if "payload" in record:
        text = json.dumps(record["payload"], ensure_ascii=False, separators=(",", ":"))
        data = text.encode("utf-8", "surrogatepass")
        invalid = False
    elif "text_b64" in record:
        try:
            data = base64.b64decode(str(record["text_b64"]), validate=True)
        except ValueError as exc:
            raise InputError(
                f"{source}: record {position} has a text_b64 that is not base64"
            ) from exc
        invalid = True
    elif isinstance(record.get("text"), str):
        data = record["text"].encode("utf-8", "surrogatepass")
        invalid = True
    else:
        raise InputError(f"{source}: record {position} has neither payload nor text")
    if record.get("bom") is True:
        data = _BOM + data
    return data, invalid


def _torn(data: bytes) -> bool:
    """Whether a kept line is one a crash cut off: not blank and not JSON at all (a
    whole JSON value that is not an object, such as ``0``, was a complete line)."""
    if not data.decode("utf-8", "replace").strip():  # blank as ingest judges it (str)
        return False
    try:
        json.loads(data.removeprefix(_BOM))
    except (ValueError, RecursionError):
        return True
    return False


def iter_session_lines(
    run_id: str, store: str | os.PathLike[str] | None = None, *, kind: ArtifactKind = "transcript"
) -> Iterator[bytes]:
    """Yield the input lines of an ingested run's artifact, each with its line break
    (see the module docstring for which line has none).

    This reads the artifact as it is. To read bytes known to be complete and untouched,
    check and copy in one step (:func:`agc.integrity.check_run_kept`) and read the copy
    (:func:`iter_copy_lines`): a check followed by this read opens the file twice, and
    a writer of the store may change it in between.

    Raises:
        RunIdInvalidError: bad run id.
        RunNotFoundError: the run has no such artifact file.
        InputError: a record is not an ingested line (a run written by the Python writers).
        StoreError: the file cannot be read.
    """
    run_id = RunId(run_id)
    path = StoreLayout.at(store).artifact_path(run_id, kind)
    source = f"run {run_id} ({kind})"
    try:
        handle = path.open("rb")
    except FileNotFoundError as exc:
        raise RunNotFoundError(f"run {run_id} has no {kind} file in the store ({path})") from exc
    except OSError as exc:
        raise StoreError(f"{path} cannot be read: {exc.strerror or exc}") from exc
    with handle:
        yield from _lines_of(handle, source)


def _lines_of(handle: IO[bytes], source: str) -> Iterator[bytes]:
    pending: tuple[bytes, bool] | None = None
    for position, raw in enumerate(handle):
        if not raw.strip():
            continue
        try:
            record = strict_json.loads(raw, allow_lone_surrogates=True)
        except JsonInvalidError as exc:
            raise InputError(f"{source}: record {position} is not JSON") from exc
        if pending is not None:
            yield pending[0] + b"\n"
        pending = _line(record, position, source)
    if pending is not None:
        data, invalid = pending
        yield data if invalid and _torn(data) else data + b"\n"


def export_session(
    run_id: str,
    store: str | os.PathLike[str] | None = None,
    *,
    kind: ArtifactKind = "transcript",
    max_bytes: int | None = None,
) -> bytes:
    """:func:`iter_session_lines` joined into one ``bytes``.

    Raises:
        InputError: more than ``max_bytes`` (when given); as :func:`iter_session_lines`.
    """
    return _join(iter_session_lines(run_id, store, kind=kind), run_id, kind, max_bytes)


def export_copy(
    copy: IO[bytes],
    run_id: str,
    *,
    kind: ArtifactKind = "transcript",
    max_bytes: int | None = None,
) -> bytes:
    """:func:`export_session` from a copy of the artifact's bytes (read from its current
    position to the end) instead of the store's file: the copy an object-store check
    kept of the bytes it verified.

    Raises:
        RunIdInvalidError: bad run id.
        InputError: a record is not an ingested line, or more than ``max_bytes``.
        OSError: the copy cannot be read.
    """
    return _join(iter_copy_lines(copy, run_id, kind=kind), run_id, kind, max_bytes)


def iter_copy_lines(
    copy: IO[bytes], run_id: str, *, kind: ArtifactKind = "transcript"
) -> Iterator[bytes]:
    """:func:`iter_session_lines` from a copy of the artifact's bytes (read from its
    current position to the end): the copy a check kept of the bytes it verified.

    Raises:
        RunIdInvalidError: bad run id.
        InputError: a record is not an ingested line.
        OSError: the copy cannot be read.
    """
    RunId(run_id)
    return _lines_of(copy, f"run {run_id} ({kind})")


def _join(lines: Iterable[bytes], run_id: str, kind: ArtifactKind, max_bytes: int | None) -> bytes:
    parts: list[bytes] = []
    size = 0
    for line in lines:
        size += len(line)
        if max_bytes is not None and size > max_bytes:
            raise InputError(f"run {run_id}: its {kind} is larger than {max_bytes} bytes")
        parts.append(line)
    return b"".join(parts)
