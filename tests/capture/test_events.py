"""Tests for agc.capture's record shape: run ids of client sessions, redacted records."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc._core.redact import redact_value
from agc._core.store import validate_run_id
from agc.capture import CLIENTS, SessionFacts, ToolEvent, run_id_for
from agc.errors import UsageError


@given(client=st.sampled_from(CLIENTS), session_id=st.text(min_size=1, max_size=300))
def test_every_session_id_gives_one_valid_run_id_of_its_client(
    client: str, session_id: str
) -> None:
    run_id = run_id_for(client, session_id)  # type: ignore[arg-type]
    assert validate_run_id(run_id) == run_id
    assert run_id.startswith(f"{client}-")
    assert run_id == run_id_for(client, session_id)  # type: ignore[arg-type]


@given(
    client=st.sampled_from(CLIENTS),
    ids=st.lists(st.text(min_size=1, max_size=120), min_size=2, max_size=2, unique=True),
)
def test_different_sessions_get_different_runs(client: str, ids: list[str]) -> None:
    assert run_id_for(client, ids[0]) != run_id_for(client, ids[1])  # type: ignore[arg-type]


def test_a_uuid_session_id_is_kept_as_it_is() -> None:
    uuid = "0199a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b"
    assert run_id_for("codex", uuid) == f"codex-{uuid}"


@pytest.mark.parametrize(("client", "session_id"), [("cursor", "s1"), ("codex", "")])
def test_an_unknown_client_or_empty_session_is_a_usage_error(client: str, session_id: str) -> None:
    with pytest.raises(UsageError):
        run_id_for(client, session_id)  # type: ignore[arg-type]


def test_a_record_is_redacted_and_reads_back() -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    event = ToolEvent(
        event="call",
        source="hook",
        client="claude-code",
        session_id="s1",
        hook="PreToolUse",
        tool="Bash",
        call_id="toolu_01",
        input={"command": f"curl -H 'Authorization: token {secret}' x"},
    )
    record = event.to_record()
    assert secret not in repr(record)
    assert ToolEvent.from_record(record).tool == "Bash"
    with pytest.raises(UsageError, match="missing"):
        ToolEvent.from_record({"event": "call"})


def test_session_facts_name_a_project_without_its_path() -> None:
    facts = SessionFacts(
        client="codex", session_id="s1", project=SessionFacts.project_of("/home/u/p")
    )
    attributes = facts.to_attributes()
    assert attributes == {"client": "codex", "session_id": "s1", "project": attributes["project"]}
    assert "/home" not in attributes["project"]
    assert attributes["project"].startswith("sha256:")


SECRETISH = st.sampled_from(
    [
        "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
        "password",
        "AKIA" + "IOSFODNN7EXAMPLE",
        "Bearer abc.def.ghi",
        "ls -la",
    ]
)
TEXT = st.text(max_size=12) | SECRETISH
VALUE = st.recursive(
    st.none() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)


@given(
    session_id=TEXT.filter(bool),
    tool=st.none() | TEXT,
    call_id=st.none() | TEXT,
    hook=st.none() | TEXT,
    agent_ts=st.none() | TEXT,
    value=VALUE,
)
def test_a_record_is_what_redacting_the_whole_record_gives(
    session_id: str,
    tool: str | None,
    call_id: str | None,
    hook: str | None,
    agent_ts: str | None,
    value: object,
) -> None:
    event = ToolEvent(
        event="call",
        source="session-file",
        client="codex",
        session_id=session_id,
        hook=hook,
        tool=tool,
        call_id=call_id,
        input=value,
        agent_ts=agent_ts,
        line=3,
    )
    record = event.to_record()
    whole = {**record, **{k: getattr(event, k) for k in ("session_id", "hook", "tool")}}
    whole.update(call_id=call_id, input=value, agent_ts=agent_ts)
    assert record == redact_value(whole)
