"""Where a client reads a session file back, and the command that resumes it.

After a repair, the user needs two facts that live in each client's own conventions:

* **Claude Code** keeps a session at
  ``$CLAUDE_CONFIG_DIR/projects/<project>/<session id>.jsonl`` (``~/.claude`` when unset),
  ``<project>`` being the working directory with every character other than ``A-Z a-z
  0-9`` written ``-`` (``/home/u/my.app`` -> ``-home-u-my-app``), and resumes it with
  ``claude --resume <session id>`` run in that directory.
* **The Codex CLI** keeps a rollout at
  ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<id>.jsonl``
  (``~/.codex`` when unset; the date and time of the session's start in local time) and
  resumes it with ``codex resume <id>`` (interactive) or ``codex exec resume <id> PROMPT``.

When the session's file is already where the client keeps it (found by its session id),
that path is the answer; otherwise the path is built by the rules above.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Literal

from agc.resume._formats.model import History

__all__ = ["NextStep", "next_step"]

_SCAN_RECORDS: Final = 64  # the cwd is on a session file's first lines
_NOT_ALNUM: Final = re.compile(r"[^A-Za-z0-9]")


@dataclass(frozen=True)
class NextStep:
    """How to hand a repaired session back to the client that wrote it.

    Attributes:
        client: ``claude-code`` or ``codex``.
        session_id: the client's session id.
        path: where the client reads the session file.
        exists: whether a file is at ``path`` now (the session the client knows).
        cwd: the working directory the session ran in, when the file says.
        commands: the exact shell commands that resume it, most common first.
    """

    client: Literal["claude-code", "codex"]
    session_id: str
    path: Path
    exists: bool
    cwd: str | None
    commands: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``next_step`` in ``agc resume --json``)."""
        return {
            "client": self.client,
            "session_id": self.session_id,
            "path": str(self.path),
            "exists": self.exists,
            "cwd": self.cwd,
            "commands": list(self.commands),
        }


def next_step(history: History, env: Mapping[str, str] | None = None) -> NextStep | None:
    """Where the client of ``history`` reads it and how to resume it, or ``None`` when
    the history is not a client's session file with a session id.

    Args:
        history: a Claude Code session file or a Codex rollout, as read.
        env: the environment naming the clients' homes (``CLAUDE_CONFIG_DIR``,
            ``CODEX_HOME``, ``HOME``); default :data:`os.environ`.
    """
    env = os.environ if env is None else env
    session = history.session_id
    if not session or "/" in session or session in {".", ".."}:
        return None
    first = _first_records(history.records)
    home = Path(env.get("HOME") or Path.home())
    if history.format == "claude-code":
        cwd = next((r["cwd"] for r in first if isinstance(r.get("cwd"), str)), None)
        config = Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude")
        found = _find(config / "projects", f"*/{glob.escape(session)}.jsonl")
        if found is None and cwd is None:
            return None
        path = found or config / "projects" / _NOT_ALNUM.sub("-", cwd or "") / f"{session}.jsonl"
        resume = f"claude --resume {shlex.quote(session)}"
        command = f"cd {shlex.quote(cwd)} && {resume}" if cwd else resume
        return NextStep("claude-code", session, path, path.exists(), cwd, (command,))
    if history.format == "codex-rollout":
        line: dict[str, Any] = next((r for r in first if r.get("type") == "session_meta"), {})
        payload = line.get("payload")
        meta: dict[str, Any] = payload if isinstance(payload, dict) else {}
        cwd = meta.get("cwd") if isinstance(meta.get("cwd"), str) else None
        codex_home = Path(env.get("CODEX_HOME") or home / ".codex")
        found = _find(codex_home / "sessions", f"*/*/*/rollout-*-{glob.escape(session)}.jsonl")
        started = _parse_time(meta.get("timestamp")) or _parse_time(line.get("timestamp"))
        if found is not None:
            path = found
        elif started is not None:
            path = _rollout_path(codex_home, session, started)
        else:
            return None
        quoted = shlex.quote(session)
        commands = (f"codex resume {quoted}", f"codex exec resume {quoted} 'continue'")
        return NextStep("codex", session, path, path.exists(), cwd, commands)
    return None


def _first_records(records: Sequence[Any]) -> list[dict[str, Any]]:
    """The objects among a session file's first lines (a streamed file reads only them)."""
    first = (records[i] for i in range(min(len(records), _SCAN_RECORDS)))
    return [record for record in first if isinstance(record, dict)]


def _find(folder: Path, pattern: str) -> Path | None:
    """The first file matching ``pattern`` under ``folder`` (sorted), if any."""
    try:
        return next(iter(sorted(folder.glob(pattern))), None)
    except OSError:
        return None


def _parse_time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _rollout_path(codex_home: Path, session: str, started: datetime) -> Path:
    local = started.astimezone()  # Codex names rollouts in local time
    return (
        codex_home
        / "sessions"
        / f"{local:%Y}"
        / f"{local:%m}"
        / f"{local:%d}"
        / f"rollout-{local:%Y-%m-%dT%H-%M-%S}-{session}.jsonl"
    )
