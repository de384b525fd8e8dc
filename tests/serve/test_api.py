"""The HTTP API with the app in process (httpx's ASGI transport) and scripted sessions."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from agc.readiness import Observation, classify
from agc.serve import ProviderError
from tests.serve.fakes import Behaviour, Factory, make_supervisor
from tests.serve.helpers import RecordingSink, run, served, terminal, waiting

CHAT = "/v1/agent/chat"


def test_a_chat_is_accepted_at_once_and_completes_with_the_reply(tmp_path: Path) -> None:
    supervisor, factory = make_supervisor(tmp_path)

    async def scenario() -> None:
        async with served(supervisor) as client:
            answer = await client.post(CHAT, json={"message": "run the tests"})
            assert answer.status_code == 202
            body = answer.json()
            assert set(body) == {"traceId", "conversationId"}
            assert answer.headers["location"] == f"{CHAT}/result/{body['traceId']}"
            result = await terminal(client, body["traceId"])
            assert result["status"] == "completed"
            assert result["reply"] == {"role": "assistant", "content": "done"}
            assert result["provider"] == "codex-stdio"
            assert result["protocol"] == "app-server"
            assert result["backend"] == "codex-app-server"
            assert result["model"] == "scripted-model"
            assert result["threadId"] == result["sessionId"] is not None
            assert result["turnId"] == "turn-1"
            assert "waitingFor" not in result
            assert result["audit"] == {"recorded": False}
            trace = (await client.get(f"{CHAT}/trace/{body['traceId']}")).json()
            assert trace["eventCount"] == result["eventCount"] == len(trace["events"])
            methods = [event["method"] for event in trace["events"]]
            assert methods[:2] == ["serve.session.starting", "serve.session.ready"]
            assert methods[-2:] == ["turn/completed", "serve.turn.ended"]
            assert [event["seq"] for event in trace["events"]] == list(range(len(methods)))
            assert result["session"]["status"] == "ready"
            assert result["session"]["turnCount"] == 1

    run(scenario())
    assert [s.turns for s in factory.turn_sessions] == [["run the tests"]]


def test_a_running_turn_says_what_it_waits_for(tmp_path: Path) -> None:
    hold = asyncio.Event()
    supervisor, _ = make_supervisor(tmp_path, factory=Factory(Behaviour(hold=hold)))

    async def scenario() -> None:
        async with served(supervisor) as client:
            trace_id = (await client.post(CHAT, json={"message": "x"})).json()["traceId"]
            running = await waiting(client, trace_id, "tool:commandExecution")
            assert running["status"] == "running"
            assert "reply" not in running
            assert "audit" not in running
            assert running["lastEvent"]["method"] == "item/started"
            assert running["session"]["status"] == "busy"
            page = (await client.get(f"{CHAT}/trace/{trace_id}")).json()
            assert page["waitingFor"] == "tool:commandExecution"
            hold.set()
            assert (await terminal(client, trace_id))["status"] == "completed"

    run(scenario())


def test_a_follow_up_continues_the_same_thread_in_the_same_process(tmp_path: Path) -> None:
    supervisor, factory = make_supervisor(tmp_path)

    async def scenario() -> None:
        async with served(supervisor) as client:
            first = (await client.post(CHAT, json={"message": "one"})).json()
            one = await terminal(client, first["traceId"])
            second = (
                await client.post(
                    CHAT, json={"message": "two", "conversationId": first["conversationId"]}
                )
            ).json()
            assert second["conversationId"] == first["conversationId"]
            two = await terminal(client, second["traceId"])
            assert two["threadId"] == one["threadId"]
            assert two["turn"] == 2
            entry = (await client.get(f"/v1/agent/sessions/{first['conversationId']}")).json()
            assert entry["turnCount"] == 2
            assert entry["lastTraceId"] == second["traceId"]
            assert entry["status"] == "ready"
            assert entry["idleTimeoutMs"] == supervisor.config.idle_timeout_ms
            assert entry["longLivedSession"] is True
            registry = (await client.get("/v1/agent/sessions")).json()
            assert [c["conversationId"] for c in registry["conversations"]] == [
                first["conversationId"]
            ]
            assert registry["liveSessions"] == 1

    run(scenario())
    assert [s.turns for s in factory.turn_sessions] == [["one", "two"]]


def test_a_message_to_a_busy_conversation_is_refused_with_409(tmp_path: Path) -> None:
    hold = asyncio.Event()
    supervisor, _ = make_supervisor(tmp_path, factory=Factory(Behaviour(hold=hold)))

    async def scenario() -> None:
        async with served(supervisor) as client:
            first = (await client.post(CHAT, json={"message": "x"})).json()
            await waiting(client, first["traceId"], "tool:commandExecution")
            again = await client.post(
                CHAT, json={"message": "y", "conversationId": first["conversationId"]}
            )
            assert again.status_code == 409
            assert again.json()["error"]["code"] == "conversation_busy"
            assert again.headers["retry-after"] == "2"
            hold.set()
            await terminal(client, first["traceId"])

    run(scenario())


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"not json", 400, "body_invalid"),
        (b"[1, 2]", 400, "body_invalid"),
        (b'{"message": "a", "message": "b"}', 400, "body_invalid"),  # duplicate member
        (b"{}", 400, "message_invalid"),
        (b'{"message": "   "}', 400, "message_invalid"),
        (b'{"message": 7}', 400, "message_invalid"),
        (b'{"message": "x", "conversationId": 5}', 400, "conversation_id_invalid"),
        (b'{"message": "x", "conversationId": "conv-unknown"}', 404, "conversation_not_found"),
    ],
)
def test_bad_requests_get_a_structured_error(
    tmp_path: Path, body: bytes, status: int, code: str
) -> None:
    supervisor, factory = make_supervisor(tmp_path)

    async def scenario() -> None:
        async with served(supervisor) as client:
            answer = await client.post(CHAT, content=body)
            assert answer.status_code == status
            assert answer.json()["error"]["code"] == code
            assert supervisor.traces == {}

    run(scenario())
    assert factory.turn_sessions == []


def test_a_message_over_the_limit_is_413_and_a_huge_body_is_not_read(tmp_path: Path) -> None:
    supervisor, _ = make_supervisor(tmp_path, max_message_chars=10)

    async def scenario() -> None:
        async with served(supervisor) as client:
            long = await client.post(CHAT, json={"message": "x" * 11})
            assert long.status_code == 413
            assert long.json()["error"]["code"] == "message_too_long"
            huge = await client.post(CHAT, content=b"x" * (10 * 4 + 64 * 1024 + 1))
            assert huge.status_code == 413
            assert huge.json()["error"]["code"] == "body_too_large"

    run(scenario())


def test_an_idempotency_key_replays_the_same_turn_and_refuses_another_body(
    tmp_path: Path,
) -> None:
    supervisor, factory = make_supervisor(tmp_path)

    async def scenario() -> None:
        async with served(supervisor) as client:
            headers = {"Idempotency-Key": "key-1"}
            first = await client.post(CHAT, json={"message": "x"}, headers=headers)
            again = await client.post(CHAT, json={"message": "x"}, headers=headers)
            assert first.status_code == again.status_code == 202
            assert again.json()["traceId"] == first.json()["traceId"]
            other = await client.post(CHAT, json={"message": "y"}, headers=headers)
            assert other.status_code == 422
            assert other.json()["error"]["code"] == "idempotency_key_reused"
            bad = await client.post(
                CHAT, json={"message": "x"}, headers={"Idempotency-Key": "a\tb"}
            )
            assert bad.status_code == 400
            await terminal(client, first.json()["traceId"])

    run(scenario())
    assert sum(len(s.turns) for s in factory.sessions) == 1


def test_one_idempotency_key_sent_at_once_with_two_bodies_is_one_turn_and_one_refusal(
    tmp_path: Path,
) -> None:
    # Both submits wait for the same first (deep) preflight; the second must not come
    # back as a "replay" of a turn for another message (its message would never run).
    supervisor, factory = make_supervisor(tmp_path)

    async def scenario() -> list[httpx.Response]:
        async with served(supervisor) as client:
            headers = {"Idempotency-Key": "key-1"}
            answers = await asyncio.gather(
                client.post(CHAT, json={"message": "first"}, headers=headers),
                client.post(CHAT, json={"message": "second"}, headers=headers),
                client.post(CHAT, json={"message": "first"}, headers=headers),
            )
            accepted = [a for a in answers if a.status_code == 202]
            await terminal(client, accepted[0].json()["traceId"])
            return list(answers)

    first, second, again = run(scenario())
    assert first.status_code == 202
    assert second.status_code == 422
    assert second.json()["error"]["code"] == "idempotency_key_reused"
    assert again.status_code == 202
    assert again.json() == {**first.json(), "replayed": True}
    assert [turn for s in factory.sessions for turn in s.turns] == ["first"]


def test_the_trace_is_paged_in_order_and_bad_queries_are_refused(tmp_path: Path) -> None:
    supervisor, _ = make_supervisor(tmp_path)

    async def scenario() -> None:
        async with served(supervisor) as client:
            trace_id = (await client.post(CHAT, json={"message": "x"})).json()["traceId"]
            result = await terminal(client, trace_id)
            seen: list[int] = []
            after = -1
            while True:
                page = (
                    await client.get(
                        f"{CHAT}/trace/{trace_id}", params={"after": after, "limit": 2}
                    )
                ).json()
                assert len(page["events"]) <= 2
                seen += [event["seq"] for event in page["events"]]
                after = page["nextAfter"]
                if not page["hasMore"]:
                    break
            assert seen == list(range(result["eventCount"]))
            for query in ({"after": "x"}, {"limit": 0}, {"after": -2}):
                bad = await client.get(f"{CHAT}/trace/{trace_id}", params=query)
                assert bad.status_code == 400
                assert bad.json()["error"]["code"] == "query_invalid"
            for route in ("result", "trace"):
                missing = await client.get(f"{CHAT}/{route}/trc-nope")
                assert missing.status_code == 404
                assert missing.json()["error"]["code"] == "trace_not_found"

    run(scenario())


def test_the_result_window_is_bounded_and_large_strings_stay_in_the_trace(tmp_path: Path) -> None:
    output = "y" * 5000
    supervisor, _ = make_supervisor(
        tmp_path, factory=Factory(Behaviour(output=output)), result_trace_limit=3
    )

    async def scenario() -> None:
        async with served(supervisor) as client:
            trace_id = (await client.post(CHAT, json={"message": "x"})).json()["traceId"]
            result = await terminal(client, trace_id)
            window = result["runnerTrace"]
            assert len(window["events"]) == 3
            assert window["limit"] == 3
            assert window["omitted"] == result["eventCount"] - 3
            assert window["firstSeq"] == result["eventCount"] - 3
            assert output not in str(result)
            events = (await client.get(f"{CHAT}/trace/{trace_id}")).json()["events"]
            outputs = [
                e["params"]["item"].get("aggregatedOutput")
                for e in events
                if e["method"] == "item/completed"
            ]
            assert output in outputs

    run(scenario())


def test_healthz_answers_and_readyz_is_the_preflight(tmp_path: Path) -> None:
    supervisor, _ = make_supervisor(tmp_path)

    async def scenario() -> None:
        async with served(supervisor) as client:
            health = await client.get("/healthz")
            assert health.status_code == 200
            assert health.json()["status"] == "ok"
            ready = await client.get("/readyz")
            assert ready.status_code == 200
            body = ready.json()
            assert body["status"] == "ready"
            assert body["codexStdioFeasibility"] == {
                "status": "ready",
                "blockers": [],
                "codexVersion": "codex-cli 0.171.0",
                "binary": "codex",
                "deepCheckedAtMs": body["codexStdioFeasibility"]["deepCheckedAtMs"],
            }
            assert body["protocol"] == "app-server"

    run(scenario())


def _observe(answer: Any) -> Observation:
    return Observation.from_dict(
        {
            "endpoint": "https://dev.example.com/v1/agent/chat",
            "environment": "dev",
            "origin": "live",
            "httpStatus": answer.status_code,
            "response": answer.json(),
        },
        source="test",
    )


def test_a_missing_provider_key_is_a_structured_failure_the_gate_calls_credential(
    tmp_path: Path,
) -> None:
    supervisor, factory = make_supervisor(
        tmp_path, env={"PATH": "/usr/bin:/bin"}, codex_bin=str(tmp_path / "bin" / "codex")
    )

    async def scenario() -> None:
        async with served(supervisor) as client:
            answer = await client.post(CHAT, json={"message": "x"})
            assert answer.status_code == 503
            body = answer.json()
            assert body["status"] == "failed"
            assert body["error"]["code"] == "provider_unavailable"
            assert body["error"]["missingEnv"] == ["OPENAI_API_KEY"]
            assert classify(_observe(answer)).label == "BLOCKED/credential"
            ready = await client.get("/readyz")
            assert ready.status_code == 503
            assert ready.json()["error"]["missingEnv"] == ["OPENAI_API_KEY"]

    run(scenario())
    assert factory.turn_sessions == []


def test_a_missing_codex_is_a_runner_blocker(tmp_path: Path) -> None:
    supervisor, _ = make_supervisor(tmp_path, env={"PATH": "/nowhere", "OPENAI_API_KEY": "v"})

    async def scenario() -> None:
        async with served(supervisor) as client:
            answer = await client.post(CHAT, json={"message": "x"})
            assert answer.status_code == 503
            blockers = answer.json()["codexStdioFeasibility"]["blockers"]
            assert [b["code"] for b in blockers] == ["codex_cli_binary_missing"]
            verdict = classify(_observe(answer))
            assert verdict.label == "BLOCKED/runner"
            assert "codex_cli_binary_missing" in verdict.runner_blockers

    run(scenario())


def test_a_failed_handshake_is_stdio_protocol_not_wired(tmp_path: Path) -> None:
    error = ProviderError("stdio_protocol_not_wired", "no answer to initialize within 1 s")
    supervisor, _ = make_supervisor(tmp_path, factory=Factory(Behaviour(start_error=error)))

    async def scenario() -> None:
        async with served(supervisor) as client:
            answer = await client.post(CHAT, json={"message": "x"})
            assert answer.status_code == 503
            codes = [b["code"] for b in answer.json()["codexStdioFeasibility"]["blockers"]]
            assert codes == ["stdio_protocol_not_wired"]
            assert classify(_observe(answer)).label == "BLOCKED/runner"

    run(scenario())


def test_with_a_token_every_route_but_the_probes_needs_it(tmp_path: Path) -> None:
    supervisor, _ = make_supervisor(tmp_path)
    token = "a-bearer-token-for-tests-0123456789"

    async def scenario() -> None:
        async with served(supervisor, token=token) as client:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}):
                refused = await client.post(CHAT, json={"message": "x"}, headers=headers)
                assert refused.status_code == 401
                assert refused.json()["error"]["code"] == "unauthorized"
                assert refused.headers["www-authenticate"].startswith("Bearer")
                assert token not in refused.text
            assert (await client.get("/v1/agent/sessions")).status_code == 401
            assert (await client.get("/healthz")).status_code == 200
            assert (await client.get("/readyz")).status_code == 200
            good = {"Authorization": f"Bearer {token}"}
            accepted = await client.post(CHAT, json={"message": "x"}, headers=good)
            assert accepted.status_code == 202
            trace_id = accepted.json()["traceId"]
            result = await client.get(f"{CHAT}/result/{trace_id}", headers=good)
            assert result.status_code == 200

    run(scenario())


def test_unknown_routes_and_methods_answer_json(tmp_path: Path) -> None:
    supervisor, _ = make_supervisor(tmp_path)

    async def scenario() -> None:
        async with served(supervisor) as client:
            missing = await client.get("/v1/nothing")
            assert missing.status_code == 404
            assert missing.json()["error"]["code"] == "not_found"
            wrong = await client.get(CHAT)
            assert wrong.status_code == 405
            assert wrong.json()["error"]["code"] == "method_not_allowed"

    run(scenario())


def test_cancel_stops_a_running_turn(tmp_path: Path) -> None:
    hold = asyncio.Event()
    sink = RecordingSink()
    supervisor, _ = make_supervisor(tmp_path, factory=Factory(Behaviour(hold=hold)), sink=sink)

    async def scenario() -> None:
        async with served(supervisor) as client:
            trace_id = (await client.post(CHAT, json={"message": "x"})).json()["traceId"]
            await waiting(client, trace_id, "tool:commandExecution")
            cancelled = await client.post(f"{CHAT}/cancel/{trace_id}")
            assert cancelled.status_code == 202
            assert cancelled.json()["status"] == "cancelling"
            result = await terminal(client, trace_id)
            assert result["status"] == "cancelled"
            assert result["error"]["code"] == "turn_cancelled"
            assert "reply" not in result
            again = await client.post(f"{CHAT}/cancel/{trace_id}")
            assert again.status_code == 409
            assert (await client.post(f"{CHAT}/cancel/trc-nope")).status_code == 404
            assert sink.records[trace_id][-1]["status"] == "cancelled"

    run(scenario())


def test_deleting_a_conversation_ends_its_process_and_forgets_it(tmp_path: Path) -> None:
    supervisor, factory = make_supervisor(tmp_path)

    async def scenario() -> None:
        async with served(supervisor) as client:
            first = (await client.post(CHAT, json={"message": "x"})).json()
            await terminal(client, first["traceId"])
            conversation = first["conversationId"]
            ended = await client.delete(f"/v1/agent/sessions/{conversation}")
            assert ended.status_code == 200
            assert ended.json() == {"conversationId": conversation, "status": "closed"}
            assert (await client.get(f"/v1/agent/sessions/{conversation}")).status_code == 404
            assert (await client.delete(f"/v1/agent/sessions/{conversation}")).status_code == 404

    run(scenario())
    assert factory.turn_sessions[0].closed


def test_a_process_that_dies_mid_turn_fails_the_turn_and_the_next_one_resumes(
    tmp_path: Path,
) -> None:
    behaviour = Behaviour(exit_during_turn=True)
    supervisor, factory = make_supervisor(tmp_path, factory=Factory(behaviour))

    async def scenario() -> None:
        async with served(supervisor) as client:
            first = (await client.post(CHAT, json={"message": "x"})).json()
            failed = await terminal(client, first["traceId"])
            assert failed["status"] == "failed"
            assert failed["error"]["code"] == "provider_exited"
            assert failed["session"]["status"] == "idle"
            assert failed["session"]["processRunning"] is False
            behaviour.exit_during_turn = False
            second = (
                await client.post(
                    CHAT, json={"message": "y", "conversationId": first["conversationId"]}
                )
            ).json()
            done = await terminal(client, second["traceId"])
            assert done["status"] == "completed"
            assert done["threadId"] == failed["threadId"]

    run(scenario())
    first_session, second_session = factory.turn_sessions
    assert second_session.resumed_from == first_session.facts.thread_id


def test_a_turn_that_fails_in_codex_is_failed_with_its_message(tmp_path: Path) -> None:
    behaviour = Behaviour(status="failed", error_message="model refused: sk-proj-" + "A" * 40)
    supervisor, _ = make_supervisor(tmp_path, factory=Factory(behaviour))

    async def scenario() -> None:
        async with served(supervisor) as client:
            trace_id = (await client.post(CHAT, json={"message": "x"})).json()["traceId"]
            result = await terminal(client, trace_id)
            assert result["status"] == "failed"
            assert result["error"]["code"] == "turn_failed"
            assert "[REDACTED:openai-key]" in result["error"]["message"]
            assert "A" * 40 not in str(result)

    run(scenario())


def test_a_huge_output_is_whole_in_the_record_and_cut_in_the_answers(tmp_path: Path) -> None:
    output = "z" * 100_000
    sink = RecordingSink()
    supervisor, _ = make_supervisor(tmp_path, factory=Factory(Behaviour(output=output)), sink=sink)

    async def scenario() -> str:
        async with served(supervisor) as client:
            trace_id = (await client.post(CHAT, json={"message": "x"})).json()["traceId"]
            result = await terminal(client, trace_id)
            page = await client.get(f"{CHAT}/trace/{trace_id}")
            assert output not in page.text
            assert "z" * 16_384 + "…[+83616 chars]" in page.text
            assert output not in str(result)
            return str(trace_id)

    trace_id = run(scenario())
    recorded = [
        r["params"]["item"].get("aggregatedOutput")
        for r in sink.records[trace_id]
        if r.get("method") == "item/completed"
    ]
    assert output in recorded


def test_lone_surrogates_from_the_agent_become_replacement_characters(tmp_path: Path) -> None:
    behaviour = Behaviour(output="bad \ud800 byte", reply="reply \udfff")
    sink = RecordingSink()
    supervisor, _ = make_supervisor(tmp_path, factory=Factory(behaviour), sink=sink)

    async def scenario() -> str:
        async with served(supervisor) as client:
            trace_id = (await client.post(CHAT, json={"message": "x"})).json()["traceId"]
            result = await terminal(client, trace_id)
            assert result["reply"]["content"] == "reply \ufffd"
            page = await client.get(f"{CHAT}/trace/{trace_id}")
            assert (
                "bad \ufffd byte" in page.json()["events"][-4]["params"]["item"]["aggregatedOutput"]
            )
            return str(trace_id)

    trace_id = run(scenario())
    json.dumps(sink.records[trace_id], ensure_ascii=False).encode("utf-8")  # no lone surrogate
