"""Tests for ``agc ledger record|show|check`` (in process), including the real Codex
streams and rollouts in ../shared/fixtures/real/."""

from __future__ import annotations

import hashlib
import io
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import blake3
import pytest

from agc.cli.app import main
from agc.cli.verify import main as verify_main
from agc.exitcodes import ExitCode
from tests.conftest import REAL_FIXTURES, require_shared, write_run
from tests.ledger.helpers import command, mcp

GDD = "assets/uploads/upload-1-fast_gdd.md"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "assets" / "uploads").mkdir(parents=True)
    (root / GDD).write_text("# GDD\n")
    return root


@pytest.fixture
def prompt(tmp_path: Path) -> Path:
    path = tmp_path / "prompt.txt"
    path.write_text("make the game from the GDD")
    return path


def _stdin(monkeypatch: pytest.MonkeyPatch, lines: list[dict[str, Any]]) -> None:
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def _record(project: Path, prompt: Path, *extra: str) -> list[str]:
    return [
        "ledger",
        "record",
        "--project",
        str(project),
        "--turn-id",
        "Abc123-def",
        "--prompt-file",
        str(prompt),
        *extra,
    ]


def _turn_file(project: Path, turn_id: str = "Abc123-def") -> Path:
    return project / ".agent/runtime/direct-codex/turns" / f"{turn_id}.jsonl"


def test_record_show_check_round_trip(
    project: Path,
    prompt: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    attachments = tmp_path / "files.json"
    attachments.write_text(json.dumps([{"name": "fast_gdd.md", "localPath": GDD}]))
    _stdin(
        monkeypatch,
        [
            command("c1", "ls", [{"type": "listFiles", "path": "assets/uploads"}]),
            mcp("m1", "taonier_prepare_game_art", {"brief": "collect stars"}),
            {"method": "turn/completed", "params": {"turn": {"status": "completed"}}},
        ],
    )
    # the direct-project deployment's art tool is a design action under its preset
    args = ["--attachments", str(attachments), "--policy", "direct-project", "--json"]
    assert main(_record(project, prompt, *args)) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["attempt"] == 1
    assert out["itemCount"] == 2
    assert out["completed"] is True
    assert out["input"]["items"] == 2
    assert out["turnLog"] == ".agent/runtime/direct-codex/turns/Abc123-def.jsonl"

    assert main(["ledger", "show", str(_turn_file(project))]) == 0
    shown = capsys.readouterr().out
    assert "listed-or-searched-only" in shown
    assert "mcp:taonier_prepare_game_art" in shown
    assert GDD in shown
    # Not a terminal: plain columns, one line per offered file, no box drawing.
    assert not set(shown) & set("┏┓┗┛━┃│─┡┩╇╈┼╭╮╰╯└┘┴┬├┤")
    lines = shown.splitlines()
    header = lines.index("Offered files:") + 1
    assert re.split(r"\s{2,}", lines[header].strip()) == [
        "localPath", "read", "read at seq", "before design", "sha256 match", "listed/searched at"
    ]  # fmt: skip
    assert lines[header + 1].startswith(f"{GDD} ")

    assert main(["ledger", "show", str(_turn_file(project)), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["row"] == "listed-or-searched-only"

    assert main(["ledger", "check", str(_turn_file(project))]) == 0
    assert ": ok;" in capsys.readouterr().out


def test_check_exits_1_on_findings(
    project: Path, prompt: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _stdin(monkeypatch, [command("c1", "ls")])
    assert main(_record(project, prompt)) == 0
    path = _turn_file(project)
    path.write_bytes(path.read_bytes().replace(b'"ls"', b'"rm"'))
    capsys.readouterr()
    assert main(["ledger", "check", str(path), "--json"]) == ExitCode.FINDINGS
    report = json.loads(capsys.readouterr().out)
    assert {f["code"] for f in report["findings"]} >= {"modified"}


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["--turn-id", "bad/id"], ExitCode.USAGE, "--turn-id contains"),
        (["--prompt-file", "/nonexistent/prompt.txt"], ExitCode.USAGE, "prompt file"),
        (["--attachments", "{bad}"], ExitCode.USAGE, "attachments file"),
        (["--policy", "{bad}"], ExitCode.USAGE, "policy"),
        (["--project", "{missing}"], ExitCode.UNREADABLE, "does not exist"),
        (["--agent-root", "relative/dir"], ExitCode.USAGE, "not an absolute path"),
        (["--input", "{missing}"], ExitCode.USAGE, "input file"),
    ],
)
def test_record_bad_usage(
    project: Path,
    prompt: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    code: ExitCode,
    words: str,
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "an array"}')
    (tmp_path / "bad.toml").write_text("schema_version = 9\n")
    replace = {"{bad}": str(bad), "{missing}": str(tmp_path / "missing")}
    fixed = [replace.get(a, a) for a in args]
    if args[0] == "--policy":
        fixed = ["--policy", str(tmp_path / "bad.toml")]
    base = _record(project, prompt)
    # later options win in click, so appending overrides the defaults above
    _stdin(monkeypatch, [])
    assert main([*base, *fixed]) == code
    assert words in capsys.readouterr().err


def test_fail_open_exits_0_and_strict_exits_3(
    project: Path, prompt: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _stdin(monkeypatch, [command("c1", "ls")])
    assert main(_record(project, prompt)) == 0
    path = _turn_file(project)
    path.write_bytes(path.read_bytes() + b"{}\n")  # the sealed file changed: no appends
    capsys.readouterr()
    _stdin(monkeypatch, [command("c2", "ls")])
    assert main(_record(project, prompt)) == 0
    captured = capsys.readouterr()
    assert "warning:" in captured.err
    assert "auditWriteFailed: true" in captured.out
    _stdin(monkeypatch, [command("c3", "ls")])
    assert main([*_record(project, prompt), "--strict"]) == ExitCode.UNREADABLE


def test_strict_exits_3_when_only_the_agent_db_summary_failed(
    project: Path, prompt: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # docs/ledger.md "Fail-open": a failed write (the agent.db summary is one) is
    # printed and exits 0, or 3 with --strict.
    (project / ".agent").mkdir()
    (project / ".agent" / "agent.db").write_bytes(b"this is not sqlite" * 100)
    _stdin(monkeypatch, [command("c1", "ls")])
    assert main(_record(project, prompt)) == 0
    assert "agent.db" in capsys.readouterr().err
    _stdin(monkeypatch, [command("c2", "ls")])
    assert main([*_record(project, prompt), "--strict"]) == ExitCode.UNREADABLE


def test_record_survives_lines_of_unexpected_shape(
    project: Path, prompt: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "Lines that are not JSON objects and unknown types are counted, never fatal"
    # (docs/ledger.md): a list where a word is expected must not end in exit 4.
    _stdin(
        monkeypatch,
        [
            {"type": "response_item", "payload": {"type": ["function_call"]}},
            {"type": "response_item", "payload": {"type": "function_call", "name": {}}},
            {"type": "event_msg", "payload": {"type": ["task_complete"]}},
            {"method": "turn/completed", "params": {"turn": {"status": ["completed"]}}},
            command("c1", "ls"),
        ],
    )
    assert main(_record(project, prompt)) == 0
    assert main(["ledger", "check", str(_turn_file(project))]) == 0


def test_policy_preset_by_name_and_check_recomputes_with_it(
    project: Path, prompt: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    change = {"type": "fileChange", "id": "f1", "changes": [{"path": "src/a.py", "kind": "add"}]}
    _stdin(monkeypatch, [{"method": "item/completed", "params": {"item": change}}])
    assert main([*_record(project, prompt), "--policy", "generic"]) == 0
    capsys.readouterr()
    path = _turn_file(project)
    assert main(["ledger", "show", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["firstDesign"]["kind"] == "fileChange:src/a.py"
    assert main(["ledger", "check", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["findings"] == []
    # another policy given explicitly: the recomputation differs and says why
    assert main(["ledger", "check", str(path), "--policy", "direct-project", "--json"]) == 1
    codes = {f["code"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert codes == {"policy-mismatch", "turn-end-mismatch"}
    assert main(["ledger", "check", str(path), "--policy", "no-such-preset"]) == ExitCode.USAGE
    assert "no-such-preset" in capsys.readouterr().err


def test_help_lists_the_ledger_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ledger", "--help"]) == 0
    out = capsys.readouterr().out
    for name in ("record", "show", "check"):
        assert name in out


# -- real Codex inputs --------------------------------------------------------------------


def _real(kind: str) -> list[Path]:
    folder = REAL_FIXTURES / kind
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else [folder / "absent.jsonl"]


def _strings(value: object, keys: frozenset[str], under: bool = False) -> Iterator[str]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _strings(inner, keys, under or key in keys)
    elif isinstance(value, list):
        for inner in value:
            yield from _strings(inner, keys, under)
    elif isinstance(value, str) and under:
        yield value


_OUTPUT_KEYS = frozenset(
    {"aggregated_output", "output", "text", "result", "diff", "arguments", "message", "content"}
)
_ABSOLUTE = re.compile(r"(?<![\w.])/(?:private|opt|Users|home|redacted|tmp|var)/[^\s\"']*")


@pytest.mark.parametrize(
    "fixture", _real("codex-exec") + _real("codex-rollout"), ids=lambda p: p.name
)
def test_real_codex_inputs_record_and_check_cleanly(
    fixture: Path, tmp_path: Path, prompt: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_shared(fixture)
    project = tmp_path / "proj"
    project.mkdir()
    turn_id = "real-" + hashlib.sha256(fixture.name.encode()).hexdigest()[:12]
    args = ["ledger", "record", "--project", str(project), "--turn-id", turn_id]
    args += ["--prompt-file", str(prompt), "--input", str(fixture), "--json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["auditWriteFailed"] is False
    assert summary["input"]["invalidLines"] == 0
    turn_file = _turn_file(project, turn_id)
    assert main(["ledger", "check", str(turn_file)]) == 0
    capsys.readouterr()

    written = turn_file.read_text() + (project / ".agent/agent.db").read_bytes().decode(
        "utf-8", "replace"
    )
    events = [json.loads(line) for line in fixture.read_text().splitlines() if line.strip()]
    secrets = {s for e in events for s in _strings(e, _OUTPUT_KEYS) if len(s.strip()) >= 8}
    for secret in secrets:
        assert secret not in written
    paths = {
        m.group(0) for line in fixture.read_text().splitlines() for m in _ABSOLUTE.finditer(line)
    }
    for path in paths:
        assert path not in written
    assert str(project) not in written
    assert not _ABSOLUTE.search(turn_file.read_text())


def test_real_rollout_with_a_call_in_flight_is_recorded_incomplete(
    tmp_path: Path, prompt: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fixture = require_shared(
        REAL_FIXTURES
        / "codex-rollout"
        / "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"
    )
    project = tmp_path / "proj"
    project.mkdir()
    args = ["ledger", "record", "--project", str(project), "--turn-id", "inflight-1"]
    assert main([*args, "--prompt-file", str(prompt), "--input", str(fixture), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["completed"] is False
    items = [
        json.loads(line)
        for line in _turn_file(project, "inflight-1").read_text().splitlines()
        if '"direct.codex.item"' in line
    ]
    assert [(i["itemType"], i["status"]) for i in items] == [("commandExecution", "incomplete")]


def test_real_exec_stream_records_the_command(
    tmp_path: Path, prompt: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fixture = require_shared(REAL_FIXTURES / "codex-exec" / "stream-output-4.jsonl")
    project = tmp_path / "proj"
    project.mkdir()
    args = ["ledger", "record", "--project", str(project), "--turn-id", "exec-4-run"]
    assert main([*args, "--prompt-file", str(prompt), "--input", str(fixture)]) == 0
    capsys.readouterr()
    items = [
        json.loads(line)
        for line in _turn_file(project, "exec-4-run").read_text().splitlines()
        if '"direct.codex.item"' in line
    ]
    assert items == [
        {
            "recordType": "direct.codex.item",
            "clientTurnId": "exec-4-run",
            "seq": 1,
            "itemId": "item_1",
            "itemType": "commandExecution",
            "status": "completed",
            "recordedAtMs": items[0]["recordedAtMs"],
            "source": "exec",
            "sourceType": "command_execution",
            "command": "cat test.js",  # the script of Codex's shell wrapper
            "exitCode": 0,
            # read evidence inferred from the command (the file is not in this project)
            "inferredReads": [{"path": "test.js", "hashSkipped": "missing"}],
        }
    ]


def _ledger_items(project: Path, turn_id: str) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for line in _turn_file(project, turn_id).read_text().splitlines()
        if '"direct.codex.item"' in line
    ]


def test_a_rollout_repaired_by_agc_resume_synthesize_records_the_call_as_interrupted(
    tmp_path: Path, prompt: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The interrupted call gets agc's synthesized answer: the ledger must say the call
    # was interrupted and answered by agc, never that the command completed.
    call = {
        "type": "function_call",
        "name": "shell",
        "arguments": json.dumps({"command": ["bash", "-lc", "npm test"]}),
        "call_id": "call_1",
    }
    lines = [
        {"timestamp": "t", "type": "session_meta", "payload": {"id": "s1", "cwd": "/w"}},
        {"timestamp": "t", "type": "response_item", "payload": call},
    ]
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text("".join(json.dumps(line) + "\n" for line in lines))
    repaired = tmp_path / "repaired.jsonl"
    resume = ["resume", str(rollout), "--strategy", "synthesize", "--out", str(repaired)]
    assert main(resume) == 0
    project = tmp_path / "proj"
    project.mkdir()
    for name, source in (("before-1", rollout), ("after-1", repaired)):
        args = ["ledger", "record", "--project", str(project), "--turn-id", name]
        assert main([*args, "--prompt-file", str(prompt), "--input", str(source)]) == 0
    capsys.readouterr()
    (before,) = _ledger_items(project, "before-1")
    (after,) = _ledger_items(project, "after-1")
    assert (before["status"], before["command"]) == ("incomplete", "npm test")
    assert (after["status"], after["command"], after["outputSynthesized"]) == (
        "interrupted",
        "npm test",
        True,
    )


def test_the_real_interrupted_call_is_never_a_completed_command_before_or_after_repair(
    tmp_path: Path, prompt: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Its arguments were redacted by the fixture's publisher (not JSON), so agc resume
    # strips the call even with --strategy synthesize: then there is nothing to record.
    fixture = require_shared(
        REAL_FIXTURES
        / "codex-rollout"
        / "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"
    )
    repaired = tmp_path / "repaired.jsonl"
    assert main(["resume", str(fixture), "--strategy", "synthesize", "--out", str(repaired)]) == 0
    project = tmp_path / "proj"
    project.mkdir()
    for name, source in (("real-before", fixture), ("real-after", repaired)):
        args = ["ledger", "record", "--project", str(project), "--turn-id", name]
        assert main([*args, "--prompt-file", str(prompt), "--input", str(source)]) == 0
    capsys.readouterr()
    before = [(i["itemType"], i["status"]) for i in _ledger_items(project, "real-before")]
    assert before == [("commandExecution", "incomplete")]
    assert _ledger_items(project, "real-after") == []


def test_a_real_killed_codex_turn_repaired_by_agc_resume_is_interrupted_in_the_ledger(
    tmp_path: Path, prompt: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Recorded with the real Codex CLI (tests/ledger/fixtures/README.md): the command
    # running when Codex was killed is incomplete; after agc resume --strategy
    # synthesize it is interrupted and answered by agc, never completed.
    rollout = Path(__file__).parents[1] / "ledger/fixtures/codex-0.171.0/killed/rollout.jsonl"
    repaired = tmp_path / "repaired.jsonl"
    assert main(["resume", str(rollout), "--strategy", "synthesize", "--out", str(repaired)]) == 0
    project = tmp_path / "proj"
    project.mkdir()
    for name, source in (("killed-before", rollout), ("killed-after", repaired)):
        args = ["ledger", "record", "--project", str(project), "--turn-id", name]
        assert main([*args, "--prompt-file", str(prompt), "--input", str(source)]) == 0
    capsys.readouterr()
    states = {
        name: [
            (i["status"], i["command"], i.get("outputSynthesized"))
            for i in _ledger_items(project, name)
        ]
        for name in ("killed-before", "killed-after")
    }
    assert states == {
        "killed-before": [("completed", "cat README.md", None), ("incomplete", "sleep 40", None)],
        "killed-after": [("completed", "cat README.md", None), ("interrupted", "sleep 40", True)],
    }


def test_agc_verify_checks_a_turn_file_path(
    project: Path, prompt: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _stdin(monkeypatch, [command("c1", "ls")])
    assert main(_record(project, prompt)) == 0
    path = _turn_file(project)
    capsys.readouterr()
    assert verify_main(["--turn-file", str(path)]) == 0
    out = capsys.readouterr().out
    assert ": ok;" in out
    # The full digest, as agc-verify prints a run's (compare it with b3sum or a pin).
    digest = blake3.blake3(path.read_bytes()).hexdigest()
    assert out.rstrip("\n").endswith(f"bytes, blake3 {digest}, unsigned"), out
    assert main(["ledger", "check", str(path)]) == 0
    assert capsys.readouterr().out.rstrip("\n").endswith(f"bytes, blake3 {digest}, unsigned")
    path.write_bytes(path.read_bytes() + b"{}\n")
    assert verify_main(["--turn-file", str(path), "--json"]) == ExitCode.FINDINGS
    assert "extended" in capsys.readouterr().out


def test_agc_verify_checks_a_turn_file_as_ledger_check_does_for_a_preset_policy(
    project: Path, prompt: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Recorded with the generic preset: a file change is its first design action, which
    # the default preset would not say. Both commands recompute with the attempt's preset.
    change: dict[str, Any] = {"type": "fileChange", "id": "f1", "status": "completed"}
    change["changes"] = [{"path": "src/a.py", "kind": {"type": "add"}}]
    _stdin(monkeypatch, [{"method": "item/completed", "params": {"item": change}}])
    assert main(_record(project, prompt, "--policy", "generic")) == 0
    path = _turn_file(project)
    capsys.readouterr()
    assert main(["ledger", "check", str(path), "--json"]) == ExitCode.OK
    checked = json.loads(capsys.readouterr().out)
    assert verify_main(["--turn-file", str(path), "--json"]) == ExitCode.OK
    assert json.loads(capsys.readouterr().out) == checked
    assert checked["findings"] == []


@pytest.mark.parametrize("kind", ["transcripts", "tool-events"])
def test_a_runs_sealed_file_given_as_a_turn_file_names_the_run_to_verify(
    store: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    # A newcomer points the ledger commands at agc evidence: it is not a turn file, and
    # the run it belongs to is named with the command that checks it.
    write_run(store)
    artifact = str(store / "audit" / kind / "r1.jsonl")
    for argv in (["ledger", "check"], ["ledger", "show"], ["--turn-file"]):
        run = verify_main if argv == ["--turn-file"] else main
        assert run([*argv, artifact]) == ExitCode.USAGE, argv
        captured = capsys.readouterr()
        assert captured.out == ""
        assert "of agc run 'r1', not a turn file" in captured.err
        assert f"agc-verify r1 --store {store}" in captured.err
        assert "turn-id-mismatch" not in captured.err


def test_a_turn_file_in_a_folder_named_like_a_store_is_still_checked(
    tmp_path: Path, project: Path, prompt: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only a file with its run's manifest beside it is taken for a run's artifact.
    _stdin(monkeypatch, [command("c1", "ls")])
    assert main(_record(project, prompt)) == 0
    copy = tmp_path / "x" / "audit" / "transcripts" / "Abc123-def.jsonl"
    copy.parent.mkdir(parents=True)
    source = _turn_file(project)
    copy.write_bytes(source.read_bytes())
    copy.with_name(copy.name + ".b3").write_bytes(
        source.with_name(source.name + ".b3").read_bytes()
    )
    assert main(["ledger", "check", str(copy)]) == 0


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n",
        b"  \n\t\n",
        b"\r\n" * 3,
        b"\n" * (1024 * 1024 + 10),  # more blank lines than a MiB
        b" " * (2 << 20) + b"\n",  # one blank line over the read limit
        b"\n" * 5 + b"\t " * (1 << 20) + b"\r\n",
    ],
    ids=["none", "newline", "blanks", "crlf", "a-mib-of-newlines", "long-blank", "mixed"],
)
@pytest.mark.parametrize("via", ["file", "stdin"])
def test_an_empty_input_records_nothing_and_exits_2(
    project: Path,
    prompt: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    data: bytes,
    via: str,
) -> None:
    events = tmp_path / "events.jsonl"
    events.write_bytes(data)
    extra = ["--input", str(events)] if via == "file" else []
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert main(_record(project, prompt, *extra)) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "is empty" in err
    assert not (project / ".agent").exists()


def test_a_blank_first_line_before_the_events_is_still_recorded(
    project: Path, prompt: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    event = json.dumps(
        {"type": "item.completed", "item": {"id": "item_0", "type": "command_execution",
                                            "command": "ls", "status": "completed"}}
    )  # fmt: skip
    events = tmp_path / "events.jsonl"
    events.write_bytes(
        b"\n  \n" + event.encode() + b"\n" + event.replace("item_0", "item_1").encode()
    )
    assert main(_record(project, prompt, "--input", str(events), "--json")) == 0
    stats = json.loads(capsys.readouterr().out)["input"]
    assert (stats["lines"], stats["invalidLines"], stats["items"]) == (4, 2, 2)


def test_show_prints_what_was_offered_rejected_and_omitted(
    project: Path, prompt: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    offered = [{"name": "gdd.md", "localPath": "assets/uploads/upload-1-fast_gdd.md"},
               {"name": "keys", "localPath": "../../home/u/.ssh/id_rsa"},
               {"name": "env", "localPath": ".env"}]  # fmt: skip
    offered += [{"name": f"f{i}.md", "localPath": f"f{i}.md"} for i in range(7)]
    attachments = tmp_path / "attachments.json"
    attachments.write_text(json.dumps(offered))
    events = tmp_path / "events.jsonl"
    events.write_text('{"type":"turn.completed"}\n')
    args = _record(project, prompt, "--input", str(events), "--attachments", str(attachments))
    assert main(args) == 0
    capsys.readouterr()
    assert main(["ledger", "show", str(_turn_file(project))]) == 0
    out = capsys.readouterr().out
    assert "attachment details sent: yes" in out
    assert "sidecarPresent" not in out
    assert "2 rejected, 2 omitted" in out
    assert "rejected: keys: outside" in out
    assert "rejected: env: sensitive" in out
    assert main(["ledger", "show", str(_turn_file(project)), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["sidecarPresent"] is True
    assert shown["attachmentsOmitted"] == 2
    assert shown["rejectedAttachments"] == [
        {"name": "keys", "reason": "outside"},
        {"name": "env", "reason": "sensitive"},
    ]


def test_a_line_over_the_read_limit_is_reported_and_recorded_cut(
    project: Path, prompt: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first, last = json.dumps(command("c1", "ls")), json.dumps(command("c2", "pwd"))
    long_line = json.dumps(command("c3", "echo " + "a" * (2 << 20)))
    data = f"{first}\n{long_line}\n{last}\n".encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert main(_record(project, prompt, "--json")) == 0
    out, err = capsys.readouterr()
    stats = json.loads(out)["input"]
    assert (stats["lines"], stats["items"], stats["overlongLines"]) == (3, 3, [2])
    assert "warning: input stdin: 1 line(s) longer than 1048576 bytes (line 2)" in err
    assert "each string cut to its first 65536 bytes" in err
    commands = [
        json.loads(line).get("command")
        for line in _turn_file(project).read_text().splitlines()
        if json.loads(line)["recordType"] == "direct.codex.item"
    ]
    assert commands == ["ls", ("echo " + "a" * (2 << 20))[:240], "pwd"]


def test_an_attachment_with_no_member_the_ledger_records_is_refused(
    project: Path, prompt: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`[{"path": "README.md"}]` would be recorded as an entry with nothing in it."""
    attachments = tmp_path / "attachments.json"
    attachments.write_text(json.dumps([{"name": "a.md", "localPath": "a.md"}, {"path": "b"}]))
    events = tmp_path / "events.jsonl"
    events.write_text('{"type":"turn.completed"}\n')
    args = _record(project, prompt, "--input", str(events), "--attachments", str(attachments))
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "entry 1 has none of the members" in err
    assert "(it has path)" in err
    assert not list((project / ".agent").rglob("*.json"))  # nothing recorded


def test_a_bad_turn_id_is_named_by_its_option(
    project: Path, prompt: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text('{"type":"turn.completed"}\n')
    args = _record(project, prompt, "--input", str(events))
    at = args.index("--turn-id")
    args[at + 1] = "abc"
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--turn-id is 3 characters long" in err
    assert "clientTurnId" not in err
