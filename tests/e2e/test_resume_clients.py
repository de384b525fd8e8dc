"""Resume that the real clients accept: Codex CLI and Claude Code, killed mid tool call.

For each client and crash shape (see :mod:`tests.e2e.scenarios`):

1. ``agc import`` the session file, ``agc-verify`` it (complete), ``agc export`` gives it
   back byte for byte, and ``agc resume RUN_ID --check`` names exactly the killed call;
2. ``agc resume RUN_ID --strategy strip|synthesize --out FILE``, the file put where the
   client keeps its session, and the client's own resume command run
   (``codex exec resume <id> …``, ``claude --resume <id> -p …``). Pass = the client exits
   0, the request it sends obeys the provider's pairing rule, keeps the completed call's
   result, carries agc's repair, and the turn finishes;
3. what each client's own resume does with the unrepaired file (recorded, and asserted
   as observed with the pinned versions).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from tests.e2e.clients import ClientName
from tests.e2e.model_server import Answer, ModelServer, Script
from tests.e2e.scenarios import (
    FIRST_OUTPUT,
    RESUMED_ANSWER,
    SHAPES,
    Driver,
    Session,
    Shape,
    calls_and_results,
    crash_shape,
    new_driver,
    pairing_error,
)

CLIENTS: Final[tuple[ClientName, ...]] = ("codex", "claude")
SYNTHETIC: Final = "agc resume: this tool call was interrupted before its result was recorded"
BIN: Final = Path(sys.executable).parent

Rows = list[tuple[str, str, str, str]]


@dataclass
class World:
    """One client's runs, shared by the tests of that client."""

    driver: Driver
    clean: Session
    killed: Session
    store: Path
    root: Path

    def shape(self, shape: Shape) -> bytes:
        return crash_shape(self.killed, self.clean, shape, self.driver.long_id)


def _binary(request: pytest.FixtureRequest, client: ClientName) -> Path:
    path: Path = request.getfixturevalue("codex_bin" if client == "codex" else "claude_bin")
    return path


@pytest.fixture(scope="module", params=CLIENTS)
def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    client: ClientName = request.param
    binary = _binary(request, client)
    root = tmp_path_factory.mktemp(f"e2e-{client}")
    with ModelServer(Script([Answer("unused")]), log=root / "requests.jsonl") as server:
        driver = new_driver(client, binary, root, server)
        clean = driver.run_clean()
        killed = driver.run_killed()
        store = root / "store"
        store.mkdir()
        yield World(driver, clean, killed, store, root)
        assert not server.outside_attempts, (
            f"{client} tried to reach the outside: {server.outside_attempts}"
        )


def agc(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run the installed ``agc`` (or ``agc-verify``) as a user would."""
    command = [str(BIN / args[0]), *args[1:]]
    return subprocess.run(command, input=stdin, capture_output=True, check=False, timeout=120)


def _json(done: subprocess.CompletedProcess[bytes]) -> Any:
    try:
        return json.loads(done.stdout)
    except ValueError as exc:  # pragma: no cover - shown on failure
        raise AssertionError(f"not JSON: {done.stdout!r}\n{done.stderr.decode()}") from exc


def _run_id(world: World, shape: Shape) -> str:
    return f"{world.driver.client}-{shape}"


def _imported(world: World, shape: Shape) -> str:
    """Import the shape once into the world's store; return its run id."""
    run_id = _run_id(world, shape)
    source = world.root / f"{run_id}.jsonl"
    if not source.exists():
        source.write_bytes(world.shape(shape))
        done = agc("agc", "import", str(source), "--run-id", run_id, "--store", str(world.store))
        assert done.returncode == 0, done.stderr.decode()
    return run_id


def _expected_findings(world: World, shape: Shape) -> list[tuple[str, str]]:
    long_id = world.driver.long_id
    return {
        "clean": [],
        "killed": [("tool-call-unanswered", long_id)],
        "ends-after-call": [("tool-call-unanswered", long_id)],
        "torn": [("torn-tail", long_id)],
    }[shape]


# --- 1. record / import, verify, export, check -------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
def test_import_verify_and_check_name_the_killed_call(
    world: World, shape: Shape, e2e_results: Rows
) -> None:
    run_id = _imported(world, shape)
    verified = agc("agc-verify", run_id, "--store", str(world.store), "--json")
    assert verified.returncode == 0, verified.stdout.decode()
    assert _json(verified)["complete"] is True

    exported = agc("agc", "export", run_id, "--store", str(world.store))
    assert exported.returncode == 0, exported.stderr.decode()
    assert exported.stdout == world.shape(shape)  # the client's own file, byte for byte

    checked = agc("agc", "resume", run_id, "--store", str(world.store), "--check", "--json")
    report = _json(checked)
    found = [(f["code"], f["call_id"]) for f in report["findings"]]
    assert found == _expected_findings(world, shape)
    assert checked.returncode == (0 if shape == "clean" else 1)
    assert report["format"] == (
        "codex-rollout" if world.driver.client == "codex" else "claude-code"
    )
    e2e_results.append((world.driver.client, shape, "import+verify+check", "pass"))


@pytest.mark.parametrize("world", ["claude"], indirect=True)
def test_claude_stream_json_recorded_live_names_the_killed_call(
    world: World, e2e_results: Rows
) -> None:
    """``claude -p --output-format stream-json | agc record``: the stream the killed run
    printed is an accepted input too."""
    run_id = "claude-stream-json"
    recorded = agc(
        "agc", "record", "--run-id", run_id, "--store", str(world.store), stdin=world.killed.stream
    )
    assert recorded.returncode == 0, recorded.stderr.decode()
    assert agc("agc-verify", run_id, "--store", str(world.store)).returncode == 0
    checked = agc("agc", "resume", run_id, "--store", str(world.store), "--check", "--json")
    assert checked.returncode == 1
    report = _json(checked)
    assert report["format"] == "claude-code"
    assert [(f["code"], f["call_id"]) for f in report["findings"]] == [
        ("tool-call-unanswered", world.driver.long_id)
    ]
    e2e_results.append(
        ("claude", "killed (stream-json, agc record)", "import+verify+check", "pass")
    )


# --- 2. repair with agc, resume with the client --------------------------------------------


def _expected_actions(world: World, shape: Shape, strategy: str) -> list[tuple[str, str | None]]:
    long_id = world.driver.long_id
    if shape == "clean":
        return []
    if shape == "torn":
        return [("dropped-torn-line", long_id)]
    if strategy == "synthesize":
        return [("synthesized", long_id)]
    if world.driver.client == "claude":  # the call was the line's only block
        return [("stripped", long_id), ("dropped-empty-message", None)]
    return [("stripped", long_id)]


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
@pytest.mark.parametrize("shape", SHAPES)
def test_client_resumes_what_agc_repaired(
    world: World, shape: Shape, strategy: str, e2e_results: Rows
) -> None:
    driver = world.driver
    run_id = _imported(world, shape)
    out = world.root / f"{run_id}.{strategy}.jsonl"
    repaired = agc(
        "agc", "resume", run_id, "--store", str(world.store), "--strategy", strategy,
        "--out", str(out), "--json",
    )  # fmt: skip
    assert repaired.returncode == 0, repaired.stderr.decode()
    report = _json(repaired)["report"]
    assert [(c["action"], c["call_id"]) for c in report["changes"]] == _expected_actions(
        world, shape, strategy
    )
    data = out.read_bytes()
    assert data.endswith(b"\n")
    if shape == "clean":
        assert data == world.clean.data

    resumed = driver.resume(world.killed if shape != "clean" else world.clean, data,
                            "Please continue.")  # fmt: skip
    # the client exits 0 and the turn finishes
    assert resumed.result.returncode == 0, resumed.result.describe()
    assert RESUMED_ANSWER in resumed.result.stdout
    assert RESUMED_ANSWER.encode() in resumed.file_after
    first = resumed.first
    # the request obeys the provider's pairing rule (the server would have said 400)
    assert first.status == 200
    assert pairing_error(first) is None
    calls, results = calls_and_results(first)
    # it keeps every completed call's result
    assert driver.first_id in calls
    assert FIRST_OUTPUT in results[driver.first_id]
    # and it carries agc's repair
    if shape == "clean":
        assert "long-call-done" in results[driver.long_id]
    elif strategy == "synthesize" and shape != "torn":
        assert driver.long_id in calls
        assert SYNTHETIC in results[driver.long_id]
        key = report["changes"][0]["idempotency_key"]
        assert key in results[driver.long_id]
    else:
        assert driver.long_id not in calls
        assert driver.long_id not in results
    e2e_results.append((driver.client, shape, strategy, f"pass ({resumed.result.seconds:.1f}s)"))


# --- 3. the client's own resume of the unrepaired file -------------------------------------


@pytest.mark.parametrize("shape", ["killed", "ends-after-call", "torn"])
def test_native_resume_of_the_unrepaired_file(
    world: World, shape: Shape, e2e_results: Rows
) -> None:
    """What the client does on its own (pinned versions). Killed mid call, Codex answers
    the call "aborted" in the request only and writes nothing for it to the file; Claude
    Code answers it with its own interrupted result and writes that line into the file.
    With a torn last line both skip the line without a word: the lost call is gone from
    the request and nothing tells the user (agc's check names it)."""
    driver = world.driver
    data = world.shape(shape)
    resumed = driver.resume(world.killed, data, "Please continue.")
    assert resumed.result.returncode == 0, resumed.result.describe()
    first = resumed.first
    assert pairing_error(first) is None
    calls, results = calls_and_results(first)
    assert FIRST_OUTPUT in results[driver.first_id]
    if shape == "torn":
        assert driver.long_id not in calls
        assert driver.long_id not in resumed.result.stdout + resumed.result.stderr
        e2e_results.append((driver.client, shape, "native resume", "skips the torn line silently"))
        return
    assert driver.long_id in calls
    written = [
        json.loads(line) for line in resumed.file_after[len(data) :].splitlines() if line.strip()
    ]
    answers_in_file = [line for line in written if json.dumps(driver.long_id) in json.dumps(line)]
    if driver.client == "codex":
        assert results[driver.long_id] == "aborted"
        assert answers_in_file == []  # in memory only: the file still lacks an output
        observed = '"aborted" in memory only'
    else:
        assert results[driver.long_id].startswith("[Tool call interrupted")
        assert [line["type"] for line in answers_in_file][:1] == ["user"]
        observed = "writes its own interrupted tool_result"
    e2e_results.append((driver.client, shape, "native resume", observed))
