"""Tests for agc._core.redact: each secret kind is redacted, protected fields are not."""

from __future__ import annotations

import json

import pytest

from agc._core.redact import SECRET_KINDS, RedactionStats, redact_text, redact_value

SAMPLES: list[tuple[str, str]] = [
    ("openai-key", "sk-proj-" + "Ab3_" * 12),
    ("openai-key", "sk-" + "a1B2c3D4" * 6),
    ("anthropic-key", "sk-ant-api03-" + "x9Y_-" * 18),
    ("aws-access-key", "AKIAIOSFODNN7EXAMPLE"),
    ("github-token", "ghp_" + "a" * 36),
    ("github-token", "github_pat_" + "11ABCDEFG" * 4),
    ("gitlab-token", "glpat-" + "abcDEF123_" * 2),
    ("slack-token", "xoxb-1234567890-abcdefghij"),
    # Slack app-level token (documented prefix xapp-).
    ("slack-token", "xapp-1-A0123456789-1234567890123-" + "abcdef0123456789" * 4),
    ("slack-webhook", "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX"),
    ("google-api-key", "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
    ("stripe-key", "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
]


@pytest.mark.parametrize(
    ("kind", "secret"), SAMPLES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(SAMPLES)]
)
def test_each_kind_is_redacted(kind: str, secret: str) -> None:
    stats = RedactionStats()
    out = redact_text(f"before {secret} after", stats)
    assert out == f"before [REDACTED:{kind}] after"
    assert stats.to_dict() == {kind: 1}


def test_bearer_keeps_scheme_and_aws_secret_keeps_name() -> None:
    out = redact_text("Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345")
    assert out == "Authorization: Bearer [REDACTED:bearer-token]"
    out = redact_text("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    assert out == "aws_secret_access_key = [REDACTED:aws-secret-key]"


def test_pem_private_key_is_redacted_whole() -> None:
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + "A" * 64 + "\n-----END RSA PRIVATE KEY-----"
    assert redact_text(f"key:\n{pem}\nend") == "key:\n[REDACTED:private-key]\nend"
    # A key cut off mid-way (a truncated paste) is still removed to the end.
    assert (
        redact_text("x -----BEGIN PRIVATE KEY-----\nMIIE" + "B" * 80) == "x [REDACTED:private-key]"
    )


def test_ordinary_text_is_untouched() -> None:
    text = "task-build-the-frontend-with-react-and-more skills AKIA sk-short ghp_x Bearer x"
    assert redact_text(text) == text


def test_redaction_keeps_json_arguments_valid() -> None:
    arguments = json.dumps({"cmd": "curl -H 'Authorization: Bearer abcdefghijklmnopqrstuvwxyz'"})
    redacted = redact_text(arguments)
    assert json.loads(redacted)["cmd"].endswith("Bearer [REDACTED:bearer-token]'")


def test_protected_fields_are_never_touched() -> None:
    secret = "sk-proj-" + "Z" * 40
    value = {
        "id": secret,
        "call_id": secret,
        "tool_call_id": secret,
        "tool_use_id": secret,
        "signature": secret,
        "encrypted_content": secret,
        "content": [
            {"type": "redacted_thinking", "data": secret},
            {"type": "text", "text": secret},
        ],
    }
    out = redact_value(value)
    for key in ("id", "call_id", "tool_call_id", "tool_use_id", "signature", "encrypted_content"):
        assert out[key] == secret
    assert out["content"][0]["data"] == secret
    assert out["content"][1]["text"] == "[REDACTED:openai-key]"


def test_redaction_is_idempotent_and_kinds_are_listed() -> None:
    once = redact_text("k sk-ant-api03-" + "q" * 40)
    assert redact_text(once) == once
    assert {kind for kind, _ in SAMPLES} <= set(SECRET_KINDS)


@pytest.mark.parametrize("escape", ["\n", "\t", "\r", "é"])
@pytest.mark.parametrize(
    ("kind", "secret"), SAMPLES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(SAMPLES)]
)
def test_secret_right_after_a_json_escape_in_arguments_is_redacted(
    kind: str, secret: str, escape: str
) -> None:
    # Tool-call arguments are a JSON string: a secret at the start of a line of a file
    # written by a tool sits right after the two characters `\n` (or `\t`, `\u00e9`).
    arguments = json.dumps({"path": ".env", "content": f"line one{escape}{secret}\n"})
    stats = RedactionStats()
    redacted = redact_text(arguments, stats)
    assert secret not in redacted
    assert stats.to_dict() == {kind: 1}
    assert json.loads(redacted)["content"] == f"line one{escape}[REDACTED:{kind}]\n"


def test_truncated_pem_in_json_arguments_keeps_them_valid_json() -> None:
    body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + "B" * 60
    arguments = json.dumps({"pem": f"-----BEGIN PRIVATE KEY-----\n{body}", "mode": "0600"})
    redacted = redact_text(arguments)
    assert body not in redacted
    assert json.loads(redacted) == {"pem": "[REDACTED:private-key]", "mode": "0600"}


def test_aws_secret_key_under_its_name_in_an_object_is_redacted() -> None:
    # Anthropic tool_use `input` and tool results are objects, not JSON strings: the
    # name is the key and the 40 characters are its value.
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    stats = RedactionStats()
    out = redact_value(
        {"input": {"aws_secret_access_key": secret, "AWS_SECRET_ACCESS_KEY": secret}}, stats
    )
    assert out == {
        "input": {
            "aws_secret_access_key": "[REDACTED:aws-secret-key]",
            "AWS_SECRET_ACCESS_KEY": "[REDACTED:aws-secret-key]",
        }
    }
    assert stats.to_dict() == {"aws-secret-key": 2}
    # Another 40-character value under another name is left alone.
    assert redact_value({"sha": "a" * 40}) == {"sha": "a" * 40}


def test_protected_names_inside_a_tool_input_are_still_scanned() -> None:
    # The call id of a tool_use is protected; a tool's own `input` is the model's
    # arguments (a JSON string elsewhere, where every value is scanned), not an id.
    secret = "ghp_" + "k" * 36
    block = {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "gh_api",
        "input": {
            "id": secret,
            "signature": secret,
            "nested": {"call_id": secret},
            "aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        },
    }
    out = redact_value(block)
    assert out["id"] == "toolu_1"
    assert out["input"] == {
        "id": "[REDACTED:github-token]",
        "signature": "[REDACTED:github-token]",
        "nested": {"call_id": "[REDACTED:github-token]"},
        "aws_secret_access_key": "[REDACTED:aws-secret-key]",
    }


def test_pgp_private_key_block_is_redacted() -> None:
    # An armored OpenPGP private key ends its header with "PRIVATE KEY BLOCK-----".
    block = (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF" + "x" * 64 + "\n=abcd\n"
        "-----END PGP PRIVATE KEY BLOCK-----"
    )
    assert redact_text(f"key:\n{block}\nend") == "key:\n[REDACTED:private-key]\nend"
