"""Tests for agc.ledger._contract: the clientTurnId rule and file location."""

from __future__ import annotations

import pytest

from agc.errors import TurnIdInvalidError
from agc.exitcodes import ExitCode
from agc.ledger import turn_log_relpath, validate_client_turn_id


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Abc123-def", "Abc123-def"),
        ("  abcdef  ", "abcdef"),
        ("0-----", "0-----"),
        ("a" * 160, "a" * 160),
    ],
)
def test_valid_turn_ids_are_trimmed(raw: str, expected: str) -> None:
    assert validate_client_turn_id(raw) == expected


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ("abcde", "5 characters"),
        ("a" * 161, "161 characters"),
        ("-abcdef", "start with"),
        ("abc_def", "'_'"),
        ("abc/../def", "'/'"),
        ("abcdéf", "'é'"),
        ("abc def", "' '"),
        ("", "0 characters"),
    ],
)
def test_invalid_turn_ids_say_why(raw: str, words: str) -> None:
    with pytest.raises(TurnIdInvalidError, match=words) as info:
        validate_client_turn_id(raw)
    assert info.value.exit_code == ExitCode.USAGE
    assert info.value.code == "turn-id-invalid"


def test_non_string_turn_id_is_rejected() -> None:
    with pytest.raises(TurnIdInvalidError):
        validate_client_turn_id(123456)


def test_turn_log_is_project_relative_posix() -> None:
    assert turn_log_relpath(" Abc123-def ") == ".agent/runtime/direct-codex/turns/Abc123-def.jsonl"
