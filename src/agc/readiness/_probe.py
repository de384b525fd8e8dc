"""Observing an agent chat endpoint over HTTP: a dry run, or one minimal live chat.

Live (``live=True``): one short-connection submit, ``POST <base>/v1/agent/chat`` with
``{"message": ...}`` and an ``Idempotency-Key`` header, answered ``202`` with a
``traceId``; then polls of ``GET …/result/<traceId>``, each followed by a refresh of
``GET …/trace/<traceId>``, with capped exponential backoff and jitter, honouring
``Retry-After`` (RFC 9110, section 10.2.3: delay-seconds or an HTTP-date). A 408, 425, 429 or
5xx answer without a structured terminal body, a timeout, a refused connection, an
empty or non-JSON body are recoverable: the poll backs off and continues. The probe
ends only on a terminal answer (``completed``, or a structured failure), a client-error
answer, an idle timeout (no new trace event for ``idle_timeout_s`` while
``waitingFor`` did not change), or ``max_wait_s`` in all. Both limits bound every wait:
a ``Retry-After`` that would pass one ends the probe at once (it is honoured in full or
not at all: never a request earlier than the endpoint asked), and no request may take
longer than the time left before ``max_wait_s``.

The ``providerTrace`` window of the ``/result`` answers (the model provider's side of the
turn) is kept as the observation's ``providerTrace``: the last
:data:`~agc._core.window.WINDOW_EVENTS` events, redacted by the shared detector, then
strings cut at :data:`~agc._core.window.WINDOW_STRING_CHARS` characters (the shape and
bounds of a ``runnerTrace`` window, :mod:`agc._core.window`).

Dry run (``live=False``): no chat is sent. ``GET <base>/readyz`` (a service preflight,
if the service has one), else ``GET …/result/<unknown id>``, whose structured error
answer shows the route is wired. A dry run is never more than ``DRY-RUN`` evidence.

The probe records no header, no env value and no reply text: the observation holds the
parsed answer (callers redact it before storing, see :mod:`agc.readiness._evidence`),
and :class:`ProbeStep` holds only routes, statuses, outcomes and delays. The clock,
sleep and randomness are injectable (:class:`Timing`) so tests never wait.
"""

from __future__ import annotations

import json
import math
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Final, Literal
from urllib.parse import quote as url_quote
from urllib.parse import urlsplit, urlunsplit

import httpx

from agc._core import json as strict_json
from agc._core.json import exceeds_depth
from agc._core.window import WINDOW_EVENTS, trace_window
from agc.errors import UrlInvalidError
from agc.readiness._model import (
    MAX_OBSERVATION_DEPTH,
    Observation,
    Route,
    quote,
    redact_json,
    transport_error_text,
    usable_trace_id,
)
from agc.readiness._policy import ProbeSettings
from agc.readiness._table import FAILURE_STATUSES, RUNNING_STATUSES
from agc.readiness._urls import is_loopback_host, safe_url

__all__ = [
    "ProbeResult",
    "ProbeStep",
    "Timing",
    "backoff_delay",
    "probe",
    "probe_urls",
    "retry_after_seconds",
]

RECOVERABLE_HTTP: Final = frozenset({408, 425, 429})
TERMINAL_STATUSES: Final = frozenset({"completed"}) | FAILURE_STATUSES
_SUBMIT_RETRY_HTTP: Final = frozenset({408, 425, 429, 503})

Outcome = Literal[
    "accepted", "terminal", "running", "recoverable", "progress", "no-progress", "refused"
]
Limit = Literal["deadline", "idle-timeout"]
"""What ended a probe that had no terminal answer: ``max_wait_s`` or ``idle_timeout_s``."""


@dataclass(frozen=True)
class Timing:
    """The probe's clock and sleep, injectable so tests do not wait.

    Attributes:
        monotonic: seconds from a monotonic clock (timeouts, backoff).
        sleep: waits the given seconds.
        random: a float in [0, 1) for jitter.
        wall: Unix time in seconds (``Retry-After`` HTTP-dates).
    """

    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    random: Callable[[], float] = random.random
    wall: Callable[[], float] = time.time


@dataclass(frozen=True)
class ProbeStep:
    """One HTTP exchange of a probe, as evidence records it (no header, no body).

    Attributes:
        route: ``submit``, ``result``, ``trace``, ``readyz`` or ``error-answer``.
        method: ``GET`` or ``POST``.
        http_status: the answer's status, or ``None`` when none came.
        outcome: ``accepted``, ``terminal``, ``running``, ``recoverable``,
            ``progress``, ``no-progress`` (a trace refresh) or ``refused``.
        kind: for a recoverable answer, what it was: ``http-503``, ``timeout``,
            ``connect``, ``not-json``, ``empty``, ``too-large`` …; else ``None``.
        at_ms: milliseconds since the probe started.
        delay_ms: the backoff slept after this step, if any.
    """

    route: str
    method: str
    http_status: int | None
    outcome: Outcome
    kind: str | None
    at_ms: int
    delay_ms: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "route": self.route,
            "method": self.method,
            "http_status": self.http_status,
            "outcome": self.outcome,
            "kind": self.kind,
            "at_ms": self.at_ms,
            "delay_ms": self.delay_ms,
        }


@dataclass(frozen=True)
class ProbeResult:
    """The observation a probe made and the steps it took."""

    observation: Observation
    steps: tuple[ProbeStep, ...]


def backoff_delay(attempt: int, *, initial: float, cap: float, rand: float) -> float:
    """Capped exponential backoff with "equal jitter", in seconds.

    The ceiling doubles from ``initial`` with each ``attempt`` (0, 1, 2 …) up to ``cap``;
    the delay is half the ceiling plus a random part of the other half (``rand`` in
    [0, 1)), so clients spread out yet never poll in a tight loop.
    """
    ceiling = min(cap, initial * math.pow(2, min(attempt, 62)))
    return ceiling / 2 + ceiling / 2 * min(max(rand, 0.0), 1.0)


def retry_after_seconds(value: str | None, *, now: float, cap: float) -> float | None:
    """The wait a ``Retry-After`` header asks for, in seconds (at most ``cap``).

    Accepts delay-seconds (``"120"``: ASCII digits only, RFC 9110 ``1*DIGIT``) and an
    HTTP-date (RFC 9110, section 10.2.3, relative to ``now``, Unix seconds); anything
    else, or no header, is ``None``: a header is the endpoint's text, never a reason to
    fail.
    """
    if value is None:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():
        return min(float(text), cap)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        return None  # RFC 9110 dates are GMT; a zone-less one is not of the grammar
    return min(max(when.timestamp() - now, 0.0), cap)


def probe_urls(url: str, chat_path: str) -> tuple[str, str]:
    """``(base, chat endpoint)`` for the service at ``url``.

    ``url`` is the service's base URL (``https://dev.example:16666/``) or already its
    chat endpoint (ending in ``chat_path``).

    Raises:
        UrlInvalidError: not ``http``/``https`` (a ``file://`` answer is classified with
            ``agc readiness classify``), no host, user information (it would reach
            logs and evidence), a query or a fragment.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:
        raise UrlInvalidError(f"--url {safe_url(url)!r} is not a URL: {exc}") from exc
    if parts.scheme == "file":
        raise UrlInvalidError(
            "--url is a file:// URL; the probe speaks HTTP",
            hint="Classify a recorded answer with: agc readiness classify FILE",
        )
    if parts.scheme not in ("http", "https") or not host:
        raise UrlInvalidError(f"--url {safe_url(url)!r} is not an http(s) URL with a host")
    if "@" in parts.netloc:
        raise UrlInvalidError(
            "--url holds user information (user:password@); it would be recorded",
            hint="Send a token with --auth-env NAME (the env var's value is never shown).",
        )
    if parts.query or parts.fragment:
        raise UrlInvalidError("--url must not have a query or a fragment")
    path = parts.path.rstrip("/")
    if path.endswith(chat_path.rstrip("/")):
        path = path[: len(path) - len(chat_path.rstrip("/"))]
    base = urlunsplit((parts.scheme, parts.netloc, path, "", ""))
    return base, base + chat_path


# -- one exchange -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Answer:
    http_status: int | None
    body: Any = None
    raw: str | None = None
    error: str | None = None
    retry_after: str | None = None
    peer_loopback: bool | None = None
    too_large: bool = False

    @property
    def parsed(self) -> bool:
        return self.raw is None and self.error is None and not self.too_large

    @property
    def recoverable_kind(self) -> str:
        if self.error is not None:
            return self.error
        if self.too_large:
            return "too-large"
        if self.http_status is not None and not 200 <= self.http_status < 300:
            return f"http-{self.http_status}"
        if self.raw is not None:
            return "empty" if self.raw == "" else "not-json"
        return f"http-{self.http_status}"

    @property
    def recoverable_text(self) -> str:
        """:attr:`recoverable_kind` for a person: a transport error in words."""
        if self.error is not None:
            return transport_error_text(self.error)
        return self.recoverable_kind

    @property
    def structured_terminal(self) -> bool:
        """A JSON object whose ``status`` is terminal: the backend's own last word."""
        return (
            self.parsed
            and isinstance(self.body, Mapping)
            and self.body.get("status") in TERMINAL_STATUSES
        )


def _decode(data: bytes) -> tuple[Any, str | None]:
    """``(parsed, None)`` for a JSON body, else ``(None, text)``.

    JSON is agc's strict reading (:func:`agc._core.json.loads`: no NaN, no duplicate
    member, so ``{"status": "failed", "status": "completed"}`` does not mean one thing
    to one reader and another to the next) nested at most
    :data:`~agc.readiness._model.MAX_OBSERVATION_DEPTH` deep; anything else is kept as
    text, which classifies as not JSON. A lone surrogate escape (a string cut inside a
    pair) is still JSON: it is kept, and becomes ``?`` wherever the observation is
    quoted or stored.
    """
    if not data.strip():
        return None, ""
    try:
        value = strict_json.loads(data, allow_lone_surrogates=True)
    except ValueError:
        return None, data.decode("utf-8", errors="replace")
    if exceeds_depth(value, MAX_OBSERVATION_DEPTH):
        return None, data.decode("utf-8", errors="replace")
    return value, None


def _peer_is_loopback(response: httpx.Response) -> bool | None:
    stream = response.extensions.get("network_stream")
    get_extra_info = getattr(stream, "get_extra_info", None)
    if get_extra_info is None:
        return None
    try:
        address = get_extra_info("server_addr")
    except Exception:
        return None
    if isinstance(address, tuple) and address and isinstance(address[0], str):
        return is_loopback_host(address[0])
    return None


def _exchange(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    settings: ProbeSettings,
    headers: Mapping[str, str],
    clock: Callable[[], float],
    timeout: float,
    body: Mapping[str, Any] | None = None,
) -> _Answer:
    """One request and its answer, read whole within ``timeout`` seconds in all (the
    request timeout, or less when the probe's ``max_wait_s`` is nearer).

    httpx's timeout bounds each read, not the exchange: a body that trickles in (an SSE
    stream's ``: ping`` comments every few seconds) would hold the probe for as long as
    the endpoint likes, past ``--idle-timeout`` and ``--max-wait``. So the body is read
    against ``clock`` (monotonic seconds) too, and a body still coming when the time is
    up is a ``timeout``. Only an uncoded body is read (``Accept-Encoding: identity``,
    RFC 9110, section 12.5.3): a ``Content-Encoding`` anyway is a ``protocol`` error.
    """

    def exchange() -> _Answer:
        started = clock()
        try:
            with client.stream(
                method,
                url,
                json=body,
                headers={**headers, "Accept-Encoding": "identity"},
                timeout=timeout,
            ) as response:
                peer = _peer_is_loopback(response)
                coding = response.headers.get("content-encoding", "").strip().lower()
                if coding not in ("", "identity"):
                    # Not asked for; decoding it would let a few kilobytes of zstd or gzip
                    # expand past max_body_bytes in one chunk (a decompression bomb).
                    return _Answer(response.status_code, error="protocol", peer_loopback=peer)
                data = bytearray()
                for chunk in response.iter_bytes():  # uncoded: as it came
                    data += chunk
                    if len(data) > settings.max_body_bytes:
                        return _Answer(response.status_code, too_large=True, peer_loopback=peer)
                    if clock() - started > timeout:
                        return _Answer(response.status_code, error="timeout", peer_loopback=peer)
                parsed, raw = _decode(bytes(data))
                return _Answer(
                    response.status_code,
                    body=parsed,
                    raw=raw,
                    retry_after=response.headers.get("retry-after"),
                    peer_loopback=peer,
                )
        except httpx.TimeoutException:
            return _Answer(None, error="timeout")
        except httpx.ConnectError:
            return _Answer(None, error="connect")
        except httpx.RemoteProtocolError:
            return _Answer(None, error="protocol")
        except httpx.TransportError:
            return _Answer(None, error="transport")

    # httpx bounds each read, so a response head sent a byte at a time is never cut off
    # by it: the exchange is also bounded as a whole (see _within).
    return _within(exchange, timeout)


def _within(work: Callable[[], _Answer], timeout: float) -> _Answer:
    """``work()`` run in a thread the caller waits for only ``timeout`` seconds (plus
    :data:`_JOIN_GRACE_S`); past that, a ``timeout`` answer (the thread, stuck on its
    socket, ends with the process). What ``work`` raises is raised here."""
    done: list[_Answer] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            done.append(work())
        except BaseException as exc:
            failed.append(exc)

    worker = threading.Thread(target=run, name="agc-probe-exchange", daemon=True)
    worker.start()
    worker.join(max(timeout, 0.0) + _JOIN_GRACE_S)
    if failed:
        raise failed[0]
    if not done:
        return _Answer(None, error="timeout")
    return done[0]


_JOIN_GRACE_S: Final = 0.5
"""How long past an exchange's timeout the probe waits for its thread (seconds): the
exchange ends itself by then unless its response head is still trickling in."""


# -- the probe ----------------------------------------------------------------------------


@dataclass
class _Run:
    """The mutable state of one probe run."""

    client: httpx.Client
    settings: ProbeSettings
    timing: Timing
    headers: Mapping[str, str]
    log: Callable[[str], None]
    started: float
    steps: list[ProbeStep] = field(default_factory=list)
    recoverable: Counter[str] = field(default_factory=Counter)
    peer_loopback: bool | None = None
    polls: int = 0
    trace_refreshes: int = 0
    submit_attempts: int = 0
    events: int = 0
    waiting_for: str | None = None
    waiting_by_source: dict[str, str] = field(default_factory=dict)
    last_progress: float | None = None
    provider_trace: dict[str, Any] | None = None

    def elapsed_ms(self) -> int:
        return int((self.timing.monotonic() - self.started) * 1000)

    def request_timeout(self) -> float:
        """Seconds one request may take: the request timeout, or the time left before
        ``max_wait_s`` when that is shorter (never below a millisecond)."""
        left = self.started + self.settings.max_wait_s - self.timing.monotonic()
        return max(min(self.settings.request_timeout_s, left), 0.001)

    def exchange(
        self,
        method: str,
        url: str,
        body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> _Answer:
        answer = _exchange(
            self.client,
            method,
            url,
            settings=self.settings,
            headers=self.headers if headers is None else headers,
            clock=self.timing.monotonic,
            timeout=self.request_timeout(),
            body=body,
        )
        if answer.peer_loopback is not None:
            # Once any answer came from a loopback peer, the evidence is local.
            self.peer_loopback = bool(self.peer_loopback) or answer.peer_loopback
        return answer

    def step(self, route: str, method: str, answer: _Answer, outcome: Outcome) -> ProbeStep:
        kind = answer.recoverable_kind if outcome in ("recoverable", "refused") else None
        step = ProbeStep(route, method, answer.http_status, outcome, kind, self.elapsed_ms())
        self.steps.append(step)
        return step

    def slept(self, delay: float) -> None:
        if self.steps:
            last = self.steps[-1]
            self.steps[-1] = ProbeStep(
                last.route,
                last.method,
                last.http_status,
                last.outcome,
                last.kind,
                last.at_ms,
                int(delay * 1000),
            )
        self.timing.sleep(delay)

    def wait(self, attempt: int, answer: _Answer | None) -> float | Limit:
        """The wait in seconds before the next request, or the limit that ends the probe.

        The computed backoff for ``attempt``, or the answer's ``Retry-After`` when it
        asks for longer (up to ``max_retry_after_s``). No wait passes ``max_wait_s``
        (from the probe's start) or ``idle_timeout_s`` (from the last progress, or the
        start): a ``Retry-After`` that would is not cut (a request earlier than the
        endpoint asked helps no one) but ends the probe (``"deadline"`` or
        ``"idle-timeout"``, the nearer limit); a computed backoff that would pass the
        deadline ends it too, and one that would pass the idle timeout is cut to it (a
        last poll then may still see progress).
        """
        settings = self.settings
        now = self.timing.monotonic()
        to_deadline = self.started + settings.max_wait_s - now
        idle_since = self.started if self.last_progress is None else self.last_progress
        to_idle = idle_since + settings.idle_timeout_s - now
        limits: list[tuple[float, Limit]] = sorted(
            [(to_deadline, "deadline"), (to_idle, "idle-timeout")]
        )
        if limits[0][0] <= 0:
            return limits[0][1]
        computed = backoff_delay(
            attempt,
            initial=settings.backoff_initial_s,
            cap=settings.backoff_max_s,
            rand=self.timing.random(),
        )
        asked = retry_after_seconds(
            answer.retry_after if answer else None,
            now=self.timing.wall(),
            cap=settings.max_retry_after_s,
        )
        if asked is not None and asked > computed:
            for left, limit in limits:
                if asked >= left:
                    return limit
            return asked
        if computed >= to_deadline:
            return "deadline"
        return min(computed, to_idle)

    def track(self, body: Any, source: str) -> bool:
        """Note the events and ``waitingFor`` in a result or trace body; True on progress:
        more events than ever seen, or a ``waitingFor`` other than the last one this
        source (``result`` or ``trace``) gave."""
        if not isinstance(body, Mapping):
            return False
        progressed = False
        count = body.get("eventCount")
        if not (isinstance(count, int) and not isinstance(count, bool)):
            events = body.get("events")
            count = len(events) if isinstance(events, list) else None
        if count is not None and count > self.events:
            self.events = count
            progressed = True
        waiting = body.get("waitingFor")
        if waiting is not None:
            signature = json.dumps(waiting, sort_keys=True, default=str)
            if signature != self.waiting_by_source.get(source):
                self.waiting_by_source[source] = signature
                progressed = True
            self.waiting_for = waiting if isinstance(waiting, str) else signature
        return progressed

    def note_provider_trace(self, body: Any) -> None:
        """Keep the ``providerTrace`` window of a ``/result`` answer (the latest one
        wins): its last :data:`WINDOW_EVENTS` events redacted, then strings cut, and the
        ``provider`` and ``protocol`` it names (quoted); an answer without a well-formed
        window (an object with an ``events`` array) keeps the one before."""
        window = body.get("providerTrace") if isinstance(body, Mapping) else None
        events = window.get("events") if isinstance(window, Mapping) else None
        if not isinstance(events, list):
            return
        assert isinstance(window, Mapping)
        omitted = window.get("omitted")
        if not isinstance(omitted, int) or isinstance(omitted, bool) or omitted < 0:
            omitted = 0
        kept = events[-WINDOW_EVENTS:]
        recorded = trace_window(
            redact_json(kept), limit=WINDOW_EVENTS, omitted=omitted + len(events) - len(kept)
        )
        names = {name: window.get(name) for name in ("provider", "protocol")}
        self.provider_trace = {
            **{name: quote(value) for name, value in names.items() if isinstance(value, str)},
            **recorded,
        }

    def info(self, trace_id: str | None, **extra: Any) -> dict[str, Any]:
        info: dict[str, Any] = {
            "polls": self.polls,
            "traceRefreshes": self.trace_refreshes,
            "submitAttempts": self.submit_attempts,
            "recoverable": dict(sorted(self.recoverable.items())),
            "eventCount": self.events,
            "waitingFor": None if self.waiting_for is None else quote(self.waiting_for),
            "elapsedMs": self.elapsed_ms(),
            **extra,
        }
        if trace_id is not None:
            info["traceId"] = quote(trace_id)
        return info


def probe(
    url: str,
    *,
    environment: str,
    live: bool,
    settings: ProbeSettings | None = None,
    timing: Timing | None = None,
    client: httpx.Client | None = None,
    headers: Mapping[str, str] | None = None,
    log: Callable[[str], None] | None = None,
) -> ProbeResult:
    """Observe the agent chat endpoint of the service at ``url``.

    Args:
        url: the service's base URL (or its chat endpoint).
        environment: the environment's name, recorded in the observation.
        live: send one minimal chat and poll it to the end; else a dry run.
        settings: timeouts (seconds), backoff, sizes (bytes); defaults when ``None``.
        timing: clock, sleep and randomness; the real ones when ``None``.
        client: the HTTP client (a new ``httpx.Client`` when ``None``; closed then).
        headers: extra request headers (a bearer token); sent, never recorded.
        log: receives one line per step for a human (no header, no value).

    Returns:
        The :class:`ProbeResult`. Failures to get an answer are in the observation
        (``transportError``), never raised.

    Raises:
        UrlInvalidError: ``url`` cannot be probed (see :func:`probe_urls`).
    """
    settings = settings or ProbeSettings()
    timing = timing or Timing()
    base, chat = probe_urls(url, settings.chat_path)
    own_client = client is None
    http = client or httpx.Client(follow_redirects=False, trust_env=False)
    run = _Run(
        client=http,
        settings=settings,
        timing=timing,
        headers=dict(headers or {}),
        log=log or (lambda _: None),
        started=timing.monotonic(),
    )
    try:
        observation = (
            _live(run, chat, environment) if live else _dry_run(run, base, chat, environment)
        )
    finally:
        if own_client:
            http.close()
    return ProbeResult(observation=observation, steps=tuple(run.steps))


def _observation(
    run: _Run,
    chat: str,
    environment: str,
    answer: _Answer | None,
    *,
    mode: Literal["live", "dry-run"] = "live",
    route: Route = "chat",
    transport_error: str | None = None,
    trace_id: str | None = None,
    response: Any = None,
    **info: Any,
) -> Observation:
    http_status = answer.http_status if answer else None
    body = _as_received(response if response is not None else (answer.body if answer else None))
    raw = answer.raw if answer and response is None else None
    if answer is not None and answer.error is not None and transport_error is None:
        transport_error = answer.error
    if answer is not None and answer.too_large and transport_error is None:
        transport_error = "too-large"
    return Observation(
        endpoint=safe_url(chat),
        environment=environment,
        origin="live",
        http_status=http_status,
        response=body,
        raw_body=raw,
        transport_error=transport_error,
        mode=mode,
        route=route,
        peer_loopback=run.peer_loopback,
        probe=run.info(trace_id, **info),
        provider_trace=run.provider_trace,
    )


NOT_TEXT: Final = {"omitted": "not-text"}
"""What an endpoint's ``reply.content`` that is not a string becomes in the observation."""


def _as_received(body: Any) -> Any:
    """The endpoint's answer as an observation keeps it: a ``reply.content`` that is not
    a string becomes :data:`NOT_TEXT`.

    ``{"omitted": "reply-text", "length": N}`` is how *recorded* evidence stands for a
    reply it does not keep; from the wire it would be a non-empty reply the endpoint
    never sent. :data:`NOT_TEXT` classifies as no reply text (``reply-missing``), now
    and when the stored observation is classified again.
    """
    if not isinstance(body, Mapping):
        return body
    reply = body.get("reply")
    if not isinstance(reply, Mapping) or "content" not in reply:
        return body
    content = reply["content"]
    if isinstance(content, str) or content is None:
        return body
    return {**body, "reply": {**reply, "content": dict(NOT_TEXT)}}


def _dry_run(run: _Run, base: str, chat: str, environment: str) -> Observation:
    readyz = run.exchange("GET", base + "/readyz")
    if readyz.parsed and isinstance(readyz.body, Mapping):
        run.step("readyz", "GET", readyz, "terminal")
        run.log(f"readyz: HTTP {readyz.http_status}, a preflight answer")
        return _observation(run, chat, environment, readyz, mode="dry-run", route="readyz")
    run.step("readyz", "GET", readyz, "recoverable")
    run.log(f"readyz: {readyz.recoverable_text}; asking the chat route for an unknown trace")
    unknown = f"{chat}/result/agc-readiness-dry-run-{uuid.uuid4().hex}"
    answer = run.exchange("GET", unknown)
    run.step("error-answer", "GET", answer, "terminal")
    run.log(
        f"error answer: HTTP {answer.http_status}"
        if answer.error is None
        else f"error answer: {transport_error_text(answer.error)}"
    )
    return _observation(run, chat, environment, answer, mode="dry-run", route="error-answer")


def _submit(run: _Run, chat: str) -> tuple[_Answer, Limit | None]:
    """The submit's last answer, and the limit that stopped its retries (or ``None``)."""
    key = uuid.uuid4().hex  # the same key on every try: a server may drop duplicates
    headers = {**run.headers, "Idempotency-Key": key}
    answer = _Answer(None, error="connect")
    for attempt in range(run.settings.submit_attempts):
        run.submit_attempts += 1
        answer = run.exchange("POST", chat, {"message": run.settings.message}, headers)
        refused = answer.error in ("connect", "timeout") or (
            answer.http_status in _SUBMIT_RETRY_HTTP and not answer.structured_terminal
        )
        if not refused:
            run.step(
                "submit", "POST", answer, "accepted" if answer.http_status == 202 else "terminal"
            )
            return answer, None
        run.step("submit", "POST", answer, "refused")
        if attempt + 1 < run.settings.submit_attempts:
            wait = run.wait(attempt, answer)
            if isinstance(wait, str):
                run.log(f"submit: {answer.recoverable_kind}; {_limit_text(run, wait)}")
                return answer, wait
            run.log(f"submit: {answer.recoverable_kind}; trying again in {wait:.1f} s")
            run.slept(wait)
    return answer, None


def _limit_text(run: _Run, limit: Limit) -> str:
    """Why the probe stops at ``limit`` (the settings that bound it), for the log."""
    if limit == "deadline":
        return (
            f"the next try would pass the maximum wait ({run.settings.max_wait_s:g} s); giving up"
        )
    return (
        f"the next try would pass the idle timeout ({run.settings.idle_timeout_s:g} s "
        "without progress); giving up"
    )


def _live(run: _Run, chat: str, environment: str) -> Observation:
    submitted, stopped = _submit(run, chat)
    if stopped is not None:
        return _observation(run, chat, environment, submitted, transport_error=stopped)
    if submitted.error is not None:
        run.log(f"submit: {transport_error_text(submitted.error)}; giving up")
        return _observation(run, chat, environment, submitted)
    if submitted.http_status in _SUBMIT_RETRY_HTTP and not submitted.structured_terminal:
        run.log(f"submit: refused (HTTP {submitted.http_status}) {run.submit_attempts} times")
        return _observation(
            run,
            chat,
            environment,
            submitted,
            transport_error=f"submit-http-{submitted.http_status}",
        )
    body = submitted.body
    trace_id = body.get("traceId") if isinstance(body, Mapping) else None
    if (
        submitted.http_status != 202
        or not usable_trace_id(trace_id)
        or submitted.structured_terminal
    ):
        # A synchronous terminal answer, a structured refusal, or a 202 without a
        # traceId: classify decides which.
        run.log(f"submit: HTTP {submitted.http_status}, no turn to poll")
        return _observation(run, chat, environment, submitted)
    assert isinstance(trace_id, str)
    run.log(f"submit: HTTP 202, trace {quote(trace_id)}")
    quoted = url_quote(trace_id, safe="")  # a traceId never adds path segments
    result_url, trace_url = f"{chat}/result/{quoted}", f"{chat}/trace/{quoted}"
    run.last_progress = last_progress = run.timing.monotonic()
    attempt = 0
    last_running: _Answer | None = None
    while True:
        run.polls += 1
        answer = run.exchange("GET", result_url)
        state = _poll_state(answer)
        if answer.parsed:
            run.note_provider_trace(answer.body)
        if state == "terminal":
            run.step("result", "GET", answer, "terminal")
            run.log(f"result: HTTP {answer.http_status}, terminal")
            return _observation(run, chat, environment, answer, trace_id=trace_id)
        progressed = False
        if state == "running":
            last_running = answer
            progressed = run.track(answer.body, "result")
            run.step("result", "GET", answer, "running")
        else:
            run.recoverable[answer.recoverable_kind] += 1
            run.step("result", "GET", answer, "recoverable")
        trace = run.exchange("GET", trace_url)
        run.trace_refreshes += 1
        trace_progress = trace.parsed and run.track(trace.body, "trace")
        progressed = progressed or trace_progress
        run.step("trace", "GET", trace, "progress" if trace_progress else "no-progress")
        now = run.timing.monotonic()
        if progressed:
            run.last_progress = last_progress = now
            attempt = 0
        idle_for = now - last_progress
        waiting = "" if run.waiting_for is None else f", waiting for {quote(run.waiting_for)}"
        if idle_for >= run.settings.idle_timeout_s:
            run.log(f"idle for {idle_for:.1f} s: no new trace event{waiting}; giving up")
            return _observation(
                run,
                chat,
                environment,
                last_running,
                transport_error="idle-timeout",
                trace_id=trace_id,
                idleForMs=int(idle_for * 1000),
            )
        if now - run.started >= run.settings.max_wait_s:
            run.log(f"waited {now - run.started:.1f} s in all; giving up")
            return _observation(
                run, chat, environment, last_running, transport_error="deadline", trace_id=trace_id
            )
        wait = run.wait(attempt, answer)
        attempt += 1
        what = "running" if state == "running" else answer.recoverable_kind
        if isinstance(wait, str):
            run.log(f"poll {run.polls}: {what}{waiting}; {_limit_text(run, wait)}")
            extra: dict[str, Any] = {}
            if wait == "idle-timeout":
                extra["idleForMs"] = int(idle_for * 1000)
            return _observation(
                run,
                chat,
                environment,
                last_running,
                transport_error=wait,
                trace_id=trace_id,
                **extra,
            )
        run.log(f"poll {run.polls}: {what}, {run.events} events{waiting}; next in {wait:.1f} s")
        run.slept(wait)


def _poll_state(answer: _Answer) -> Literal["terminal", "running", "recoverable"]:
    """What one ``/result`` answer means for the poll loop."""
    if answer.error is not None or answer.too_large:
        return "recoverable"
    status = answer.http_status or 0
    if status in RECOVERABLE_HTTP or status >= 500:
        return "terminal" if answer.structured_terminal else "recoverable"
    if 200 <= status < 300:
        if not answer.parsed:
            return "recoverable"  # empty or not JSON: a proxy's hiccup, not an answer
        body_status = answer.body.get("status") if isinstance(answer.body, Mapping) else None
        if body_status in RUNNING_STATUSES:
            return "running"
        return "terminal"  # completed, a failure, or a schema problem classify names
    return "terminal"  # 3xx, 4xx: retrying does not change the answer
