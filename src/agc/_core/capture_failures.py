"""Where the failures of capturing client sessions are kept, and reading them back.

``agc hook`` never stops the client whose hook runs it: what it cannot capture (an
unreadable event, a store that cannot be written) is kept as one JSON line, in the store
(:data:`CAPTURE_FAILURES`) or, when the store cannot take it, in the user's state folder
(:func:`fallback_failures_path`). Each line names the store folder it was for, so one
fallback file serves every store. The verifier reads them (a run with a kept failure is
never complete), and so does ``agc hooks status``.

A line: ``{"ts": <Unix ms>, "store": "<absolute folder>", "client": …, "run_id": … or
null, "hook": … or null, "code": "<error code>", "message": …}``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal, get_args

from agc._core.fs import open_regular_file
from agc._core.json import loads
from agc.errors import AgcError

__all__ = [
    "CAPTURE_CLIENTS",
    "CAPTURE_FAILURES",
    "MAX_FAILURE_LINE",
    "CaptureClient",
    "failure_lines",
    "fallback_failures_path",
    "is_captured_run_id",
    "state_folder",
]

CaptureClient = Literal["claude-code", "codex", "gemini"]
"""The agent clients whose sessions agc captures: Claude Code, the Codex CLI, the Gemini
CLI (``agc.capture`` names them ``ClientName``)."""

CAPTURE_CLIENTS: Final[tuple[CaptureClient, ...]] = get_args(CaptureClient)

_PREFIXES: Final = tuple(f"{client}-" for client in CAPTURE_CLIENTS)


def is_captured_run_id(run_id: str) -> bool:
    """Whether ``run_id`` is named as a captured client session, ``<client>-<session id>``
    (``agc.capture.run_id_for``): cheap, for the verifier's fast path."""
    return run_id.startswith(_PREFIXES)


CAPTURE_FAILURES: Final = "capture/failures.jsonl"
"""Where a store keeps the failures of its capture (relative to the store folder)."""

MAX_FAILURE_LINE: Final = 1 << 16
"""The longest failure line read back (a longer one is skipped)."""


def state_folder(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME`` (``~/.local/state`` when unset or not absolute, per the XDG
    Base Directory Specification)."""
    env = os.environ if environ is None else environ
    state = env.get("XDG_STATE_HOME", "")
    return Path(state) if state and os.path.isabs(state) else Path.home() / ".local" / "state"


def fallback_failures_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/agc/capture-failures.jsonl`` (:func:`state_folder`): where a
    failure goes when the store cannot take it."""
    return state_folder(environ) / "agc" / "capture-failures.jsonl"


def failure_lines(
    folder: Path, environ: Mapping[str, str] | None = None, *, run_id: str | None = None
) -> list[dict[str, Any]]:
    """Every kept failure line of the store folder ``folder``, from the store and from the
    fallback file, in file order; with ``run_id``, only the lines whose ``run_id`` is it.

    Every line of the store's own ``capture/failures.jsonl`` is the store's, whatever
    folder it names (a store moved, copied or named another way keeps its failures); a
    line of the fallback file, which serves every store, is the store's when the folder it
    names is the same folder (both resolved: symlinks, ``..``). The fallback file keeps
    every failure of every store on the host, so each folder it names is resolved once,
    and a line of another run (``run_id``) not at all: a check of one run costs no file
    system call per line. A file that is absent, not a regular file or unreadable, and a
    line that is not a JSON object, are skipped: never raises."""
    found: list[dict[str, Any]] = []
    here = _resolved(folder)
    resolved: dict[str, str] = {}
    for path, own in ((folder / CAPTURE_FAILURES, True), (fallback_failures_path(environ), False)):
        for value in _parsed_lines(path):
            if run_id is not None and value.get("run_id") != run_id:
                continue
            named = value.get("store")
            if not own and isinstance(named, str) and named not in resolved:
                resolved[named] = _resolved(Path(named))
            if own or (isinstance(named, str) and resolved[named] == here):
                found.append(value)
    return found


# The JSON objects of the failure files read in this process, by path, with the identity
# of the file they were read from (device, inode, size, modification and change time in
# ns: the change time cannot be set back, so a rewrite in place is seen): a
# check of a whole store (every run) parses each file once, not once per run, and a file
# appended to, replaced or rewritten since is read again.
_PARSED: dict[Path, tuple[tuple[int, ...], tuple[dict[str, Any], ...]]] = {}
_PARSED_MAX: Final = 16


def _parsed_lines(path: Path) -> tuple[dict[str, Any], ...]:
    """The JSON objects of the failure file ``path`` in file order (lines longer than
    :data:`MAX_FAILURE_LINE` or not a JSON object skipped); none when it is absent, not
    a regular file or unreadable."""
    try:
        with open_regular_file(path) as handle:
            st = os.fstat(handle.fileno())
            identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            cached = _PARSED.get(path)
            if cached is not None and cached[0] == identity:
                return cached[1]
            lines = handle.read().splitlines()
    except (OSError, AgcError):
        return ()
    values: list[dict[str, Any]] = []
    for line in lines:
        if len(line) > MAX_FAILURE_LINE:
            continue
        try:
            value = loads(line)
        except AgcError:
            continue
        if isinstance(value, dict):
            values.append(value)
    if len(_PARSED) >= _PARSED_MAX:
        _PARSED.clear()
    _PARSED[path] = (identity, tuple(values))
    return _PARSED[path][1]


def _resolved(folder: Path) -> str:
    """The folder's absolute path with symlinks and ``..`` resolved, as far as it exists."""
    try:
        return os.path.realpath(folder)
    except (OSError, ValueError):
        return str(folder)
