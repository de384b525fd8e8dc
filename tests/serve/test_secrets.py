"""No secret value reaches an answer or a record, wherever it appears in a turn.

A property test: a key-shaped secret (the formats of agc's secret detector) is placed
in the message, the command, its output, the reply, an event field's name and value,
and the failure text; the `/result`, `/trace` and registry answers and every record a
sink is given are searched for it.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agc._core.redact import redact_text
from agc.serve import ProviderEvent
from tests.conftest import examples
from tests.serve.fakes import Behaviour, Factory, make_supervisor
from tests.serve.helpers import RecordingSink, run, served, split_at, terminal

_ALNUM = st.text(
    alphabet="ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789", min_size=40, max_size=48
)

secrets = st.one_of(
    _ALNUM.map(lambda body: "sk-proj-" + body),
    _ALNUM.map(lambda body: "ghp_" + body[:36]),
    st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", min_size=16, max_size=16).map(
        lambda b: "AKIA" + b
    ),
    _ALNUM.map(lambda body: "sk-ant-api03-" + body),
)
places = st.sets(
    st.sampled_from(
        ["message", "command", "output", "reply", "event-key", "event-value", "failure"]
    ),
    min_size=1,
)


@settings(max_examples=examples(25))
@given(secret=secrets, where=places)
def test_a_secret_never_reaches_an_answer_or_a_record(secret: str, where: set[str]) -> None:
    def put(place: str, default: str) -> str:
        return f"see {secret} here" if place in where else default

    behaviour = Behaviour(
        command=put("command", "echo hi"),
        output=put("output", "hello"),
        reply=put("reply", "done"),
        status="failed" if "failure" in where else "completed",
        error_message=put("failure", "boom"),
    )
    extra: dict[str, object] = {}
    if "event-key" in where:
        extra[secret] = 1
    if "event-value" in where:
        extra["note"] = {"nested": [f"token={secret}"]}
    if extra:
        behaviour.extra_events = (ProviderEvent("warning", extra),)
    sink = RecordingSink()
    with tempfile.TemporaryDirectory() as folder:
        supervisor, _ = make_supervisor(Path(folder), factory=Factory(behaviour), sink=sink)

        async def scenario() -> list[str]:
            async with served(supervisor) as client:
                accepted = (
                    await client.post("/v1/agent/chat", json={"message": put("message", "hi")})
                ).json()
                trace_id = accepted["traceId"]
                result = await terminal(client, trace_id)
                page = await client.get(f"/v1/agent/chat/trace/{trace_id}")
                registry = await client.get("/v1/agent/sessions")
                return [json.dumps(result), page.text, registry.text]

        answers = run(scenario())
    recorded = json.dumps([sink.records, sink.tool_events])
    for text in [*answers, recorded]:
        assert secret not in text
    assert "[REDACTED:" in recorded


def _delta_texts(events: list[dict[str, object]], item: str) -> str:
    """The streamed text of one item rebuilt from events (trace events or records)."""
    return "".join(
        str(params["delta"])
        for event in events
        if isinstance(params := event.get("params"), dict)
        and str(event.get("method", "")).endswith("elta")
        and params.get("itemId") == item
    )


@settings(max_examples=examples(25), deadline=None)
@given(
    secret=secrets,
    cuts=st.lists(st.integers(0, 200), max_size=30),
    step=st.sampled_from([0, 1, 5]),
    order=st.randoms(use_true_random=False),
    dies=st.booleans(),
)
def test_a_secret_streamed_in_deltas_never_reaches_a_trace_answer_or_a_record(
    secret: str, cuts: list[int], step: int, order: Any, dies: bool
) -> None:
    text = f"Your key is {secret} (keep it)."
    reply_pieces = (
        [text[i : i + step] for i in range(0, len(text), step)] if step else split_at(text, cuts)
    )
    output = f"export OPENAI_API_KEY={secret}\n"
    output_pieces = split_at(output, [c % len(output) for c in cuts[:3]])
    deltas = [("msg_9", "item/agentMessage/delta", p) for p in reply_pieces]
    deltas += [("call_9", "item/commandExecution/outputDelta", p) for p in output_pieces]
    # Interleave the two items' deltas, each item's own pieces staying in order.
    slots = [d[0] for d in deltas]
    order.shuffle(slots)
    queues = {item: [d for d in deltas if d[0] == item] for item in ("msg_9", "call_9")}
    events = [
        ProviderEvent("item/started", {"item": {"id": "msg_9", "type": "agentMessage"}}),
        *(
            ProviderEvent(method, {"turnId": "t", "itemId": item, "delta": piece})
            for item, method, piece in (queues[slot].pop(0) for slot in slots)
        ),
    ]
    if not dies:
        events.append(
            ProviderEvent(
                "item/completed", {"item": {"id": "msg_9", "type": "agentMessage", "text": text}}
            )
        )
    behaviour = Behaviour(reply=text, exit_during_turn=dies, extra_events=tuple(events))
    sink = RecordingSink()
    with tempfile.TemporaryDirectory() as folder:
        supervisor, _ = make_supervisor(Path(folder), factory=Factory(behaviour), sink=sink)

        async def scenario() -> tuple[dict[str, Any], list[dict[str, Any]], str]:
            async with served(supervisor) as client:
                accepted = (await client.post("/v1/agent/chat", json={"message": "hi"})).json()
                trace_id = accepted["traceId"]
                result = await terminal(client, trace_id)
                pages: list[dict[str, Any]] = []
                after = -1
                while True:  # small pages: the answers a poller sees one by one
                    page = (
                        await client.get(
                            f"/v1/agent/chat/trace/{trace_id}", params={"after": after, "limit": 3}
                        )
                    ).json()
                    pages.append(page)
                    after = page["nextAfter"]
                    if not page["hasMore"]:
                        break
                return result, pages, trace_id

        result, pages, trace_id = run(scenario())
    records = sink.records[trace_id]
    traced = [event for page in pages for event in page["events"]]
    rebuilt = [
        _delta_texts(traced, "msg_9"),
        _delta_texts(traced, "call_9"),
        _delta_texts(records, "msg_9"),
        _delta_texts(records, "call_9"),
    ]
    everything = [json.dumps(result), *map(json.dumps, pages), *map(json.dumps, records), *rebuilt]
    assert not [text for text in everything if secret in text]
    # The sealed stream is the item's text, redacted as a whole; the count is kept.
    assert rebuilt[2] == redact_text(text)
    assert rebuilt[0] == rebuilt[2]
    joined = [r["params"]["agcJoined"] for r in records if r.get("method", "").endswith("elta")]
    assert sum(j["deltas"] for j in joined) == len(deltas)
    release = "turn-end" if dies else "completed"
    assert {j["release"] for j in joined} <= {"completed", "turn-end"}
    assert any(j["release"] == release for j in joined)
    assert len(records) == result["eventCount"] + 2  # the request, every event, the reply
    if not dies:
        assert "[REDACTED:" in result["reply"]["content"]
