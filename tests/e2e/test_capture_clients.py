"""Capture through the real clients' hooks: Claude Code, the Codex CLI, the Gemini CLI.

For each client, ``agc hooks install --client C --scope user --store S`` writes the
hooks into the client's own configuration in a throwaway home, and the client runs
headless against the scripted model server; every hook event runs agc's hook client
(Claude Code sends its tool events as HTTP hooks to agc's resident capture process, as
installed). Checked:

* ``clean``: a turn with a call that succeeds and one that fails: the session becomes a
  run ``<client>-<session id>`` (``agc runs --json`` names client and session), sealed at
  the session's end, ``agc-verify`` complete, and the calls the hooks saw are the calls
  in the client's own session file;
* ``killed``: the client and its tool SIGKILLed during a long call: the run is
  ``unsealed``, ``agc recover`` seals it, and no event the hooks captured is lost;
* ``store-unwritable``: the store cannot take the events (its tool-events folder is a
  file): the client still finishes its turn with exit 0, nothing from agc on its
  stdout, and ``agc-verify`` does not call the run complete;
* ``edited``: the agent's own tool call rewrites the session file before the session
  ends (the line of an earlier call removed, in place): ``agc-verify`` reports
  ``transcript-diverges``.

Figures (printed at the end of the run): per client and scenario, the tool calls and
results the hooks captured next to those the client wrote in its session file.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from agc.capture import BACKGROUND_EVENTS, ClientName, run_id_for
from tests.e2e.agents import (
    ClaudeSandbox,
    ClientResult,
    CodexSandbox,
    GeminiSandbox,
    kill_group,
    wait_for,
)
from tests.e2e.model_server import Answer, ModelServer, Script, ShellCall

BIN: Final = Path(sys.executable).parent
CLIENT_FIXTURES: Final[dict[ClientName, str]] = {
    "claude-code": "claude_bin",
    "codex": "codex_bin",
    "gemini": "gemini_bin",
}
OK_COMMAND: Final = "echo agc-capture-ok"
FAIL_COMMAND: Final = "echo agc-capture-fail >&2; exit 3"
LONG_COMMAND: Final = "echo agc-capture-long; sleep 600"  # Claude Code blocks a bare `sleep N`
SECRET_MARK: Final = "agc-capture-covered"

Rows = list[tuple[str, str, str, str]]
Figures = list[tuple[str, str]]
StartServer = Callable[[Script], ModelServer]


def agc(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run the installed ``agc`` (or ``agc-verify``) as a user would."""
    command = [str(BIN / args[0]), *args[1:]]
    return subprocess.run(command, capture_output=True, check=False, timeout=120, env=env)


def _json(done: subprocess.CompletedProcess[bytes]) -> Any:
    try:
        return json.loads(done.stdout)
    except ValueError as exc:  # pragma: no cover - shown on failure
        raise AssertionError(f"not JSON: {done.stdout!r}\n{done.stderr.decode()}") from exc


# --- one client, hooks installed by agc ------------------------------------------------


@dataclass
class Captured:
    """A client sandbox whose hooks ``agc hooks install`` wrote, capturing into ``store``."""

    client: ClientName
    sandbox: ClaudeSandbox | CodexSandbox | GeminiSandbox
    store: Path
    claude_session: str = ""

    @property
    def env(self) -> dict[str, str]:
        return self.sandbox.env

    def install(self) -> None:
        """``agc hooks install`` in the client's home, as its user would run it."""
        done = agc(
            "agc",
            "hooks",
            "install",
            "--client",
            self.client,
            "--scope",
            "user",
            "--store",
            str(self.store),
            *self._ask_codex(),
            env=self._agc_env(),
        )
        assert done.returncode == 0, done.stderr.decode()
        # Codex itself is asked (as with codex on the user's PATH): only it can confirm
        # that it runs the hooks.
        status = agc("agc", "hooks", "status", *self._ask_codex(), env=self._agc_env())
        assert status.returncode == 0, status.stdout.decode() + status.stderr.decode()
        if self.client == "claude-code":
            # Its tool events go as HTTP hooks to agc's resident process: what the
            # scenarios below capture through.
            said = agc(
                "agc", "hooks", "status", "--client", self.client, "--json", env=self._agc_env()
            )
            (entry,) = json.loads(said.stdout)["clients"]
            assert sorted(entry["http"]) == sorted(BACKGROUND_EVENTS["claude-code"]), entry

    def _ask_codex(self) -> list[str]:
        if isinstance(self.sandbox, CodexSandbox):
            return ["--codex", str(self.sandbox.binary)]
        return []

    def _agc_env(self) -> dict[str, str]:
        return {**self.env, "PATH": f"{BIN}{os.pathsep}{self.env['PATH']}"}

    def _argv(self, prompt: str) -> list[str]:
        if isinstance(self.sandbox, ClaudeSandbox):
            self.claude_session = str(uuid.uuid4())
            return self.sandbox._argv("--session-id", self.claude_session, "-p", prompt)
        if isinstance(self.sandbox, CodexSandbox):
            return self.sandbox._argv(prompt)
        return self.sandbox._argv("-p", prompt)

    def run(self, prompt: str) -> ClientResult:
        """One headless turn in a new session, to its end."""
        from tests.e2e.agents import _run  # noqa: PLC0415 - the one runner the sandboxes use

        return _run(self._argv(prompt), self.env, self.sandbox.work, 180)

    def start(self, prompt: str) -> subprocess.Popen[bytes]:
        """Start one headless turn in its own process group (output to a log)."""
        log = self.sandbox.root / "capture-run.log"
        with log.open("wb") as out:
            return subprocess.Popen(
                self._argv(prompt),
                cwd=self.sandbox.work,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def session_file(self) -> Path:
        """The client's own session file of the (only) session."""
        if isinstance(self.sandbox, ClaudeSandbox):
            return self.sandbox.session_file(self.claude_session)
        return self.sandbox.session_file()

    def session_id(self) -> str:
        """The client's session id (what names the run)."""
        if isinstance(self.sandbox, ClaudeSandbox):
            return self.claude_session
        path = self.session_file()
        if isinstance(self.sandbox, CodexSandbox):
            return self.sandbox.session_id_of(path)
        first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
        return str(first["sessionId"])

    def run_id(self) -> str:
        return run_id_for(self.client, self.session_id())

    def session_glob(self) -> str:
        """A shell glob naming the session file (for a tool call that edits it)."""
        if isinstance(self.sandbox, ClaudeSandbox):
            return str(self.sandbox.projects / "*" / "*.jsonl")
        if isinstance(self.sandbox, CodexSandbox):
            return str(self.sandbox.home / "sessions" / "*" / "*" / "*" / "rollout-*.jsonl")
        return str(self.sandbox.home / ".gemini" / "tmp" / "*" / "chats" / "session-*.jsonl")


def _captured(
    request: pytest.FixtureRequest, client: ClientName, root: Path, server: ModelServer
) -> Captured:
    binary: Path = request.getfixturevalue(CLIENT_FIXTURES[client])
    store = root / "store"
    store.mkdir(parents=True)
    sandbox: ClaudeSandbox | CodexSandbox | GeminiSandbox
    if client == "claude-code":
        sandbox = ClaudeSandbox.create(root / "client", server, binary)
    elif client == "codex":
        sandbox = CodexSandbox.create(root / "client", server, binary)
    else:
        sandbox = GeminiSandbox.create(root / "client", server, binary)
    sandbox.env["XDG_STATE_HOME"] = str(root / "state")
    return Captured(client, sandbox, store)


# --- reading what was captured and what the client wrote -------------------------------


def captured_events(store: Path, run_id: str) -> list[dict[str, Any]]:
    """The tool-events records of the run as they are in the store (sealed or not)."""
    path = store / "audit" / "tool-events" / f"{run_id}.jsonl"
    if not path.is_file():
        return []
    records = []
    for line in path.read_bytes().splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue  # a torn last line (a killed writer): not a record
    return records


def hook_calls(events: list[dict[str, Any]]) -> list[tuple[str | None, str]]:
    """(call id, command) of every call the hooks saw, in order."""
    return [
        (e.get("call_id"), _command(e.get("input")))
        for e in events
        if e.get("event") == "call" and e.get("source") == "hook"
    ]


def hook_results(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e.get("event") == "result" and e.get("source") == "hook"]


def _command(value: Any) -> str:
    if isinstance(value, dict):
        command = value.get("command") or value.get("cmd")
        if isinstance(command, list):
            return " ".join(map(str, command))
        return str(command)
    return str(value)


def session_calls(client: ClientName, path: Path) -> tuple[list[tuple[str | None, str]], int]:
    """(call id, command) of every tool call the client wrote in its session file, in
    order, and the number of tool results it wrote."""
    calls: dict[str, tuple[str | None, str]] = {}
    results: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        if client == "claude-code":
            content = (record.get("message") or {}).get("content")
            for block in content if isinstance(content, list) else ():
                if block.get("type") == "tool_use":
                    calls[block["id"]] = (block["id"], _command(block.get("input")))
                elif block.get("type") == "tool_result":
                    results.add(block["tool_use_id"])
        elif client == "codex":
            payload = record.get("payload") or {}
            if record.get("type") != "response_item":
                continue
            if payload.get("type") == "function_call":
                arguments = json.loads(payload.get("arguments") or "{}")
                calls[payload["call_id"]] = (payload["call_id"], _command(arguments))
            elif payload.get("type") == "function_call_output":
                results.add(payload["call_id"])
        else:
            for call in record.get("toolCalls") or ():
                calls[call["id"]] = (None, _command(call.get("args")))
            content = record.get("content")
            for part in content if isinstance(content, list) else ():
                response = part.get("functionResponse") if isinstance(part, dict) else None
                if isinstance(response, dict):
                    results.add(str(response.get("id")))
    return list(calls.values()), len(results)


def _figure(
    figures: Figures, client: str, scenario: str, events: list[dict[str, Any]], session: Path
) -> str:
    calls, results = session_calls(client, session)  # type: ignore[arg-type]
    text = (
        f"hooks captured {len(hook_calls(events))} calls + {len(hook_results(events))} results;"
        f" the session file has {len(calls)} calls + {results} results"
    )
    figures.append((f"capture {client} {scenario}", text))
    return text


# --- the scenarios ----------------------------------------------------------------------

CLIENTS: Final[tuple[ClientName, ...]] = ("claude-code", "codex", "gemini")


@pytest.mark.parametrize("client", CLIENTS)
def test_a_session_is_captured_sealed_and_verified(
    client: ClientName,
    tmp_path: Path,
    model_server: StartServer,
    request: pytest.FixtureRequest,
    e2e_results: Rows,
    e2e_figures: Figures,
) -> None:
    server = model_server(
        Script(
            [
                ShellCall(OK_COMMAND, "call_cap_ok"),
                ShellCall(FAIL_COMMAND, "call_cap_fail"),
                Answer("done"),
            ]
        )
    )
    captured = _captured(request, client, tmp_path, server)
    captured.install()
    done = captured.run("run the calls")
    assert done.returncode == 0, done.describe()
    run_id = captured.run_id()

    listed = agc("agc", "runs", "--store", str(captured.store), "--json")
    assert listed.returncode == 0, listed.stderr.decode()
    rows = {row["run_id"]: row for row in _json(listed)["runs"]}
    assert run_id in rows, rows
    assert (rows[run_id]["client"], rows[run_id]["session_id"]) == (client, captured.session_id())

    verified = agc("agc-verify", run_id, "--store", str(captured.store), "--json")
    assert verified.returncode == 0, verified.stdout.decode()
    assert _json(verified)["complete"] is True

    events = captured_events(captured.store, run_id)
    calls, results = session_calls(client, captured.session_file())
    seen = hook_calls(events)
    if client == "gemini":  # its hooks carry no call id, and wait: the commands, in order
        assert [command for _, command in seen] == [command for _, command in calls]
        assert [command for _, command in seen] == [OK_COMMAND, FAIL_COMMAND]
    else:  # background (async) hooks: the same calls, in whatever order they came
        assert sorted(seen, key=repr) == sorted(calls, key=repr)
        assert sorted(command for _, command in seen) == sorted([OK_COMMAND, FAIL_COMMAND])
    assert len(hook_results(events)) == results == 2
    e2e_results.append((client, "clean", "capture", "pass"))
    _figure(e2e_figures, client, "clean", events, captured.session_file())


@pytest.mark.parametrize("client", CLIENTS)
def test_a_killed_session_leaves_an_unsealed_run_that_recover_seals(
    client: ClientName,
    tmp_path: Path,
    model_server: StartServer,
    request: pytest.FixtureRequest,
    e2e_results: Rows,
    e2e_figures: Figures,
) -> None:
    server = model_server(
        Script(
            [
                ShellCall(OK_COMMAND, "call_cap_ok"),
                ShellCall(LONG_COMMAND, "call_cap_long"),
                Answer("done"),
            ]
        )
    )
    captured = _captured(request, client, tmp_path, server)
    captured.install()
    process = captured.start("run the calls")
    try:

        def long_call_captured() -> bool:
            files = list((captured.store / "audit" / "tool-events").glob("*.jsonl"))
            return any(
                command == LONG_COMMAND
                for f in files
                for _, command in hook_calls(captured_events(captured.store, f.stem))
            )

        wait_for("the long call's hook event in the store", long_call_captured, timeout=120)
    finally:
        kill_group(process)
    run_id = captured.run_id()
    before = captured_events(captured.store, run_id)

    verified = agc("agc-verify", run_id, "--store", str(captured.store), "--json")
    assert verified.returncode == 1, verified.stdout.decode()
    codes = {f["code"] for f in _json(verified)["findings"]}
    assert "unsealed" in codes, codes

    # as the user whose client it is: the session file's note is checked against that
    # user's own client folders
    recovered = agc(
        "agc", "recover", run_id, "--store", str(captured.store), env=captured._agc_env()
    )
    assert recovered.returncode == 0, recovered.stderr.decode()
    after = captured_events(captured.store, run_id)
    assert after[: len(before)] == before  # no event lost
    # In any order: Claude Code and Codex run the tool-call hooks in the background.
    assert sorted(command for _, command in hook_calls(after)) == sorted([OK_COMMAND, LONG_COMMAND])
    again = _json(agc("agc-verify", run_id, "--store", str(captured.store), "--json"))
    assert "unsealed" not in {f["code"] for f in again["findings"]}
    e2e_results.append((client, "killed", "capture", f"pass ({again['verdict_word']})"))
    _figure(e2e_figures, client, "killed", after, captured.session_file())


@pytest.mark.parametrize("client", CLIENTS)
def test_a_store_that_cannot_be_written_never_stops_the_client(
    client: ClientName,
    tmp_path: Path,
    model_server: StartServer,
    request: pytest.FixtureRequest,
    e2e_results: Rows,
) -> None:
    server = model_server(Script([ShellCall(OK_COMMAND, "call_cap_ok"), Answer("agc e2e done")]))
    captured = _captured(request, client, tmp_path, server)
    captured.install()
    (captured.store / "audit").mkdir()
    (captured.store / "audit" / "tool-events").write_text("not a folder\n", encoding="utf-8")
    done = captured.run("run the calls")
    assert done.returncode == 0, done.describe()
    assert "agc e2e done" in done.stdout, done.describe()  # the turn's final answer
    if client == "claude-code":  # its stream shows each hook's output: agc printed nothing
        events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        hooks = [e for e in events if e.get("subtype") == "hook_response"]
        assert hooks, done.describe()
        assert {e["stdout"] for e in hooks} == {""}
    verified = agc("agc-verify", captured.run_id(), "--store", str(captured.store), "--json")
    assert verified.returncode != 0, verified.stdout.decode()
    report = json.loads(verified.stdout) if verified.stdout.strip() else {}
    assert report.get("complete") is not True
    e2e_results.append(
        (client, "store-unwritable", "capture", f"pass (exit {verified.returncode})")
    )


def _cover_tracks(glob: str) -> str:
    """A shell command that removes, in place, every line of the session file holding the
    mark (the agent covering an earlier call before the session is sealed). It first
    waits (up to 15 s) for the earlier call's output to be in the file: a client may
    write a result's line after it has started the next call."""
    program = (
        "import glob, re, sys, time\n"
        f"mark = {SECRET_MARK[:9]!r} + {SECRET_MARK[9:]!r}\n"
        "output = re.compile('(?<!echo )' + mark)\n"
        "deadline = time.monotonic() + 15\n"
        "while time.monotonic() < deadline and not any(\n"
        "    output.search(open(p, encoding='utf-8').read())\n"
        f"    for p in glob.glob({glob!r})\n"
        "):\n"
        "    time.sleep(0.05)\n"
        f"for path in glob.glob({glob!r}):\n"
        "    with open(path, 'r+', encoding='utf-8') as fh:\n"
        "        kept = [line for line in fh if mark not in line]\n"
        "        fh.seek(0)\n"
        "        fh.write(''.join(kept))\n"
        "        fh.truncate()\n"
    )
    return shlex.join([sys.executable, "-c", program])


@pytest.mark.parametrize("client", CLIENTS)
def test_a_session_file_edited_before_its_seal_diverges(
    client: ClientName,
    tmp_path: Path,
    model_server: StartServer,
    request: pytest.FixtureRequest,
    e2e_results: Rows,
    e2e_figures: Figures,
) -> None:
    server = model_server(Script([Answer("placeholder")]))
    captured = _captured(request, client, tmp_path, server)
    server.script = Script(
        [
            ShellCall(f"echo {SECRET_MARK}", "call_cap_covered"),
            ShellCall(_cover_tracks(captured.session_glob()), "call_cap_cover"),
            Answer("done"),
        ]
    )
    captured.install()
    done = captured.run("run the calls")
    assert done.returncode == 0, done.describe()
    run_id = captured.run_id()
    session = captured.session_file()
    assert SECRET_MARK not in session.read_text(encoding="utf-8")  # the edit took
    _figure(e2e_figures, client, "edited", captured_events(captured.store, run_id), session)
    verified = agc("agc-verify", run_id, "--store", str(captured.store), "--json")
    assert verified.returncode == 1, verified.stdout.decode()
    codes = {f["code"] for f in _json(verified)["findings"]}
    assert "transcript-diverges" in codes, codes
    e2e_results.append((client, "edited", "capture", "pass (transcript-diverges)"))


@pytest.mark.parametrize("client", ["claude-code"])  # the one client with HTTP hooks
def test_a_port_another_user_squats_never_gets_the_secret_of_later_sessions(
    client: ClientName,
    tmp_path: Path,
    model_server: StartServer,
    request: pytest.FixtureRequest,
    e2e_results: Rows,
    e2e_figures: Figures,
) -> None:
    """Another user listens on the HTTP hooks' port before a session starts (agc's
    resident capture process had exited). The real Claude Code's first synchronous hook
    finds it: agc moves its hooks to a new port and secret before answering. The
    squatter never gets the new secret, a session started after sends it nothing and is
    captured complete, and the run of the session that found it never verifies
    complete, whatever that session sent where."""
    from agc.capture import read_http_hook  # noqa: PLC0415
    from tests.cli.test_hook_http_attack import Squatter  # noqa: PLC0415

    server = model_server(Script([ShellCall(OK_COMMAND, "call_squat_ok"), Answer("done")]))
    captured = _captured(request, client, tmp_path, server)
    captured.install()
    state = {"XDG_STATE_HOME": captured.env["XDG_STATE_HOME"]}
    old = read_http_hook(state)
    assert old is not None
    squatter = Squatter("4", "127.0.0.1", old.port)
    try:
        done = captured.run("run the call")
        assert done.returncode == 0, done.describe()
        first = captured.run_id()
        new = read_http_hook(state)
        assert new is not None
        assert new.port != old.port
        assert new.secret != old.secret
        server.script.rewind()
        again = captured.run("run the call")
        assert again.returncode == 0, again.describe()
        second = captured.run_id()
    finally:
        heard = squatter.heard()
    assert new.secret.encode() not in heard
    assert second.removeprefix("claude-code-").encode() not in heard
    verified = agc("agc-verify", first, "--store", str(captured.store), "--json")
    assert _json(verified)["complete"] is not True
    codes = {f["code"] for f in _json(verified)["findings"]}
    assert "capture-failed" in codes, codes
    later = agc("agc-verify", second, "--store", str(captured.store), "--json")
    assert _json(later)["complete"] is True, later.stdout.decode()
    assert hook_calls(captured_events(captured.store, second))
    sent = "sent the squatter its tool events" if old.secret.encode() in heard else "sent it none"
    e2e_results.append(("claude-code", "port squatted", "capture", "pass"))
    e2e_figures.append(
        (
            "capture claude-code port squatted",
            f"the session that found the squatter {sent}; the next session went to agc's "
            "new port, complete",
        )
    )
