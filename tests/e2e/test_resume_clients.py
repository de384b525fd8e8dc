"""Resume that the real clients accept: Codex CLI, Claude Code and the Gemini CLI,
killed mid tool call.

For each client and crash shape (see :mod:`tests.e2e.scenarios`):

1. ``agc import`` the session file, ``agc-verify`` it (complete), ``agc export`` gives it
   back byte for byte, and ``agc resume RUN_ID --check`` names exactly what the crash
   left (the killed call; for the Gemini CLI, which records every result twice and a
   call only once it has finished, the repeated responses and the unrecorded call);
2. ``agc resume RUN_ID --strategy strip|synthesize --out FILE``, the file put where the
   client keeps its session, and the client's own resume command run
   (``codex exec resume <id> …``, ``claude --resume <id> -p …``, ``gemini --resume <id>
   -p …``). Pass = the client exits 0, the request it sends obeys the provider's pairing
   rule, keeps every completed call's result (once), carries agc's repair, and the turn
   finishes;
3. what each client's own resume does with the unrepaired file (recorded, and asserted
   as observed with the pinned versions).

The Gemini CLI's killed session is also repaired as the file where the client keeps it
(``agc resume FILE`` with ``GEMINI_CLI_HOME``: agc names that file and the resume
command) and as a snapshot of its records (``gemini-chat``), and resumed the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from agc.resume import SessionSnapshot, save_snapshot
from tests.e2e.clients import ClientName
from tests.e2e.model_server import Answer, ModelServer, Script
from tests.e2e.scenarios import (
    FIRST_OUTPUT,
    RESUMED_ANSWER,
    SHAPES,
    Driver,
    Resumed,
    Session,
    Shape,
    answered_ids,
    calls_and_results,
    crash_shape,
    new_driver,
    pairing_error,
    shape_session,
)

CLIENTS: Final[tuple[ClientName, ...]] = ("codex", "claude", "gemini")
FORMATS: Final[dict[ClientName, str]] = {
    "codex": "codex-rollout",
    "claude": "claude-code",
    "gemini": "gemini-chat",
}
SYNTHETIC: Final = "agc resume: this tool call was interrupted before its result was recorded"
BIN: Final = Path(sys.executable).parent

Rows = list[tuple[str, str, str, str]]
Found = list[tuple[str, str | None]]


@dataclass
class World:
    """One client's runs, shared by the tests of that client."""

    driver: Driver
    clean: Session
    killed: Session
    store: Path
    root: Path

    def shape(self, shape: Shape) -> bytes:
        return crash_shape(self.killed, self.clean, shape)

    def session(self, shape: Shape) -> Session:
        """The run the shape is cut from (its session id, where its file lives)."""
        return shape_session(self.killed, self.clean, shape)


def _binary(request: pytest.FixtureRequest, client: ClientName) -> Path:
    path: Path = request.getfixturevalue(f"{client}_bin")
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


def agc(
    *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run the installed ``agc`` (or ``agc-verify``) as a user would (``env``: added to
    the environment)."""
    command = [str(BIN / args[0]), *args[1:]]
    return subprocess.run(
        command,
        input=stdin,
        capture_output=True,
        check=False,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


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


def _expected_findings(world: World, shape: Shape) -> Found:
    session = world.session(shape)
    first_id, long_id = session.first_id, session.long_id
    if world.driver.client == "gemini":
        # Every result is recorded twice (toolCalls[].result and a user message), a call
        # only once it has finished: killed during the long call, the model message it
        # came in is left without parts.
        repeated: Found = [("duplicate-tool-result", first_id)]
        return {
            "clean": [*repeated, ("duplicate-tool-result", long_id)],
            "killed": [*repeated, ("unrecorded-call", None)],
            "ends-after-call": repeated,
            "torn": [*repeated, ("unrecorded-call", None), ("torn-tail", long_id)],
        }[shape]
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
    expected = _expected_findings(world, shape)
    assert found == expected
    assert checked.returncode == (1 if expected else 0)
    assert report["format"] == FORMATS[world.driver.client]
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
        ("tool-call-unanswered", world.killed.long_id)
    ]
    e2e_results.append(
        ("claude", "killed (stream-json, agc record)", "import+verify+check", "pass")
    )


# --- 2. repair with agc, resume with the client --------------------------------------------


def _expected_actions(world: World, shape: Shape, strategy: str) -> Found:
    session = world.session(shape)
    first_id, long_id = session.first_id, session.long_id
    if world.driver.client == "gemini":
        # The same under either strategy: the killed call is not in the file (nothing to
        # answer or strip), the repeated responses go.
        repeated: Found = [("dropped-duplicate-result", first_id)]
        return {
            "clean": [*repeated, ("dropped-duplicate-result", long_id)],
            "killed": repeated,
            "ends-after-call": repeated,
            "torn": [*repeated, ("dropped-torn-line", long_id)],
        }[shape]
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
    session = world.session(shape)
    run_id = _imported(world, shape)
    out = world.root / f"{run_id}.{strategy}.jsonl"
    repaired = agc(
        "agc", "resume", run_id, "--store", str(world.store), "--strategy", strategy,
        "--out", str(out), "--json",
    )  # fmt: skip
    assert repaired.returncode == 0, repaired.stderr.decode()
    report = _json(repaired)["report"]
    actions = [(c["action"], c["call_id"]) for c in report["changes"]]
    assert actions == _expected_actions(world, shape, strategy)
    data = out.read_bytes()
    assert data.endswith(b"\n")
    if not actions:
        assert data == session.data

    resumed = driver.resume(session, data, "Please continue.")
    _assert_resumed(session, resumed)
    calls, results = calls_and_results(resumed.first)
    # and it carries agc's repair
    synthesized = [c for c in report["changes"] if c["action"] == "synthesized"]
    # the long call finished before the file ends (the Gemini CLI records a call with its
    # result, so its ends-after-call file holds the long call's result)
    if shape == "clean" or (driver.client == "gemini" and shape == "ends-after-call"):
        assert session.long_id is not None
        assert "long-call-done" in results[session.long_id]  # completed: kept
    elif synthesized:
        assert session.long_id in calls
        assert SYNTHETIC in results[session.long_id]
        assert synthesized[0]["idempotency_key"] in results[session.long_id]
    elif session.long_id is None:  # never recorded (the Gemini CLI, killed)
        assert calls == [session.first_id]
    else:  # stripped, or lost with the torn line
        assert session.long_id not in calls
        assert session.long_id not in results
    e2e_results.append((driver.client, shape, strategy, f"pass ({resumed.result.seconds:.1f}s)"))


def _assert_resumed(session: Session, resumed: Resumed) -> None:
    """The client exited 0 and the turn finished (the answer printed and written to the
    session file); its first request obeys the provider's pairing rule and keeps the
    first call's result, every result once."""
    assert resumed.result.returncode == 0, resumed.result.describe()
    assert RESUMED_ANSWER in resumed.result.stdout
    assert RESUMED_ANSWER.encode() in resumed.file_after
    first = resumed.first
    # the request obeys the provider's pairing rule (the server would have said 400)
    assert first.status == 200
    assert pairing_error(first) is None
    calls, results = calls_and_results(first)
    # it keeps every completed call's result, once
    assert session.first_id in calls
    assert FIRST_OUTPUT in results[session.first_id]
    answered = answered_ids(first)
    assert len(answered) == len(set(answered)), answered


# --- 3. the client's own resume of the unrepaired file -------------------------------------


@pytest.mark.parametrize("shape", ["killed", "ends-after-call", "torn"])
def test_native_resume_of_the_unrepaired_file(
    world: World, shape: Shape, e2e_results: Rows
) -> None:
    """What the client does on its own (pinned versions). Killed mid call, Codex answers
    the call "aborted" in the request only and writes nothing for it to the file; Claude
    Code answers it with its own interrupted result and writes that line into the file.
    With a torn last line both skip the line without a word: the lost call is gone from
    the request and nothing tells the user (agc's check names it). The Gemini CLI sends
    the first call's response twice, which the API refuses (see :func:`_assert_refused`)."""
    driver = world.driver
    data = world.shape(shape)
    session = world.session(shape)
    resumed = driver.resume(session, data, "Please continue.")
    if driver.client == "gemini":
        observed = _assert_refused(resumed)
        if shape == "torn":
            assert session.long_id is not None
            calls, _ = calls_and_results(resumed.first)
            assert session.long_id not in calls  # the torn line skipped without a word
            assert session.long_id not in resumed.result.stdout + resumed.result.stderr
            # and its next record written right after the fragment, with no line break
            # before it: the torn line is now in the middle of the file
            assert resumed.file_after.startswith(data + b'{"')
            observed += "; skips the torn line silently and writes its next record onto it"
        e2e_results.append((driver.client, shape, "native resume", observed))
        return
    assert session.long_id is not None
    assert resumed.result.returncode == 0, resumed.result.describe()
    first = resumed.first
    assert pairing_error(first) is None
    calls, results = calls_and_results(first)
    assert FIRST_OUTPUT in results[session.first_id]
    if shape == "torn":
        assert session.long_id not in calls
        assert session.long_id not in resumed.result.stdout + resumed.result.stderr
        e2e_results.append((driver.client, shape, "native resume", "skips the torn line silently"))
        return
    assert session.long_id in calls
    written = [
        json.loads(line) for line in resumed.file_after[len(data) :].splitlines() if line.strip()
    ]
    answers_in_file = [line for line in written if json.dumps(session.long_id) in json.dumps(line)]
    if driver.client == "codex":
        assert results[session.long_id] == "aborted"
        assert answers_in_file == []  # in memory only: the file still lacks an output
        observed = '"aborted" in memory only'
    else:
        assert results[session.long_id].startswith("[Tool call interrupted")
        assert [line["type"] for line in answers_in_file][:1] == ["user"]
        observed = "writes its own interrupted tool_result"
    e2e_results.append((driver.client, shape, "native resume", observed))


def _assert_refused(resumed: Resumed) -> str:
    """As observed with Gemini CLI 0.61.0: the unrepaired file resumed sends a history
    the API refuses (a completed call's response twice: in its toolCalls entry and in
    the user message after it), and the turn does not finish. Returns the table's cell."""
    assert resumed.requests, resumed.result.describe()
    refused = [r for r in resumed.requests if pairing_error(r) is not None]
    assert refused, resumed.result.describe()
    assert refused[0].status == 400
    assert RESUMED_ANSWER not in resumed.result.stdout
    return f'refused: 400 "number of function response parts …", exit {resumed.result.returncode}'


# --- 4. the Gemini CLI: a clean session, its file in place, a snapshot ----------------------


@pytest.mark.parametrize("world", ["gemini"], indirect=True)
def test_gemini_native_resume_of_a_session_run_to_the_end_is_refused(
    world: World, e2e_results: Rows
) -> None:
    """A Gemini CLI 0.61 session run to the end with calls in it holds every response
    twice too: resumed as is, it is refused as the killed one is."""
    resumed = world.driver.resume(world.clean, world.clean.data, "Please continue.")
    e2e_results.append(("gemini", "clean", "native resume", _assert_refused(resumed)))


def _gemini_home(world: World) -> dict[str, str]:
    """The environment that tells agc where the killed run's Gemini CLI home is."""
    return {"GEMINI_CLI_HOME": str(world.killed.home)}


@pytest.mark.parametrize("world", ["gemini"], indirect=True)
def test_gemini_check_of_the_file_where_the_client_keeps_it(
    world: World, e2e_results: Rows
) -> None:
    """``agc resume FILE --check`` on the client's own file names what the run import
    names: the completed call's second response and the unrecorded call."""
    done = agc("agc", "resume", str(world.killed.path), "--check", "--json")
    assert done.returncode == 1, done.stderr.decode()
    report = _json(done)
    found = report.get("report", report)
    assert found["format"] == "gemini-chat"
    assert [(f["code"], f["call_id"]) for f in found["findings"]] == _expected_findings(
        world, "killed"
    )
    e2e_results.append(
        ("gemini", "killed, the file in place (`agc resume FILE`)", "import+verify+check",
         "pass (check only)")
    )  # fmt: skip


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
@pytest.mark.parametrize("world", ["gemini"], indirect=True)
def test_gemini_resumes_its_file_repaired_in_place(
    world: World, strategy: str, tmp_path: Path, e2e_results: Rows
) -> None:
    """``agc resume FILE --out`` on the file where the client keeps it names that file
    and the client's resume command (``GEMINI_CLI_HOME`` tells agc the home), and the
    client resumes the repair."""
    killed = world.killed
    out = tmp_path / "fixed.jsonl"
    done = agc(
        "agc", "resume", str(killed.path), "--strategy", strategy, "--out", str(out),
        env=_gemini_home(world),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    said = done.stderr.decode()
    assert str(killed.path) in said  # where the client reads it
    assert f"gemini --resume {killed.session_id}" in said
    resumed = world.driver.resume(killed, out.read_bytes(), "Please continue.")
    _assert_resumed(killed, resumed)
    _assert_sends_the_id_without_its_prefix(killed, resumed)
    e2e_results.append(
        (
            "gemini",
            "killed, the file in place (`agc resume FILE`)",
            strategy,
            f"pass ({resumed.result.seconds:.1f}s)",
        )
    )


def _assert_sends_the_id_without_its_prefix(session: Session, resumed: Resumed) -> None:
    """The client sends a call id without the ``<tool>__`` prefix its file has."""
    sent = [
        part["functionResponse"]["id"]
        for content in resumed.first.body["contents"]
        for part in content.get("parts", [])
        if "functionResponse" in part
    ]
    assert len(sent) == 1
    assert sent[0] != session.first_id
    assert session.first_id.endswith(sent[0])


@pytest.mark.parametrize("world", ["gemini"], indirect=True)
def test_gemini_resumes_the_session_restored_from_a_snapshot(
    world: World, tmp_path: Path, e2e_results: Rows
) -> None:
    """The killed session saved as a snapshot (``gemini-chat``: its records, secret-free,
    sealed), restored and repaired by ``agc resume RUN --out``, and resumed by the client
    from where it keeps the session."""
    killed = world.killed
    store = tmp_path / "store"
    records = [json.loads(line) for line in killed.data.splitlines() if line.strip()]
    save_snapshot(
        SessionSnapshot(
            run_id="gemini-snapshot",
            session_id=killed.session_id,
            messages=records,
            format="gemini-chat",
        ),
        store=store,
    )
    out = tmp_path / "restored.jsonl"
    done = agc(
        "agc", "resume", "gemini-snapshot", "--store", str(store), "--strategy", "synthesize",
        "--out", str(out), env=_gemini_home(world),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    said = done.stderr.decode()
    assert str(killed.path) in said  # where the client reads it
    assert f"gemini --resume {killed.session_id}" in said
    resumed = world.driver.resume(killed, out.read_bytes(), "Please continue.")
    _assert_resumed(killed, resumed)
    e2e_results.append(
        (
            "gemini",
            "killed, saved as a snapshot (`gemini-chat`), restored by `agc resume RUN --out`",
            "synthesize",
            f"pass ({resumed.result.seconds:.1f}s)",
        )
    )


@pytest.mark.parametrize("shape", ["clean", "killed"])
@pytest.mark.parametrize("world", ["gemini"], indirect=True)
def test_gemini_one_key_per_call_from_its_file_its_run_and_a_snapshot(
    world: World, shape: Shape, tmp_path: Path, e2e_figures: list[tuple[str, str]]
) -> None:
    """The real client's session: ``agc resume FILE`` (where the client keeps it),
    ``agc resume RUN`` (the run it was imported into) and a snapshot of its records
    (``gemini-chat``) give each change the same idempotency key, one per call."""
    session = world.session(shape)

    def keys(*argv: str) -> dict[tuple[str, str], str]:
        done = agc("agc", "resume", *argv, "--strategy", "synthesize", "--json")
        # Exit 1: the client's file, as it is, is one the API rejects (each result is
        # recorded twice), and the repair is written nowhere.
        assert done.returncode == 1, done.stderr.decode()
        changes = _json(done)["report"]["changes"]
        return {(c["action"], c["call_id"]): c["idempotency_key"] for c in changes}

    from_file = keys(str(session.path))
    from_run = keys(_imported(world, shape), "--store", str(world.store))
    store = tmp_path / "store"
    records = [json.loads(line) for line in session.data.splitlines() if line.strip()]
    save_snapshot(
        SessionSnapshot(
            run_id="snap", session_id=session.session_id, messages=records, format="gemini-chat"
        ),
        store=store,
    )
    from_snapshot = keys("snap", "--store", str(store))
    assert set(from_file) == set(_expected_actions(world, shape, "synthesize"))
    assert all(key.startswith("idem-") for key in from_file.values())
    assert len(set(from_file.values())) == len(from_file)  # one key per call
    assert from_file == from_run == from_snapshot
    e2e_figures.append(
        (
            f"gemini {shape}: idempotency keys, file = run = snapshot",
            ", ".join(f"{action} {call}: {key}" for (action, call), key in from_file.items()),
        )
    )
