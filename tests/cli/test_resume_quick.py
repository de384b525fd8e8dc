"""``agc resume`` read without typer (:func:`agc.cli.resume.quick_arguments`) gives the
command exactly what typer's parse of the same list gives it, for every list it reads."""

from __future__ import annotations

import functools
import inspect
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import agc.cli.resume as resume_module
from agc.cli.app import load_module
from agc.cli.common import StoreOption, with_typer_params
from agc.cli.resume import quick_arguments, resume_command

# Words that are the quick grammar's, and words near it that typer alone reads or refuses.
WORDS = [
    "--check",
    "--json",
    "h.json",
    "run-1",
    "",
    "-",
    "--",
    "-h",
    "--help",
    "--check=1",
    "--jsn",
    "--out",
    "o.json",
    "--format",
    "anthropic",
    "--strategy=synthesize",
    "-x",
]


def _typer_call(monkeypatch: pytest.MonkeyPatch, args: list[str]) -> dict[str, Any] | None:
    """The arguments typer's ``agc resume`` passes the command for ``args``; ``None``
    when typer answers without running it (help, a refusal)."""
    with_typer_params(resume_command, StoreOption=StoreOption)
    calls: list[dict[str, Any]] = []

    @functools.wraps(resume_command)
    def spy(*given: Any, **values: Any) -> int:
        calls.append(inspect.signature(resume_command).bind(*given, **values).arguments)
        return 0

    monkeypatch.setattr(resume_module, "resume_command", spy)
    command = load_module("agc.cli.resume")["resume"]
    try:
        command.main(args, prog_name="agc resume", standalone_mode=False)
    except Exception:  # a usage error: typer refused the list
        return None
    finally:
        monkeypatch.undo()
    return calls[0] if calls else None


def _with_defaults(values: dict[str, Any]) -> dict[str, Any]:
    bound = inspect.signature(resume_command).bind(**values)
    bound.apply_defaults()
    return dict(bound.arguments)


@given(st.lists(st.sampled_from(WORDS), max_size=5))
@example(["--check", "h.json"])
@example(["h.json", "--json", "--check", "--check"])
@example(["--check", "-"])
@example(["--", "h.json"])
def test_a_list_read_without_typer_is_read_as_typer_reads_it(args: list[str]) -> None:
    quick = quick_arguments(args)
    if quick is None:
        return
    with pytest.MonkeyPatch.context() as monkeypatch:
        typer_values = _typer_call(monkeypatch, args)
    assert typer_values is not None, f"typer refuses {args!r}, which the quick path reads"
    assert _with_defaults(quick) == typer_values


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--check", "h.json"], {"target": "h.json", "check": True}),
        (["h.json", "--json"], {"target": "h.json", "as_json": True}),
        (["h.json"], {"target": "h.json"}),
        ([], None),
        (["--check"], None),
        (["a.json", "b.json"], None),
        (["--check", "--", "h.json"], None),
        (["--help", "h.json"], None),
        (["--check", "h.json", "--out", "o.json"], None),
        (["-x.json"], None),
    ],
)
def test_what_the_quick_path_reads(args: list[str], expected: dict[str, Any] | None) -> None:
    assert quick_arguments(args) == expected


def test_shell_completion_is_typers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_AGC_COMPLETE", "complete_bash")
    assert quick_arguments(["--check", "h.json"]) is None
