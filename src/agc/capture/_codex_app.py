"""Ask Codex itself which hooks it will run: ``codex app-server``'s ``hooks/list``.

Codex's app server speaks JSON-RPC 2.0 as one JSON object per line on stdin/stdout
(Codex's app-server protocol, ``codex app-server generate-json-schema``):
``initialize`` (``clientInfo``), the ``initialized`` notification, then
``hooks/list`` with ``{"cwds": [folder]}`` answers, per folder, every hook Codex found
with its ``key``, ``command``, ``sourcePath``, ``currentHash`` and ``trustStatus``
(``trusted``, ``untrusted``, ``modified``, ``managed``): the same view as the TUI's
``/hooks`` review. Nothing is changed and no model is asked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

__all__ = ["CodexAppError", "codex_hooks_list", "find_codex"]

_DEADLINE_S: Final = 20.0
_MAX_LINE: Final = 64 << 20


class CodexAppError(Exception):
    """Codex's app server could not be asked (not installed, failed, too slow)."""


def find_codex(environ: Mapping[str, str] | None = None) -> str | None:
    """The ``codex`` program on ``PATH`` (of ``environ``), ``None`` when there is none."""
    env = os.environ if environ is None else environ
    return shutil.which("codex", path=env.get("PATH"))


def codex_hooks_list(
    codex: str,
    *,
    cwd: Path,
    environ: Mapping[str, str] | None = None,
    deadline_s: float = _DEADLINE_S,
) -> list[dict[str, Any]]:
    """Every hook Codex finds for ``cwd``, as ``hooks/list`` reports it.

    Raises:
        CodexAppError: the program cannot start, exits, answers with an error or does not
            answer within ``deadline_s`` seconds (it is then killed).
    """
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"clientInfo": {"name": "agc", "version": "1"}},
        },
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "hooks/list", "params": {"cwds": [str(cwd)]}},
    ]
    try:
        server = subprocess.Popen(
            [codex, "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=None if environ is None else dict(environ),
            cwd=cwd if cwd.is_dir() else None,
        )
    except OSError as exc:
        raise CodexAppError(f"cannot start {codex} app-server: {exc.strerror or exc}") from exc
    timer = threading.Timer(deadline_s, server.kill)
    timer.start()
    try:
        if server.stdin is None or server.stdout is None:  # pragma: no cover - PIPE given
            raise CodexAppError(f"{codex} app-server has no pipes")
        server.stdin.write(b"".join(json.dumps(r).encode() + b"\n" for r in requests))
        server.stdin.flush()
        while True:
            line = server.stdout.readline(_MAX_LINE)
            if not line:
                raise CodexAppError(f"{codex} app-server ended without answering hooks/list")
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict) or message.get("id") != 1:
                continue
            result = message.get("result")
            if not isinstance(result, dict):
                raise CodexAppError(f"hooks/list failed: {message.get('error')}")
            hooks: list[dict[str, Any]] = [
                hook
                for entry in result.get("data") or ()
                if isinstance(entry, dict)
                for hook in entry.get("hooks") or ()
                if isinstance(hook, dict)
            ]
            return hooks
    except OSError as exc:
        raise CodexAppError(f"{codex} app-server: {exc.strerror or exc}") from exc
    finally:
        timer.cancel()
        server.kill()
        server.wait()
