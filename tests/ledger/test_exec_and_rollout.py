"""A turn read from a ``codex exec --json`` stream and from its rollout file gives the
same ledger items; items cut off by a kill are incomplete; outputs agc synthesized for
an interrupted call are never a completed command (docs/ledger.md, "Inputs")."""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from agc.ledger import check_turn_file, show_turn_file
from agc.ledger import record_turn as record_stream
from agc.ledger._events.item import shell_script
from tests.conftest import REAL_FIXTURES
from tests.ledger.helpers import command, items, record_turn, turn_end

REACHES_INSIDE = {
    "agc.ledger._events.item": "the shell-script extraction of command items",
}

SYNTHETIC = (
    "agc resume: this tool call was interrupted before its result was recorded. It may "
    "or may not have executed: check its effects before running it again "
    "(idempotency key idem-1)."
)
# Fields that differ between the two inputs by design (see the docs' table): the
# input's own ids and words, and what only the exec stream reports.
SOURCE_FIELDS = frozenset(
    {
        "clientTurnId",
        "recordedAtMs",
        "itemId",
        "source",
        "sourceType",
        "exitCode",
        "durationMs",
        "errorKind",
    }
)


def _content(project: Path, events: list[dict[str, Any]], turn_id: str) -> list[dict[str, Any]]:
    outcome = record_turn(project, events, turn_id=turn_id)
    return [
        {k: v for k, v in i.items() if k not in SOURCE_FIELDS} for i in items(outcome.turn_file)
    ]


def _ri(payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2026-02-23T11:41:38.901Z", "type": "response_item", "payload": payload}


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return _ri(
        {
            "type": "function_call",
            "name": name,
            "arguments": json.dumps(arguments),
            "call_id": call_id,
        }
    )


def _output(
    call_id: str, text: object = "Process exited with code 0\nOutput:\nok"
) -> dict[str, Any]:
    return _ri({"type": "function_call_output", "call_id": call_id, "output": text})


def _exec(kind: str, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "item": item}


def _turn(project: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One turn as Codex writes it twice: ``codex exec --json`` events and rollout
    lines (codex-rs ``exec_events.rs`` and ``protocol::models::ResponseItem``). The
    exec stream reports the argv Codex ran (the user's shell around the script); the
    rollout holds the model's call."""
    root = str(project)
    brief = "Top-down shooter from assets/uploads/gdd.md"
    exec_events: list[dict[str, Any]] = [
        {"type": "thread.started", "thread_id": "019a0000-0000-7000-8000-000000000001"},
        {"type": "turn.started"},
        _exec(
            "item.started",
            {
                "id": "item_0",
                "type": "command_execution",
                "command": "bash -lc 'cat README.md'",
                "aggregated_output": "",
                "status": "in_progress",
            },
        ),
        _exec(
            "item.completed",
            {
                "id": "item_0",
                "type": "command_execution",
                "command": "bash -lc 'cat README.md'",
                "aggregated_output": "README",
                "exit_code": 0,
                "status": "completed",
            },
        ),
        _exec(
            "item.completed",
            {
                "id": "item_1",
                "type": "command_execution",
                "command": f"/bin/zsh -lc 'ls -la {root}/assets'",
                "aggregated_output": "x",
                "exit_code": 0,
                "status": "completed",
            },
        ),
        _exec(
            "item.completed",
            {
                "id": "item_2",
                "type": "file_change",
                "changes": [{"path": f"{root}/game/main.js", "kind": "add"}],
                "status": "completed",
            },
        ),
        _exec(
            "item.completed",
            {
                "id": "item_3",
                "type": "mcp_tool_call",
                "server": "agc_tools",
                "tool": "taonier_prepare_game_art",
                "arguments": {"mode": "full", "brief": brief},
                "result": {"content": []},
                "status": "completed",
            },
        ),
        _exec(
            "item.completed",
            {"id": "item_4", "type": "web_search", "query": "bullet hell patterns"},
        ),
        _exec("item.completed", {"id": "item_5", "type": "agent_message", "text": "Working on it"}),
        # the agent was killed while this command ran: it started, never completed
        _exec(
            "item.started",
            {
                "id": "item_6",
                "type": "command_execution",
                "command": "bash -lc 'npm test'",
                "aggregated_output": "",
                "status": "in_progress",
            },
        ),
    ]
    rollout: list[dict[str, Any]] = [
        {
            "timestamp": "t",
            "type": "session_meta",
            "payload": {"id": "019a0000-0000-7000-8000-000000000001", "cwd": root},
        },
        {"timestamp": "t", "type": "turn_context", "payload": {"cwd": root}},
        _call("call_a", "shell", {"command": ["bash", "-lc", "cat README.md"], "workdir": root}),
        _output("call_a"),
        _call("call_b", "exec_command", {"cmd": f"ls -la {root}/assets", "workdir": root}),
        _output("call_b"),
        _ri(
            {
                "type": "custom_tool_call",
                "name": "apply_patch",
                "call_id": "call_c",
                "input": "*** Begin Patch\n*** Add File: game/main.js\n+x\n*** End Patch",
            }
        ),
        _ri({"type": "custom_tool_call_output", "call_id": "call_c", "output": "Done"}),
        _call(
            "call_d", "mcp__agc_tools__taonier_prepare_game_art", {"mode": "full", "brief": brief}
        ),
        _output("call_d", "{}"),
        _ri(
            {
                "type": "web_search_call",
                "id": "ws_1",
                "status": "completed",
                "action": {"type": "search", "query": "bullet hell patterns"},
            }
        ),
        _ri(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Working on it"}],
            }
        ),
        _call("call_e", "shell", {"command": ["bash", "-lc", "npm test"]}),
    ]
    return exec_events, rollout


def test_the_same_turn_from_exec_and_from_rollout_gives_the_same_items(project: Path) -> None:
    exec_events, rollout = _turn(project)
    from_exec = _content(project, exec_events, "from-exec-1")
    from_rollout = _content(project, rollout, "from-rollout-1")
    assert from_exec == from_rollout
    assert [(i["itemType"], i["status"], i.get("command")) for i in from_exec] == [
        ("commandExecution", "completed", "cat README.md"),
        ("commandExecution", "completed", "ls -la assets"),
        ("fileChange", "completed", None),
        ("mcpToolCall", "completed", None),
        ("webSearch", "completed", None),
        ("commandExecution", "incomplete", "npm test"),
    ]


def test_what_differs_between_the_two_inputs_is_what_the_docs_say(project: Path) -> None:
    exec_events, rollout = _turn(project)
    exec_items = items(record_turn(project, exec_events, turn_id="from-exec-2").turn_file)
    rollout_items = items(record_turn(project, rollout, turn_id="from-rollout-2").turn_file)
    assert [i["itemId"] for i in exec_items] == [f"item_{n}" for n in (0, 1, 2, 3, 4, 6)]
    assert [i["itemId"] for i in rollout_items] == [
        "call_a",
        "call_b",
        "call_c",
        "call_d",
        "ws_1",
        "call_e",
    ]
    # the exit code is in the exec event; a rollout has it only inside the output
    # text, which the ledger never reads
    assert [i.get("exitCode") for i in exec_items] == [0, 0, None, None, None, None]
    assert all("exitCode" not in i for i in rollout_items)


def test_an_exec_item_that_started_and_never_completed_is_incomplete(project: Path) -> None:
    events = [
        _exec(
            "item.started",
            {
                "id": "item_1",
                "type": "command_execution",
                "command": "bash -lc 'sleep 600'",
                "status": "in_progress",
            },
        ),
        _exec(
            "item.started",
            {
                "id": "item_2",
                "type": "mcp_tool_call",
                "server": "s",
                "tool": "t",
                "arguments": {},
                "status": "in_progress",
            },
        ),
        _exec(
            "item.started",
            {
                "id": "item_3",
                "type": "command_execution",
                "command": "bash -lc ls",
                "status": "in_progress",
            },
        ),
        _exec(
            "item.completed",
            {
                "id": "item_3",
                "type": "command_execution",
                "command": "bash -lc ls",
                "exit_code": 0,
                "status": "completed",
            },
        ),
    ]
    recorded = items(record_turn(project, events).turn_file)
    assert [(i["itemId"], i["status"], i.get("command")) for i in recorded] == [
        ("item_3", "completed", "ls"),
        ("item_1", "incomplete", "sleep 600"),
        ("item_2", "incomplete", None),
    ]
    assert "exitCode" not in recorded[1]


def test_an_app_server_item_that_started_and_never_completed_is_incomplete(project: Path) -> None:
    started = {
        "method": "item/started",
        "params": {
            "item": {
                "type": "commandExecution",
                "id": "c1",
                "command": "/bin/zsh -lc 'make test'",
                "status": "inProgress",
            }
        },
    }
    recorded = items(record_turn(project, [started]).turn_file)
    assert [(i["status"], i["command"]) for i in recorded] == [("incomplete", "make test")]


@pytest.mark.parametrize(
    "events",
    [
        # a rollout that agc resume --strategy synthesize repaired
        [
            _call("call_a", "shell", {"command": ["bash", "-lc", "npm test"]}),
            _output("call_a", SYNTHETIC),
        ],
        # the same, the output as content parts (newer Codex rollouts)
        [
            _call("call_a", "shell", {"command": ["bash", "-lc", "npm test"]}),
            _output("call_a", [{"type": "input_text", "text": SYNTHETIC}]),
        ],
        # an exec / app-server item whose output is agc's
        [
            _exec(
                "item.completed",
                {
                    "id": "call_a",
                    "type": "command_execution",
                    "command": "bash -lc 'npm test'",
                    "aggregated_output": SYNTHETIC,
                    "exit_code": 1,
                    "status": "failed",
                },
            )
        ],
        [
            {
                "method": "item/completed",
                "params": {
                    "item": {
                        "type": "commandExecution",
                        "id": "call_a",
                        "command": "npm test",
                        "aggregatedOutput": SYNTHETIC,
                        "exitCode": 1,
                        "status": "failed",
                    }
                },
            }
        ],
    ],
    ids=["rollout", "rollout-content-parts", "exec", "app-server"],
)
def test_an_output_agc_synthesized_is_interrupted_never_completed(
    project: Path, events: list[dict[str, Any]]
) -> None:
    (item,) = items(record_turn(project, events).turn_file)
    assert item["status"] == "interrupted"
    assert item["outputSynthesized"] is True
    assert item["command"] == "npm test"
    assert "exitCode" not in item
    assert "agc resume" not in json.dumps(item)


def test_a_real_output_that_mentions_agc_resume_later_is_the_tools_own(project: Path) -> None:
    events = [
        _call("call_a", "shell", {"command": ["bash", "-lc", "grep -r resume docs"]}),
        _output("call_a", "docs/x.md: " + SYNTHETIC),
    ]
    (item,) = items(record_turn(project, events).turn_file)
    assert item["status"] == "completed"
    assert "outputSynthesized" not in item


@pytest.mark.parametrize(
    ("command", "script"),
    [
        ("bash -lc 'cat test.js'", "cat test.js"),
        ("/bin/zsh -lc 'ls -la'", "ls -la"),
        ("sh -c 'echo \"a b\"'", 'echo "a b"'),
        ("powershell.exe -NoProfile -Command Get-ChildItem", "Get-ChildItem"),
        ("bash -lc ls", "ls"),
        ("bash script.sh", "bash script.sh"),  # not a wrapper: a script file
        ("bash -lc 'a' extra", "bash -lc 'a' extra"),
        ("python -c 'print(1)'", "python -c 'print(1)'"),
        ("bash -lc 'unterminated", "bash -lc 'unterminated"),
    ],
)
def test_shell_script_unwraps_only_codex_shell_wrappers(command: str, script: str) -> None:
    assert shell_script(command) == script


# -- turns recorded with the real Codex CLI (tests/ledger/fixtures/README.md) -------------

RECORDED = Path(__file__).parent / "fixtures" / "codex-0.171.0"


def _recorded(project: Path, scenario: str, kind: str) -> list[dict[str, Any]]:
    folder = RECORDED / scenario
    cwd = json.loads((folder / "meta.json").read_text())["cwd"]
    outcome = record_stream(
        (folder / f"{kind}.jsonl").read_bytes().splitlines(),
        project=project,
        client_turn_id=f"{scenario}-{kind}",
        prompt="go",
        agent_roots=[cwd],
    )
    assert outcome.audit_write_failed is False
    assert check_turn_file(outcome.turn_file).ok
    written = outcome.turn_file.read_text()
    assert cwd not in written
    return [
        {k: v for k, v in i.items() if k not in SOURCE_FIELDS} for i in items(outcome.turn_file)
    ]


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ("clean", [("completed", "cat README.md"), ("completed", "ls")]),
        ("killed", [("completed", "cat README.md"), ("incomplete", "sleep 40")]),
    ],
)
def test_a_real_codex_turn_reads_the_same_from_exec_and_from_rollout(
    project: Path, scenario: str, expected: list[tuple[str, str]]
) -> None:
    from_exec = _recorded(project, scenario, "exec")
    from_rollout = _recorded(project, scenario, "rollout")
    assert from_exec == from_rollout
    assert [(i["status"], i["command"]) for i in from_exec] == expected


# -- the real transcripts -----------------------------------------------------------------


def _thread_id(path: Path) -> str | None:
    for line in path.read_text().splitlines():
        event = json.loads(line)
        if event.get("type") == "thread.started":
            return str(event.get("thread_id"))
    return None


def _session_id(path: Path) -> str | None:
    first = json.loads(path.read_text().splitlines()[0])
    payload = first.get("payload") if first.get("type") == "session_meta" else None
    return str(payload.get("id")) if isinstance(payload, dict) else None


def _real_pairs() -> list[tuple[Path, Path]]:
    exec_dir, rollout_dir = REAL_FIXTURES / "codex-exec", REAL_FIXTURES / "codex-rollout"
    if not exec_dir.is_dir() or not rollout_dir.is_dir():
        return []
    rollouts = {_session_id(p): p for p in sorted(rollout_dir.glob("*.jsonl"))}
    return [
        (stream, rollouts[thread])
        for stream in sorted(exec_dir.glob("*.jsonl"))
        if (thread := _thread_id(stream)) in rollouts
    ]


def test_real_exec_streams_and_their_rollouts_give_the_same_items(project: Path) -> None:
    if not (REAL_FIXTURES / "codex-exec").is_dir():
        pytest.skip(f"{REAL_FIXTURES} is absent: ../shared is not beside this checkout")
    pairs = _real_pairs()
    if not pairs:
        pytest.skip(
            "no rollout in fixtures/real/codex-rollout records the thread of a stream in "
            "fixtures/real/codex-exec (they come from different sessions)"
        )
    for number, (stream, rollout) in enumerate(pairs):
        from_exec = _content(
            project, [json.loads(x) for x in stream.read_text().splitlines()], f"real-exec-{number}"
        )
        from_rollout = _content(
            project,
            [json.loads(x) for x in rollout.read_text().splitlines()],
            f"real-rollout-{number}",
        )
        assert from_exec == from_rollout, (stream.name, rollout.name)


def _first_release(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same session as the first Codex rollouts wrote it: a session line, then each
    response item bare, with state lines between; other lines had no place there."""
    bare: list[dict[str, Any]] = [{"id": "sess", "timestamp": "2025-05-01", "instructions": None}]
    for line in lines:
        if line.get("type") == "response_item":
            bare.append(line["payload"])
            bare.append({"record_type": "state"})
    return bare


def test_a_first_release_rollout_with_bare_items_gives_the_items_of_todays_format(
    project: Path,
) -> None:
    _, rollout = _turn(project)
    today = _content(project, rollout, "wrapped-1")
    assert today, "the scenario has items"
    assert _content(project, _first_release(rollout), "bare-1") == today


@pytest.mark.parametrize(
    "rollout",
    sorted((REAL_FIXTURES / "codex-rollout").glob("*.jsonl")) or [None],
    ids=lambda p: p.name[:40] if p else "absent",
)
def test_real_rollouts_rewritten_bare_give_the_same_items(
    project: Path, rollout: Path | None
) -> None:
    if rollout is None:
        pytest.skip(f"{REAL_FIXTURES} is absent: ../shared is not beside this checkout")
    lines = [json.loads(x) for x in rollout.read_text().splitlines()]
    today = _content(project, lines, "real-wrapped-1")
    assert _content(project, _first_release(lines), "real-bare-1") == today


# -- reads inferred from commands (docs/ledger.md, "Inferred reads") ---------------------


def _recorded_offering(
    project: Path, scenario: str, kind: str, offered: list[str]
) -> tuple[Path, list[dict[str, Any]]]:
    folder = RECORDED / scenario
    cwd = json.loads((folder / "meta.json").read_text())["cwd"]
    for path in offered:
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        (project / path).write_text(f"# {path}\n")
    outcome = record_stream(
        (folder / f"{kind}.jsonl").read_bytes().splitlines(),
        project=project,
        client_turn_id=f"{scenario}-{kind}",
        prompt="go",
        attachments=[{"name": p.rsplit("/", 1)[-1], "localPath": p} for p in offered],
        agent_roots=[cwd],
    )
    assert check_turn_file(outcome.turn_file).ok
    return outcome.turn_file, items(outcome.turn_file)


@pytest.mark.parametrize("kind", ["exec", "rollout"])
@pytest.mark.parametrize("scenario", ["clean", "killed"])
def test_the_real_agents_cat_of_the_offered_readme_is_an_inferred_read(
    project: Path, scenario: str, kind: str
) -> None:
    turn_file, recorded = _recorded_offering(project, scenario, kind, ["README.md"])
    digest = hashlib.sha256(b"# README.md\n").hexdigest()
    assert recorded[0]["command"] == "cat README.md"
    assert recorded[0]["inferredReads"] == [
        {"path": "README.md", "contentSha256": digest, "hashSkipped": None}
    ]
    assert "actions" not in recorded[0]  # no read action is claimed: it is inferred
    assert all("inferredReads" not in i for i in recorded[1:])  # ls, sleep 40
    summary = show_turn_file(turn_file)
    assert summary.row == "read-no-design"  # was "not-opened"
    (offered,) = summary.offered
    assert offered.read_seqs == offered.inferred_read_seqs == (1,)
    assert offered.content_sha256_match is True
    assert turn_end(turn_file)["offeredRead"] == [
        {"localPath": "README.md", "read": True, "readInferred": True,
         "contentSha256Match": True}
    ]  # fmt: skip


@pytest.mark.parametrize("kind", ["exec", "rollout"])
def test_an_offered_file_no_command_read_is_not_seen_opened_in_an_input_without_reads(
    project: Path, kind: str
) -> None:
    turn_file, _ = _recorded_offering(project, "clean", kind, ["docs/gdd.md"])
    summary = show_turn_file(turn_file)
    assert summary.row == "not-seen-opened"
    assert summary.reads_visible is False
    assert "invisible in this input" in summary.row_label


def test_an_app_server_command_gets_no_inferred_read_and_a_flat_not_opened(
    project: Path,
) -> None:
    # the app-server reports its own read actions: an empty list is its word
    outcome = record_turn(
        project,
        [command("c1", "/bin/bash -lc 'cat assets/uploads/upload-1-fast_gdd.md'")],
        attachments=[{"name": "g.md", "localPath": "assets/uploads/upload-1-fast_gdd.md"}],
    )
    (item,) = items(outcome.turn_file)
    assert "inferredReads" not in item
    assert show_turn_file(outcome.turn_file).row == "not-opened"


def test_inferred_reads_are_cleaned_hashed_and_folders_left_out(project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "a.py").write_text("x = 1\n")
    script = (
        f"cat {project}/src/a.py; rg -n x src; cat ../other/x.md; cat .env; sed -n 1,5p missing.md"
    )
    outcome = record_turn(
        project,
        [_exec("item.completed", {"id": "item_0", "type": "command_execution",
                                  "command": f"/bin/bash -lc {shlex.quote(script)}",
                                  "aggregated_output": "", "exit_code": 0,
                                  "status": "completed"})],
    )  # fmt: skip
    (item,) = items(outcome.turn_file)
    assert item["commandRedacted"] is True  # ../other climbs out: the command is dropped
    assert item["inferredReads"] == [
        {"path": "src/a.py", "contentSha256": hashlib.sha256(b"x = 1\n").hexdigest(),
         "hashSkipped": None},
        {"pathRejected": True, "pathRejectedReason": "outside"},
        {"pathRejected": True, "pathRejectedReason": "sensitive"},
        {"path": "missing.md", "hashSkipped": "missing"},
    ]  # fmt: skip
    assert check_turn_file(outcome.turn_file).ok
