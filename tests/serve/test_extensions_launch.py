"""Sessions launched with extensions: the skill root registered and checked, the MCP
servers' startup awaited (bounded) before the first turn, the Codex home and arguments
of the extensions, and a restart when the extensions' fingerprint changes. The
app-server is the scripted peer of tests/serve/appserver_double.py; the real Codex
runs in tests/e2e/test_serve_extensions_codex.py."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agc.errors import AgcError, InputError
from agc.serve import AgentExtensions, ProviderEvent, Supervisor
from agc.serve._appserver import AppServerOptions, AppServerSession, _skills_under
from agc.serve._supervisor import default_session_factory
from tests.serve.fakes import Factory, make_config
from tests.serve.helpers import run

REACHES_INSIDE = {
    "agc.serve._appserver": "the app-server session against a scripted peer",
    "agc.serve._supervisor": "the default session factory's launch options",
}

DOUBLE = Path(__file__).with_name("appserver_double.py")
FAKE_KEY = "sk-proj-" + "Q" * 40


def _script(tmp_path: Path) -> Path:
    script = tmp_path / "codex"
    # The session runs `<binary> app-server ARGS`; this launcher drops `app-server`.
    script.write_text(f'#!/bin/sh\nshift\nexec {sys.executable} {DOUBLE} normal "$@"\n')
    script.chmod(0o755)
    return script


def _skill_root(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    for name in ("pixel-art", "code-review", "broken"):
        (root / name).mkdir(parents=True)
        (root / name / "SKILL.md").write_text(f"---\nname: {name}\n---\n")
    return root


def _session(tmp_path: Path, mcp: str, **options: Any) -> AppServerSession:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "DOUBLE_MCP": mcp,
        "DOUBLE_ARGV": str(tmp_path / "argv.json"),
    }
    settings: dict[str, Any] = {
        "binary": str(_script(tmp_path)),
        "env": env,
        "workspace": tmp_path,
        "handshake_timeout_s": 5.0,
        "request_timeout_s": 5.0,
    }
    settings.update(options)
    return AppServerSession(AppServerOptions(**settings))


def test_the_skill_root_is_registered_and_the_mcp_startup_awaited(tmp_path: Path) -> None:
    root = _skill_root(tmp_path)
    session = _session(
        tmp_path,
        "search=ready,sqlite=failed",
        skill_roots=(root,),
        mcp_servers=("search", "sqlite"),
        mcp_startup_wait_s=30.0,
        extra_args=("-c", "mcp_optional_startup_grace_ms=120000"),
    )
    events: list[ProviderEvent] = []

    async def collect(event: ProviderEvent) -> None:
        events.append(event)

    async def scenario() -> None:
        await session.start()
        reported = session.facts.extra["extensions"]
        skills = reported["skills"]
        # Only what lies under the registered root; the broken one as Codex's error.
        assert [skill["name"] for skill in skills["skills"]] == ["code-review", "pixel-art"]
        assert skills["errors"] == [
            {"path": str(root / "broken" / "SKILL.md"), "message": "missing field `description`"}
        ]
        assert skills["failed"] is None
        await session.open_thread(None)
        mcp = session.facts.extra["extensions"]["mcpServers"]
        assert mcp["timedOut"] is False
        assert mcp["servers"]["search"] == {"status": "ready", "error": None}
        failed = mcp["servers"]["sqlite"]
        assert failed["status"] == "failed"
        assert FAKE_KEY not in failed["error"]  # a server's output is redacted
        # The notifications read while waiting are events of the first turn.
        result = await session.run_turn("hi", collect, client_id="trc-1")
        assert result.status == "completed"
        statuses = [e.params["status"] for e in events if e.method.startswith("mcpServer/")]
        assert statuses == ["starting", "ready", "starting", "failed"]
        assert events[-1].method == "turn/completed"
        await session.close()

    run(scenario())
    assert json.loads((tmp_path / "argv.json").read_text()) == [
        "-c",
        "mcp_optional_startup_grace_ms=120000",
    ]


def test_the_mcp_wait_is_bounded_for_a_server_that_never_settles(tmp_path: Path) -> None:
    session = _session(
        tmp_path,
        "search=ready,slow=starting",
        mcp_servers=("search", "slow", "silent"),
        mcp_startup_wait_s=0.3,
    )

    async def scenario() -> dict[str, Any]:
        await session.start()
        await asyncio.wait_for(session.open_thread(None), timeout=10)
        await session.close()
        return dict(session.facts.extra["extensions"]["mcpServers"])

    mcp = run(scenario())
    assert mcp["timedOut"] is True
    assert mcp["servers"] == {
        "search": {"status": "ready", "error": None},
        "slow": {"status": "starting", "error": None},
        "silent": {"status": "notReported", "error": None},
    }
    assert 300 <= mcp["waitedMs"] < 10_000


def test_a_session_without_extensions_registers_nothing(tmp_path: Path) -> None:
    session = _session(tmp_path, "search=ready")

    async def scenario() -> None:
        await session.start()
        await session.open_thread(None)
        await session.close()

    run(scenario())
    assert "extensions" not in session.facts.extra


def test_the_default_factory_launches_with_the_current_extensions(tmp_path: Path) -> None:
    config = make_config(tmp_path, codex_args=("--own",))
    plan = AgentExtensions(
        fingerprint="blake3:1",
        codex_home=tmp_path / "projected",
        skill_roots=(tmp_path / "projected" / "extension-skills",),
        mcp_servers=("search",),
        codex_args=("-c", "mcp_optional_startup_grace_ms=120000"),
        mcp_startup_wait_ms=5_000,
    )
    current: list[AgentExtensions | None] = [plan]
    make = default_session_factory(config, client_version="0", extensions=lambda: current[0])
    session = make("app-server")
    assert isinstance(session, AppServerSession)
    options = session.options
    assert options.env["CODEX_HOME"] == str(tmp_path / "projected")
    assert tuple(options.extra_args) == ("--own", "-c", "mcp_optional_startup_grace_ms=120000")
    assert tuple(options.skill_roots) == plan.skill_roots
    assert tuple(options.mcp_servers) == ("search",)
    assert options.mcp_startup_wait_s == 5.0
    current[0] = None
    plain = make("app-server")
    assert isinstance(plain, AppServerSession)
    assert plain.options.env["CODEX_HOME"] == str(config.codex_home)
    assert tuple(plain.options.extra_args) == ("--own",)
    assert not plain.options.skill_roots
    assert not plain.options.mcp_servers


class _Source:
    """An extensions source the test changes; counts its calls."""

    def __init__(self) -> None:
        self.plan: AgentExtensions | None = AgentExtensions(fingerprint="blake3:a")
        self.calls = 0
        self.failure: AgcError | None = None

    def __call__(self) -> AgentExtensions | None:
        self.calls += 1
        if self.failure is not None:
            raise self.failure
        return self.plan


class _ReportingFactory(Factory):
    def __call__(self, protocol: Any) -> Any:
        session = super().__call__(protocol)
        session.facts.extra["extensions"] = {"skills": {"skills": [{"name": "pixel-art"}]}}
        return session


def test_a_changed_fingerprint_restarts_the_session_before_the_next_turn(
    tmp_path: Path,
) -> None:
    source = _Source()
    factory = _ReportingFactory()
    supervisor = Supervisor(make_config(tmp_path), session_factory=factory, extensions=source)

    async def turn(conversation: str | None) -> tuple[str, list[str]]:
        accepted = await supervisor.submit("x", conversation)
        trace = supervisor.traces[accepted["traceId"]]
        await asyncio.wait_for(trace.done.wait(), timeout=10)
        assert trace.status == "completed"
        methods = [event.method for event in trace.page(-1, 1000)[0]]
        return str(accepted["conversationId"]), methods

    async def scenario() -> None:
        await supervisor.start()
        try:
            conversation, _ = await turn(None)
            _, body = await supervisor.readiness()
            section = body["extensions"]
            assert section["current"]["fingerprint"] == "blake3:a"
            assert section["reported"]["fingerprint"] == "blake3:a"
            assert section["reported"]["skills"] == {"skills": [{"name": "pixel-art"}]}
            _, methods = await turn(conversation)  # unchanged: the same process
            assert "serve.session.restarting" not in methods
            assert len(factory.turn_sessions) == 1
            source.plan = AgentExtensions(fingerprint="blake3:b")
            _, methods = await turn(conversation)
            assert methods.index("serve.session.restarting") < methods.index("serve.session.ready")
            first, second = factory.turn_sessions
            assert first.closed
            assert not second.closed
            assert second.resumed_from == first.facts.thread_id  # the thread continues
            _, body = await supervisor.readiness()
            assert body["extensions"]["reported"]["fingerprint"] == "blake3:b"
        finally:
            await supervisor.stop()

    run(scenario())


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
_SCALAR = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
_PATHS = st.sampled_from(["/root/a/SKILL.md", "/root-b/x/SKILL.md", "/other/SKILL.md", "/root"])
_SKILL = st.fixed_dictionaries(
    {"name": _JSON | st.text(max_size=10), "path": _PATHS | _JSON, "enabled": _JSON}
)
_ENTRY = st.fixed_dictionaries(
    {
        "skills": st.lists(_SKILL | _SCALAR, max_size=5) | _SCALAR,
        "errors": st.lists(st.fixed_dictionaries({"path": _PATHS, "message": _JSON}), max_size=3)
        | _SCALAR,
    }
)


@given(st.fixed_dictionaries({"data": st.lists(_ENTRY | _SCALAR, max_size=3)}) | _JSON)
def test_any_skills_list_answer_gives_only_what_lies_under_the_roots(listing: Any) -> None:
    """Whatever shape Codex answers with, the report holds only skills and errors whose
    path lies under a registered root (``/root``, not ``/root-b``), never raises."""
    found = _skills_under(listing, ["/root"])
    for entry in (*found["skills"], *found["errors"]):
        assert entry["path"].startswith("/root/")
    for skill in found["skills"]:
        assert isinstance(skill["name"], str)
        assert isinstance(skill["enabled"], bool)


def test_a_failing_extensions_source_keeps_the_running_extensions_and_says_why(
    tmp_path: Path,
) -> None:
    source = _Source()
    factory = Factory()
    supervisor = Supervisor(make_config(tmp_path), session_factory=factory, extensions=source)

    async def turn(conversation: str | None) -> tuple[str, list[str]]:
        accepted = await supervisor.submit("x", conversation)
        trace = supervisor.traces[accepted["traceId"]]
        await asyncio.wait_for(trace.done.wait(), timeout=10)
        assert trace.status == "completed"
        return str(accepted["conversationId"]), [e.method for e in trace.page(-1, 1000)[0]]

    async def scenario() -> None:
        await supervisor.start()
        try:
            conversation, _ = await turn(None)
            source.plan = AgentExtensions(fingerprint="blake3:b")
            source.failure = InputError("the base is not TOML: " + FAKE_KEY)
            _, methods = await turn(conversation)
            assert "serve.session.restarting" not in methods  # the previous ones stay
            _, body = await supervisor.readiness()
            section = body["extensions"]
            assert section["current"]["fingerprint"] == "blake3:a"
            assert section["error"].startswith("input-invalid: the base is not TOML")
            assert FAKE_KEY not in section["error"]
            source.failure = None
            _, methods = await turn(conversation)
            assert "serve.session.restarting" in methods
            _, body = await supervisor.readiness()
            assert body["extensions"]["error"] is None
        finally:
            await supervisor.stop()

    run(scenario())
