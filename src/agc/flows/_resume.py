"""Resume only from verified evidence: a recorded run's session, verified, then unwrapped.

The rule combines two features: :mod:`agc.integrity` judges the run (as ``agc-verify``
does, signatures included) and keeps a copy of the very bytes it judged;
:mod:`agc.resume` reads that copy as the session file it came from. A run that does not
verify is refused, never parsed; a file that is no snapshot is refused when a signature
is required, since it carries none.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from agc import resume as _resume
from agc._core import json as strict_json
from agc._core.fs import describe_os_error
from agc._core.signature_rule import signature_required
from agc.errors import (
    FileUnreadableError,
    JsonInvalidError,
    RunNotFoundError,
    UnsignedError,
    VerificationError,
)
from agc.flows._files import new_file_errors
from agc.resume import FormatName, History, get_spec, load_history

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from agc.integrity import RunReport

__all__ = [
    "ProgressBar",
    "has_recorded_run",
    "history_from_run",
    "refuse_unsigned_file",
    "refuse_unverified",
    "run_session",
    "scan_history",
    "streamable_size",
]

ProgressBar: TypeAlias = Callable[
    [int | None, str], AbstractContextManager[Callable[[int], None] | None]
]
"""``progress(total_bytes_or_None, label)``: a context manager yielding a callback that
takes the bytes done so far (or ``None`` for no progress display)."""

STATUS_BYTES = 8 * 1024 * 1024  # a progress display only above this size (bytes)


def has_recorded_run(run_id: str, store: str | os.PathLike[str] | None) -> bool:
    """Whether the store holds the run's evidence (a recorded or imported run): anything
    at its manifest's or artifacts' paths (:meth:`~agc._core.storage.Store.holds`). In
    a store that keeps versions (``s3://``), delete markers count too: a run whose
    objects were deleted is refused by its verification, not taken as never there.

    Raises:
        RunIdInvalidError: bad run id.
        StoreError: the store cannot be listed (exit 3).
    """
    # The store layer: not for a FILE (`agc resume FILE --check` starts without it).
    from agc._core.store import (  # noqa: PLC0415
        ARTIFACT_KINDS,
        artifact_path,
        manifest_path,
        open_store,
    )

    opened = open_store(store)
    return any(
        opened.holds(path)
        for path in (manifest_path(run_id), *(artifact_path(run_id, k) for k in ARTIFACT_KINDS))
    )


def refuse_unverified(
    report: RunReport,
    run_id: str,
    *,
    insecure: bool,
    on_warning: Callable[[str], None] | None = None,
) -> None:
    """Refuse a run that does not verify, or warn through ``on_warning`` that it is used
    anyway (``insecure``, the ``--insecure-skip-verify`` switch).

    Raises:
        VerificationError: the run is tampered or incomplete (without ``insecure``),
            exit 1; the error carries the report.
    """
    if report.complete:
        return
    if not insecure:
        raise VerificationError(
            f"run {run_id} does not verify ({'; '.join(report.missing)}): agc resume "
            "does not resume from evidence that is tampered or incomplete",
            report=report,
            hint=f"See agc-verify {run_id}; --insecure-skip-verify resumes from it anyway.",
        )
    if on_warning is not None:
        on_warning(
            f"warning: --insecure-skip-verify: run {run_id} does not verify "
            f"({'; '.join(report.missing)}); its records are used as they are"
        )


def refuse_unsigned_file(
    path: Path,
    *,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None,
    require_signature: bool,
    allow_unsigned: bool,
    insecure: bool,
) -> None:
    """Refuse a history FILE that is no snapshot when a signature is required.

    A session file or a JSON array carries no signature, so with a trusted key (or
    ``require_signature``) it is unsigned: read as a history, it would let whoever
    replaced a signed snapshot with one resume what no key signed. ``allow_unsigned``
    (and ``insecure``, which checks no signature) lets it be read. The rule is the one
    :func:`agc.integrity.check_run` applies to runs (any trusted key requires a
    signature).

    Raises:
        UnsignedError: a signature is required (exit 1).
    """
    required = signature_required(
        trusted_keys, require_signature=require_signature, allow_unsigned=allow_unsigned
    )
    if required and not insecure:
        raise UnsignedError(
            f"{path} is not a snapshot, so it carries no signature, and a signature is "
            "required: a trusted key was given, or --require-signature",
            hint="--allow-unsigned reads an unsigned session file or JSON array.",
        )


def streamable_size(path: Path, wanted: FormatName | None) -> int | None:
    """The size in bytes of ``path`` when it can be read as a session file line by line
    (:func:`scan_history`), else ``None`` (read it whole).

    Streamed: a regular file whose first line is a JSON object that is not a snapshot
    document, when no format or a line-based (session-file) format is asked for.
    Anything else (a JSON array, a snapshot, a ``.json.zst`` file, a pipe, a file that
    cannot be opened) is ``None``. Never raises.
    """
    if wanted is not None and not get_spec(wanted).line_based:
        return None
    if path.name.endswith(".json.zst"):
        return None
    try:
        with path.open("rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                return None
            first = handle.readline()
    except OSError:
        return None
    try:
        record = strict_json.loads(first, allow_lone_surrogates=True)
    except JsonInvalidError:
        return None
    if not isinstance(record, dict) or ("toolCallState" in record and "messages" in record):
        return None
    return info.st_size


def scan_history(
    path: Path,
    *,
    source: str,
    format: FormatName | None,
    size: int,
    progress: ProgressBar | None = None,
    settle: int | None = None,
    checked: bool = False,
    keep: int | None = None,
) -> History:
    """A session file read line by line (:func:`agc.resume.scan_session`, ``settle``,
    ``checked`` and ``keep`` as there); ``size`` in bytes, shown by ``progress`` only
    for inputs of 8 MiB or more.

    Raises:
        FileUnreadableError: the file cannot be read (exit 3).
        InputError, HistoryFormatError: see :func:`agc.resume.load_history`.
    """
    if progress is None:
        return _scan(path, source, format, None, settle, checked, keep)
    with progress(size if size >= STATUS_BYTES else None, f"reading {path.name}") as bar:
        return _scan(path, source, format, bar, settle, checked, keep)


def _scan(
    path: Path,
    source: str,
    wanted: FormatName | None,
    bar: Callable[[int], None] | None,
    settle: int | None,
    checked: bool = False,
    keep: int | None = None,
) -> History:
    try:
        return _resume.scan_session(
            path,
            source=source,
            format=wanted,
            progress=bar,
            settle=settle,
            checked=checked,
            keep=keep,
        )
    except OSError as exc:
        raise FileUnreadableError(f"{path} cannot be read: {describe_os_error(exc)}") from exc


def history_from_run(
    run_id: str,
    store: str | os.PathLike[str] | None,
    *,
    stack: ExitStack,
    format: FormatName | None = None,
    max_bytes: int,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
    allow_unsigned: bool = False,
    insecure_skip_verify: bool = False,
    on_warning: Callable[[str], None] | None = None,
    progress: ProgressBar | None = None,
    settle: int | None = None,
) -> tuple[History, int]:
    """The session a recorded or imported run holds, verified then unwrapped, and its
    size in bytes: ``(history, bytes)``: :func:`run_session`, its session file read as
    :func:`scan_history` reads one (``settle`` as :func:`agc.resume.scan_session`).

    Raises:
        As :func:`run_session` and :func:`scan_history`.
    """
    found, size = run_session(
        run_id,
        store,
        stack=stack,
        format=format,
        max_bytes=max_bytes,
        trusted_keys=trusted_keys,
        require_signature=require_signature,
        allow_unsigned=allow_unsigned,
        insecure_skip_verify=insecure_skip_verify,
        on_warning=on_warning,
    )
    if not isinstance(found, Path):
        return found, size
    history = scan_history(
        found, source=f"run {run_id}", format=format, size=size, progress=progress, settle=settle
    )
    return history, size


def run_session(
    run_id: str,
    store: str | os.PathLike[str] | None,
    *,
    stack: ExitStack,
    format: FormatName | None = None,
    max_bytes: int,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
    allow_unsigned: bool = False,
    insecure_skip_verify: bool = False,
    on_warning: Callable[[str], None] | None = None,
) -> tuple[History | Path, int]:
    """The session a recorded or imported run holds, verified then unwrapped, and its
    size in bytes: ``(history or session file, bytes)``.

    The run is judged as ``agc-verify RUN`` judges it (``trusted_keys``,
    ``require_signature``, ``allow_unsigned`` as :func:`agc.integrity.check_run`); the
    records parsed are a copy of the transcript read once and checked against what the
    verification judged (:func:`agc.flows.check_captured_run_kept`; in an object store the
    copy of the very bytes it hashed): a file swapped after the check is refused, never
    parsed. A transcript over ``max_bytes`` is refused before it is copied. The records
    are unwrapped line by line into a private temporary file (``$TMPDIR``, mode 0600)
    that lives as long as ``stack``: its path is given when it is a session file (read
    it as a FILE is: :func:`scan_history`, or repaired as it is read), else its history,
    read whole (as a JSON-array ``format`` is).

    Raises:
        VerificationError: the run is tampered or incomplete (without
            ``insecure_skip_verify``; with it, ``on_warning`` is told instead).
        RunNotFoundError: the run has no transcript.
        InputError: the transcript is larger than ``max_bytes``.
        HistoryFormatError: its records are no history of ``format``.
        StoreError: the store cannot be read (exit 3).
        FileWriteError: the temporary folder is full (exit 3).
    """
    # the verifier only when a run is resumed: `agc resume --check FILE` starts without it
    from agc.flows._crosscheck import check_captured_run_kept  # noqa: PLC0415
    from agc.integrity import export_copy, iter_copy_lines  # noqa: PLC0415

    report, kept = check_captured_run_kept(
        run_id,
        store,
        max_bytes=max_bytes,
        trusted_keys=trusted_keys,
        require_signature=require_signature,
        allow_unsigned=allow_unsigned,
    )
    source = f"run {run_id}"
    with kept:
        refuse_unverified(report, run_id, insecure=insecure_skip_verify, on_warning=on_warning)
        if not kept.read:
            raise RunNotFoundError(f"run {run_id} has no transcript file in the store ({kept.url})")
        if format is not None and not get_spec(format).line_based:
            data = export_copy(kept.file, run_id, max_bytes=max_bytes)
            return load_history(data, source=source, format=format), len(data)
        import tempfile  # noqa: PLC0415 - only for a run's records

        unwrapped = stack.enter_context(
            tempfile.NamedTemporaryFile(prefix="agc-resume-run-")  # noqa: SIM115 - in the stack
        )
        size = 0
        with new_file_errors(Path(unwrapped.name), option="temporary file"):
            for line in iter_copy_lines(kept.file, run_id):
                unwrapped.write(line)
                size += len(line)
            unwrapped.flush()
    path = Path(unwrapped.name)
    if streamable_size(path, format) is None:  # not a session file: read whole
        return load_history(path.read_bytes(), source=source, format=format), size
    return path, size
