"""The probe records the provider-side trace window of the ``/result`` answers
(``providerTrace``) in the shape and within the bounds of a ``runnerTrace`` window,
redacted before it is cut, and evidence keeps no copy of the reply from it."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc.errors import ObservationInvalidError
from agc.readiness import Observation, ProbeResult, Timing, classify, probe, stored_observation
from tests.conftest import examples
from tests.readiness.chat_server import FakeTiming, Script, chat_server, json_reply
from tests.readiness.helpers import LIVE_URL, completed, declaring
from tests.readiness.test_secrets import SECRETS

WINDOW_EVENTS = 20
WINDOW_CHARS = 512
SECRET = "sk-proj-Q8wXk2LmZp4RtY7vB1nC9dFg3HjK5sA6"


def _event(seq: int, text: str = "delta") -> dict[str, Any]:
    return {"seq": seq, "atMs": 1_796_197_319_000 + seq, "method": "response.delta", "text": text}


def _window(events: list[dict[str, Any]], omitted: int = 0) -> dict[str, Any]:
    first = events[0]["seq"] if events else None
    return {"events": events, "limit": len(events), "firstSeq": first, "omitted": omitted}


def _remote_probe(answers: list[dict[str, Any]]) -> ProbeResult:
    """Probe a remote-looking endpoint (httpx's in-process transport): submit, then the
    given ``/result`` answers in order (no progress on ``/trace``)."""
    queue = [httpx.Response(202, json={"traceId": "t-9"})]
    for answer in answers:
        queue += [httpx.Response(200, json=answer), httpx.Response(200, json={"events": []})]
    replies = iter(queue)
    transport = httpx.MockTransport(lambda request: next(replies))
    fake = FakeTiming()
    timing = Timing(monotonic=fake.monotonic, sleep=fake.sleep, random=fake.random, wall=fake.wall)
    with httpx.Client(transport=transport) as client:
        return probe(
            "https://chat.dev.example.test", environment="dev", live=True, client=client,
            timing=timing,
        )  # fmt: skip


def test_the_last_window_of_the_result_answers_is_kept_bounded_and_redacted() -> None:
    reply = "The provider says ready, " + "and more. " * 80  # longer than a window string
    running = {
        "status": "running",
        "eventCount": 3,
        "providerTrace": _window([_event(0), _event(1), _event(2)]),
    }
    final_events = [_event(seq) for seq in range(10, 40)]  # 30: more than the window
    final_events[-1] = _event(39, f"the key is {SECRET}")
    final_events[-2] = _event(38, reply)  # the reply, repeated in the provider trace
    final_events[-3] = _event(37, "x" * 5000)
    final = completed(content=reply, providerTrace=_window(final_events, omitted=10))
    script = Script(
        result=[json_reply(200, running), json_reply(200, final)],
        trace=[json_reply(200, {"events": []})],
    )
    with chat_server(script) as url:  # real HTTP on 127.0.0.1
        result = probe(url, environment="dev", live=True, timing=_fake_timing())
    window = result.observation.provider_trace
    assert window is not None
    assert window["limit"] == WINDOW_EVENTS
    assert [event["seq"] for event in window["events"]] == list(range(20, 40))
    assert window["firstSeq"] == 20
    assert window["omitted"] == 10 + 10  # the endpoint's 10, and the 10 the probe dropped
    text = json.dumps(window, ensure_ascii=False)
    assert SECRET not in text
    assert "[REDACTED:" in window["events"][-1]["text"]
    assert window["events"][-3]["text"] == "x" * WINDOW_CHARS + "…[+4488 chars]"
    # Evidence keeps no copy of the reply, not even the cut one.
    stored = stored_observation(result.observation)
    assert stored["providerTrace"]["events"][-2]["text"] == "[OMITTED:reply-text]"
    assert reply[:WINDOW_CHARS] not in json.dumps(stored, ensure_ascii=False)
    assert SECRET not in json.dumps(stored)
    again = Observation.from_dict(stored)
    assert again.provider_trace == stored["providerTrace"]
    assert classify(again).to_dict() == classify(result.observation).to_dict()


def _fake_timing() -> Timing:
    fake = FakeTiming()
    return Timing(monotonic=fake.monotonic, sleep=fake.sleep, random=fake.random, wall=fake.wall)


def test_an_answer_without_a_window_keeps_the_one_before() -> None:
    running = {"status": "running", "eventCount": 1, "providerTrace": _window([_event(4)])}
    malformed = {"status": "running", "eventCount": 2, "providerTrace": {"events": "none"}}
    result = _remote_probe([running, malformed, completed()])
    window = result.observation.provider_trace
    assert window == {
        "events": [_event(4)],
        "limit": WINDOW_EVENTS,
        "firstSeq": 4,
        "omitted": 0,
    }
    # A verdict never depends on the window: it is the same without one.
    assert classify(result.observation, declaring(result.observation)).label == "LIVE"


def test_no_window_in_any_answer_records_none() -> None:
    result = _remote_probe([completed()])
    assert result.observation.provider_trace is None
    assert "providerTrace" not in result.observation.to_dict()


@settings(max_examples=examples(100), deadline=None)
@given(
    secret=SECRETS,
    inside=st.integers(min_value=5, max_value=40),
    count=st.integers(min_value=1, max_value=3 * WINDOW_EVENTS),
)
def test_a_secret_the_cut_falls_inside_is_redacted_first(
    secret: str, inside: int, count: int
) -> None:
    """Each event's text holds a secret that the cut at 512 characters splits, ``inside``
    characters in: the detector ran first, so no piece of the secret is kept (cut
    first, a piece too short to recognise would be)."""
    inside = min(inside, len(secret) - 1)
    text = ("a " * WINDOW_CHARS)[: WINDOW_CHARS - inside - 1] + " " + secret + " tail"
    events = [_event(seq, text) for seq in range(count)]
    result = _remote_probe([completed(providerTrace=_window(events))])
    window = result.observation.provider_trace
    assert window is not None
    assert len(window["events"]) == min(count, WINDOW_EVENTS)
    assert window["omitted"] == count - len(window["events"])
    kept = json.dumps(window)
    assert secret[:inside] not in kept
    for event in window["events"]:
        assert len(event["text"]) <= WINDOW_CHARS + len("…[+99999 chars]")


@pytest.mark.parametrize(
    "value", [[], "events", {"events": {}}, {"limit": 20}], ids=["list", "text", "no-list", "none"]
)
def test_an_observation_with_a_malformed_provider_trace_is_refused(value: Any) -> None:
    data = {
        "endpoint": LIVE_URL,
        "environment": "dev",
        "origin": "live",
        "httpStatus": 200,
        "response": completed(),
        "providerTrace": value,
    }
    with pytest.raises(ObservationInvalidError, match="providerTrace"):
        Observation.from_dict(data)
