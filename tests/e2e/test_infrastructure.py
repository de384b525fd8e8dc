"""The end-to-end harness itself: the model server's rules and wire shapes, the crash
shapes and the results table, the proxy trap, the client install cache, and one clean
turn of each real client."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from agc.cli import _hookclient as hookclient
from tests.e2e import clients, scenarios
from tests.e2e.agents import ClaudeSandbox, CodexSandbox, GeminiSandbox
from tests.e2e.conftest import results_table
from tests.e2e.model_server import (
    GEMINI_PAIRING_MESSAGE,
    Answer,
    ModelServer,
    RecordedRequest,
    Script,
    ShellCall,
    anthropic_pairing_error,
    gemini_pairing_error,
    responses_pairing_error,
)

StartServer = Callable[[Script], ModelServer]


def _post(server: ModelServer, path: str, body: object) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    response = connection.getresponse()
    return response.status, response.read()


def _sse_events(data: bytes) -> list[dict[str, object]]:
    events = []
    for chunk in data.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines() if ": " in line)
        if "data" in lines:
            event = json.loads(lines["data"])
            assert event["type"] == lines["event"]
            events.append(event)
    return events


# --- the pairing rules --------------------------------------------------------------------


def test_responses_rule_names_the_unanswered_call() -> None:
    body = {
        "input": [
            {"type": "function_call", "call_id": "c1", "name": "x", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            {"type": "function_call", "call_id": "c2", "name": "x", "arguments": "{}"},
        ]
    }
    assert responses_pairing_error(body) == "No tool output found for function call c2."
    body["input"].append({"type": "function_call_output", "call_id": "c2", "output": "ok"})
    assert responses_pairing_error(body) is None


def test_responses_rule_names_an_orphan_output() -> None:
    body = {"input": [{"type": "function_call_output", "call_id": "zz", "output": "ok"}]}
    assert responses_pairing_error(body) == (
        "No tool call found for function call output with call_id zz."
    )


def test_anthropic_rule_wants_the_result_in_the_next_message() -> None:
    use = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "B", "input": {}}],
    }
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]}
    text = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    assert anthropic_pairing_error({"messages": [use, result]}) is None
    late = anthropic_pairing_error({"messages": [use, text, result]})
    assert late is not None
    assert late.startswith("messages.0: `tool_use` ids were found without `tool_result` blocks")
    orphan = anthropic_pairing_error({"messages": [text, result]})
    assert orphan is not None
    assert orphan.startswith("messages.1.content.0: unexpected `tool_use_id`")


def _call(name: str = "run_shell_command") -> dict[str, object]:
    return {"functionCall": {"name": name, "args": {}}}


def _response(name: str = "run_shell_command") -> dict[str, object]:
    return {"functionResponse": {"name": name, "response": {"output": "ok"}}}


def test_gemini_rule_counts_function_responses() -> None:
    """As many functionResponse parts right after a call turn as it has functionCall parts."""
    user = {"role": "user", "parts": [{"text": "go"}]}
    two_calls = {"role": "model", "parts": [_call(), _call()]}
    assert gemini_pairing_error({"contents": [user, two_calls]}) is None  # the call to answer
    answered = {"role": "user", "parts": [_response(), _response()]}
    assert gemini_pairing_error({"contents": [user, two_calls, answered]}) is None
    short = {"role": "user", "parts": [_response()]}
    assert gemini_pairing_error({"contents": [user, two_calls, short]}) == GEMINI_PAIRING_MESSAGE
    assert gemini_pairing_error({"contents": [user, two_calls, user]}) == GEMINI_PAIRING_MESSAGE
    orphan = {"role": "user", "parts": [_response()]}
    assert gemini_pairing_error({"contents": [user, orphan]}) == GEMINI_PAIRING_MESSAGE


# --- the crash shapes and the results table ------------------------------------------------


def _gemini_line(record: Mapping[str, object]) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


def _gemini_turn(call_ids: list[str], *, killed: bool) -> bytes:
    """A Gemini CLI chat file as the client writes it: each model message once when it
    starts, again with its finished calls; each response again in a user message."""
    lines = [_gemini_line({"sessionId": "s", "projectHash": "p", "startTime": "t"})]
    for number, call_id in enumerate(call_ids):
        message = {"id": f"m{number}", "type": "gemini", "content": ""}
        lines.append(_gemini_line(message))
        if killed and number == len(call_ids) - 1:
            break  # killed during the call: never recorded
        output = scenarios.FIRST_OUTPUT if number == 0 else "long-call-done"
        response = [{"functionResponse": {"id": call_id, "name": "run_shell_command"}}]
        entry = {"id": call_id, "name": "run_shell_command", "args": {"command": f"echo {output}"}}
        lines.append(_gemini_line({**message, "toolCalls": [{**entry, "result": response}]}))
        lines.append(_gemini_line({"id": f"u{number}", "type": "user", "content": response}))
    return b"".join(lines)


def _session(data: bytes, first_id: str, long_id: str | None) -> scenarios.Session:
    return scenarios.Session("s", data, Path("/h"), Path("chat.jsonl"), first_id, long_id)


def test_gemini_shapes_after_the_call_are_cut_from_the_run_to_the_end() -> None:
    """The Gemini CLI records a call only once it has finished: ends-after-call and torn
    come from the run to the end, cut at (or in) the record of the long call."""
    ids = ["run_shell_command__a_0", "run_shell_command__b_0"]
    clean = _session(_gemini_turn(ids, killed=False), ids[0], ids[1])
    killed = _session(_gemini_turn(ids, killed=True), ids[0], None)
    lines = clean.data.splitlines(keepends=True)
    assert scenarios.shape_session(killed, clean, "killed") is killed
    assert scenarios.crash_shape(killed, clean, "killed") == killed.data
    for shape in ("ends-after-call", "torn"):
        assert scenarios.shape_session(killed, clean, shape) is clean
    assert scenarios.crash_shape(killed, clean, "ends-after-call") == b"".join(lines[:6])
    torn = scenarios.crash_shape(killed, clean, "torn")
    assert torn.startswith(b"".join(lines[:5]))
    fragment = torn[len(b"".join(lines[:5])) :]
    assert lines[5].startswith(fragment)
    assert b"\n" not in fragment
    assert ids[1].encode() + b'"' in fragment  # cut after the call id


def test_gemini_request_ids_are_named_as_the_file_names_them() -> None:
    """The client sends a call id without the ``<tool>__`` prefix its file has; the
    harness adds it back, and counts every response (a repeat too)."""
    call = {"functionCall": {"id": "a_0", "name": "run_shell_command", "args": {}}}
    response = {"functionResponse": {"id": "a_0", "name": "run_shell_command", "response": {}}}
    body = {
        "contents": [
            {"role": "model", "parts": [call]},
            {"role": "user", "parts": [response, response]},
        ]
    }
    request = RecordedRequest("POST", "/v1beta/models/g:streamGenerateContent", {}, body, 200, None)
    calls, results = scenarios.calls_and_results(request)
    assert calls == ["run_shell_command__a_0"]
    assert list(results) == ["run_shell_command__a_0"]
    assert scenarios.answered_ids(request) == ["run_shell_command__a_0"] * 2
    assert scenarios.pairing_error(request) == GEMINI_PAIRING_MESSAGE


def test_results_table_has_one_order_whichever_process_reported_first() -> None:
    rows = [
        ("gemini", "torn", "native resume", "refused"),
        ("claude", "killed (stream-json, agc record)", "import+verify+check", "pass"),
        ("gemini", "clean", "strip", "pass"),
        ("codex", "killed", "synthesize", "pass"),
        ("codex", "killed", "import+verify+check", "pass"),
    ]
    table = results_table(rows)
    assert table == results_table(list(reversed(rows)))
    assert table.splitlines() == [
        "| client | scenario | import+verify+check | strip | synthesize | native resume |",
        "|---|---|---|---|---|---|",
        "| codex | killed | pass |  | pass |  |",
        "| claude | killed (stream-json, agc record) | pass |  |  |  |",
        "| gemini | clean |  | pass |  |  |",
        "| gemini | torn |  |  |  | refused |",
    ]


# --- the server ---------------------------------------------------------------------------


def test_broken_history_gets_the_providers_400(model_server: StartServer) -> None:
    server = model_server(Script([Answer("hi")]))
    bad = {
        "tools": [{"name": "shell_command"}],
        "input": [{"type": "function_call", "call_id": "c9"}],
    }
    status, data = _post(server, "/v1/responses", bad)
    assert status == 400
    assert json.loads(data)["error"] == {
        "message": "No tool output found for function call c9.",
        "type": "invalid_request_error",
        "param": "input",
        "code": None,
    }
    status, data = _post(
        server,
        "/v1/messages",
        {
            "tools": [{}],
            "messages": [
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "q"}]}
            ],
        },
    )
    assert status == 400
    assert json.loads(data)["error"]["type"] == "invalid_request_error"
    assert [r.status for r in server.requests] == [400, 400]


def test_script_steps_are_answered_in_order(model_server: StartServer) -> None:
    server = model_server(Script([ShellCall("echo hi", "call_a"), Answer("done")]))
    tools = [{"type": "function", "name": "shell_command"}]
    status, first = _post(server, "/v1/responses", {"tools": tools, "input": []})
    assert status == 200
    events = _sse_events(first)
    assert [e["type"] for e in events] == [
        "response.created",
        "response.output_item.added",
        "response.output_item.done",
        "response.completed",
    ]
    call = events[2]["item"]
    assert isinstance(call, dict)
    assert call["call_id"] == "call_a"
    assert json.loads(str(call["arguments"]))["command"] == "echo hi"
    # a side request (no tools) does not advance the script
    _post(server, "/v1/responses", {"input": []})
    _, second = _post(server, "/v1/responses", {"tools": tools, "input": []})
    item = _sse_events(second)[2]["item"]
    assert isinstance(item, dict)
    assert item["content"] == [{"type": "output_text", "text": "done"}]
    assert len(server.model_requests()) == 2


def test_messages_stream_carries_a_tool_use(model_server: StartServer) -> None:
    server = model_server(Script([ShellCall("ls", "toolu_1"), Answer("done")]))
    _, data = _post(server, "/v1/messages", {"model": "m", "tools": [{}], "messages": []})
    events = _sse_events(data)
    assert events[0]["type"] == "message_start"
    assert events[1]["content_block"] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "Bash",
        "input": {},
    }
    delta = events[2]["delta"]
    assert isinstance(delta, dict)
    assert json.loads(str(delta["partial_json"]))["command"] == "ls"
    assert events[-2]["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    status, counted = _post(server, "/v1/messages/count_tokens", {"messages": []})
    assert (status, json.loads(counted)) == (200, {"input_tokens": 10})


def test_gemini_stream_carries_a_function_call(model_server: StartServer) -> None:
    server = model_server(Script([ShellCall("ls", "unused"), Answer("done")]))
    tools = [{"functionDeclarations": [{"name": "run_shell_command"}]}]
    path = "/v1beta/models/gemini-x:streamGenerateContent?alt=sse"
    status, data = _post(server, path, {"tools": tools, "contents": []})
    assert status == 200
    chunks = [
        json.loads(line[6:]) for line in data.decode().splitlines() if line.startswith("data: ")
    ]
    assert len(chunks) == 1
    candidate = chunks[0]["candidates"][0]
    assert candidate["content"]["parts"] == [
        {
            "functionCall": {
                "name": "run_shell_command",
                "args": {"command": "ls", "description": "agc e2e step"},
            }
        }
    ]
    assert chunks[0]["modelVersion"] == "gemini-x"
    # the router's JSON request (no tools) does not advance the script
    status, routed = _post(
        server,
        "/v1beta/models/gemini-y:generateContent",
        {"contents": [], "generationConfig": {"responseMimeType": "application/json"}},
    )
    text = json.loads(routed)["candidates"][0]["content"]["parts"][0]["text"]
    assert (status, json.loads(text)["model_choice"]) == (200, "flash")
    _, second = _post(server, path, {"tools": tools, "contents": []})
    assert b'"text": "done"' in second
    assert [r.protocol for r in server.model_requests()] == ["gemini", "gemini"]
    status, broken = _post(
        server,
        path,
        {
            "tools": tools,
            "contents": [{"role": "model", "parts": [_call()]}, {"role": "user", "parts": []}],
        },
    )
    assert status == 400
    assert json.loads(broken)["error"] == {
        "code": 400,
        "message": GEMINI_PAIRING_MESSAGE,
        "status": "INVALID_ARGUMENT",
    }


def test_proxy_trap_refuses_and_records_outside_hosts() -> None:
    with ModelServer(Script([Answer("x")])) as server:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        connection.request("CONNECT", "example.com:443")
        assert connection.getresponse().status == 403
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        connection.request("GET", "http://example.com/")
        assert connection.getresponse().status == 403
        assert server.outside_attempts == ["CONNECT example.com:443", "GET http://example.com/"]


# --- the install cache ----------------------------------------------------------------------


def test_installed_client_is_returned_without_npm(
    codex_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm cache needs neither node nor npm (offline, CI cache)."""
    monkeypatch.setenv("PATH", "/nonexistent")
    assert clients.ensure_client("codex") == codex_bin


def test_missing_node_is_reported_as_missing_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(clients, "CACHE_DIR", tmp_path / "empty-cache")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(clients.ClientUnavailableError) as caught:
        clients.ensure_client("claude")
    assert caught.value.missing_tools
    assert "@anthropic-ai/claude-code@2.1.332" in str(caught.value)


def test_pinned_versions_are_what_the_binaries_report(
    codex_bin: Path, claude_bin: Path, gemini_bin: Path
) -> None:
    codex = subprocess.run([codex_bin, "--version"], capture_output=True, text=True, check=True)
    claude = subprocess.run([claude_bin, "--version"], capture_output=True, text=True, check=True)
    gemini = subprocess.run([gemini_bin, "--version"], capture_output=True, text=True, check=True)
    assert clients.PINNED["codex"].version in codex.stdout
    assert clients.PINNED["claude"].version in claude.stdout
    assert clients.PINNED["gemini"].version in gemini.stdout


# --- one clean turn of each client ------------------------------------------------------------


def test_codex_runs_a_turn_against_the_server(
    tmp_path: Path, model_server: StartServer, codex_bin: Path
) -> None:
    server = model_server(Script([ShellCall("echo agc-e2e-ok", "call_smoke"), Answer("finished")]))
    codex = CodexSandbox.create(tmp_path / "codex", server, codex_bin)
    done = codex.exec("say ok")
    assert done.returncode == 0, done.describe()
    assert "finished" in done.stdout
    second = server.model_requests("responses")[1].body
    outputs = [i for i in second["input"] if i.get("type") == "function_call_output"]
    assert [o["call_id"] for o in outputs] == ["call_smoke"]
    assert "agc-e2e-ok" in json.dumps(outputs[0]["output"])
    assert codex.session_file().is_file()
    assert os.environ.get("CODEX_HOME") != str(codex.home)  # the test's own env untouched


def test_claude_runs_a_turn_against_the_server(
    tmp_path: Path, model_server: StartServer, claude_bin: Path
) -> None:
    server = model_server(Script([ShellCall("echo agc-e2e-ok", "toolu_smoke"), Answer("finished")]))
    claude = ClaudeSandbox.create(tmp_path / "claude", server, claude_bin)
    session = str(uuid.UUID(int=1))
    done = claude.run("say ok", session)
    assert done.returncode == 0, done.describe()
    last = json.loads(done.stdout.strip().splitlines()[-1])
    assert (last["type"], last["subtype"], last["result"]) == ("result", "success", "finished")
    second = server.model_requests("messages")[1].body
    results = [b for b in second["messages"][-1]["content"] if b.get("type") == "tool_result"]
    assert [r["tool_use_id"] for r in results] == ["toolu_smoke"]
    assert claude.session_file(session).is_file()


def test_gemini_runs_a_turn_against_the_server(
    tmp_path: Path, model_server: StartServer, gemini_bin: Path
) -> None:
    server = model_server(Script([ShellCall("echo agc-e2e-ok", "unused"), Answer("finished")]))
    gemini = GeminiSandbox.create(tmp_path / "gemini", server, gemini_bin)
    done = gemini.run("say ok")
    assert done.returncode == 0, done.describe()
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert (events[-1]["type"], events[-1]["status"]) == ("result", "success")
    assert [e["parameters"]["command"] for e in events if e["type"] == "tool_use"] == [
        "echo agc-e2e-ok"
    ]
    second = server.model_requests("gemini")[1].body
    responses = [p for c in second["contents"] for p in c["parts"] if "functionResponse" in p]
    assert [r["functionResponse"]["name"] for r in responses] == ["run_shell_command"]
    assert "agc-e2e-ok" in json.dumps(responses[0])
    assert gemini.session_file().is_file()


def test_a_sandbox_has_its_own_socket_folder_however_long_its_tmpdir(
    model_server: StartServer, tmp_path: Path
) -> None:
    """agc's hook client puts its resident process's socket in ``$XDG_RUNTIME_DIR/agc``,
    else ``$TMPDIR/agc-<uid>`` when that path is short enough, else the user's shared
    ``/tmp/agc-<uid>``: each sandbox names its own, so its residents are its own."""
    server = model_server(Script([Answer("hi")]))
    deep = tmp_path / ("x" * 90)  # a TMPDIR too long for a socket path, as under xdist
    first = clients._base_env(deep / "a", server)
    second = clients._base_env(deep / "b", server)
    folders = {hookclient.socket_dir(env) for env in (first, second)}
    assert folders == {f"{first['XDG_RUNTIME_DIR']}/agc", f"{second['XDG_RUNTIME_DIR']}/agc"}
    for env in (first, second):
        clients.stop_residents(Path(env["XDG_RUNTIME_DIR"]))
        assert not Path(env["XDG_RUNTIME_DIR"]).exists()


def test_stopping_a_sandbox_ends_the_processes_named_in_it_and_no_other() -> None:
    folder = clients.runtime_dir()
    other = clients.runtime_dir()
    script = "import time; time.sleep(120)"
    resident = subprocess.Popen([sys.executable, "-c", script, "--serve", f"{folder}/agc", "k"])
    bystander = subprocess.Popen([sys.executable, "-c", script, "--serve", f"{other}/agc", "k"])
    try:
        assert clients.stop_residents(folder) == [resident.pid]
        assert not Path(f"/proc/{resident.pid}").exists()  # ended and reaped
        assert bystander.poll() is None
        assert not folder.exists()
        assert folder not in clients.RUNTIME_DIRS
    finally:
        for process in (resident, bystander):
            process.kill()
            process.wait()
        clients.stop_residents(other)
