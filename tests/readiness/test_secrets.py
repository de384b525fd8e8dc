"""A secret in every field of every answer never reaches output, evidence or logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc.cli.app import main
from agc.readiness import Observation, classify, stored_observation
from tests.conftest import examples
from tests.readiness.chat_server import Script, chat_server, json_reply, raw_reply

ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def _secret(prefix: str, alphabet: str, size: int, spare: int = 8) -> st.SearchStrategy[str]:
    text = st.text(alphabet=alphabet, min_size=size, max_size=size + spare)
    # A body of one or two repeated characters (``sk-ant-0000…``) is a placeholder to
    # the shared detector, by design: real keys are random.
    return text.filter(lambda s: len(set(s)) > 4).map(lambda s: prefix + s)


# Formats the shared detector knows (the providers' documented key shapes).
SECRETS = st.one_of(
    _secret("sk-proj-", ALNUM, 24),
    _secret("sk-ant-", ALNUM, 24),
    _secret("ghp_", ALNUM, 36),
    _secret("glpat-", ALNUM, 20),
    _secret("AKIA", UPPER, 16, spare=0),  # exactly 16: AWS access key ids
    _secret("AIza", ALNUM, 35),
    _secret("xoxb-", ALNUM, 16),
)


def _plant(secret: str, value: Any) -> Any:
    """Every string of ``value`` (keys too) with the secret in it."""
    if isinstance(value, str):
        return f"{value} {secret}"
    if isinstance(value, list):
        return [_plant(secret, item) for item in value] + [secret]
    if isinstance(value, dict):
        planted = {
            f"{key} {secret}" if key == "extra" else key: _plant(secret, item)
            for key, item in value.items()
        }
        planted[f"x {secret}"] = secret
        return planted
    return value


def _answers(secret: str, shape: str) -> Script:
    trace_id = f"trace {secret}"
    running = _plant(
        secret, {"status": "running", "waitingFor": "model", "eventCount": 1, "extra": "x"}
    )
    running["status"] = "running"
    events = json_reply(200, _plant(secret, {"events": [{"type": "item", "text": "t"}]}))
    if shape == "completed":
        final = _plant(
            secret,
            {
                "status": "completed",
                "provider": "codex-stdio",
                "model": "m",
                "backend": "b",
                "id": "i",
                "signature": "s",
                "threadId": "t",
                "reply": {"role": "assistant", "content": "the reply"},
                "lastEvent": {"type": "turn.completed", "message": "m"},
                "providerTrace": {
                    "events": [{"seq": 0, "method": "response.delta", "params": {"t": "d"}}],
                    "limit": 20,
                    "firstSeq": 0,
                    "omitted": 0,
                },
            },
        )
        final["status"] = "completed"
        final["reply"]["role"] = "assistant"
        result = json_reply(200, final, **{"X-Debug": secret})
    elif shape == "failed":
        failed = _plant(
            secret,
            {
                "status": "failed",
                "error": {"code": "provider_unavailable", "missingEnv": ["OPENAI_API_KEY"]},
                "codexStdioFeasibility": {"status": "blocked", "blockers": ["codex_home_missing"]},
            },
        )
        failed["status"] = "failed"
        result = json_reply(503, failed)
    else:
        result = raw_reply(404, f"<html>{secret}</html>".encode())
    submit = json_reply(202, {"traceId": trace_id, "note": secret}, **{"Set-Cookie": secret})
    return Script(
        submit=[submit],
        result=[raw_reply(503, secret.encode()), json_reply(200, running), result],
        trace=[events],
    )


def test_a_secret_in_every_answer_field_never_leaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    counter = iter(range(10_000))
    config = tmp_path / "fast.toml"  # real sleeps in the CLI: keep them short
    config.write_text("[probe]\nbackoff_initial_s = 0.01\nbackoff_max_s = 0.02\n")

    @settings(
        max_examples=examples(25),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(secret=SECRETS, shape=st.sampled_from(["completed", "failed", "raw"]))
    def check(secret: str, shape: str) -> None:
        n = next(counter)
        store = tmp_path / f"store-{n}"
        script = _answers(secret, shape)
        with chat_server(script) as url:
            code = main(
                [
                    "readiness",
                    "probe",
                    "--url",
                    url,
                    "--environment",
                    "dev",
                    "--live",
                    "--evidence",
                    f"run-{n}",
                    "--store",
                    str(store),
                    "--idle-timeout",
                    "5",
                    "--config",
                    str(config),
                ]
            )
            human_out, human_err = capsys.readouterr()
            main(
                [
                    *("readiness", "probe", "--url", url, "--environment", "dev"),
                    *("--live", "--json", "--config", str(config)),
                ]
            )
            json_out, json_err = capsys.readouterr()
        assert code in (0, 1)
        for text in (human_out, human_err, json_out, json_err):
            assert secret not in text
        assert "the reply" not in human_out + json_out
        for path in store.rglob("*"):
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), path.name

    check()


@settings(max_examples=examples(200), deadline=None)
@given(secret=SECRETS, content=st.text(min_size=1, max_size=40))
def test_classify_and_the_stored_observation_never_hold_a_secret(secret: str, content: str) -> None:
    answer = _plant(
        secret,
        {
            "status": "completed",
            "provider": "p",
            "reply": {"role": "assistant", "content": content},
            "session": {"status": "ready", "lastTraceId": "t"},
            "error": {"code": "c", "missingEnv": ["E"]},
        },
    )
    answer["status"] = "completed"
    answer["reply"]["role"] = "assistant"
    observation = Observation.from_dict(
        {
            "endpoint": f"https://chat.example.test/v1/agent/chat?k={secret}",
            "environment": "dev",
            "origin": "live",
            "httpStatus": 200,
            "response": answer,
            "rawBody": f"<p>{secret}</p>",
        }
    )
    verdict = json.dumps(classify(observation).to_dict(), ensure_ascii=False)
    stored = json.dumps(stored_observation(observation), ensure_ascii=False)
    assert secret not in verdict
    assert secret not in stored
    # The reply text itself is never quoted, only its length.
    assert f"{content.strip()} {secret}" not in verdict
