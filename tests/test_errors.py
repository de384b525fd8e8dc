"""The exception tree: one stable kebab-case code per class, exit codes from the table."""

from __future__ import annotations

import re

import agc.errors as errors_module
from agc.errors import AgcError, FileWriteError, InputMissingError, StoreError
from agc.exitcodes import ExitCode


def _classes() -> list[type[AgcError]]:
    found: list[type[AgcError]] = []
    pending: list[type[AgcError]] = [AgcError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return [cls for cls in found if cls.__module__ == errors_module.__name__]


def test_every_code_is_kebab_case_and_names_one_class() -> None:
    codes = [cls.code for cls in _classes()]
    assert len(codes) >= 30
    assert len(codes) == len(set(codes)), sorted(codes)
    for code in codes:
        assert re.fullmatch(r"[a-z]+(-[a-z0-9]+)*", code), code


def test_every_exit_code_comes_from_the_table() -> None:
    for cls in _classes():
        assert isinstance(cls.exit_code, ExitCode)


def test_the_new_failure_kinds() -> None:
    assert InputMissingError("x").exit_code == ExitCode.USAGE
    error = FileWriteError("cannot write f", path="f", errno=28)
    assert isinstance(error, StoreError)
    assert error.exit_code == ExitCode.UNREADABLE
    assert error.to_dict()["code"] == "file-write-failed"
