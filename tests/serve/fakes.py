"""A scripted provider session for the supervisor and API tests.

The real Codex CLI is tested end to end (tests/e2e/test_serve_codex.py); these tests
exercise the service's own logic (registry, timeouts, cancel, records, answers) with a
:class:`ScriptedSession` behind the provider interface, which emits the app-server
notifications a script names and can be held, failed or "killed" at will.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agc.serve import (
    ProviderError,
    ProviderEvent,
    ServeConfig,
    SessionFacts,
    Supervisor,
    TurnResult,
)
from agc.serve._provider import EventCallback, ProtocolName

REACHES_INSIDE = {
    "agc.serve._provider": (
        "the provider protocol's callback and protocol-name types, for a fake provider"
    ),
}

_THREADS = itertools.count(1)


def command_events(turn_id: str, command: str, output: str, reply: str) -> list[ProviderEvent]:
    """The notifications of a turn that runs one command and replies."""
    item = {"type": "commandExecution", "id": "call_1", "command": command, "status": "inProgress"}
    done = {
        **item,
        "status": "completed",
        "exitCode": 0,
        "aggregatedOutput": output,
        "durationMs": 3,
    }
    message = {"type": "agentMessage", "id": "msg_1", "text": reply}
    return [
        ProviderEvent("turn/started", {"turn": {"id": turn_id, "status": "inProgress"}}),
        ProviderEvent("item/started", {"item": item, "turnId": turn_id}),
        ProviderEvent("item/completed", {"item": done, "turnId": turn_id}),
        ProviderEvent("item/completed", {"item": message, "turnId": turn_id}),
        ProviderEvent("turn/completed", {"turn": {"id": turn_id, "status": "completed"}}),
    ]


@dataclass
class Behaviour:
    """What the next sessions do (shared by every session a factory makes)."""

    reply: str = "done"
    output: str = "hello"
    command: str = "echo hi"
    start_error: ProviderError | None = None
    hold: asyncio.Event | None = None  # run_turn waits for it after item/started
    exit_during_turn: bool = False
    extra_events: Sequence[ProviderEvent] = ()
    status: str = "completed"
    error_message: str | None = None
    ignore_interrupt: bool = False


@dataclass
class ScriptedSession:
    behaviour: Behaviour
    protocol: ProtocolName = "app-server"
    facts: SessionFacts = field(default_factory=SessionFacts)
    started: bool = False
    closed: bool = False
    killed: bool = False
    turns: list[str] = field(default_factory=list)
    resumed_from: str | None = None
    _interrupted: asyncio.Event = field(default_factory=asyncio.Event)
    _dead: asyncio.Event = field(default_factory=asyncio.Event)

    async def start(self) -> None:
        if self.behaviour.start_error is not None:
            raise self.behaviour.start_error
        self.started = True
        self.facts.agent_version = "scripted/1"

    async def open_thread(self, resume_thread_id: str | None) -> None:
        self.resumed_from = resume_thread_id
        thread = resume_thread_id or f"thread-{next(_THREADS)}"
        self.facts.thread_id = thread
        self.facts.session_id = thread
        self.facts.model = "scripted-model"

    async def run_turn(self, text: str, on_event: EventCallback, *, client_id: str) -> TurnResult:
        del client_id
        self.turns.append(text)
        turn_id = f"turn-{len(self.turns)}"
        behaviour = self.behaviour
        events = command_events(turn_id, behaviour.command, behaviour.output, behaviour.reply)
        for event in behaviour.extra_events:
            await on_event(event)
        for index, event in enumerate(events):
            if behaviour.status != "completed" and event.method == "item/completed":
                continue
            if event.method == "turn/completed":
                break
            await on_event(event)
            if index == 1 and behaviour.hold is not None:
                waits = [
                    asyncio.ensure_future(behaviour.hold.wait()),
                    asyncio.ensure_future(self._dead.wait()),
                ]
                if not behaviour.ignore_interrupt:
                    waits.append(asyncio.ensure_future(self._interrupted.wait()))
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                for waiter in waits:
                    waiter.cancel()
                if self._dead.is_set():
                    return TurnResult(
                        "failed",
                        turn_id=turn_id,
                        error_code="provider_exited",
                        error_message="the agent process was killed by SIGKILL",
                    )
                if self._interrupted.is_set():
                    await on_event(
                        ProviderEvent(
                            "turn/completed", {"turn": {"id": turn_id, "status": "interrupted"}}
                        )
                    )
                    return TurnResult(
                        "cancelled",
                        turn_id=turn_id,
                        error_code="turn_interrupted",
                        error_message="interrupted",
                    )
            if behaviour.exit_during_turn and index == 1:
                self._dead.set()
                return TurnResult(
                    "failed",
                    turn_id=turn_id,
                    error_code="provider_exited",
                    error_message="the agent process exited with code 1",
                )
        status = {"completed": "completed", "failed": "failed"}[behaviour.status]
        await on_event(ProviderEvent("turn/completed", {"turn": {"id": turn_id, "status": status}}))
        if status == "failed":
            return TurnResult(
                "failed",
                turn_id=turn_id,
                error_code="turn_failed",
                error_message=behaviour.error_message or "failed",
            )
        return TurnResult("completed", reply=behaviour.reply, turn_id=turn_id)

    async def interrupt(self) -> None:
        self._interrupted.set()

    def alive(self) -> bool:
        return self.started and not self.closed and not self._dead.is_set()

    async def close(self) -> None:
        self.closed = True

    def kill(self) -> None:
        self.killed = True
        self._dead.set()


@dataclass
class Factory:
    behaviour: Behaviour = field(default_factory=Behaviour)
    sessions: list[ScriptedSession] = field(default_factory=list)

    def __call__(self, protocol: ProtocolName) -> ScriptedSession:
        session = ScriptedSession(self.behaviour, protocol=protocol)
        self.sessions.append(session)
        return session

    @property
    def turn_sessions(self) -> list[ScriptedSession]:
        """Sessions that ran a turn (not the preflight's handshakes)."""
        return [s for s in self.sessions if s.turns]


def fake_codex(folder: Path, *, version: str = "codex-cli 0.171.0") -> Path:
    """An executable named ``codex`` whose ``--version`` prints ``version``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "codex"
    path.write_text(f"#!/bin/sh\necho '{version}'\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def make_config(tmp_path: Path, **overrides: Any) -> ServeConfig:
    """A config whose workspace, CODEX_HOME and codex binary exist, key set."""
    workspace = tmp_path / "workspace"
    home = tmp_path / "codex-home"
    workspace.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    binary = fake_codex(tmp_path / "bin")
    env = {"PATH": f"{binary.parent}:/usr/bin:/bin", "OPENAI_API_KEY": "placeholder-value"}
    settings: dict[str, Any] = {
        "workspace": workspace,
        "codex_home": home,
        "protocol": "app-server",
        "env": env,
        "reap_interval_ms": 50,
    }
    settings.update(overrides)
    return ServeConfig(**settings)


def make_supervisor(
    tmp_path: Path,
    *,
    factory: Factory | None = None,
    sink: Any = None,
    clock: Callable[[], float] | None = None,
    **overrides: Any,
) -> tuple[Supervisor, Factory]:
    factory = factory or Factory()
    kwargs: dict[str, Any] = {"session_factory": factory}
    if clock is not None:
        kwargs["monotonic"] = clock
    return Supervisor(make_config(tmp_path, **overrides), sink, **kwargs), factory
