"""The caller's limits bound every wait of the probe: ``--max-wait`` and
``--idle-timeout`` hold against any ``Retry-After`` (delay-seconds or an HTTP-date) and
against an endpoint that keeps reporting progress. Real HTTP on 127.0.0.1 (the tests'
own scripted endpoint); the clock is injected, so no test waits for a limit."""

from __future__ import annotations

import time
from email.utils import formatdate
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc.readiness import ProbeResult, ProbeSettings, Timing, probe
from tests.conftest import examples
from tests.readiness.chat_server import FakeTiming, Reply, Script, chat_server, json_reply

WALL_START = 1_764_460_800.0


def _timing(fake: FakeTiming) -> Timing:
    return Timing(monotonic=fake.monotonic, sleep=fake.sleep, random=fake.random, wall=fake.wall)


def _retry_after(form: str, value: int) -> str:
    """A ``Retry-After`` header value: delay-seconds, or an HTTP-date ``value`` seconds
    after the fake wall clock's start (RFC 9110, section 10.2.3)."""
    return str(value) if form == "seconds" else formatdate(WALL_START + value, usegmt=True)


def _busy(header: str) -> Reply:
    return json_reply(503, {"error": {"code": "busy"}}, **{"Retry-After": header})


def _running(events: int, header: str | None = None) -> Reply:
    extra = {} if header is None else {"Retry-After": header}
    body = {"status": "running", "waitingFor": "model", "eventCount": events}
    return json_reply(200, body, **extra)


def _script(kind: str, header: str) -> Script:
    """``submit``: every submit refused with the header; ``poll``: every poll answered
    503 with it, no progress; ``progress``: a turn that reports a new event on every
    poll (faked, for as long as the probe asks) with the header."""
    if kind == "submit":
        return Script(submit=[_busy(header)])
    if kind == "poll":
        return Script(result=[_busy(header)], trace=[json_reply(200, {"events": []})])
    return Script(
        result=[_running(n, header) for n in range(1, 200)],
        trace=[json_reply(200, {"events": []})],
    )


def _probe(url: str, fake: FakeTiming, probe_settings: ProbeSettings) -> ProbeResult:
    return probe(url, environment="dev", live=True, settings=probe_settings, timing=_timing(fake))


@settings(
    max_examples=examples(100),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    kind=st.sampled_from(["submit", "poll", "progress"]),
    form=st.sampled_from(["seconds", "date"]),
    asked=st.integers(min_value=0, max_value=10**7),
    max_wait=st.floats(min_value=0.5, max_value=40.0),
    idle=st.floats(min_value=0.5, max_value=40.0),
    attempts=st.integers(min_value=1, max_value=6),
)
def test_no_retry_after_outlasts_the_callers_limits(
    kind: str, form: str, asked: int, max_wait: float, idle: float, attempts: int
) -> None:
    probe_settings = ProbeSettings(
        request_timeout_s=2.0,
        idle_timeout_s=idle,
        max_wait_s=max_wait,
        backoff_initial_s=1.0,
        backoff_max_s=2.0,
        submit_attempts=attempts,
    )
    fake = FakeTiming(wall_start=WALL_START)
    script = _script(kind, _retry_after(form, asked))
    with chat_server(script) as url:
        result = _probe(url, fake, probe_settings)
    # The clock moves only when the probe sleeps: its total is the probe's wait.
    assert sum(fake.sleeps) == fake.now
    assert fake.now <= max_wait
    if kind != "progress":  # nothing ever progressed: the idle timeout holds too
        assert fake.now <= idle
    observation = result.observation
    if kind == "progress" or (kind == "poll" and observation.transport_error is not None):
        assert observation.transport_error in ("deadline", "idle-timeout")
    steps = [step for step in result.steps if step.delay_ms is not None]
    assert all(step.delay_ms is not None and step.delay_ms <= max_wait * 1000 for step in steps)


@given(
    form=st.sampled_from(["seconds", "date"]),
    asked=st.integers(min_value=11, max_value=300),
)
@settings(max_examples=examples(20, least=5), deadline=None)
def test_a_retry_after_past_max_wait_ends_the_probe_at_once(form: str, asked: int) -> None:
    """``--max-wait 10 --idle-timeout 50``: a 503 whose ``Retry-After`` (11-300 s, either
    form) would reach past the deadline is not waited for, at submit or while polling."""
    for kind in ("submit", "poll"):
        fake = FakeTiming(wall_start=WALL_START)
        script = _script(kind, _retry_after(form, asked))
        limits = ProbeSettings(max_wait_s=10, idle_timeout_s=50, request_timeout_s=2)
        with chat_server(script) as url:
            result = _probe(url, fake, limits)
        assert fake.sleeps == []
        assert result.observation.transport_error == "deadline"
        refused = [step for step in result.steps if step.route in ("submit", "result")]
        assert refused[-1].kind == "http-503"


def test_a_retry_after_past_the_idle_timeout_ends_the_probe_as_idle() -> None:
    fake = FakeTiming(wall_start=WALL_START)
    script = _script("poll", "7")
    limits = ProbeSettings(max_wait_s=10, idle_timeout_s=5, request_timeout_s=2)
    with chat_server(script) as url:
        result = _probe(url, fake, limits)
    assert fake.sleeps == []
    assert result.observation.transport_error == "idle-timeout"


def test_a_retry_after_within_the_limits_is_honoured_in_full() -> None:
    fake = FakeTiming(wall_start=WALL_START)
    script = Script(submit=[_busy("4"), json_reply(202, {"traceId": "t-1"})])
    script.result = [json_reply(200, {"status": "failed", "error": {"code": "x"}})]
    limits = ProbeSettings(max_wait_s=10, idle_timeout_s=5, request_timeout_s=2)
    with chat_server(script) as url:
        _probe(url, fake, limits)
    assert fake.sleeps == [4.0]


def test_an_endpoint_faking_progress_is_stopped_by_the_default_max_wait() -> None:
    """No ``--max-wait`` given: the default bounds the probe all the same, however long
    the endpoint keeps reporting a new event."""
    defaults = ProbeSettings()
    assert defaults.max_wait_s == 600
    fake = FakeTiming(wall_start=WALL_START)
    script = Script(
        result=[_running(n) for n in range(1, 150)], trace=[json_reply(200, {"events": []})]
    )
    slow_polls = ProbeSettings(backoff_initial_s=10, backoff_max_s=15, request_timeout_s=2)
    with chat_server(script) as url:
        result = _probe(url, fake, slow_polls)
    assert result.observation.transport_error == "deadline"
    assert fake.now <= defaults.max_wait_s
    assert result.observation.probe is not None
    assert result.observation.probe["eventCount"] > 60  # it progressed all along


def test_with_the_real_clock_the_probe_ends_by_max_wait() -> None:
    """Tiny limits and the real clock: a 300 s ``Retry-After`` on every poll of a turn
    that fakes progress does not hold the probe."""
    script = Script(
        result=[_running(n, "300") for n in range(1, 100)],
        trace=[json_reply(200, {"events": []})],
    )
    limits: dict[str, Any] = {
        "max_wait_s": 0.5,
        "idle_timeout_s": 0.4,
        "request_timeout_s": 0.3,
        "backoff_initial_s": 0.05,
        "backoff_max_s": 0.1,
    }
    started = time.monotonic()
    with chat_server(script) as url:
        result = probe(url, environment="dev", live=True, settings=ProbeSettings(**limits))
    elapsed = time.monotonic() - started
    assert result.observation.transport_error in ("deadline", "idle-timeout")
    assert elapsed < 5  # seconds, where the endpoint asked for 300 on every poll


@pytest.mark.parametrize("live", [False, True], ids=["dry-run", "live"])
def test_a_response_head_that_trickles_in_does_not_outlast_max_wait(live: bool) -> None:
    """The status line and headers sent a byte at a time: each read succeeds, so only a
    deadline over the whole exchange ends it (httpx bounds each read, not the head)."""
    slow = Reply(head_trickle_s=0.05)
    script = Script(readyz=[slow], submit=[slow], result=[slow], trace=[slow])
    limits: dict[str, Any] = {
        "max_wait_s": 1.0,
        "idle_timeout_s": 0.8,
        "request_timeout_s": 0.6,
        "backoff_initial_s": 0.05,
        "backoff_max_s": 0.1,
    }
    started = time.monotonic()
    with chat_server(script) as url:
        result = probe(url, environment="dev", live=live, settings=ProbeSettings(**limits))
    elapsed = time.monotonic() - started
    assert elapsed < 10  # seconds: the head would take 5,000
    assert result.observation.transport_error is not None
