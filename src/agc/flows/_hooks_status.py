"""``agc hooks status``: whether a client will run agc's hook, and what the hook last
failed to capture; :func:`session_capture`: whether a client session is being captured.

:func:`agc.capture.check_hooks` reads the client's configuration; the failures are those
``agc hook`` kept for the store its command names (:func:`capture_failures`: the store's
``capture/failures.jsonl``, else the fallback file under ``$XDG_STATE_HOME/agc``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agc._core.store import resolve_store
from agc.capture import ClientHooks, ClientName, Scope, check_hooks, run_id_for
from agc.errors import AgcError
from agc.flows._hook import capture_failures, recorded_session_file, session_file_diverges
from agc.flows._import_sessions import captured_by_hooks

__all__ = ["SessionCapture", "hooks_status", "session_capture"]


def hooks_status(
    client: ClientName,
    scope: Scope,
    *,
    project: Path | None = None,
    environ: Mapping[str, str] | None = None,
    codex: str | None = None,
    store: str | None = None,
) -> ClientHooks:
    """:func:`agc.capture.check_hooks`, with ``last_failure`` the newest capture failure of
    this client kept for ``store`` when given, else for the store the installed command
    names (the default store when it names none), as :meth:`CaptureFailure.to_record`
    gives it; ``None`` when there is none or agc's hook is not installed; ``codex`` (a
    Codex program) is asked as :func:`agc.capture.check_hooks` says. Never raises on
    what it finds.

    Raises:
        UsageError: an unknown client or scope, or no home folder.
    """
    status = check_hooks(client, scope, project=project, environ=environ, codex=codex)
    if status.command is None:
        return status
    failures = [
        failure
        for failure in capture_failures(store or status.store, environ=environ)
        if failure.client == client
    ]
    if not failures:
        return status
    return dataclasses.replace(status, last_failure=failures[-1].to_record())


@dataclass(frozen=True)
class SessionCapture:
    """A client session file that agc's hooks capture into a run.

    Attributes:
        run_id: the run (``<client>-<session id>``).
        store: the store folder its hooks write to.
        changed_line: the first line (1-based) at which the file no longer holds what
            the run's seals took from it: the run's next seal keeps a
            ``session-file-changed`` failure and ``agc-verify`` reports
            ``transcript-diverges`` from then on; ``None`` when the file still begins
            with those lines (the next seal adds what follows).
    """

    run_id: str
    store: Path
    changed_line: int | None

    def to_dict(self) -> dict[str, object]:
        return {
            "run_id": self.run_id,
            "store": str(self.store),
            "changed_line": self.changed_line,
        }


def session_capture(
    client: ClientName,
    session_id: str,
    session_file: Path,
    *,
    project: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> SessionCapture | None:
    """The run agc's hooks capture the client's session ``session_id`` into, when
    ``session_file`` is its session file: agc's hook is installed for ``client`` (its
    user settings, or the project settings of ``project``), the store its command names
    (the default store when it names none) holds that session's run, its tool events
    being the hooks' records, and the hooks named this file (or named none agc kept).
    ``None`` otherwise. Reads the client's settings file, the run's records and the
    file's sealed prefix. Never raises."""
    run_id = run_id_for(client, session_id)
    scopes: list[tuple[Scope, Path | None]] = [("user", None)]
    if project is not None:
        scopes.append(("project", project))
    for scope, folder in scopes:
        try:
            status = check_hooks(client, scope, project=folder, environ=environ)
            if status.command is None:
                continue
            store = resolve_store(status.store)
            # a relative --store in a project's settings: the project folder's
            store = store.absolute() if folder is None else folder / store
        except AgcError:
            continue
        if not captured_by_hooks(run_id, store):
            continue
        named = recorded_session_file(run_id, store)
        try:
            if named is not None and not named.samefile(session_file):
                continue
        except OSError:
            continue
        return SessionCapture(run_id, store, session_file_diverges(run_id, store, session_file))
    return None
