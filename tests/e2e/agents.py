"""Run the real clients in throwaway sandboxes against the scripted model server.

A sandbox is one client's world for one test: a work folder (the agent's cwd), the
client's home (``CODEX_HOME`` or ``CLAUDE_CONFIG_DIR``), the environment and the model
server. Each client process starts in its own session (process group), so a test can
SIGKILL the client and every tool process it started at once, as a crash would.

::

    with ModelServer(script) as server:
        codex = CodexSandbox.create(tmp_path, server, codex_bin)
        done = codex.exec("run the tests")
        rollout = codex.session_file(done.session_id)
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from tests.e2e.clients import (
    claude_env,
    claude_home,
    codex_env,
    codex_home,
    gemini_env,
    gemini_home,
    gemini_settings,
)
from tests.e2e.model_server import ModelServer

__all__ = [
    "ClaudeSandbox",
    "ClientResult",
    "CodexSandbox",
    "GeminiSandbox",
    "kill_group",
    "wait_for",
]

RUN_TIMEOUT: Final = 120.0  # seconds for one client turn against the local server
_UUID: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True)
class ClientResult:
    """A finished client process: exit code, output, wall time in seconds."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def describe(self) -> str:
        """Everything needed to read a failure."""
        return (
            f"$ {' '.join(self.argv)}\nexit {self.returncode} after {self.seconds:.1f}s\n"
            f"--- stdout ---\n{self.stdout[-4000:]}\n--- stderr ---\n{self.stderr[-4000:]}"
        )


def _run(argv: list[str], env: dict[str, str], cwd: Path, timeout: float) -> ClientResult:
    started = time.monotonic()
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(process)
        stdout, stderr = process.communicate()
        stderr += f"\n[agc e2e: killed after {timeout}s]"
    return ClientResult(tuple(argv), process.returncode, stdout, stderr, time.monotonic() - started)


def _start(argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


HookCommand = Callable[[str], str]
"""The shell command line a hook of one event runs (given the event's name)."""


def _json_hooks(
    path: Path, command: HookCommand, events: Iterable[str], tool_events: set[str]
) -> None:
    """Add one command hook per event to the ``hooks`` of the JSON settings at ``path``
    (the shape Claude Code and the Gemini CLI share: ``{event: [{matcher?, hooks: [{type,
    command}]}]}``; matcher ``*`` on the tool events)."""
    settings = json.loads(path.read_text(encoding="utf-8"))
    hooks: dict[str, list[dict[str, Any]]] = settings.setdefault("hooks", {})
    for event in events:
        group: dict[str, Any] = {"hooks": [{"type": "command", "command": command(event)}]}
        if event in tool_events:
            group = {"matcher": "*", **group}
        hooks.setdefault(event, []).append(group)
    path.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")


def kill_group(process: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """SIGKILL the process's whole group (the client and every tool it started)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def wait_for(condition: str, check: object, timeout: float = 60.0) -> None:
    """Poll ``check()`` until true; AssertionError naming ``condition`` on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {condition}")


@dataclass
class CodexSandbox:
    """``codex exec`` with a throwaway ``CODEX_HOME`` pointed at the model server."""

    root: Path
    server: ModelServer
    binary: Path
    work: Path
    home: Path
    env: dict[str, str]

    @classmethod
    def create(
        cls, root: Path, server: ModelServer, binary: Path, work: Path | None = None
    ) -> CodexSandbox:
        """A new sandbox under ``root``; ``work`` (shared by sandboxes) defaults to a new
        ``root/work``."""
        root.mkdir(parents=True, exist_ok=True)
        if work is None:
            work = root / "work"
            work.mkdir()
        home = codex_home(root, server)
        return cls(root, server, binary, work, home, codex_env(root, server, home))

    def _argv(self, *args: str) -> list[str]:
        return [str(self.binary), "exec", "--skip-git-repo-check", "-C", str(self.work), *args]

    def add_hooks(self, command: HookCommand, events: Iterable[str]) -> None:
        """Append one ``[[hooks.<Event>]]`` command hook per event to ``config.toml``
        (untrusted: Codex skips it until trusted, or run with the trust bypass)."""
        config = self.home / "config.toml"
        text = config.read_text(encoding="utf-8")
        for event in events:
            text += (
                f"\n[[hooks.{event}]]\n[[hooks.{event}.hooks]]\n"
                f'type = "command"\ncommand = {json.dumps(command(event))}\n'
            )
        config.write_text(text, encoding="utf-8")

    def exec(self, prompt: str, timeout: float = RUN_TIMEOUT) -> ClientResult:
        """Run one turn: ``codex exec <prompt>``."""
        return _run(self._argv(prompt), self.env, self.work, timeout)

    def start(self, prompt: str) -> subprocess.Popen[bytes]:
        """Start ``codex exec <prompt>`` in its own process group (output to a log)."""
        return _start(self._argv(prompt), self.env, self.work, self.root / "codex-exec.log")

    def resume(self, session_id: str, prompt: str, timeout: float = RUN_TIMEOUT) -> ClientResult:
        """Resume a saved session: ``codex exec resume <id> <prompt>``."""
        return _run(self._argv("resume", session_id, prompt), self.env, self.work, timeout)

    def session_files(self) -> list[Path]:
        """Every rollout under ``$CODEX_HOME/sessions`` (oldest first)."""
        return sorted((self.home / "sessions").rglob("rollout-*.jsonl"))

    def session_file(self, session_id: str | None = None) -> Path:
        """The rollout of ``session_id`` (or the only one); AssertionError otherwise."""
        files = [f for f in self.session_files() if session_id is None or session_id in f.name]
        assert len(files) == 1, f"expected one rollout for {session_id}, found {files}"
        return files[0]

    @staticmethod
    def session_id_of(rollout: Path) -> str:
        """The session id a rollout's file name ends with."""
        found = _UUID.findall(rollout.name)
        assert found, f"no session id in {rollout.name}"
        return str(found[-1])


@dataclass
class ClaudeSandbox:
    """``claude -p`` with a throwaway ``CLAUDE_CONFIG_DIR`` pointed at the model server."""

    root: Path
    server: ModelServer
    binary: Path
    work: Path
    config: Path
    env: dict[str, str]
    model: str = "claude-sonnet-4-5"

    @classmethod
    def create(
        cls, root: Path, server: ModelServer, binary: Path, work: Path | None = None
    ) -> ClaudeSandbox:
        """A new sandbox under ``root``; ``work`` (shared by sandboxes: Claude Code files
        sessions by their cwd) defaults to a new ``root/work``."""
        root.mkdir(parents=True, exist_ok=True)
        if work is None:
            work = root / "work"
            work.mkdir()
        config = claude_home(root)
        return cls(root, server, binary, work, config, claude_env(root, server, config))

    def _argv(self, *args: str) -> list[str]:
        return [
            str(self.binary),
            "--output-format",
            "stream-json",
            "--verbose",
            "--dangerously-skip-permissions",
            "--model",
            self.model,
            *args,
        ]

    def add_hooks(self, command: HookCommand, events: Iterable[str]) -> None:
        """Add one command hook per event to ``settings.json`` (matcher ``*`` on tools)."""
        _json_hooks(
            self.config / "settings.json",
            command,
            events,
            {"PreToolUse", "PostToolUse", "PostToolUseFailure"},
        )

    def run(self, prompt: str, session_id: str, timeout: float = RUN_TIMEOUT) -> ClientResult:
        """One turn in a new session: ``claude --session-id <id> -p <prompt>``."""
        return _run(
            self._argv("--session-id", session_id, "-p", prompt), self.env, self.work, timeout
        )

    def start(self, prompt: str, session_id: str) -> subprocess.Popen[bytes]:
        """Start ``claude -p`` in its own process group (stream-json to a log)."""
        argv = self._argv("--session-id", session_id, "-p", prompt)
        return _start(argv, self.env, self.work, self.root / "claude-run.log")

    def resume(self, session_id: str, prompt: str, timeout: float = RUN_TIMEOUT) -> ClientResult:
        """Resume a saved session: ``claude --resume <id> -p <prompt>``."""
        return _run(self._argv("--resume", session_id, "-p", prompt), self.env, self.work, timeout)

    @property
    def projects(self) -> Path:
        return self.config / "projects"

    def session_file(self, session_id: str) -> Path:
        """Where Claude Code keeps the session: ``projects/<cwd, / as ->/<id>.jsonl``."""
        files = sorted(self.projects.rglob(f"{session_id}.jsonl"))
        assert len(files) == 1, f"expected one session file for {session_id}, found {files}"
        return files[0]


@dataclass
class GeminiSandbox:
    """``gemini -p`` with a throwaway ``GEMINI_CLI_HOME`` pointed at the model server."""

    root: Path
    server: ModelServer
    binary: Path
    work: Path
    home: Path
    env: dict[str, str]

    @classmethod
    def create(
        cls, root: Path, server: ModelServer, binary: Path, work: Path | None = None
    ) -> GeminiSandbox:
        """A new sandbox under ``root``; ``work`` defaults to a new ``root/work``."""
        root.mkdir(parents=True, exist_ok=True)
        if work is None:
            work = root / "work"
            work.mkdir()
        home = gemini_home(root)
        return cls(root, server, binary, work, home, gemini_env(root, server, home))

    def _argv(self, *args: str) -> list[str]:
        # --skip-trust: a headless run in an untrusted folder exits 55.
        return [
            str(self.binary),
            "--yolo",
            "--skip-trust",
            "--output-format",
            "stream-json",
            *args,
        ]

    def add_hooks(self, command: HookCommand, events: Iterable[str]) -> None:
        """Add one command hook per event to the user ``settings.json`` (matcher ``*`` on
        the tool events)."""
        _json_hooks(gemini_settings(self.home), command, events, {"BeforeTool", "AfterTool"})

    def run(self, prompt: str, timeout: float = RUN_TIMEOUT) -> ClientResult:
        """One turn in a new session: ``gemini -p <prompt>``."""
        return _run(self._argv("-p", prompt), self.env, self.work, timeout)

    def start(self, prompt: str) -> subprocess.Popen[bytes]:
        """Start ``gemini -p`` in its own process group (stream-json to a log)."""
        return _start(self._argv("-p", prompt), self.env, self.work, self.root / "gemini-run.log")

    def resume(self, session: str, prompt: str, timeout: float = RUN_TIMEOUT) -> ClientResult:
        """Resume a saved session: ``gemini --resume <uuid|number|latest> -p <prompt>``."""
        return _run(self._argv("--resume", session, "-p", prompt), self.env, self.work, timeout)

    def session_files(self) -> list[Path]:
        """Every chat file under ``.gemini/tmp/<project>/chats`` (oldest first)."""
        return sorted((self.home / ".gemini" / "tmp").glob("*/chats/session-*.json*"))

    def session_file(self) -> Path:
        """The only chat file; AssertionError otherwise."""
        files = self.session_files()
        assert len(files) == 1, f"expected one chat file, found {files}"
        return files[0]
