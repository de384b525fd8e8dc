"""The secret corpus through the ledger path: turns recorded from events that carry
every corpus case leave none of them in the turn files or in agent.db."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc.ledger._sanitize import SCAN_LIMIT, PathSanitizer, clean_name, clean_token
from tests._core.secret_corpus import Case, Secret, build_cases, build_secrets, survivors
from tests.conftest import examples, sampled
from tests.ledger.helpers import Clock, command, completed, items, mcp, record_turn

REACHES_INSIDE = {
    "agc.ledger._sanitize": "the sanitizer's rules on single values",
}

CASES = build_cases()
# By default a seeded sample holding every kind and every placement; the whole corpus in
# the thorough profile (tests/conftest.py).
SAMPLE = sampled(
    CASES,
    keep=150,
    seed="ledger-corpus",
    cover=(lambda case: case.secret.kind, lambda case: case.placement),
)
TEXT_CASES = [case for case in SAMPLE if case.text is not None]
ID_CASES = [case for case in CASES if case.placement == "under-id" and case.value]
ID_TOKENS = [case.value["id"] for case in ID_CASES]
BATCH = 80  # three items per case: 240 of the 256 items a turn keeps


def _events(batch: list[Case], first: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for number, case in enumerate(batch, start=first):
        assert case.text is not None
        events.append(command(f"c{number}", case.text))
        events.append(
            mcp(f"m{number}", "taonier_prepare_game_art", {"mode": "full", "brief": case.text})
        )
        events.append(completed({"type": "webSearch", "id": f"w{number}", "query": case.text}))
    return events


def test_no_corpus_secret_reaches_a_turn_file_or_agent_db(project: Path) -> None:
    clock = Clock()
    turn_files: list[Path] = []
    for turn, start in enumerate(range(0, len(TEXT_CASES), BATCH)):
        batch = TEXT_CASES[start : start + BATCH]
        outcome = record_turn(project, _events(batch, start), turn_id=f"turn-{turn}", clock=clock)
        assert outcome.audit_write_failed is False
        written = items(outcome.turn_file)
        # The texts were kept (cleaned), not dropped: each brief is there and marked.
        briefs = [i["arguments"] for i in written if i.get("tool") == "taonier_prepare_game_art"]
        assert len(briefs) == len(batch)
        assert all(b["brief"] and b.get("briefRedacted") is True for b in briefs)
        commands = [i for i in written if i["itemType"] == "commandExecution"]
        assert all(i.get("commandRedacted") is True and "command" not in i for i in commands)
        turn_files.append(outcome.turn_file)
    # Tokens as item ids and as attachment names.
    ids = [command(token, "ls -la") for token in ID_TOKENS]
    names = [{"name": f"{token}.txt", "mediaType": "text/plain"} for token in ID_TOKENS[:8]]
    outcome = record_turn(project, ids, turn_id="turn-ids", attachments=names, clock=clock)
    turn_files.append(outcome.turn_file)
    stored = "\n".join(path.read_text(encoding="utf-8") for path in turn_files)
    database = (project / ".agent" / "agent.db").read_bytes().decode("utf-8", "replace")
    assert "[secret]" in database  # first-design briefs reached agent.db, redacted
    left = {
        (case.secret.kind, case.placement)
        for case in [*SAMPLE, *ID_CASES]
        if survivors(case.pieces, stored) or survivors(case.pieces, database)
    }
    assert left == set()
    for line in stored.splitlines():
        if line:
            json.loads(line)


def test_an_item_type_holding_a_secret_is_not_kept_from_any_input(project: Path) -> None:
    # Camel-casing an unknown type ("ghp_A1…" -> "ghpA1…") hid the token from the detector.
    app_server = [completed({"type": token, "id": f"a{n}"}) for n, token in enumerate(ID_TOKENS)]
    codex_exec = [
        {"type": "item.completed", "item": {"type": token, "id": f"e{n}"}}
        for n, token in enumerate(ID_TOKENS)
    ]
    outcome = record_turn(project, [*app_server, *codex_exec])
    written = items(outcome.turn_file)
    assert len(written) == 2 * len(ID_TOKENS)
    assert {i["itemType"] for i in written} == {"unknown"}
    stored = outcome.turn_file.read_text(encoding="utf-8")
    database = (project / ".agent" / "agent.db").read_bytes().decode("utf-8", "replace")
    left = [
        case.secret.kind
        for case in ID_CASES
        if survivors(case.pieces, stored) or survivors(case.pieces, database)
    ]
    assert left == []


def test_ids_and_names_holding_a_secret_are_not_kept() -> None:
    for token in ID_TOKENS:
        assert clean_token(token) is None
        name = clean_name(f"{token}.txt")
        assert name is not None
        assert token not in name
    assert clean_token("call_0Hq3kAqz2vN9x8Yt") == "call_0Hq3kAqz2vN9x8Yt"


def test_a_token_wrapped_across_lines_is_redacted_before_text_becomes_one_line() -> None:
    sanitizer = PathSanitizer(["/work/proj"])
    token = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5"
    cleaned = sanitizer.clean_text(
        f"token:\n{token[:20]}\n{token[20:]}", max_chars=400, single_line=True
    )
    assert cleaned.text == "token: [secret]"
    assert cleaned.redacted is True


_BARE = [s for s in build_secrets() if s.self_identifying and s.carriers == (s.value,)]
_BARE = [s for s in _BARE if "\n" not in s.value and "/" not in s.value]


def _u_decoded(text: str) -> str:
    return re.sub(r"\\+u([0-9A-Fa-f]{4})", lambda m: chr(int(m.group(1), 16)), text)


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    secret=st.sampled_from(_BARE),
    escaped=st.sets(st.integers(0, 7), max_size=3),
    folder=st.sampled_from(["game/", "src/a/", "", "assets\\"]),
)
def test_property_no_path_field_keeps_a_secret_spelled_with_escapes(
    tmp_path_factory: pytest.TempPathFactory, secret: Secret, escaped: set[int], folder: str
) -> None:
    # A path is normalized ("\\" is a separator) before the last secret look, which then
    # no longer saw "\u0073k-…" (it had become "u0073k-…"): paths are judged as written.
    value = "".join(f"\\u{ord(c):04x}" if i in escaped else c for i, c in enumerate(secret.value))
    path = f"{folder}{value}.png"
    project = tmp_path_factory.mktemp("proj")
    read = {"type": "read", "command": "cat", "name": "x", "path": path}
    events = [
        completed({"type": "fileChange", "id": "f1", "status": "completed",
                   "changes": [{"path": path, "kind": {"type": "update", "move_path": path}}]}),
        command("c1", "cat x", [read]),
        completed({"type": "imageView", "id": "v1", "path": path}),
        mcp("m1", "agc_write_file", {"path": path, "content": "x"}),
    ]  # fmt: skip
    attachments = [{"name": "x.png", "localPath": path, "mediaType": "image/png"}]
    outcome = record_turn(project, events, attachments=attachments)
    stored = outcome.turn_file.read_text(encoding="utf-8")
    database = (project / ".agent" / "agent.db").read_bytes().decode("utf-8", "replace")
    for written in (stored, database):
        assert survivors(secret.pieces(), _u_decoded(written)) == []
        assert survivors(secret.pieces(), _u_decoded(written.replace("\\\\", "\\"))) == []


_CUT_TOKENS = [
    s
    for s in build_secrets()
    if s.self_identifying and s.carriers == (s.value,) and "\n" not in s.value
]


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    secret=st.sampled_from(_CUT_TOKENS),
    cut=st.floats(0.3, 0.95),
    path_chars=st.integers(62_000, 64_000),
)
def test_property_a_token_cut_by_the_scan_limit_is_not_kept(
    secret: Secret, cut: float, path_chars: int
) -> None:
    # A long host path in front becomes "[path]", which brings the end of the scanned
    # part within the 4000 characters kept; a token that the scan limit cuts in two
    # kept its head (too short for its rule) in the turn file.
    token = secret.value
    inside = max(12, int(len(token) * cut))  # characters of the token before the limit
    head = "see /work/elsewhere/" + "a" * path_chars + " then "
    text = head + "x" * (SCAN_LIMIT - len(head) - inside - 1)
    text += " " + token + " end " + "z" * 20_000
    assert text.index(token) + inside == SCAN_LIMIT
    out = PathSanitizer(["/work/proj"]).clean_text(text, max_chars=4000)
    assert out.text is not None
    assert survivors(tuple(secret.pieces()), out.text) == []
