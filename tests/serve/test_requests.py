"""What a chat request may carry and what the answers keep: attachments (the files
offered with a message), idempotency keys against look-alike requests, the provider's
trace window in ``/result``, and how much of a finished trace stays in memory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc.serve import ChatRefusedError, ProviderEvent, offered_files
from tests.serve.fakes import Behaviour, Factory, make_supervisor
from tests.serve.helpers import RecordingSink, run, served, terminal

CHAT = "/v1/agent/chat"


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    (workspace / "docs").mkdir(parents=True, exist_ok=True)
    (workspace / "docs" / "gdd.md").write_text("design\n")
    (workspace / "README.md").write_text("hello\n")
    (workspace / "folder").mkdir(exist_ok=True)
    outside = tmp_path / "secret.txt"
    outside.write_text("not the agent's\n")
    link = workspace / "escape.txt"
    if not link.is_symlink():
        link.symlink_to(outside)
    return workspace


def test_attachments_are_offered_to_the_turn_and_recorded_with_the_request(
    tmp_path: Path,
) -> None:
    _workspace(tmp_path)
    sink = RecordingSink()
    supervisor, _ = make_supervisor(tmp_path, sink=sink)

    async def scenario() -> str:
        async with served(supervisor) as client:
            body = {"message": "read these", "attachments": ["./docs//gdd.md", "README.md"]}
            answer = await client.post(CHAT, json=body)
            assert answer.status_code == 202, answer.text
            trace_id: str = answer.json()["traceId"]
            await terminal(client, trace_id)
            return trace_id

    trace_id = run(scenario())
    request = sink.records[trace_id][0]
    assert request["type"] == "serve.request"
    assert request["attachments"] == ["docs/gdd.md", "README.md"]


@pytest.mark.parametrize(
    ("attachments", "status", "code", "reason"),
    [
        ("README.md", 400, "attachments_invalid", None),
        ([7], 400, "attachments_invalid", None),
        (["a"] * 33, 400, "attachments_invalid", None),
        ([""], 400, "attachments_invalid", None),
        (["/etc/passwd"], 422, "attachment_invalid", "not a relative POSIX path"),
        (["~/.ssh/id_rsa"], 422, "attachment_invalid", "not a relative POSIX path"),
        (["C:/x.txt"], 422, "attachment_invalid", "not a relative POSIX path"),
        (["docs\\gdd.md"], 422, "attachment_invalid", "not a relative POSIX path"),
        (["docs/../README.md"], 422, "attachment_invalid", "climbs out with '..'"),
        (["../secret.txt"], 422, "attachment_invalid", "climbs out with '..'"),
        (["./"], 422, "attachment_invalid", "names no file"),
        (["escape.txt"], 422, "attachment_invalid", "leads out of the workspace"),
        (["missing.md"], 422, "attachment_invalid", "does not exist in the workspace"),
        (["folder"], 422, "attachment_invalid", "is not a regular file"),
    ],
)
def test_a_bad_attachment_is_a_clear_client_error_and_starts_nothing(
    tmp_path: Path, attachments: Any, status: int, code: str, reason: str | None
) -> None:
    _workspace(tmp_path)
    supervisor, factory = make_supervisor(tmp_path)

    async def scenario() -> None:
        async with served(supervisor) as client:
            body = {"message": "x", "attachments": ["README.md", *attachments]}
            if not isinstance(attachments, list):
                body["attachments"] = attachments
            answer = await client.post(CHAT, json=body)
            assert answer.status_code == status, answer.text
            error = answer.json()["error"]
            assert error["code"] == code
            if reason is not None:
                assert error["reason"] == reason
                assert error["index"] == 1
                assert reason in error["message"]
            assert supervisor.traces == {}

    run(scenario())
    assert factory.turn_sessions == []


_PART = st.sampled_from(["..", ".", "", "docs", "gdd.md", "README.md", "x", "~", "/"])


@given(parts=st.lists(_PART, min_size=1, max_size=5))
def test_every_offered_file_is_a_file_inside_the_workspace(
    tmp_path_factory: pytest.TempPathFactory, parts: list[str]
) -> None:
    workspace = _workspace(tmp_path_factory.mktemp("offered"))
    path = "/".join(parts)
    refused: ChatRefusedError | None = None
    try:
        (found,) = offered_files(workspace, [path])
    except ChatRefusedError as exc:
        refused = exc
    if refused is not None:
        assert refused.http_status in (400, 422)
        return
    real = Path(os.path.realpath(workspace / found))
    assert real.is_relative_to(os.path.realpath(workspace))
    assert real.is_file()
    assert ".." not in found.split("/")
    assert not found.startswith("/")


def test_a_conversation_id_spelled_none_is_not_a_replay_of_a_request_without_one(
    tmp_path: Path,
) -> None:
    supervisor, factory = make_supervisor(tmp_path)

    async def scenario() -> None:
        async with served(supervisor) as client:
            headers = {"Idempotency-Key": "key-1"}
            first = await client.post(CHAT, json={"message": "x"}, headers=headers)
            assert first.status_code == 202
            look_alike = await client.post(
                CHAT, json={"message": "x", "conversationId": "None"}, headers=headers
            )
            assert look_alike.status_code == 422
            assert look_alike.json()["error"]["code"] == "idempotency_key_reused"
            without_key = await client.post(CHAT, json={"message": "x", "conversationId": "None"})
            assert without_key.status_code == 404
            await terminal(client, first.json()["traceId"])

    run(scenario())
    assert sum(len(s.turns) for s in factory.sessions) == 1


def test_the_result_has_the_providers_trace_window_bounded_and_redacted(tmp_path: Path) -> None:
    key = "sk-proj-" + "Zq8Lw2Rt" * 6
    notes = tuple(
        ProviderEvent("warning", {"message": f"{key} {n} " + "w" * 900}) for n in range(6)
    )
    supervisor, _ = make_supervisor(
        tmp_path, factory=Factory(Behaviour(extra_events=notes)), result_trace_limit=4
    )

    async def scenario() -> dict[str, Any]:
        async with served(supervisor) as client:
            trace_id = (await client.post(CHAT, json={"message": "x"})).json()["traceId"]
            return await terminal(client, trace_id)

    result = run(scenario())
    provider = result["providerTrace"]
    runner = result["runnerTrace"]
    assert set(provider) == {*runner, "provider", "protocol"}
    assert provider["provider"] == "codex-stdio"
    assert provider["protocol"] == "app-server"
    assert provider["limit"] == runner["limit"] == 4
    events = provider["events"]
    assert len(events) == 4
    assert {event["source"] for event in events} == {"codex"}
    # The agent's own events, newest last; the service's steps are not among them.
    assert [event["method"] for event in events][-1] == "turn/completed"
    codex_events = (
        6 + 5
    )  # the warnings, then turn/started, a command started and completed, the reply, turn/completed
    assert provider["omitted"] == codex_events - 4
    assert provider["firstSeq"] == events[0]["seq"]
    assert key not in str(result)
    assert all(len(str(event["params"])) < 2000 for event in events)


def test_a_finished_trace_keeps_a_bounded_part_in_memory_and_says_so(tmp_path: Path) -> None:
    output = "z" * 16_000  # kept cut at 16 384 characters: whole
    notes = tuple(ProviderEvent("warning", {"message": output}) for _ in range(40))
    supervisor, _ = make_supervisor(
        tmp_path,
        factory=Factory(Behaviour(extra_events=notes)),
        finished_trace_bytes=64 * 1024,
    )

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with served(supervisor) as client:
            trace_id = (await client.post(CHAT, json={"message": "x"})).json()["traceId"]
            result = await terminal(client, trace_id)
            page = (await client.get(f"{CHAT}/trace/{trace_id}")).json()
            rest = (
                await client.get(f"{CHAT}/trace/{trace_id}", params={"after": -1, "limit": 1})
            ).json()
            return result, page, rest

    result, page, rest = run(scenario())
    trace = supervisor.traces[result["traceId"]]
    assert trace.kept_bytes <= 64 * 1024
    assert page["truncated"] is True
    assert page["firstSeq"] > 0
    assert [event["seq"] for event in page["events"]] == list(
        range(page["firstSeq"], result["eventCount"])
    )
    assert rest["events"][0]["seq"] == page["firstSeq"]
    # The /result windows are kept apart, whole.
    assert len(result["runnerTrace"]["events"]) == 20
    assert result["lastEvent"]["method"] == "serve.turn.ended"


def test_a_running_trace_keeps_at_most_its_byte_budget(tmp_path: Path) -> None:
    notes = tuple(ProviderEvent("warning", {"message": "q" * 10_000}) for _ in range(30))
    supervisor, _ = make_supervisor(
        tmp_path,
        factory=Factory(Behaviour(extra_events=notes)),
        max_trace_bytes=100_000,
        finished_trace_bytes=100_000,
    )

    async def scenario() -> dict[str, Any]:
        async with served(supervisor) as client:
            trace_id = (await client.post(CHAT, json={"message": "x"})).json()["traceId"]
            return await terminal(client, trace_id)

    result = run(scenario())
    trace = supervisor.traces[result["traceId"]]
    assert 0 < trace.kept_bytes <= 100_000
    assert trace.first_kept_seq > 0


def test_a_retry_is_replayed_even_when_its_attachment_is_gone_since(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    supervisor, factory = make_supervisor(tmp_path)

    async def scenario() -> None:
        async with served(supervisor) as client:
            headers = {"Idempotency-Key": "key-2"}
            body = {"message": "x", "attachments": ["README.md"]}
            first = await client.post(CHAT, json=body, headers=headers)
            assert first.status_code == 202
            (workspace / "README.md").unlink()
            again = await client.post(CHAT, json=body, headers=headers)
            assert again.status_code == 202
            assert again.json() == {**first.json(), "replayed": True}
            other = await client.post(
                CHAT, json={**body, "attachments": ["docs/gdd.md"]}, headers=headers
            )
            assert other.status_code == 422
            assert other.json()["error"]["code"] == "idempotency_key_reused"
            await terminal(client, first.json()["traceId"])

    run(scenario())
    assert sum(len(s.turns) for s in factory.sessions) == 1
