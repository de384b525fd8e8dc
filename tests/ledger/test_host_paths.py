"""Host paths never reach a turn file or agent.db, in any spelling or field, and
``agc ledger check`` reports a turn file that holds one (tests/ledger/injections.py
describes the shapes, forms and fields)."""

from __future__ import annotations

import copy
import json
import tempfile
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agc.ledger import _sanitize, _writer, check_turn_file
from agc.ledger._guard import guard_record, host_path_fields
from agc.ledger._sanitize import CleanText, PathSanitizer, decoded_view
from agc.ledger._writer import TurnLedgerFile
from tests.conftest import THOROUGH, examples, sampled
from tests.ledger import injections
from tests.ledger.helpers import TURN_ID, command, record_turn, records

REACHES_INSIDE = {
    "agc.ledger._guard": "the host-path guard on single records",
    "agc.ledger._sanitize": "the sanitizer's rules on single values",
    "agc.ledger._writer": "writes a sealed turn file record by record, past the recorder's guard",
}

ROOT = "/home/alice/proj"
SAN = PathSanitizer([ROOT])


# -- every shape in every form in every field ------------------------------------------


def _lead(shape: str) -> str:
    """How a shape's host path begins: ``/``, a drive letter, ``\\`` (UNC), ``~``,
    ``$`` (a variable) or ``.`` (a relative climb)."""
    return injections.SHAPES[shape]("u", "/r")[0].lower()


def _matrix(
    shapes: list[str], *, keep: int, seed: str, by_lead: bool = True
) -> dict[str, tuple[str, ...]]:
    """The forms of each shape to inject: every form in the thorough profile; by default
    a sample of the (shape, form) pairs (tests/conftest.py ``sampled``, the same on
    every run) holding every shape and every form, and with ``by_lead`` every form
    dressing a path of each beginning (the sanitizer's rules differ by how a path
    begins, not by the user it names)."""
    pairs = [(shape, form) for shape in shapes for form in injections.FORMS]
    cover: list[Callable[[tuple[str, str]], Hashable]] = [lambda p: p[0], lambda p: p[1]]
    if by_lead:
        cover.append(lambda p: (_lead(p[0]), p[1]))
    chosen = sampled(pairs, keep=keep, seed=seed, cover=cover)
    return {shape: tuple(f for s, f in chosen if s == shape) for shape in shapes}


MATRIX = _matrix(list(injections.SHAPES), keep=24, seed="host-path-matrix")


def test_the_default_matrix_dresses_every_beginning_of_a_path_in_every_form() -> None:
    assert set(MATRIX) == set(injections.SHAPES)
    assert all(MATRIX.values())
    leads = {_lead(shape) for shape in injections.SHAPES}
    assert leads == {"/", "c", "\\", "~", "$", "."}
    dressed = {(_lead(shape), form) for shape, forms in MATRIX.items() for form in forms}
    assert dressed == {(lead, form) for lead in leads for form in injections.FORMS}
    if THOROUGH:
        assert all(forms == tuple(injections.FORMS) for forms in MATRIX.values())


@pytest.mark.parametrize("shape", list(injections.SHAPES))
def test_no_injected_host_path_is_written(shape: str, tmp_path: Path) -> None:
    result = injections.run_matrix(tmp_path, shapes=(shape,), forms=MATRIX[shape])
    assert result.injections == len(MATRIX[shape]) * len(injections.FIELDS)
    assert result.leaked == ()


def test_the_matrix_detects_a_leak(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The leak count is only worth something if a leak is counted: with a cleaner that
    # keeps every text, the marker must be found in the written bytes.
    monkeypatch.setattr(
        _sanitize.PathSanitizer, "clean_text", lambda _self, raw, **_kw: CleanText(raw)
    )
    monkeypatch.setattr(_sanitize.PathSanitizer, "holds_host_path", lambda *_a, **_kw: False)
    result = injections.run_matrix(
        tmp_path,
        shapes=("posix-home",),
        forms=("plain",),
        fields=tuple(f for f in injections.FIELDS if f.name == "app.mcp.brief"),
    )
    assert [leak.field for leak in result.leaked] == ["app.mcp.brief"]


# -- property tests: forms combined, users and folders drawn ---------------------------

USERS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=5, max_size=9).map(
    lambda s: "zq" + s
)


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    user=USERS,
    shape=st.sampled_from(list(injections.SHAPES)),
    forms=st.lists(st.sampled_from(list(injections.FORMS)), min_size=1, max_size=2),
    field=st.sampled_from(injections.FIELDS),
)
# A UNC path in a diff header, then a file URL (which spells "\\\\host" as "//host"):
# "a///host/share/…" once kept the user's host and share.
@example(
    user="zqaaaaa",
    shape="unc",
    forms=["diff-headers", "file-url"],
    field=next(f for f in injections.FIELDS if f.name == "app.search.query"),
)
def test_property_combined_forms_never_leak(
    user: str, shape: str, forms: list[str], field: injections.Field
) -> None:
    """Two forms applied one after the other (a quoted path percent-encoded, a glued
    path behind look-alike slashes …) leak no more than one."""
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "proj"
        project.mkdir()
        value = injections.SHAPES[shape](user, str(project))
        for form in forms:
            value = injections.FORMS[form](value, user)
        attachments = [field.attachment(value)] if field.attachment else []
        outcome = record_turn(project, field.events(value), prompt=value, attachments=attachments)
        assert outcome.audit_write_failed is False
        assert injections.leaks(outcome, (user, str(project), str(Path.home()))) == []
        assert check_turn_file(outcome.turn_file).ok


# -- check reports a turn file that holds a host path -----------------------------------


def _write_sealed(path: Path, lines: list[dict[str, Any]]) -> None:
    """A turn file whose seal is right, so that only what it holds can be wrong."""
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = TurnLedgerFile(path)
    for record in lines:
        writer.write(record)
    writer.seal_attempt(client_turn_id=TURN_ID, attempt=1, recorded_at_ms=1)


PLACES = {
    "command": lambda item, v: item | {"command": v},
    "read path": lambda item, v: item | {"actions": [{"type": "read", "path": v}]},
    "search query": lambda item, v: item | {"actions": [{"type": "search", "query": v}]},
    "movePath": lambda item, v: (
        item
        | {"itemType": "fileChange", "changes": [{"path": "a.md", "kind": "update", "movePath": v}]}
    ),
    "brief": lambda item, v: item | {"itemType": "mcpToolCall", "arguments": {"brief": v}},
    "localPaths": lambda item, v: (
        item | {"itemType": "mcpToolCall", "arguments": {"localPaths": ["a.png", v]}}
    ),
    "itemId": lambda item, v: item | {"itemId": v},
}


@pytest.fixture(scope="module")
def clean_turn(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The records of one clean turn (one command), recorded once for the module, with
    the host's agc state out of reach as in every test."""
    folder = tmp_path_factory.mktemp("clean")
    (folder / "p").mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGC_HOME", str(folder / "agc-home"))
        patch.setenv("XDG_STATE_HOME", str(folder / "xdg-state"))
        return records(record_turn(folder / "p", [command("c1", "ls")]).turn_file)


@pytest.mark.parametrize("place", list(PLACES))
@pytest.mark.parametrize("form", list(injections.FORMS))
def test_check_reports_a_host_path_in_any_form_and_place(
    form: str, place: str, tmp_path: Path, clean_turn: list[dict[str, Any]]
) -> None:
    original = copy.deepcopy(clean_turn)
    item = next(r for r in original if r["recordType"] == "direct.codex.item")
    value = injections.FORMS[form]("/home/zqbob/docs/gdd.md", "zqbob")
    tampered = [PLACES[place](dict(item), value) if r is item else r for r in original]
    tampered = [r for r in tampered if r["recordType"] != "direct.codex.seal"]
    target = tmp_path / "out" / f"{TURN_ID}.jsonl"
    _write_sealed(target, tampered)
    report = check_turn_file(target)
    codes = {f.code for f in report.findings if f.severity == "error"}
    assert "host-path" in codes, (form, place, report.findings)
    assert codes <= {"host-path", "turn-end-mismatch"}


def test_check_accepts_every_turn_file_the_recorder_writes(tmp_path: Path) -> None:
    matrix = _matrix(["posix-home", "windows"], keep=8, seed="host-path-check", by_lead=False)
    for shape, forms in matrix.items():
        (tmp_path / shape).mkdir()
        injections.run_matrix(tmp_path / shape, shapes=(shape,), forms=forms)
    files = sorted(tmp_path.glob("*/*/.agent/runtime/direct-codex/turns/*.jsonl"))
    assert len(files) == sum(map(len, matrix.values()))
    for path in files:
        report = check_turn_file(path)
        assert report.ok, (path.name, report.findings)


# -- the guard: the last look before a record is written -------------------------------


def test_guard_removes_a_host_path_from_any_field() -> None:
    record = {
        "itemId": "zq@host:x",
        "command": "cat /home/zqbob/x",
        "path": "see:/home/zqbob/x",
        "arguments": {"localPaths": ["ok.md", "/Users/zqbob/y"], "brief": "use /Users/zqbob/y now"},
        "tags": ["fine", "/home/zqbob/z/w"],
        "ok": "game/index.html",
    }
    assert host_path_fields(record, SAN) == [
        "itemId",
        "command",
        "path",
        "arguments.localPaths[1]",
        "arguments.brief",
        "tags[1]",
    ]
    guarded = guard_record(record, SAN)
    assert "zqbob" not in json.dumps(guarded)
    assert guarded["commandRedacted"] is True
    assert guarded["path"] is None
    assert guarded["pathRejected"] is True
    assert guarded["arguments"] == {
        "localPaths": ["ok.md"],
        "localPathsRejected": 1,
        "brief": "use [path] now",
        "briefRedacted": True,
    }
    assert guarded["tags"] == ["fine"]
    assert guarded["ok"] == "game/index.html"
    assert host_path_fields(guarded, SAN) == []


def test_the_recorder_guards_what_a_record_builder_missed(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def careless(ctx: Any, item: Any, *, seq: int, recorded_at_ms: int) -> dict[str, Any]:
        return {
            "recordType": "direct.codex.item",
            "clientTurnId": ctx.client_turn_id,
            "seq": seq,
            "itemType": "commandExecution",
            "command": "cat /home/zqbob/secret.txt",
            "recordedAtMs": recorded_at_ms,
        }

    monkeypatch.setattr(_writer, "item_record", careless)
    outcome = record_turn(project, [command("c1", "ls")])
    assert "zqbob" not in outcome.turn_file.read_text()
    item = next(r for r in records(outcome.turn_file) if r["recordType"] == "direct.codex.item")
    assert item["commandRedacted"] is True
    assert check_turn_file(outcome.turn_file).ok


# -- the decoded view ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "decoded"),
    [
        ("%2Fhome%2Fbob", "/home/bob"),
        ("%252Fhome", "/home"),
        ("\\/home\\/bob", "/home/bob"),
        ("\\u002fhome", "/home"),
        ("printf '\\057home'", "printf '/home'"),
        ("&#47;home&sol;bob", "/home/bob"),
        ("cat$IFS/x", "cat /x"),
        ("cat${IFS%?}$9/x", "cat /x"),
        ("\u2215home\uff0fbob\u29f8x", "/home/bob/x"),
        ("C:\u00a5Users\uff3cbob", "C:\\Users\\bob"),
        ("\uff48\uff4f\uff4d\uff45", "home"),
    ],
)
def test_decoded_view_undoes_each_spelling(raw: str, decoded: str) -> None:
    view = decoded_view(raw)
    assert view.text == decoded
    # every decoded character points back into the raw text
    for index in range(len(view.text)):
        start, end = view.span(index, index + 1)
        assert 0 <= start < end <= len(raw)


def test_decoded_view_leaves_windows_folders_of_digits_alone() -> None:
    # printf's octal escapes of a separator only: "\2024" is a folder, not an escape.
    assert decoded_view("C:\\2024\\x64\\a.md").text == "C:\\2024\\x64\\a.md"
    assert SAN.clean("C:\\Users\\alice\\proj\\2024\\a.md").path is None  # another root
    windows = PathSanitizer(["C:\\Users\\alice\\proj"])
    assert windows.clean("C:\\Users\\alice\\proj\\2024\\x64\\a.md").path == "2024/x64/a.md"


# -- path fields: only a clean project-relative path is kept ----------------------------


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("see:/home/u/x", "invalid"),
        ("--input=/home/u/x", "outside"),
        ("-C/home/u/src", "outside"),
        ("see /home/u/x", "outside"),
        ("'/home/u/x'", "invalid"),
        ("\u89c1/home/u/x", "outside"),
        ("cat$IFS/home/u/x", "invalid"),
        ("\\/home\\/u\\/x", "unc"),  # read with "\\" as a separator: "//home//u"
        ("%2Fhome%2Fu%2Fx", "invalid"),
        ("assets%2Fgdd.md", "invalid"),
        ("\u2215home\u2215u\u2215x", "invalid"),
        ("\uff0fhome\uff0fu", "invalid"),
        ("u@build-host:src/x", "invalid"),
        ("see:../../u/x", "invalid"),
        ("--input ../../u/x", "outside"),
        ("notes/\u201c../../u/x\u201d", "outside"),
    ],
)
def test_a_path_field_that_is_not_clean_is_rejected(raw: str, reason: str) -> None:
    cleaned = SAN.clean(raw)
    assert (cleaned.path, cleaned.rejected) == (None, reason)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("assets/uploads/fast_gdd.md", "assets/uploads/fast_gdd.md"),
        ("My Docs/设计\uff1a第一版.md", "My Docs/设计\uff1a第一版.md"),
        ("素材/关卡/level 1.json", "素材/关卡/level 1.json"),
        ("/home/alice/proj/game/index.html", "game/index.html"),
        ("game/a@2x.png", "game/a@2x.png"),
    ],
)
def test_a_clean_path_is_kept(raw: str, expected: str) -> None:
    assert SAN.clean(raw).path == expected


# -- what stays: ordinary commands and text are not taken for host paths -----------------

BENIGN_COMMANDS = [
    "ls -la",
    "rg -n 'def main' src",
    "git log a..b",
    "git diff HEAD~1 -- src/app.py",
    "sed -i 's/foo/bar/g' src/x.py",
    "sed 's/a\\/b/c/' x.txt",
    "cut -d/ -f2 paths.txt",
    "awk -F/ '{print $2}' a.txt",
    "find . -name '*.py' -not -path './.venv/*'",
    "ls game/*/index.html src/**/x.js",
    "npm install @scope/pkg",
    "python3 -c 'print(1/2)'",
    "echo 50% done",
    "printf '%s\\n' a b",
    "curl -s https://example.com/api/v1/items",
    "git clone https://github.com/openai/codex.git",
    "/bin/zsh -lc 'ls -la'",
    "cat x > /dev/null 2>&1",
    "echo \"$PATH\" | tr : '\\n'",
    "python - <<'EOF'\nprint('hi')\nEOF",
    "git apply <<'EOF'\n--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-x\n+y\nEOF",
    "tar -xzf archive.tar.gz -C build",
    "git -C sub status",
    "diff -u a.txt b.txt",
]
BENIGN_TEXTS = [
    "60 fps / smooth, ~5 enemies, A/B testing",
    "收集/射击/跑酷\uff0c动作/RPG/卡牌",
    "素材/data/levels.json",
    "Use 50% opacity for the HUD; player speed 3/4 of the enemy's",
    "Ratio 16:9, 1920\u00d71080; email dev@example.com if unclear",
    "Diff:\n--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@",
    "Follow https://example.com/docs/guide carefully",
    "参考 assets/uploads/fast_gdd.md 的设计",
    "$5/month tier, ¥100 items, C# and F# scripts",
    "HP 100\uff0fMP 50",
]


@pytest.mark.parametrize("raw", BENIGN_COMMANDS)
def test_ordinary_commands_are_kept(raw: str) -> None:
    assert SAN.clean_command(raw, max_chars=4000).text == raw


@pytest.mark.parametrize("raw", BENIGN_TEXTS)
def test_ordinary_text_is_kept(raw: str) -> None:
    cleaned = SAN.clean_text(raw, max_chars=4000)
    assert (cleaned.text, cleaned.redacted) == (raw, False)
