"""``agc hooks status``: whether a client will run agc's hook, and what the hook last
failed to capture.

:func:`agc.capture.check_hooks` reads the client's configuration; the failures are those
``agc hook`` kept for the store its command names (:func:`capture_failures`: the store's
``capture/failures.jsonl``, else the fallback file under ``$XDG_STATE_HOME/agc``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from agc.capture import ClientHooks, ClientName, Scope, check_hooks
from agc.flows._hook import capture_failures

__all__ = ["hooks_status"]


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
