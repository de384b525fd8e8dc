"""The probe against a real loopback HTTP server of the tests' own (no mock of HTTP)."""

from __future__ import annotations

import gzip
import json
import socket
import time
from email.utils import formatdate
from typing import Any

import httpx
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from agc.errors import UrlInvalidError
from agc.readiness import Observation, ProbeSettings, Timing, classify, probe, stored_observation
from agc.readiness._probe import backoff_delay, probe_urls, retry_after_seconds
from tests.readiness.chat_server import (
    CHAT,
    FakeTiming,
    Reply,
    Script,
    chat_server,
    json_reply,
    raw_reply,
)
from tests.readiness.helpers import completed, credential_answer, declaring

REACHES_INSIDE = {
    "agc.readiness._probe": "the retry and back-off arithmetic and the probe URLs",
}

SETTINGS = ProbeSettings(
    request_timeout_s=0.3,
    idle_timeout_s=30.0,
    backoff_initial_s=0.5,
    backoff_max_s=4.0,
    max_retry_after_s=60.0,
)


def _timing(fake: FakeTiming) -> Timing:
    return Timing(monotonic=fake.monotonic, sleep=fake.sleep, random=fake.random, wall=fake.wall)


def _running(events: int, waiting: str = "model") -> Reply:
    return json_reply(200, {"status": "running", "waitingFor": waiting, "eventCount": events})


def _trace(events: int, waiting: str = "model") -> Reply:
    return json_reply(200, {"events": [{"n": i} for i in range(events)], "waitingFor": waiting})


def _probe(url: str, fake: FakeTiming, **options: Any) -> Any:
    settings = options.pop("settings", SETTINGS)
    return probe(
        url, environment="dev", live=True, settings=settings, timing=_timing(fake), **options
    )


def test_a_rough_but_live_endpoint_passes() -> None:
    script = Script(
        result=[
            raw_reply(503, b"<html>upstream busy</html>"),
            json_reply(429, {"error": {"code": "rate_limited"}}, **{"Retry-After": "7"}),
            raw_reply(200, b"<html>proxy page</html>"),
            Reply(status=200, body={"status": "running"}, delay_s=0.8),  # a timeout
            _running(2),
            _running(3, "tool"),
            json_reply(200, completed(content="ready")),
        ],
        trace=[_trace(1), _trace(1), _trace(1), _trace(2), _trace(2), _trace(3, "tool")],
    )
    fake = FakeTiming()
    with chat_server(script) as url:
        result = _probe(url, fake)
    observation = result.observation
    assert observation.http_status == 200
    assert observation.response["status"] == "completed"
    assert observation.probe is not None
    assert observation.probe["recoverable"] == {
        "http-429": 1,
        "http-503": 1,
        "not-json": 1,
        "timeout": 1,
    }
    assert observation.peer_loopback is True
    verdict = classify(observation)
    assert verdict.passed
    assert verdict.label == "LOCAL"  # 127.0.0.1: at most LOCAL
    assert verdict.rule == "live-reply-full-agent"
    # Retry-After: 7 was honoured after the 429; no computed delay exceeds the cap.
    assert 7.0 in fake.sleeps
    assert all(delay <= SETTINGS.backoff_max_s for delay in fake.sleeps if delay != 7.0)
    # Every poll that did not end the turn refreshed the trace.
    routes = [step.route for step in result.steps]
    assert routes[0] == "submit"
    assert routes.count("result") == 7
    assert routes.count("trace") == 6
    methods_paths = [(m, p.split("/")[-2]) for m, p, _ in script.requests[1:]]
    assert methods_paths[:2] == [("GET", "result"), ("GET", "trace")]


def test_the_submit_carries_the_message_and_an_idempotency_key() -> None:
    script = Script(result=[json_reply(200, completed())])
    with chat_server(script) as url:
        _probe(url, FakeTiming(), headers={"Authorization": "Bearer abc"})
    method, path, headers = script.requests[0]
    assert (method, path) == ("POST", CHAT)
    assert len(headers["Idempotency-Key"]) == 32
    assert headers["Authorization"] == "Bearer abc"


def test_a_silent_endpoint_fails_with_idle_timeout() -> None:
    script = Script(result=[_running(1)], trace=[_trace(1)])
    fake = FakeTiming()
    with chat_server(script) as url:
        result = _probe(url, fake)
    observation = result.observation
    assert observation.transport_error == "idle-timeout"
    verdict = classify(observation)
    assert verdict.label == "BLOCKED/transport"
    assert verdict.summary.error_class == "idle-timeout"
    # It waited the idle timeout (fake seconds), not much longer.
    assert SETTINGS.idle_timeout_s <= fake.now <= SETTINGS.idle_timeout_s + SETTINGS.backoff_max_s
    assert observation.probe is not None
    assert observation.probe["waitingFor"] == "model"


def test_an_endpoint_unreachable_on_every_poll_goes_idle_too() -> None:
    script = Script(result=[raw_reply(502, b"bad gateway")], trace=[raw_reply(502, b"")])
    fake = FakeTiming()
    with chat_server(script) as url:
        result = _probe(url, fake)
    assert result.observation.transport_error == "idle-timeout"
    assert result.observation.response is None
    assert result.observation.probe is not None
    assert result.observation.probe["recoverable"]["http-502"] >= 5


def test_new_trace_events_keep_a_long_turn_alive() -> None:
    polls = 40  # far longer than the idle timeout in all, with progress all along
    script = Script(
        result=[*(_running(n) for n in range(1, polls)), json_reply(200, completed())],
        trace=[_trace(n) for n in range(1, polls + 1)],
    )
    fake = FakeTiming()
    settings = ProbeSettings(
        request_timeout_s=1, idle_timeout_s=3, backoff_initial_s=1, backoff_max_s=2
    )
    with chat_server(script) as url:
        result = _probe(url, fake, settings=settings)
    assert fake.now > settings.idle_timeout_s * 5
    assert classify(result.observation).passed


def test_an_advancing_wait_without_new_events_is_progress() -> None:
    stages = ["model", "tool:shell", "model", "tool:apply_patch", "model"] * 3
    script = Script(
        result=[*(_running(1, stage) for stage in stages), json_reply(200, completed())],
        trace=[_trace(1, stage) for stage in stages],
    )
    fake = FakeTiming()
    settings = ProbeSettings(idle_timeout_s=2, backoff_initial_s=1, backoff_max_s=2)
    with chat_server(script) as url:
        result = _probe(url, fake, settings=settings)
    assert classify(result.observation).passed
    assert fake.now > settings.idle_timeout_s * 3


def test_a_structured_terminal_blocker_on_a_503_ends_the_poll() -> None:
    script = Script(result=[json_reply(503, credential_answer())], trace=[_trace(0)])
    with chat_server(script) as url:
        result = _probe(url, FakeTiming())
    verdict = classify(result.observation)
    assert verdict.label == "BLOCKED/credential"
    assert [step.route for step in result.steps] == ["submit", "result"]


def test_a_credential_blocker_at_submit_needs_no_poll() -> None:
    script = Script(submit=[json_reply(503, credential_answer())])
    with chat_server(script) as url:
        result = _probe(url, FakeTiming())
    assert classify(result.observation).label == "BLOCKED/credential"
    assert len(script.requests) == 1


def test_a_refused_submit_is_tried_again_then_given_up() -> None:
    script = Script(submit=[raw_reply(503, b"busy"), json_reply(202, {"traceId": "t"})])
    script.result = [json_reply(200, completed())]
    fake = FakeTiming()
    with chat_server(script) as url:
        assert classify(_probe(url, fake).observation).passed
    assert [m for m, _, _ in script.requests].count("POST") == 2
    always_busy = Script(submit=[raw_reply(503, b"busy")])
    with chat_server(always_busy) as url:
        result = _probe(url, FakeTiming())
    assert result.observation.transport_error == "submit-http-503"
    assert classify(result.observation).label == "BLOCKED/transport"
    assert len(always_busy.requests) == SETTINGS.submit_attempts
    keys = {headers["Idempotency-Key"] for _, _, headers in always_busy.requests}
    assert len(keys) == 1, "every try of one submit carries the same idempotency key"


def test_a_closed_port_is_a_transport_blocker() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = _probe(f"http://127.0.0.1:{port}", FakeTiming())
    assert result.observation.transport_error == "connect"
    assert classify(result.observation).label == "BLOCKED/transport"


def test_a_client_error_on_result_is_terminal() -> None:
    script = Script(result=[json_reply(404, {"error": {"code": "trace_not_found"}})])
    with chat_server(script) as url:
        result = _probe(url, FakeTiming())
    assert classify(result.observation).label == "BLOCKED/schema"
    assert len(script.requests) == 2


def test_a_trace_id_never_leaves_the_chat_route() -> None:
    script = Script(
        submit=[json_reply(202, {"traceId": "../../admin?x=1"})],
        result=[json_reply(200, completed())],
    )
    with chat_server(script) as url:
        _probe(url, FakeTiming())
    _, path, _ = script.requests[1]
    assert path == CHAT + "/result/..%2F..%2Fadmin%3Fx%3D1"


def test_a_202_without_a_trace_id_is_a_schema_blocker() -> None:
    script = Script(submit=[json_reply(202, {"status": "accepted"})])
    with chat_server(script) as url:
        result = _probe(url, FakeTiming())
    assert classify(result.observation).rule == "accepted-without-trace-id"


def test_an_oversized_body_is_not_read_whole() -> None:
    big = ProbeSettings(max_body_bytes=1024, idle_timeout_s=2, backoff_max_s=1)
    script = Script(result=[json_reply(200, {"status": "running", "pad": "x" * 5000})])
    script.trace = [_trace(0)]
    with chat_server(script) as url:
        result = _probe(url, FakeTiming(), settings=big)
    assert result.observation.probe is not None
    assert result.observation.probe["recoverable"].get("too-large", 0) >= 1


def test_a_dry_run_reads_the_preflight_and_sends_no_chat() -> None:
    script = Script(readyz=[json_reply(200, {"status": "ready"})])
    with chat_server(script) as url:
        result = probe(url, environment="dev", live=False, timing=_timing(FakeTiming()))
    assert all(method == "GET" for method, _, _ in script.requests)
    verdict = classify(result.observation)
    assert verdict.rule == "dry-run-preflight-ready"
    assert verdict.passed
    assert verdict.label == "LOCAL"


def test_a_dry_run_without_readyz_asks_for_an_unknown_trace() -> None:
    script = Script()
    with chat_server(script) as url:
        result = probe(url, environment="dev", live=False, timing=_timing(FakeTiming()))
    assert [path.split("/")[-2] for _, path, _ in script.requests] == ["", "result"]
    assert classify(result.observation).rule == "dry-run-error-answer"
    blocked = Script(readyz=[json_reply(503, credential_answer())])
    with chat_server(blocked) as url:
        result = probe(url, environment="dev", live=False, timing=_timing(FakeTiming()))
    assert classify(result.observation).label == "BLOCKED/credential"


def test_a_remote_endpoint_can_pass_live() -> None:
    """Over a transport that is not loopback (httpx's in-process transport, the server's
    answers scripted the same way), the same answer is a LIVE pass from the declared live
    endpoint, and at most DRY-RUN with none declared."""
    answers = iter(
        [
            httpx.Response(202, json={"traceId": "t-9"}),
            httpx.Response(200, json=completed()),
        ]
    )
    transport = httpx.MockTransport(lambda request: next(answers))
    with httpx.Client(transport=transport) as client:
        result = probe(
            "https://chat.dev.example.test",
            environment="dev",
            live=True,
            client=client,
            timing=_timing(FakeTiming()),
        )
    assert result.observation.endpoint == "https://chat.dev.example.test/v1/agent/chat"
    assert classify(result.observation, declaring(result.observation)).label == "LIVE"
    assert classify(result.observation).label == "DRY-RUN"


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("file:///tmp/answer.json", "file://"),
        ("ftp://host/", "http"),
        ("https://user:pw@host/", "user information"),
        ("https://host/?token=1", "query"),
        ("https:///nohost", "http"),
    ],
)
def test_urls_the_probe_refuses(url: str, problem: str) -> None:
    with pytest.raises(UrlInvalidError, match=problem):
        probe_urls(url, "/v1/agent/chat")


def test_base_url_or_chat_endpoint() -> None:
    assert probe_urls("https://h:1/", CHAT) == ("https://h:1", "https://h:1" + CHAT)
    assert probe_urls("https://h:1/v1/agent/chat/", CHAT) == ("https://h:1", "https://h:1" + CHAT)
    assert probe_urls("https://h/app", CHAT) == ("https://h/app", "https://h/app" + CHAT)


@pytest.mark.parametrize("attempt", range(12))
def test_backoff_is_capped_and_jittered(attempt: int) -> None:
    low = backoff_delay(attempt, initial=0.5, cap=8, rand=0.0)
    high = backoff_delay(attempt, initial=0.5, cap=8, rand=0.999)
    ceiling = min(8, 0.5 * 2**attempt)
    assert low == pytest.approx(ceiling / 2)
    assert ceiling / 2 <= high <= ceiling <= 8


def test_retry_after_in_seconds_and_as_a_date() -> None:
    assert retry_after_seconds("7", now=0, cap=60) == 7
    assert retry_after_seconds("3600", now=0, cap=60) == 60
    now = 1_764_460_800.0
    date = formatdate(now + 30, usegmt=True)
    assert retry_after_seconds(date, now=now, cap=60) == pytest.approx(30)
    assert retry_after_seconds(formatdate(now - 30, usegmt=True), now=now, cap=60) == 0
    assert retry_after_seconds("soon", now=now, cap=60) is None
    assert retry_after_seconds(None, now=now, cap=60) is None


_DIGIT_LIKE = st.characters(categories=("Nd", "No"))


@given(st.text(max_size=40) | st.text(alphabet=_DIGIT_LIKE, min_size=1, max_size=6))
def test_retry_after_never_fails_on_what_the_endpoint_sends(value: str) -> None:
    # "²" and "٣" are str.isdigit() but not RFC 9110 DIGIT: float() refuses them.
    delay = retry_after_seconds(value, now=1_764_460_800.0, cap=60)
    assert delay is None or 0 <= delay <= 60


def test_a_retry_after_of_non_ascii_digits_is_ignored_not_a_crash() -> None:
    script = Script(
        submit=[
            json_reply(503, {"error": {"code": "busy"}}, **{"Retry-After": "\u00b2"}),
            json_reply(202, {"traceId": "t-1"}),
        ],
        result=[json_reply(200, completed())],
    )
    fake = FakeTiming()
    with chat_server(script) as url:
        result = _probe(url, fake)
    assert result.observation.response["status"] == "completed"
    assert result.observation.probe["submitAttempts"] == 2
    assert fake.sleeps
    assert fake.sleeps[0] <= SETTINGS.backoff_initial_s


@pytest.mark.parametrize(
    "body",
    [
        b'{"status": "completed", "x": ' + b"[" * 950 + b"]" * 950 + b"}",
        b'{"status": "completed", "x": ' + b"[" * 300 + b"]" * 300 + b"}",
        # Two readers would read two answers: never a pass.
        b'{"status": "failed", "status": "completed", "provider": "codex-stdio",'
        b' "reply": {"role": "assistant", "content": "ready"}}',
    ],
    ids=["deeper-than-the-parser", "deeper-than-an-observation", "duplicate-status"],
)
def test_a_body_that_is_not_one_plain_json_answer_is_not_json(body: bytes) -> None:
    script = Script(result=[raw_reply(200, body, "application/json")])
    with chat_server(script) as url:
        result = _probe(url, FakeTiming())
    observation = result.observation
    assert observation.response is None
    assert observation.probe["recoverable"] == {"not-json": observation.probe["polls"]}
    assert observation.transport_error == "idle-timeout"
    verdict = classify(observation)
    assert not verdict.passed
    assert verdict.label == "BLOCKED/transport"


def test_a_body_that_trickles_in_past_the_request_timeout_is_a_timeout() -> None:
    # Every read gets a byte well within the timeout, so httpx alone would wait for the
    # whole body (an SSE keep-alive stream never ends); the answer itself would pass.
    slow = Reply(status=200, body=completed(), trickle_s=0.05)
    script = Script(submit=[slow])
    settings = ProbeSettings(request_timeout_s=0.3, submit_attempts=2, idle_timeout_s=1.0)
    started = time.monotonic()
    with chat_server(script) as url:
        result = probe(url, environment="dev", live=True, settings=settings)
    elapsed = time.monotonic() - started
    assert [step.kind for step in result.steps] == ["timeout", "timeout"]
    assert result.observation.transport_error == "timeout"
    assert classify(result.observation).label == "BLOCKED/transport"
    body_seconds = len(json.dumps(completed())) * 0.05
    assert elapsed < body_seconds  # it did not wait for the body it gave up on


@pytest.mark.parametrize("coding", ["gzip", "zstd"])
def test_a_body_coded_though_identity_was_asked_is_not_decoded(coding: str) -> None:
    # A few kilobytes of zstd or gzip can expand to gigabytes in one chunk, past
    # max_body_bytes: the probe asks for no coding and reads no coded body.
    answer = json.dumps(completed()).encode()
    packed = (
        gzip.compress(answer) if coding == "gzip" else zstandard.ZstdCompressor().compress(answer)
    )
    coded = Reply(
        status=200,
        body=packed,
        headers={"Content-Type": "application/json", "Content-Encoding": coding},
        raw=True,
    )
    script = Script(submit=[coded])
    with chat_server(script) as url:
        result = _probe(url, FakeTiming())
    assert result.observation.transport_error == "protocol"
    assert classify(result.observation).label == "BLOCKED/transport"
    (_, _, headers), *_ = script.requests
    assert headers["Accept-Encoding"] == "identity"


@pytest.mark.parametrize(
    "content",
    [{"omitted": "reply-text", "length": 5}, {"text": "ready"}, ["ready"], 5],
    ids=["recorded-form", "object", "list", "number"],
)
def test_a_reply_that_is_not_text_from_the_wire_never_passes(content: Any) -> None:
    # The recorded form {"omitted": "reply-text", "length": N} stands for a reply that
    # evidence does not keep; an endpoint sending it sent no reply text at all.
    answer = {**completed(), "reply": {"role": "assistant", "content": content}}
    answers = iter([httpx.Response(202, json={"traceId": "t-9"}), httpx.Response(200, json=answer)])
    transport = httpx.MockTransport(lambda request: next(answers))
    with httpx.Client(transport=transport) as client:
        result = probe(
            "https://chat.dev.example.test",
            environment="dev",
            live=True,
            client=client,
            timing=_timing(FakeTiming()),
        )
    verdict = classify(result.observation)
    assert verdict.label == "BLOCKED/schema"
    assert verdict.rule == "reply-missing"
    assert not verdict.agent_runner_gate
    again = classify(Observation.from_dict(stored_observation(result.observation)))
    assert again.label == verdict.label


def test_a_reply_cut_inside_a_surrogate_pair_is_still_an_answer() -> None:
    # A server that cut a string inside a surrogate pair still wrote RFC 8259 JSON; the
    # observation keeps the text with "?" in place of the lone half.
    body = (
        b'{"status": "completed", "provider": "codex-stdio",'
        b' "reply": {"role": "assistant", "content": "ready \\ud83d"}}'
    )
    script = Script(result=[raw_reply(200, body, "application/json")])
    with chat_server(script) as url:
        result = _probe(url, FakeTiming())
    verdict = classify(result.observation)
    assert verdict.label == "LOCAL"
    assert verdict.passed
    stored = json.dumps(stored_observation(result.observation), ensure_ascii=False)
    stored.encode("utf-8")  # no lone surrogate left
