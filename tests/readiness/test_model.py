"""The observation format: strict parsing, every boundary named; quoting is inert."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc.errors import ObservationInvalidError
from agc.readiness import Observation, classify, safe_url, stored_observation
from agc.readiness._model import MAX_OBSERVATION_DEPTH, quote, redact_json
from tests.conftest import examples
from tests.readiness.helpers import LIVE_URL, completed

REACHES_INSIDE = {
    "agc.readiness._model": "the observation depth limit and the JSON redaction helpers",
}

SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"


def _valid() -> dict[str, Any]:
    return {
        "endpoint": LIVE_URL,
        "environment": "dev",
        "origin": "live",
        "httpStatus": 200,
        "response": completed(),
    }


def test_a_minimal_observation_round_trips() -> None:
    parsed = Observation.from_dict(_valid())
    assert parsed.mode == "live"
    assert parsed.route == "chat"
    again = Observation.from_dict(parsed.to_dict())
    assert again == parsed


@pytest.mark.parametrize("member", ["endpoint", "environment", "origin", "httpStatus", "response"])
def test_a_missing_member_is_named(member: str) -> None:
    data = _valid()
    del data[member]
    with pytest.raises(ObservationInvalidError, match=f"no '{member}' member"):
        Observation.from_dict(data)


def test_an_extra_member_is_named() -> None:
    with pytest.raises(ObservationInvalidError, match=r"unknown member.*'orgin'"):
        Observation.from_dict({**_valid(), "orgin": "live"})


@pytest.mark.parametrize(
    ("member", "value", "problem"),
    [
        ("origin", "production", "not one of live, mock"),
        ("origin", None, "not one of"),
        ("httpStatus", True, "HTTP status"),
        ("httpStatus", 99, "HTTP status"),
        ("httpStatus", 600, "HTTP status"),
        ("httpStatus", "200", "HTTP status"),
        ("endpoint", "", "non-empty string"),
        ("endpoint", 7, "non-empty string"),
        ("environment", "dev\n", "printable"),
        ("environment", " dev", "printable"),
        ("environment", "x" * 129, "longer than 128"),
        ("rawBody", 5, "rawBody"),
        ("transportError", "", "transportError"),
        ("mode", "live-ish", "not one of live, dry-run"),
        ("peerLoopback", "yes", "peerLoopback"),
        ("probe", [], "probe"),
        ("schemaVersion", 2, "schemaVersion"),
    ],
)
def test_a_bad_member_is_named(member: str, value: Any, problem: str) -> None:
    with pytest.raises(ObservationInvalidError, match=problem):
        Observation.from_dict({**_valid(), member: value})


def test_mode_and_route_must_agree() -> None:
    with pytest.raises(ObservationInvalidError, match="does not go with mode"):
        Observation.from_dict({**_valid(), "route": "readyz"})
    dry = Observation.from_dict({**_valid(), "mode": "dry-run"})
    assert dry.route == "error-answer"


def test_not_an_object() -> None:
    with pytest.raises(ObservationInvalidError, match="not a JSON object"):
        Observation.from_dict([_valid()])


def test_quote_redacts_before_it_cuts() -> None:
    text = "x" * 109 + " " + SECRET
    quoted = quote(text)
    assert "sk-proj" not in quoted
    assert SECRET[:12] not in quoted
    assert len(quoted) <= 120


def test_quote_escapes_terminal_control_characters() -> None:
    assert quote("ok\x1b[31mred\n") == "ok\\u001b[31mred\\u000a"


def test_quote_bounds_lists_and_hides_objects() -> None:
    assert quote(list(range(20)))[-1] == "… 4 more"
    assert quote({"a": SECRET}) == "<object with 1 members>"
    assert quote(float("nan")) == "nan"


def test_redact_json_exempts_no_key() -> None:
    redacted = redact_json({"id": SECRET, SECRET: [SECRET], "signature": SECRET})
    assert SECRET not in repr(redacted)


def test_redact_json_keeps_every_member_when_keys_redact_to_one_text() -> None:
    first = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    second = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    redacted = redact_json({first: 1, "[REDACTED:github-token]": 2, second: 3})
    assert list(redacted.items()) == [
        ("[REDACTED:github-token]-1", 1),
        ("[REDACTED:github-token]-2", 2),
        ("[REDACTED:github-token]-3", 3),
    ]


def test_safe_url_hides_user_information_and_secrets() -> None:
    url = f"https://me:{SECRET}@chat.example.test/v1/agent/chat?key={SECRET}"
    shown = safe_url(url)
    assert SECRET not in shown
    assert shown.startswith("https://***@chat.example.test/")


def _nested(depth: int) -> Any:
    """A value ``depth`` arrays/objects deep, built without recursion."""
    value: Any = "leaf"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(min_value=0, max_value=700))
def test_any_nesting_is_refused_or_classified_never_a_recursion_error(depth: int) -> None:
    data = _valid()
    data["response"] = {**completed(), "deep": _nested(depth)}
    if depth + 2 > MAX_OBSERVATION_DEPTH:  # the observation and its response nest too
        with pytest.raises(ObservationInvalidError, match="deeper than"):
            Observation.from_dict(data)
        return
    observation = Observation.from_dict(data)
    verdict = classify(observation)
    assert verdict.passed
    stored = stored_observation(observation)
    assert classify(Observation.from_dict(stored)).label == verdict.label
