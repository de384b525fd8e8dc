"""A ``codex app-server`` session against a scripted peer whose answers each test
chooses: what the handshake and the thread request carry, answers missing what the
protocol promises (no ``userAgent``, no thread, no turn id), a refused request, events
between turns, of another turn, errors Codex retries and one it does not, skill
registration that fails, and MCP servers that settle or never report."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agc.serve import ProviderError, ProviderEvent
from agc.serve._appserver import AppServerOptions, AppServerSession

REACHES_INSIDE = {
    "agc.serve._appserver": "the app-server session against a scripted peer, request "
    "by request; the supervisor's use of it is tested with scripted sessions",
}

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"

# The peer: ``python app-server SPEC LOG``. For each request it answers what SPEC gives
# for its method: events ``before`` the answer, ``result`` or ``error``, events
# ``after``; ``exit`` ends the process instead. Every message it reads goes to LOG.
PEER = """
import json, sys
spec, log = json.load(open(sys.argv[1])), open(sys.argv[2], "a")
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\\n"); sys.stdout.flush()
for line in sys.stdin:
    log.write(line); log.flush()
    message = json.loads(line)
    if "id" not in message:
        continue
    plan = spec.get(message["method"], {"result": {}})
    if "exit" in plan:
        sys.exit(plan["exit"])
    for event in plan.get("before", []):
        send(event)
    if "error" in plan:
        send({"id": message["id"], "error": plan["error"]})
    else:
        send({"id": message["id"], "result": plan.get("result", {})})
    for event in plan.get("after", []):
        send(event)
"""

DEFAULTS: dict[str, Any] = {
    "initialize": {"result": {"userAgent": "codex_cli_rs/0.171.0"}},
    "thread/start": {"result": {"thread": {"id": "th-1"}, "model": "gpt-test"}},
    "thread/resume": {"result": {"thread": {"id": "th-0", "sessionId": "s-0"}}},
    "turn/start": {"result": {"turn": {"id": "t1"}}},
}


class Peer:
    def __init__(self, tmp_path: Path, spec: dict[str, Any]) -> None:
        (tmp_path / "app-server").write_text(PEER)
        self.spec_file = tmp_path / "spec.json"
        self.spec_file.write_text(json.dumps({**DEFAULTS, **spec}))
        self.log = tmp_path / "log.jsonl"
        self.tmp_path = tmp_path

    def session(self, **options: Any) -> AppServerSession:
        settings: dict[str, Any] = {
            "binary": sys.executable,  # runs ./app-server: the workspace is its cwd
            "env": {},
            "workspace": self.tmp_path,
            "handshake_timeout_s": 10.0,
            "request_timeout_s": 10.0,
            "extra_args": (str(self.spec_file), str(self.log)),
        }
        settings.update(options)
        return AppServerSession(AppServerOptions(**settings))

    def received(self, method: str) -> list[dict[str, Any]]:
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return [m for m in map(json.loads, lines) if m.get("method") == method]


def run(case: Any) -> Any:
    return asyncio.run(asyncio.wait_for(case(), 30))


def note(method: str, **params: Any) -> dict[str, Any]:
    return {"method": method, "params": params}


async def turn(session: AppServerSession, text: str = "hi") -> tuple[Any, list[ProviderEvent]]:
    events: list[ProviderEvent] = []

    async def collect(event: ProviderEvent) -> None:
        events.append(event)

    return await session.run_turn(text, collect, client_id="c-1"), events


def test_the_handshake_and_thread_carry_the_options_and_facts_are_kept(tmp_path: Path) -> None:
    peer = Peer(
        tmp_path,
        {"initialize": {"result": {"userAgent": f"codex {SECRET}"}}},
    )

    async def case() -> AppServerSession:
        session = peer.session(
            client_version="9.9", opt_out_notifications=("codex/event",), sandbox="read-only",
            model="gpt-x",
        )  # fmt: skip
        await session.start()
        await session.open_thread(None)
        await session.close()
        return session

    session = run(case)
    (initialize,) = peer.received("initialize")
    assert initialize["params"]["clientInfo"]["version"] == "9.9"
    assert initialize["params"]["capabilities"]["optOutNotificationMethods"] == ["codex/event"]
    assert len(peer.received("initialized")) == 1
    (start,) = peer.received("thread/start")
    assert start["params"] == {
        "cwd": str(tmp_path), "approvalPolicy": "never", "sandbox": "read-only", "model": "gpt-x",
    }  # fmt: skip
    facts = session.facts
    assert facts.agent_version == "codex [REDACTED:github-token]"
    assert (facts.thread_id, facts.session_id, facts.model) == ("th-1", "th-1", "gpt-test")


def test_a_resumed_thread_asks_for_it_without_its_turns(tmp_path: Path) -> None:
    peer = Peer(tmp_path, {})

    async def case() -> AppServerSession:
        session = peer.session()
        await session.start()
        await session.open_thread("th-0")
        await session.close()
        return session

    session = run(case)
    (resume,) = peer.received("thread/resume")
    assert resume["params"]["threadId"] == "th-0"
    assert resume["params"]["excludeTurns"] is True
    assert (session.facts.thread_id, session.facts.session_id) == ("th-0", "s-0")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"initialize": {"result": {"name": "codex"}}},
         "codex app-server answered initialize without a userAgent"),
        ({"initialize": {"error": {"code": -1, "message": "not ready"}}},
         "codex app-server did not answer initialize: not ready"),
    ],
)  # fmt: skip
def test_a_handshake_without_what_the_protocol_promises_is_not_wired(
    tmp_path: Path, spec: dict[str, Any], message: str
) -> None:
    peer = Peer(tmp_path, spec)

    async def case() -> tuple[ProviderError, bool]:
        session = peer.session()
        with pytest.raises(ProviderError) as caught:
            await session.start()
        return caught.value, session.alive()

    error, alive = run(case)
    assert (error.code, error.message) == ("stdio_protocol_not_wired", message)
    assert not alive  # the process is closed


def test_a_thread_answer_without_a_thread_is_a_protocol_error(tmp_path: Path) -> None:
    peer = Peer(tmp_path, {"thread/start": {"result": {"thread": {"name": "x"}}}})

    async def case() -> ProviderError:
        session = peer.session()
        await session.start()
        try:
            with pytest.raises(ProviderError) as caught:
                await session.open_thread(None)
            return caught.value
        finally:
            await session.close()

    error = run(case)
    assert error.code == "provider_protocol_error"
    assert error.message == "codex app-server answered thread/start without a thread"


@pytest.mark.parametrize(
    ("spec", "code", "message"),
    [
        ({"turn/start": {"error": {"code": -1, "message": "busy"}}},
         "provider_request_refused", "busy"),
        ({"turn/start": {"result": {"turn": {}}}}, "provider_protocol_error",
         "codex app-server answered turn/start without a turn id"),
        ({"turn/start": {"exit": 4}}, "provider_exited", "the agent process exited with code 4"),
    ],
    ids=["refused", "no-turn-id", "exited"],
)  # fmt: skip
def test_a_turn_that_cannot_start_fails_with_the_reason(
    tmp_path: Path, spec: dict[str, Any], code: str, message: str
) -> None:
    peer = Peer(tmp_path, spec)

    async def case() -> Any:
        session = peer.session()
        await session.start()
        await session.open_thread(None)
        try:
            return (await turn(session))[0]
        finally:
            await session.close()

    result = run(case)
    assert (result.status, result.error_code, result.error_message) == ("failed", code, message)


def test_a_turn_before_any_thread_fails_without_asking_codex(tmp_path: Path) -> None:
    peer = Peer(tmp_path, {})

    async def case() -> Any:
        session = peer.session()
        await session.start()
        try:
            return (await turn(session))[0]
        finally:
            await session.close()

    result = run(case)
    assert (result.status, result.error_message) == ("failed", "no thread")
    assert peer.received("turn/start") == []


def test_a_turn_keeps_its_own_events_and_ends_with_the_last_error_codex_gave_up_on(
    tmp_path: Path,
) -> None:
    after_start = [
        note("item/completed", turnId="t0", item={"type": "agentMessage", "text": "old turn"}),
        note("error", turnId="t1", willRetry=True, error={"message": "retrying"}),
        note("error", turnId="t1", willRetry=False, error={"message": "rate limited"}),
        note("turn/completed", turn={"id": "t0", "status": "completed"}),  # another turn's end
        note("turn/completed", turnId="t1", turn={"id": "t1", "status": "failed"}),
    ]
    peer = Peer(
        tmp_path,
        {
            "thread/start": {"result": {"thread": {"id": "th-1"}},
                             "after": [note("warning", message="between turns")]},
            "turn/start": {"result": {"turn": {"id": "t1"}}, "after": after_start},
        },
    )  # fmt: skip

    async def case() -> tuple[Any, list[ProviderEvent]]:
        session = peer.session()
        await session.start()
        await session.open_thread(None)
        await session.interrupt()  # no turn running: nothing is asked
        try:
            while session.rpc.events.empty():  # the warning arrives between the turns
                await asyncio.sleep(0.005)
            return await turn(session)
        finally:
            await session.close()

    result, events = run(case)
    assert [e.method for e in events] == [
        "warning", "item/completed", "error", "error", "turn/completed", "turn/completed",
    ]  # fmt: skip
    assert (result.status, result.error_code) == ("failed", "turn_failed")
    assert result.error_message == "rate limited"
    assert result.reply is None  # the other turn's message is not this one's reply
    assert peer.received("turn/interrupt") == []


def test_a_reply_only_in_the_completed_turns_items_is_the_reply(tmp_path: Path) -> None:
    items = [{"type": "agentMessage", "text": "from items"}]
    done = note("turn/completed", turn={"id": "t1", "status": "completed", "items": items})
    peer = Peer(tmp_path, {"turn/start": {"result": {"turn": {"id": "t1"}}, "after": [done]}})

    async def case() -> Any:
        session = peer.session()
        await session.start()
        await session.open_thread(None)
        try:
            return (await turn(session))[0]
        finally:
            await session.close()

    result = run(case)
    assert (result.status, result.reply) == ("completed", "from items")


def test_a_process_gone_between_turns_fails_the_next_turn(tmp_path: Path) -> None:
    peer = Peer(tmp_path, {"thread/start": {"result": {"thread": {"id": "th-1"}}}})

    async def case() -> Any:
        session = peer.session()
        await session.start()
        await session.open_thread(None)
        session.kill()
        await session.rpc.wait_closed()
        try:
            return (await turn(session))[0]
        finally:
            await session.close()

    result = run(case)
    assert (result.status, result.error_code) == ("failed", "provider_exited")
    assert result.error_message == "the agent process was killed by SIGKILL"


def test_skill_roots_that_codex_refuses_are_reported_failed_redacted(tmp_path: Path) -> None:
    refused = {"error": {"code": -1, "message": f"bad root {SECRET}"}}
    peer = Peer(tmp_path, {"skills/extraRoots/set": refused})

    async def case() -> dict[str, Any]:
        session = peer.session(skill_roots=(tmp_path / "skills",))
        await session.start()
        await session.close()
        extensions: dict[str, Any] = session.facts.extra["extensions"]
        return extensions

    extensions = run(case)
    assert extensions["skills"] == {
        "roots": [str(tmp_path / "skills")], "skills": [], "errors": [],
        "failed": "bad root [REDACTED:github-token]",
    }  # fmt: skip
    assert extensions["mcpServers"] is None


def test_mcp_startup_is_awaited_until_each_server_settles_and_its_events_reach_the_turn(
    tmp_path: Path,
) -> None:
    status = "mcpServer/startupStatus/updated"
    after = [
        note(status, name="docs", status="starting"),
        note(status, name="unknown", status="ready"),  # not one we wait for
        note(status, name="docs", status="ready"),
        note(status, name="db", status="failed", error=f"no key {SECRET}"),
    ]
    done = note("turn/completed", turn={"id": "t1", "status": "completed"})
    peer = Peer(
        tmp_path,
        {"thread/start": {"result": {"thread": {"id": "th-1"}}, "after": after},
         "turn/start": {"result": {"turn": {"id": "t1"}}, "after": [done]}},
    )  # fmt: skip

    async def case() -> tuple[dict[str, Any], list[ProviderEvent]]:
        session = peer.session(mcp_servers=("docs", "db"), mcp_startup_wait_s=10.0)
        await session.start()
        await session.open_thread(None)
        try:
            _, events = await turn(session)
            return session.facts.extra["extensions"]["mcpServers"], events
        finally:
            await session.close()

    startup, events = run(case)
    assert startup["servers"] == {
        "docs": {"status": "ready", "error": None},
        "db": {"status": "failed", "error": "no key [REDACTED:github-token]"},
    }
    assert startup["timedOut"] is False
    assert [e.method for e in events] == [status] * 4 + ["turn/completed"]  # put back, in order


def test_an_mcp_server_that_never_reports_times_the_wait_out(tmp_path: Path) -> None:
    peer = Peer(tmp_path, {})

    async def case() -> dict[str, Any]:
        session = peer.session(mcp_servers=("silent",), mcp_startup_wait_s=0.1)
        await session.start()
        await session.open_thread(None)
        await session.close()
        startup: dict[str, Any] = session.facts.extra["extensions"]["mcpServers"]
        return startup

    startup = run(case)
    assert startup["servers"] == {"silent": {"status": "notReported", "error": None}}
    assert startup["timedOut"] is True
    assert startup["waitedMs"] >= 100
