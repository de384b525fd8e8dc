"""Tests for agc.errors: one exception tree, each error with a stable code and exit code."""

from __future__ import annotations

import re

import pytest

from agc import errors
from agc.errors import AgcError
from agc.exitcodes import ExitCode


def _tree(cls: type[AgcError]) -> list[type[AgcError]]:
    return [cls, *(sub for child in cls.__subclasses__() for sub in _tree(child))]


# agc's own classes only: a test may subclass an error for itself (tests/_core/test_jsonl.py).
ERRORS = [cls for cls in _tree(AgcError) if cls.__module__.startswith("agc")]


def test_every_error_class_is_public() -> None:
    assert sorted(cls.__name__ for cls in ERRORS) == sorted(errors.__all__)


def test_codes_are_kebab_case_and_unique() -> None:
    codes = [cls.code for cls in ERRORS]
    assert all(re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", code) for code in codes), codes
    assert len(set(codes)) == len(codes), sorted(c for c in codes if codes.count(c) > 1)


@pytest.mark.parametrize("cls", ERRORS, ids=[cls.__name__ for cls in ERRORS])
def test_each_error_has_an_exit_code_a_hint_and_a_json_form(cls: type[AgcError]) -> None:
    assert isinstance(cls.exit_code, ExitCode)
    assert cls is AgcError or cls.exit_code != ExitCode.OK
    extra: dict[str, object] = {}
    if issubclass(cls, errors.VerificationError):
        extra = {"report": None}
    if issubclass(cls, errors.WriteFailedError):
        extra = {"records_written": 0}
    if issubclass(cls, errors.JsonInvalidError):
        extra = {"problem": "syntax"}
    error = cls("what went wrong", **extra)  # type: ignore[arg-type]
    assert error.to_dict() == {"code": cls.code, "message": "what went wrong", "hint": error.hint}
    assert isinstance(error.hint, str)
