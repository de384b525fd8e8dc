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

from hypothesis import given, settings
from hypothesis import strategies as st

from agc.serve import ProviderEvent
from tests.serve.fakes import Behaviour, Factory, make_supervisor
from tests.serve.helpers import RecordingSink, run, served, terminal

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


@settings(max_examples=25)
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
