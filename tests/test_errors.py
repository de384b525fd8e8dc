"""Tests for agc.errors: one exception tree, each error with a stable code and exit code."""

from __future__ import annotations

import pickle
import re

import pytest

from agc import errors
from agc.errors import AgcError
from agc.exitcodes import ExitCode


def _tree(cls: type[AgcError]) -> list[type[AgcError]]:
    return [cls, *(sub for child in cls.__subclasses__() for sub in _tree(child))]


# Only the package's own tree: tests may define subclasses of their own.
ERRORS = [cls for cls in _tree(AgcError) if cls.__module__ == "agc.errors"]


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
    if issubclass(cls, errors.FileWriteError):
        extra = {"path": "f", "errno": 28}
    error = cls("what went wrong", **extra)  # type: ignore[arg-type]
    assert error.to_dict() == {"code": cls.code, "message": "what went wrong", "hint": error.hint}
    assert isinstance(error.hint, str)
    # An error raised in a worker process reaches the parent whole (--jobs N).
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is cls
    assert copy.to_dict() == error.to_dict()
    assert vars(copy) == vars(error)
    assert str(copy) == str(error)


def test_the_failure_kinds_of_the_machine_and_of_inputs() -> None:
    assert errors.InputMissingError("x").exit_code == ExitCode.USAGE
    assert errors.EmptyInputError("x").exit_code == ExitCode.USAGE
    assert errors.FileUnreadableError("x").exit_code == ExitCode.UNREADABLE
    error = errors.FileWriteError("cannot write f", path="f", errno=28)
    assert isinstance(error, errors.StoreError)
    assert (error.path, error.errno) == ("f", 28)
    assert error.exit_code == ExitCode.UNREADABLE
