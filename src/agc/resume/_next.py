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
* **Gemini CLI** keeps a session at
  ``$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/session-YYYY-MM-DDThh-mm-<id8>.jsonl``
  (``$GEMINI_CLI_HOME`` is ``~`` when unset; the date and minute of the session's start
  in UTC; ``<id8>`` the session id's first 8 characters), ``<project>`` being the short
  name the client gave the project folder (the folder holds a ``.project_root`` file
  naming that directory, whose SHA-256 is the file's ``projectHash``; before it exists,
  the name :func:`_gemini_named_project` derives), and resumes it with
  ``gemini --resume <session id>`` run in that directory.

When the session's file is already where the client keeps it (found by its session id),
that path is the answer; otherwise the path is built by the rules above. A Claude Code
file found in a project folder other than the one its working directory names (the
project was moved) is resumed from a directory that names that folder when one is known
(:func:`_claude_project_dir`); else the step is the working directory's folder, and
:attr:`NextStep.note` says where the other file is. When neither
can be done (no client's session file, no session id, the client's folder not found),
:func:`find_next_step` says why.
"""

from __future__ import annotations

import glob
import hashlib
import hmac
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

from agc.resume._formats.model import History
from agc.resume._formats.stream import HEAD_LINES

__all__ = ["NextStep", "NoNextStep", "find_next_step", "next_step"]

_SCAN_RECORDS: Final = HEAD_LINES  # the cwd is on a session file's first lines
_NOT_ALNUM: Final = re.compile(r"[^A-Za-z0-9]")


@dataclass(frozen=True)
class NextStep:
    """How to hand a repaired session back to the client that wrote it.

    Attributes:
        client: ``claude-code``, ``codex`` or ``gemini``.
        session_id: the client's session id.
        path: where the client reads the session file.
        exists: whether a file is at ``path`` now (the session the client knows).
        cwd: the working directory the session ran in, when the file says.
        commands: the exact shell commands that resume it, most common first.
        note: what else the user must know to resume it, in words (a file of the
            session kept under another project folder than its working directory's),
            else ``None``.
    """

    client: Literal["claude-code", "codex", "gemini"]
    session_id: str
    path: Path
    exists: bool
    cwd: str | None
    commands: tuple[str, ...]
    note: str | None = None

    @property
    def keyed_by_cwd(self) -> bool:
        """Whether the client finds the session by the directory it is run in: Claude Code
        looks in the projects folder named by its working directory, Gemini CLI in the
        project folder whose ``.project_root`` names it; Codex resumes a rollout by its id
        from any directory."""
        return self.client in {"claude-code", "gemini"}

    def missing_cwd(self) -> str | None:
        """Why the resume command cannot run as given when the session's working directory
        does not exist on this machine (a session from another machine), in words; ``None``
        when it exists or the client does not need it."""
        if self.cwd is None or not self.keyed_by_cwd or Path(self.cwd).is_dir():
            return None
        where = (
            "the projects folder named by the directory it runs in (every character other "
            "than A-Z a-z 0-9 written -)"
            if self.client == "claude-code"
            else "the project folder whose .project_root names the directory it runs in"
        )
        return (
            f"the session ran in {self.cwd}, which does not exist on this machine; the "
            f"client resumes a session from the directory it was recorded in (it looks in "
            f"{where}): create it first (mkdir -p -- {shlex.quote(self.cwd)}), or run from "
            "the directory the project is in now with the file put in that directory's "
            "folder instead"
        )

    def aside(self) -> Path | None:
        """Where :meth:`copy_command` moves the file at ``path`` now (the session before
        the repair): ``<path>.before-repair``, or ``.before-repair-2``, ``-3`` … when
        that is taken; ``None`` when no file is at ``path``."""
        if not self.path.exists():
            return None
        aside = self.path.with_name(f"{self.path.name}.before-repair")
        number = 1
        while aside.exists() or aside.is_symlink():
            number += 1
            aside = self.path.with_name(f"{self.path.name}.before-repair-{number}")
        return aside

    def copy_command(self, repaired: Path) -> str:
        """The shell command that puts ``repaired`` where the client reads the session:
        led by the ``mv`` of the file there now to :meth:`aside` when there is one, or by
        the ``mkdir -p`` of the client's folder when it does not exist."""
        target = shlex.quote(str(self.path))
        copy = f"cp -- {shlex.quote(str(repaired))} {target}"
        aside = self.aside()
        if aside is not None:
            return f"mv -- {target} {shlex.quote(str(aside))} && {copy}"
        if self.path.parent.is_dir():
            return copy
        return f"mkdir -p -- {shlex.quote(str(self.path.parent))} && {copy}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``next_step`` in ``agc resume --json``)."""
        return {
            "client": self.client,
            "session_id": self.session_id,
            "path": str(self.path),
            "exists": self.exists,
            "cwd": self.cwd,
            "commands": list(self.commands),
            "note": self.note,
        }


@dataclass(frozen=True)
class NoNextStep:
    """Why no :class:`NextStep` can be given for a history.

    Attributes:
        reason: in words, naming the folder looked in when one was (``the Gemini CLI
            folder /home/u/.gemini/tmp holds no file of session …``).
        session_file: whether the history is a client's session file (whose repair a
            person means to resume: the reason is worth telling them).
    """

    reason: str
    session_file: bool = True


def next_step(history: History, env: Mapping[str, str] | None = None) -> NextStep | None:
    """:func:`find_next_step`, ``None`` when there is no next step."""
    found = find_next_step(history, env)
    return found if isinstance(found, NextStep) else None


def find_next_step(history: History, env: Mapping[str, str] | None = None) -> NextStep | NoNextStep:
    """Where the client of ``history`` reads it and how to resume it, or why that cannot
    be said: the history is not a client's session file, names no session id, or the
    client's folder of it cannot be found nor its path built.

    Args:
        history: a Claude Code session file, a Codex rollout or a Gemini CLI session
            file, as read.
        env: the environment naming the clients' homes (``CLAUDE_CONFIG_DIR``,
            ``CODEX_HOME``, ``GEMINI_CLI_HOME``, ``HOME``); default :data:`os.environ`.
    """
    env = os.environ if env is None else env
    if history.format not in {"claude-code", "codex-rollout", "gemini-chat"}:
        return NoNextStep(
            f"the history ({history.format}) is not a client's session file (Claude "
            "Code, Codex or Gemini CLI), so no client resumes it",
            session_file=False,
        )
    session = history.session_id
    if not session or "/" in session or session in {".", ".."}:
        return NoNextStep("the session file names no usable session id")
    first = _first_records(history.records)
    home = Path(env.get("HOME") or Path.home())
    if history.format == "claude-code":
        cwd = next((r["cwd"] for r in first if isinstance(r.get("cwd"), str)), None)
        config = Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude")
        return _claude_step(session, cwd, config / "projects")
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
            return NoNextStep(
                f"no rollout of session {session} is under {codex_home / 'sessions'}, and "
                "the file gives no start time to name one"
            )
        quoted = shlex.quote(session)
        commands = (f"codex resume {quoted}", f"codex exec resume {quoted} 'continue'")
        return NextStep("codex", session, path, path.exists(), cwd, commands)
    return _gemini_step(session, first, Path(env.get("GEMINI_CLI_HOME") or home))


def _claude_step(session: str, cwd: str | None, projects: Path) -> NextStep | NoNextStep:
    """Claude Code's step: the file of ``session`` under ``projects`` (its working
    directory's folder first), resumed from a directory whose encoded name is the folder
    it is in."""
    name = f"{session}.jsonl"
    folder = _claude_folder(projects, cwd) if cwd else None
    own = folder / name if folder is not None else None
    found = own if own is not None and _is_file(own) else _find(projects, f"*/{glob.escape(name)}")
    if found is None and own is None and cwd:
        return NoNextStep(
            f"no file of session {session} is under {projects}, and the project folder "
            f"of {cwd} is not there yet: Claude Code cuts a folder name longer than "
            f"{_CLAUDE_NAME_MAX} characters and ends it with a hash of its own, so only "
            "the folder it made names it (run claude once in that directory, then again)"
        )
    if found is None and own is None:
        return NoNextStep(
            f"no file of session {session} is under {projects}, and the session file "
            "names no working directory to name its project folder"
        )
    path, note = found or own, None
    if found is not None and cwd and not _names_folder(cwd, found.parent.name):
        moved = _claude_project_dir(found.parent)
        if moved is not None:
            note = (
                f"the session ran in {cwd}, but its file is kept under {found.parent}, the "
                f"project folder of {moved}: Claude Code finds it when run from there"
            )
            cwd = moved
        elif own is not None:
            note = (
                f"a file of this session is kept under {found.parent}, another project "
                f"folder than that of the directory the session ran in ({cwd}), and no "
                "directory it is named for is known: Claude Code, which reads the folder "
                f"named by the directory it runs in, does not find it there from {cwd}, so "
                f"this step puts the session in {own.parent}"
            )
            path = own
        else:
            note = (
                f"a file of this session is kept under {found.parent}, another project "
                f"folder than that of the directory the session ran in ({cwd}), and "
                "neither the directory it is named for nor the folder of that one (cut "
                "by Claude Code and ended with a hash of its own) is known: resume it "
                "from the directory that folder is named for"
            )
    assert path is not None  # found, or own when found is None
    resume = f"claude --resume {shlex.quote(session)}"
    command = f"cd {shlex.quote(cwd)} && {resume}" if cwd else resume
    return NextStep("claude-code", session, path, path.exists(), cwd, (command,), note)


_CLAUDE_NAME_MAX: Final = 200
"""Claude Code's longest project folder name: a longer encoded directory is cut to this
many characters and ``-`` and a hash of the directory appended (its ``sanitizePath``)."""


def _claude_folder(projects: Path, cwd: str) -> Path | None:
    """The project folder under ``projects`` Claude Code keeps the sessions run in ``cwd``
    in: ``cwd`` with every character other than ``A-Z a-z 0-9`` written ``-``; a name
    longer than :data:`_CLAUDE_NAME_MAX` is cut and ends in a hash of Claude Code's own,
    so it is the one folder there that starts with the cut name, else ``None``."""
    encoded = _NOT_ALNUM.sub("-", cwd)
    if len(encoded) <= _CLAUDE_NAME_MAX:
        return projects / encoded
    prefix = encoded[:_CLAUDE_NAME_MAX] + "-"
    try:
        made = [folder for folder in projects.iterdir() if folder.name.startswith(prefix)]
    except OSError:
        made = []
    return made[0] if len(made) == 1 else None


def _names_folder(cwd: str, folder: str) -> bool:
    """Whether Claude Code keeps the sessions run in ``cwd`` in a folder named ``folder``."""
    encoded = _NOT_ALNUM.sub("-", cwd)
    if len(encoded) <= _CLAUDE_NAME_MAX:
        return encoded == folder
    return folder.startswith(encoded[:_CLAUDE_NAME_MAX] + "-")


def _is_file(path: Path) -> bool:
    """``path.is_file()``, ``False`` when the path cannot be asked about (a name too
    long for the file system, a folder that cannot be searched)."""
    try:
        return path.is_file()
    except OSError:
        return False


_PEEK_FILES: Final = 64  # session files of a project folder read for a cwd naming it


def _claude_project_dir(folder: Path) -> str | None:
    """A directory whose Claude Code project folder is ``folder`` (the directory with every
    character other than ``A-Z a-z 0-9`` written ``-``), or ``None`` when none is known.

    The encoding loses characters, so it is not undone: the candidates are the first
    ``cwd`` recorded in each of up to 64 session files in ``folder`` (sorted), then the
    folder's name with every ``-`` read ``/``; of those whose encoding is the folder's
    name, the first that is a directory on this machine, else the first recorded one."""
    wanted = folder.name
    try:
        files = sorted(folder.glob("*.jsonl"))[:_PEEK_FILES]
    except OSError:
        files = []
    recorded = [cwd for cwd in map(_recorded_cwd, files) if cwd is not None]
    fitting = [cwd for cwd in recorded if _names_folder(cwd, wanted)]
    naive = wanted.replace("-", "/")
    for candidate in [*fitting, naive]:
        if _names_folder(candidate, wanted) and _is_dir(candidate):
            return candidate
    return next(iter(fitting), None)


def _is_dir(path: str) -> bool:
    try:
        return Path(path).is_dir()
    except OSError:
        return False


def _recorded_cwd(file: Path) -> str | None:
    """The first ``cwd`` on the first lines of a Claude Code session file, if any (``None``
    too when it cannot be read)."""
    import json  # noqa: PLC0415 - only for a session kept under another project folder

    try:
        with file.open("rb") as handle:
            for _, line in zip(range(_SCAN_RECORDS), handle, strict=False):
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict) and isinstance(record.get("cwd"), str):
                    return str(record["cwd"])
    except OSError:
        return None
    return None


def _gemini_step(session: str, first: list[dict[str, Any]], home: Path) -> NextStep | NoNextStep:
    header = next((r for r in first if isinstance(r.get("projectHash"), str)), {})
    temp = home / ".gemini" / "tmp"
    project: Path | None = None
    cwd: str | None = None
    found = _find(temp, f"*/chats/session-*-{glob.escape(session[:8])}.jsonl")
    if found is not None:
        project = found.parent.parent
    else:
        project = _gemini_project(temp, header.get("projectHash"))
    if project is not None:
        try:
            cwd = (project / ".project_root").read_text(encoding="utf-8").strip() or None
        except (OSError, UnicodeDecodeError):
            cwd = None
    if found is not None:
        path = found
    else:
        started = _parse_time(header.get("startTime"))
        if project is None:
            named = _gemini_named_project(temp, header.get("projectHash"), first, home)
            if isinstance(named, NoNextStep):
                return named
            project, cwd = named
        if started is None:
            return NoNextStep(
                f"no file of session {session} is under {temp}, and the file gives no "
                "start time to name one"
            )
        stamp = started.astimezone(UTC).strftime("%Y-%m-%dT%H-%M")
        path = project / "chats" / f"session-{stamp}-{session[:8]}.jsonl"
    resume = f"gemini --resume {shlex.quote(session)}"
    command = f"cd {shlex.quote(cwd)} && {resume}" if cwd else resume
    return NextStep("gemini", session, path, path.exists(), cwd, (command,))


_WORKSPACE: Final = re.compile(r"Workspace Directories:\**\n((?:[ \t]+- [^\n]+\n?)+)")


def _gemini_named_project(
    temp: Path, project_hash: object, first: list[dict[str, Any]], home: Path
) -> tuple[Path, str] | NoNextStep:
    """The project folder Gemini CLI 0.61 will read the session from, and the project
    directory, when no folder under ``temp`` is the project's yet.

    The file names its project only by ``projectHash``, the SHA-256 hex of the project
    directory; its first user message (the ``<session_context>`` Gemini CLI writes)
    lists the workspace directories. The one whose SHA-256 is the hash is the project
    directory. Gemini CLI names its folder by ``~/.gemini/projects.json`` (directory ->
    name) when it lists it, else by the directory's last component lower-cased, every
    run of characters other than ``a-z 0-9`` made one ``-``, ``-`` trimmed at both ends
    (``project`` when nothing is left); a folder of that name that another directory
    owns (its ``.project_root``) makes it take ``<name>-1``, ``-2`` …, which depend on
    the machine: then no folder is named."""
    why = (
        f"the Gemini CLI folder {temp} holds no file of session {_session_of(first)} and no "
        "project folder for its projectHash"
    )
    if not isinstance(project_hash, str):
        return NoNextStep(f"{why}, and the file has no projectHash")
    root = next(
        (
            directory
            for directory in _workspace_directories(first)
            if hmac.compare_digest(
                hashlib.sha256(directory.encode("utf-8")).hexdigest(), project_hash
            )
        ),
        None,
    )
    if root is None:
        return NoNextStep(
            f"{why}: the file names its project directory only by that hash (a SHA-256 "
            "of the directory), and its first message lists no workspace directory with "
            "that hash, so the directory, whose name gives the folder's, is not known"
        )
    name = _registered_name(home / ".gemini" / "projects.json", root)
    if name is None:
        name = _slug(Path(root).name)
        try:
            owner = (temp / name / ".project_root").read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            owner = None
        if owner is not None and owner != root:
            return NoNextStep(
                f"{why}: Gemini CLI names the folder of {root} {name}, but {temp / name} "
                f"belongs to {owner}, so it will take {name}-1 or a later free name, "
                f"which only running gemini in {root} makes"
            )
    return temp / name, root


def _session_of(first: list[dict[str, Any]]) -> str:
    """The session id of a Gemini CLI session's header, for messages."""
    return next((r["sessionId"] for r in first if isinstance(r.get("sessionId"), str)), "?")


def _workspace_directories(first: list[dict[str, Any]]) -> list[str]:
    """The directories listed under ``Workspace Directories:`` in the texts of the
    first records (a ``<session_context>`` message), in order."""
    found: list[str] = []
    stack: list[Any] = list(first)
    while stack:
        value = stack.pop(0)
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str) and "Workspace Directories:" in value:
            for block in _WORKSPACE.findall(value):
                found.extend(
                    line.strip()[2:].strip() for line in block.splitlines() if line.strip()
                )
    return found


def _registered_name(registry: Path, root: str) -> str | None:
    """The folder name ``~/.gemini/projects.json`` gives ``root``, if it does."""
    try:
        import json  # noqa: PLC0415 - only when no project folder was found

        projects = json.loads(registry.read_text(encoding="utf-8")).get("projects")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return None
    name = projects.get(root) if isinstance(projects, dict) else None
    return name if isinstance(name, str) and re.fullmatch(r"[a-z0-9-]+", name) else None


def _slug(text: str) -> str:
    """Gemini CLI's name for a project folder (``ProjectRegistry.slugify``)."""
    return re.sub(r"^-|-$", "", re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", text.lower()))) or (
        "project"
    )


def _gemini_project(temp: Path, project_hash: object) -> Path | None:
    """The project folder under Gemini CLI's ``tmp`` whose ``.project_root`` names the
    directory whose SHA-256 hex is ``project_hash``."""
    if not isinstance(project_hash, str):
        return None
    try:
        markers = sorted(temp.glob("*/.project_root"))
    except OSError:
        return None
    for marker in markers:
        try:
            root = marker.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            continue
        digest = hashlib.sha256(root.encode("utf-8")).hexdigest()
        if hmac.compare_digest(digest, project_hash):
            return marker.parent
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
