"""Resume that the real Gemini CLI accepts: killed mid tool call, repaired by agc, resumed.

The pinned Gemini CLI runs one scripted turn against the scripted Gemini API server: a
quick shell call that completes, then a long one during which its whole process group
is SIGKILLed. Then:

1. ``agc resume FILE --check`` names the completed call's second copy of its response
   (``duplicate-tool-result``: the client records each result twice). The killed call
   itself is not in the file: Gemini CLI 0.61 writes a call's ``toolCalls`` entry only
   once it has finished, so a kill mid call leaves a model message without parts, which
   the client does not send (asserted as observed) and agc names as a warning
   (``unrecorded-call``);
2. for each strategy, ``agc resume FILE --strategy S --out OUT``, the repair put over the
   session file in a copy of the client's home, and ``gemini --resume <session id> -p``
   run there. Pass = the client exits 0, the request it sends obeys the Gemini API's
   pairing rule, keeps the completed call's result, and the turn finishes;
3. the unrepaired file resumed the same way: the request the client sends is refused
   with the API's 400 (asserted as observed with the pinned version);
4. the killed session saved as a snapshot (``gemini-chat``), restored by ``agc resume
   RUN --out`` and resumed as in 2.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from agc.resume import SessionSnapshot, save_snapshot
from tests.e2e.agents import ClientResult, GeminiSandbox, kill_group, wait_for
from tests.e2e.clients import gemini_env
from tests.e2e.model_server import (
    Answer,
    ModelServer,
    RecordedRequest,
    Script,
    ShellCall,
    gemini_pairing_error,
)

# One worker runs this module under pytest-xdist: its tests share the killed session.
pytestmark = pytest.mark.xdist_group("resume-gemini")

FIRST_OUTPUT: Final = "agc-e2e-first-done"
RESUMED_ANSWER: Final = "Resumed and finished."
BIN: Final = Path(sys.executable).parent


@dataclass
class Killed:
    """The killed run: its sandbox, session file, session id and the first call's id."""

    box: GeminiSandbox
    path: Path
    session_id: str
    first_id: str


def _agc(*args: str, home: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run the installed ``agc``; ``home``: the Gemini CLI home it is told about."""
    env = {**os.environ, **({"GEMINI_CLI_HOME": str(home)} if home is not None else {})}
    return subprocess.run(
        [str(BIN / "agc"), *args], capture_output=True, check=False, timeout=120, env=env
    )


def _records(data: bytes) -> list[Any]:
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def _call_ids(data: bytes) -> list[tuple[str, str, bool]]:
    """(call id, command, has a result) of every toolCalls entry of the last record of
    each model message."""
    last: dict[str, Any] = {}
    for record in _records(data):
        if record.get("type") == "gemini":
            last[record["id"]] = record
    return [
        (entry["id"], entry["args"].get("command", ""), bool(entry.get("result")))
        for record in last.values()
        for entry in record.get("toolCalls") or []
    ]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelServer]:
    root = tmp_path_factory.mktemp("e2e-gemini-server")
    with ModelServer(Script([Answer("unused")]), log=root / "requests.jsonl") as running:
        yield running


@pytest.fixture(scope="module")
def killed(
    gemini_bin: Path, server: ModelServer, tmp_path_factory: pytest.TempPathFactory
) -> Killed:
    root = tmp_path_factory.mktemp("e2e-gemini")
    marker = root / "long-call-started"
    pid_file = root / "long-call.pid"
    server.script = Script(
        [
            ShellCall(f"echo {FIRST_OUTPUT}", "unused-first"),
            ShellCall(f"echo $$ > {pid_file}; touch {marker}; exec sleep 600", "unused-long"),
            Answer("All done."),
        ]
    )
    box = GeminiSandbox.create(root / "run", server, gemini_bin)
    process = box.start("Run the two steps.")
    try:
        wait_for("the long tool call to start", marker.exists, timeout=120)
        wait_for(
            "the client to record the model message of the long call",
            lambda: any(_after_first(path.read_bytes()) for path in box.session_files()),
            timeout=30,
        )
    finally:
        kill_group(process)
        try:
            pid = int(pid_file.read_text().strip())
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"sleep\x00"):
                subprocess.run(["kill", "-9", str(pid)], check=False)
        except (OSError, ValueError):
            pass
    path = box.session_file()
    data = path.read_bytes()
    header = _records(data)[0]
    calls = _call_ids(data)
    first = next(call for call, command, _ in calls if FIRST_OUTPUT in command)
    assert not [call for call in calls if "sleep 600" in call[1]]  # never recorded
    return Killed(box, path, header["sessionId"], first)


def _after_first(data: bytes) -> bool:
    """True once a complete line holds a model message after the first call's result."""
    lines = data.split(b"\n")[:-1]
    answered = [i for i, line in enumerate(lines) if FIRST_OUTPUT.encode() in line]
    return bool(answered) and any(
        b'"type":"gemini"' in line.replace(b" ", b"") for line in lines[answered[-1] + 1 :]
    )


def _resume(
    server: ModelServer, killed: Killed, data: bytes, name: str
) -> tuple[ClientResult, list[RecordedRequest]]:
    """A copy of the killed run's home with ``data`` as the session file, resumed with
    ``gemini --resume <session id>``; the Gemini API requests it sent."""
    root = killed.box.root.parent / name
    home = root / "gemini-home"
    shutil.copytree(killed.box.home, home)
    (home / killed.path.relative_to(killed.box.home)).write_bytes(data)
    box = GeminiSandbox(
        root, server, killed.box.binary, killed.box.work, home, gemini_env(root, server, home)
    )
    server.script = Script([Answer(RESUMED_ANSWER)])
    before = len(server.requests)
    done = box.resume(killed.session_id, "Continue.")
    return done, [r for r in server.requests[before:] if r.protocol == "gemini"]


def _responses(request: RecordedRequest) -> dict[str, str]:
    out: dict[str, str] = {}
    for content in request.body.get("contents", []):
        for part in content.get("parts", []):
            response = part.get("functionResponse")
            if isinstance(response, dict):
                out[response.get("id", "")] = json.dumps(response.get("response"))
    return out


def test_check_names_the_killed_call_and_the_duplicate_response(killed: Killed) -> None:
    done = _agc("resume", str(killed.path), "--check", "--json")
    assert done.returncode == 1, done.stderr.decode()
    report = json.loads(done.stdout)
    found = report.get("report", report)
    assert found["format"] == "gemini-chat"
    codes = sorted(((f["code"], f["call_id"]) for f in found["findings"]), key=str)
    assert codes == [("duplicate-tool-result", killed.first_id), ("unrecorded-call", None)]


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_gemini_resumes_what_agc_repaired(
    killed: Killed, server: ModelServer, tmp_path: Path, strategy: str
) -> None:
    out = tmp_path / "fixed.jsonl"
    done = _agc(
        "resume", str(killed.path), "--strategy", strategy, "--out", str(out), home=killed.box.home
    )
    assert done.returncode == 0, done.stderr.decode()
    said = done.stderr.decode()
    assert str(killed.path) in said  # where the client reads it
    assert f"gemini --resume {killed.session_id}" in said
    _assert_resumed(killed, *_resume(server, killed, out.read_bytes(), f"resume-{strategy}"))


def _assert_resumed(killed: Killed, result: ClientResult, sent: list[RecordedRequest]) -> None:
    """The client exited 0, its first request pairs by the Gemini API's rule and sends
    the completed call's response once, and the turn finished."""
    assert result.returncode == 0, result.describe()
    requests = [r for r in sent if isinstance(r.body, dict) and r.body.get("tools")]
    assert requests, result.describe()
    first = requests[0]
    assert gemini_pairing_error(first.body) is None
    responses = _responses(first)
    assert len(responses) == 1  # once, not twice
    [(sent_id, output)] = responses.items()
    assert killed.first_id.endswith(sent_id)  # the client sends the id without its prefix
    assert FIRST_OUTPUT in output
    assert RESUMED_ANSWER in result.stdout


def test_gemini_resumes_the_session_restored_from_a_snapshot(
    killed: Killed, server: ModelServer, tmp_path: Path
) -> None:
    """The killed session saved as a snapshot (``gemini-chat``: its records, secret-free,
    sealed), restored and repaired by ``agc resume RUN --out``, and resumed by the client
    from where it keeps the session."""
    store = tmp_path / "store"
    records = _records(killed.path.read_bytes())
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
    done = _agc(
        "resume",
        "gemini-snapshot",
        "--store",
        str(store),
        "--strategy",
        "synthesize",
        "--out",
        str(out),
        home=killed.box.home,
    )
    assert done.returncode == 0, done.stderr.decode()
    said = done.stderr.decode()
    assert str(killed.path) in said  # where the client reads it
    assert f"gemini --resume {killed.session_id}" in said
    _assert_resumed(killed, *_resume(server, killed, out.read_bytes(), "resume-snapshot"))


def test_native_resume_of_the_unrepaired_file_is_refused(
    killed: Killed, server: ModelServer
) -> None:
    """As observed with Gemini CLI 0.61.0: the killed file resumed as is sends a history
    the API refuses (the completed call's response twice)."""
    result, sent = _resume(server, killed, killed.path.read_bytes(), "resume-unrepaired")
    assert sent, result.describe()
    refused = [r for r in sent if gemini_pairing_error(r.body) is not None]
    assert refused, result.describe()
    assert RESUMED_ANSWER not in result.stdout
