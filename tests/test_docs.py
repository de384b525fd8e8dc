"""The documentation's tables of codes say what the code has: every error code with its
exit code (docs/format.md), the exit-code tables (README.md, docs/format.md, the same
as ``--help`` prints), and every finding code of each report kind in its page."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import get_args

import pytest

from agc import errors
from agc.cli.app import main
from agc.errors import AgcError
from agc.exitcodes import EXIT_CODE_TABLE, ExitCode
from agc.integrity import RunFindingCode, TranscriptWriter
from agc.integrity._store_verify import StoreFindingCode
from agc.integrity._verdict import CATEGORIES, VERDICTS
from agc.ledger import LedgerFindingCode
from agc.resume._validate import FINDING_CODES as HISTORY_FINDING_CODES
from tests.conftest import REPO_ROOT, feed_stdin

REACHES_INSIDE = {
    "agc.integrity._store_verify": (
        "the store-level finding codes, compared with their table in the docs"
    ),
    "agc.integrity._verdict": "the verdict categories, compared with their table in the docs",
    "agc.resume._validate": (
        "the history finding codes as one tuple, compared with their table in the docs"
    ),
}

README = (REPO_ROOT / "README.md").read_text()
DOCS = REPO_ROOT / "docs"


def _section(text: str, heading: str) -> str:
    """The text under ``heading`` (a whole Markdown heading line) up to the next heading
    of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines()
    start = lines.index(heading) + 1
    fenced = False
    for end in range(start, len(lines)):
        line = lines[end]
        fenced ^= line.startswith("```")  # a "# comment" in a shell example is no heading
        if not fenced and re.match(rf"#{{1,{level}}} ", line):
            return "\n".join(lines[start:end])
    return "\n".join(lines[start:])


def _rows(section: str) -> list[list[str]]:
    """The body rows of the Markdown tables in ``section``, cells stripped."""
    rows = []
    for line in section.splitlines():
        if not line.startswith("|") or re.fullmatch(r"\|[\s|:-]+\|", line):
            continue
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def _tree(cls: type[AgcError]) -> list[type[AgcError]]:
    return [cls, *(sub for child in cls.__subclasses__() for sub in _tree(child))]


ERRORS = {cls.code: cls for cls in _tree(AgcError) if cls.__module__ == errors.__name__}


def test_the_error_code_table_names_every_error_code_with_its_exit_code() -> None:
    section = _section((DOCS / "format.md").read_text(), "### Error codes")
    rows = _rows(section)[1:]  # the header row is a row too
    documented = {row[0].strip("`"): int(row[1]) for row in rows}
    assert len(documented) == len(rows), "a code is listed twice"
    assert set(documented) - set(ERRORS) == set(), "documented, but no such error code"
    assert set(ERRORS) - set(documented) == set(), "error codes missing from docs/format.md"
    wrong = {code: (n, int(ERRORS[code].exit_code)) for code, n in documented.items()}
    assert {c: v for c, v in wrong.items() if v[0] != v[1]} == {}, "(documented, real) exit"


@pytest.mark.parametrize(
    ("page", "heading"), [("README.md", "## Sealed transcripts and the `agc-verify` gate"),
                          ("docs/format.md", "## Exit codes")],
)  # fmt: skip
def test_the_exit_code_tables_list_every_exit_code(page: str, heading: str) -> None:
    section = _section((REPO_ROOT / page).read_text(), heading)
    codes = [int(row[0]) for row in _rows(section)[1:] if row[0].isdigit()]
    assert codes == [int(code) for code in ExitCode]


def test_the_readme_exit_code_table_is_the_one_help_prints() -> None:
    # README: "Every command's --help ends with this table."
    section = _section(README, "## Sealed transcripts and the `agc-verify` gate")
    rows = [(int(row[0]), row[1]) for row in _rows(section)[1:] if row[0].isdigit()]
    assert rows == [(int(code), text) for code, text in EXIT_CODE_TABLE]


def _code_cells(page: str, heading: str) -> set[str]:
    section = _section((DOCS / page).read_text(), heading)
    return {row[0].strip("`") for row in _rows(section)[1:]}


def test_the_run_finding_codes_table_is_the_code_s() -> None:
    assert _code_cells("format.md", "### Finding codes") == set(get_args(RunFindingCode))


def test_the_verdicts_table_is_the_code_s() -> None:
    """docs/format.md's "Verdicts": each category with its codes in the order that
    ranks them, as :data:`agc.integrity._verdict.VERDICTS` has them."""
    rows = _rows(_section((DOCS / "format.md").read_text(), "### Verdicts"))[1:]
    documented = {row[0].strip("`"): re.findall(r"`([a-z-]+)`", row[3]) for row in rows}
    expected = {
        category: [code for code, of in VERDICTS.items() if of == category]
        for category in CATEGORIES
    }
    assert documented == expected


def _flatten(codes: tuple[object, ...]) -> set[str]:
    out: set[str] = set()
    for code in codes:
        out |= {code} if isinstance(code, str) else _flatten(get_args(code))
    return out


@pytest.mark.parametrize(
    ("page", "codes"),
    [
        ("evidence.md", _flatten(get_args(StoreFindingCode))),
        ("resume.md", set(HISTORY_FINDING_CODES)),
        ("ledger.md", set(get_args(LedgerFindingCode))),
    ],
    ids=["store", "history", "ledger"],
)
def test_every_finding_code_is_documented_on_its_page(page: str, codes: set[str]) -> None:
    text = (DOCS / page).read_text()
    if page == "evidence.md":  # the object-store codes live on their own page
        text += (DOCS / "object-store.md").read_text()
    assert {code for code in codes if f"`{code}`" not in text} == set()


def test_the_client_versions_named_are_the_pinned_ones() -> None:
    from tests.e2e.clients import PINNED  # noqa: PLC0415 - the pins only; nothing installs

    table = _rows(_section((DOCS / "e2e.md").read_text(), "## Client versions"))[1:]
    assert {(row[1].strip("`"), row[2]) for row in table} == {
        (pin.package, pin.version) for pin in PINNED.values()
    }
    codex, claude = PINNED["codex"].version, PINNED["claude"].version
    gemini = PINNED["gemini"].version
    assert f"Codex CLI\n{codex}, Claude Code {claude} and Gemini CLI {gemini} resume them" in README
    for page in ("serve.md", "ledger.md"):
        named = set(re.findall(r"Codex(?: CLI)? (\d+\.\d+\.\d+)|codex@(\d+\.\d+\.\d+)",
                               (DOCS / page).read_text()))  # fmt: skip
        assert {v for pair in named for v in pair if v} == {codex}, page


def _shape(value: object) -> object:
    """The members of a JSON value, nested: dicts by key, a list by its first item."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return None


def test_the_other_json_results_have_the_documented_members(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    section = _section((DOCS / "format.md").read_text(), "## The other `--json` results")
    documented = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", section, re.S)]
    store = tmp_path / "store"
    data = tmp_path / "in.jsonl"
    data.write_text('{"role": "user"}\n')

    def run(*argv: str) -> object:
        assert main([*argv, "--json"]) == ExitCode.OK
        return json.loads(capsys.readouterr().out)

    feed_stdin(monkeypatch, b'{"role": "user"}\n')
    ingest = run("record", "--run-id", "r1", "--store", str(store))
    assert _shape(run("import", str(data), "--run-id", "r2", "--store", str(store))) == _shape(
        ingest
    )
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    line = {"type": "user", "sessionId": "s1", "message": {"content": "hi"}}
    (sessions / "s1.jsonl").write_text(json.dumps(line) + "\n")
    folder = run("import", str(sessions), "--store", str(store))
    sealed = run("seal", str(data))
    writer = TranscriptWriter("r3", store=store, checkpoint_records=1)
    writer.write({"n": 0})
    writer.abort()  # a crash before close(): unsealed, one checkpoint
    recovered = run("recover", "r3", "--store", str(store))
    keys = run("keys", "generate", "--out", str(tmp_path / "keys"))
    assert [_shape(d) for d in documented] == [
        _shape(ingest), _shape(folder), _shape(sealed), _shape(recovered), _shape(keys)
    ]  # fmt: skip
