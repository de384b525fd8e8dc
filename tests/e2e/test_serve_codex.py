"""``agc serve`` end to end: a real uvicorn process, the real Codex CLI from npm
(``codex app-server``, the protocol the pinned 0.171.0 build offers; it has no
``mcp-server``), the scripted model server on 127.0.0.1.

Each chat makes the model call Codex's shell tool (:class:`ReactiveScript`: the message
``run: COMMAND`` becomes a shell call, and the reply quotes the command's output, so a
reply proves the command ran). The tests check the reply, the trace, the sealed run
(``agc-verify``), the turn ledger, a key the model streams in pieces (never sealed or
shown in clear), thread continuation, a Codex process killed mid-turn,
a crash of the service (``agc recover``), the readiness gate, and 20 concurrent
conversations.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agc.cli import agc_main
from agc.integrity import check_run
from agc.ledger import check_turn_file
from tests.e2e.clients import CACHE_DIR
from tests.e2e.model_server import ModelServer, ReactiveScript
from tests.e2e.serve_harness import ServeProcess, process_group_alive

AGC = str(Path(sys.executable).with_name("agc"))
AGC_VERIFY = str(Path(sys.executable).with_name("agc-verify"))
TERMINAL = ("completed", "failed", "cancelled")

Start = Callable[..., ServeProcess]


@pytest.fixture
def start_service(
    tmp_path: Path, codex_bin: Path, model_server: Callable[[ReactiveScript], ModelServer]
) -> Iterator[Callable[..., tuple[ServeProcess, ModelServer]]]:
    """``start_service(name, chunk=None, **options)`` starts the model server (its replies
    streamed ``chunk`` characters at a time when given) and ``agc serve``."""
    started: list[ServeProcess] = []

    def start(
        name: str = "serve", chunk: int | None = None, **options: Any
    ) -> tuple[ServeProcess, ModelServer]:
        server = model_server(ReactiveScript(chunk=chunk))
        service = ServeProcess.start(tmp_path / name, server, codex_bin, **options)
        started.append(service)
        return service, server

    yield start
    for service in started:
        leftovers = service.codex_pids()
        service.stop()
        for pid in leftovers:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


def _verify(service: ServeProcess, run_id: str, *extra: str) -> dict[str, Any]:
    done = subprocess.run(
        [AGC_VERIFY, run_id, "--store", str(service.store), "--json", *extra],
        capture_output=True,
        text=True,
        check=False,
    )
    report: dict[str, Any] = json.loads(done.stdout)
    report["exit_code"] = done.returncode
    return report


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _probe(
    service: ServeProcess, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = agc_main(
        [
            "readiness",
            "probe",
            "--url",
            service.url,
            "--environment",
            "local",
            "--live",
            "--json",
            *args,
        ]
    )
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_a_chat_runs_the_shell_tool_is_sealed_and_a_follow_up_continues_the_thread(
    start_service: Callable[..., tuple[ServeProcess, ModelServer]], tmp_path: Path
) -> None:
    keys = tmp_path / "keys"
    assert agc_main(["keys", "generate", "--out", str(keys)]) == 0
    service, server = start_service(env={"AGC_SIGNING_KEY": str(keys / "signing-key.pem")})

    (service.workspace / "NOTES.md").write_text("offered with the message\n")
    first = service.chat("run: echo agc-serve-$((6*7))", attachments=["NOTES.md"])
    result = service.wait_result(first["traceId"])
    assert result["status"] == "completed", service.describe()
    # Only a real shell expands $((6*7)): the reply quotes what the command printed.
    assert result["reply"] == {"role": "assistant", "content": "agc-e2e reply: agc-serve-42"}
    assert (result["provider"], result["protocol"], result["backend"]) == (
        "codex-stdio",
        "app-server",
        "codex-app-server",
    )
    assert result["model"] == "gpt-5-agc-e2e"

    events = service.trace(first["traceId"])
    assert len(events) == result["eventCount"]
    assert [event["seq"] for event in events] == list(range(len(events)))
    commands = [
        e["params"]["item"]
        for e in events
        if e["method"] == "item/completed" and e["params"]["item"]["type"] == "commandExecution"
    ]
    assert len(commands) == 1
    assert "echo agc-serve-$((6*7))" in commands[0]["command"]
    assert commands[0]["exitCode"] == 0
    assert "agc-serve-42" in commands[0]["aggregatedOutput"]
    ended = [e for e in events if e["method"] == "turn/completed"]
    assert ended[-1]["params"]["turn"]["status"] == "completed"

    run_id = result["audit"]["runId"]
    assert run_id == first["traceId"]
    assert result["audit"]["signed"] is True
    report = _verify(
        service, run_id, "--trusted-key", str(keys / "signing-key.pub.pem"), "--require-signature"
    )
    assert report["exit_code"] == 0, report
    assert report["complete"] is True
    assert report["signature"] == "signature-valid"
    transcript = _lines(service.store / "audit" / "transcripts" / f"{run_id}.jsonl")
    assert transcript[0]["type"] == "serve.request"
    assert transcript[0]["message"] == "run: echo agc-serve-$((6*7))"
    assert transcript[-1]["type"] == "serve.reply"
    assert transcript[-1]["reply"]["content"] == "agc-e2e reply: agc-serve-42"
    assert len(transcript) == len(events) + 2
    tools = _lines(service.store / "audit" / "tool-events" / f"{run_id}.jsonl")
    assert [(t["type"], t["tool"]) for t in tools] == [
        ("tool.call", "commandExecution"),
        ("tool.result", "commandExecution"),
    ]
    assert tools[1]["exit_code"] == 0
    # The ledger lives in the store, where the agent cannot rewrite it, not in its workspace.
    turn_file = service.store / "ledger" / result["audit"]["ledger"]["turnLog"]
    assert check_turn_file(turn_file).ok
    assert not (service.workspace / ".agent").exists()
    (start,) = [r for r in _lines(turn_file) if r["recordType"] == "direct.codex.turn_start"]
    assert [a["localPath"] for a in start["attachments"]] == ["NOTES.md"]
    assert (
        start["attachments"][0]["contentSha256"]
        == hashlib.sha256(b"offered with the message\n").hexdigest()
    )
    assert transcript[0]["attachments"] == ["NOTES.md"]
    items = [r for r in _lines(turn_file) if r["recordType"] == "direct.codex.item"]
    assert [i["itemType"] for i in items] == ["commandExecution"]
    assert agc_main(["ledger", "check", str(turn_file)]) == 0

    (process,) = service.codex_pids()
    second = service.chat("run: echo second-turn", first["conversationId"])
    follow = service.wait_result(second["traceId"])
    assert follow["status"] == "completed", service.describe()
    assert follow["reply"]["content"] == "agc-e2e reply: second-turn"
    assert follow["threadId"] == result["threadId"]
    assert follow["turn"] == 2
    assert service.codex_pids() == [process]  # the same long-lived process
    # The model saw the first turn in the second turn's history: the same thread.
    last = server.model_requests("responses")[-1].body
    history = json.dumps(last["input"])
    assert "run: echo agc-serve-$((6*7))" in history
    assert "agc-serve-42" in history
    entry = service.client.get(f"/v1/agent/sessions/{first['conversationId']}").json()
    assert (entry["status"], entry["turnCount"], entry["lastTraceId"]) == (
        "ready",
        2,
        second["traceId"],
    )
    assert _verify(service, second["traceId"])["complete"] is True


def test_a_key_the_model_streams_and_a_command_prints_is_sealed_redacted(
    start_service: Callable[..., tuple[ServeProcess, ModelServer]],
) -> None:
    # The reply quotes the start of the command's output, streamed 5 characters at a
    # time; the output is over 8 KiB, the key printed again across the first 8 KiB (a
    # read boundary, where a build streams the output).
    key = "sk-proj-" + "Rk7Qw2Lm9Xv4Tb8N" * 3
    service, _ = start_service(chunk=5)
    command = f"echo {key} is the key; head -c 8130 /dev/zero | tr '\\0' x; echo; echo {key}"
    accepted = service.chat(f"run: {command}")
    result = service.wait_result(accepted["traceId"])
    assert result["status"] == "completed", service.describe()
    assert "[REDACTED:openai-key] is the key" in result["reply"]["content"]
    events = service.trace(accepted["traceId"])
    answers = [json.dumps(result), json.dumps(events)]
    streamed = {
        event["method"]: event["params"] for event in events if event["method"].endswith("elta")
    }
    transcript = _lines(service.store / "audit" / "transcripts" / f"{accepted['traceId']}.jsonl")
    for seen in (events, transcript):  # what /trace shows and what was sealed
        rebuilt = "".join(
            e["params"]["delta"] for e in seen if e.get("method") == "item/agentMessage/delta"
        )
        assert rebuilt == result["reply"]["content"]
    reply = streamed["item/agentMessage/delta"]
    assert reply["agcJoined"]["deltas"] > 5  # Codex streamed it in pieces; one record
    (command_item,) = [
        event["params"]["item"]
        for event in events
        if event["method"] == "item/completed"
        and event["params"]["item"]["type"] == "commandExecution"
    ]
    assert command_item["aggregatedOutput"].endswith("x\n[REDACTED:openai-key]\n")
    output = streamed.get("item/commandExecution/outputDelta")
    if output is not None:  # the pinned build sends none for its shell_command tool
        assert output["delta"] == command_item["aggregatedOutput"]
    written = [path for path in service.store.rglob("*") if path.is_file()]
    written += [path for path in service.workspace.rglob("*") if path.is_file()]
    assert not [path for path in written if key.encode() in path.read_bytes()]
    assert not [text for text in answers if key in text]
    assert _verify(service, accepted["traceId"])["complete"] is True


def test_killing_codex_mid_turn_is_a_structured_failure_and_the_thread_resumes(
    start_service: Callable[..., tuple[ServeProcess, ModelServer]],
) -> None:
    service, server = start_service()
    first = service.chat("run: sleep 600")
    running = service.wait_for(first["traceId"], "tool:commandExecution")
    assert running["status"] == "running"
    (codex,) = service.codex_pids()
    killed_at = time.monotonic()
    os.killpg(codex, signal.SIGKILL)  # Codex and the sleep it started
    result = service.wait_result(first["traceId"], timeout=30)
    assert time.monotonic() - killed_at < 15
    assert result["status"] == "failed"
    assert result["error"] == {
        "code": "provider_exited",
        "message": "the agent process was killed by SIGKILL",
    }
    assert result["session"]["status"] == "idle"
    assert result["session"]["processRunning"] is False
    assert result["audit"]["sealed"] is True
    assert _verify(service, first["traceId"])["complete"] is True
    transcript = _lines(service.store / "audit" / "transcripts" / f"{first['traceId']}.jsonl")
    assert transcript[-1]["status"] == "failed"

    second = service.chat("run: echo after-the-kill", first["conversationId"])
    follow = service.wait_result(second["traceId"])
    assert follow["status"] == "completed", service.describe()
    assert follow["reply"]["content"] == "agc-e2e reply: after-the-kill"
    assert follow["threadId"] == result["threadId"]  # thread/resume in a new process
    starting = [
        e for e in service.trace(second["traceId"]) if e["method"] == "serve.session.starting"
    ]
    assert starting[0]["params"]["resumeThreadId"] == result["threadId"]
    history = json.dumps(server.model_requests("responses")[-1].body["input"])
    assert "run: sleep 600" in history  # the killed turn is part of the resumed thread


def test_a_crash_of_the_service_leaves_an_unsealed_run_that_agc_recover_seals(
    start_service: Callable[..., tuple[ServeProcess, ModelServer]],
) -> None:
    service, _ = start_service()
    first = service.chat("run: sleep 600")
    service.wait_for(first["traceId"], "tool:commandExecution")
    (codex,) = service.codex_pids()
    service.kill()
    # Codex sees its stdin close and ends; its process group goes with it.
    deadline = time.monotonic() + 20
    while Path(f"/proc/{codex}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{codex}").exists(), "Codex outlived the crashed service"
    group_left = process_group_alive(codex)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(codex, signal.SIGKILL)  # the sleep, if Codex left it behind

    run_id = first["traceId"]
    crashed = _verify(service, run_id)
    assert crashed["exit_code"] == 1
    assert crashed["complete"] is False
    assert agc_main(["recover", run_id, "--store", str(service.store)]) == 0
    # Sealed by recovery: it passes the gate only when every byte was vouched for by a
    # crash checkpoint before the kill; bytes written after the last one fail it
    # unless --allow-recovered.
    recovered = _verify(service, run_id)
    findings = [f for f in recovered["findings"] if f["code"] == "recovered"]
    assert findings
    unvouched = any(f["severity"] == "error" for f in findings)
    assert recovered["exit_code"] == (1 if unvouched else 0), recovered
    assert recovered["complete"] is not unvouched
    allowed = _verify(service, run_id, "--allow-recovered")
    assert allowed["exit_code"] == 0, allowed
    assert allowed["complete"] is True
    transcript = _lines(service.store / "audit" / "transcripts" / f"{run_id}.jsonl")
    assert transcript[0]["type"] == "serve.request"
    methods = [r.get("method") for r in transcript[1:]]
    assert "item/started" in methods  # every event up to the crash was on disk
    assert all(r["type"] == "serve.event" for r in transcript[1:])  # no reply: it was cut
    print(
        f"after the crash, the killed call's process group was {'alive' if group_left else 'gone'}"
    )


def test_the_readiness_probe_passes_at_local_and_seals_its_evidence(
    start_service: Callable[..., tuple[ServeProcess, ModelServer]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    service, _ = start_service()
    ready = service.client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["codexStdioFeasibility"]["codexVersion"] == "codex-cli 0.171.0"
    evidence = tmp_path / "evidence"
    code, answer = _probe(
        service,
        capsys,
        "--require-level",
        "LOCAL",
        "--evidence",
        "probe-local",
        "--store",
        str(evidence),
    )
    verdict = answer["verdict"]
    assert code == 0, verdict
    assert (verdict["level"], verdict["passed"], verdict["rule"]) == (
        "LOCAL",
        True,
        "live-reply-full-agent",
    )
    assert verdict["capability"] == "full-agent-session"
    assert verdict["summary"]["provider"] == "codex-stdio"
    assert verdict["summary"]["reply_non_empty"] is True
    assert check_run("probe-local", evidence).complete
    # The probe's turn is itself a sealed run of the service.
    trace_id = answer["observation"]["probe"]["traceId"]
    assert _verify(service, trace_id)["complete"] is True


def test_with_the_provider_key_unset_the_gate_says_blocked_credential(
    start_service: Callable[..., tuple[ServeProcess, ModelServer]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    service, server = start_service(env={"OPENAI_API_KEY": None})
    readyz = service.client.get("/readyz")
    assert readyz.status_code == 503
    assert readyz.json()["error"]["missingEnv"] == ["OPENAI_API_KEY"]
    code, answer = _probe(service, capsys)
    verdict = answer["verdict"]
    assert code == 1
    assert verdict["label"] == "BLOCKED/credential"
    assert verdict["summary"]["error_class"] == "provider_unavailable"
    assert server.model_requests() == []  # nothing reached the model
    assert service.codex_pids() == []  # no session was started


def test_with_codex_absent_from_path_the_gate_says_blocked_runner(
    start_service: Callable[..., tuple[ServeProcess, ModelServer]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    service, _ = start_service(codex_on_path=False)
    code, answer = _probe(service, capsys)
    verdict = answer["verdict"]
    assert code == 1
    assert verdict["label"] == "BLOCKED/runner"
    assert verdict["runner_blockers"] == ["codex_cli_binary_missing"]


def test_a_bearer_token_is_required_when_set(
    start_service: Callable[..., tuple[ServeProcess, ModelServer]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token = "e2e-token-" + "x" * 24
    service, _ = start_service(token=token)
    refused = httpx.post(f"{service.url}/v1/agent/chat", json={"message": "hi"}, trust_env=False)
    assert refused.status_code == 401
    assert token not in refused.text
    code, answer = _probe(service, capsys)
    assert answer["verdict"]["label"] == "BLOCKED/credential"  # the probe was refused
    monkeypatch.setenv("E2E_SERVE_TOKEN", token)
    # A loopback service passes at LOCAL at most: asked for, as a live probe asks LIVE.
    code, answer = _probe(
        service, capsys, "--auth-env", "E2E_SERVE_TOKEN", "--require-level", "LOCAL"
    )
    assert code == 0
    assert answer["verdict"]["level"] == "LOCAL"
    assert token not in json.dumps(answer)
    assert token not in service.log.read_text()


LOAD_CONVERSATIONS = 20


def test_20_concurrent_conversations_complete_verify_and_are_reaped(
    start_service: Callable[..., tuple[ServeProcess, ModelServer]],
    e2e_figures: list[tuple[str, str]],
) -> None:
    idle_s, retention_s = 3.0, 8.0
    service, server = start_service(
        args=[
            "--idle-timeout",
            str(idle_s),
            "--conversation-retention",
            str(retention_s),
            "--max-sessions",
            str(LOAD_CONVERSATIONS),
            "--handshake-timeout",
            "60",
        ]
    )
    figures: dict[str, Any] = {"conversations": LOAD_CONVERSATIONS}

    async def load() -> list[dict[str, Any]]:
        async with httpx.AsyncClient(base_url=service.url, timeout=60, trust_env=False) as client:
            peak = {"live": 0, "codex": 0}

            async def one(index: int) -> dict[str, Any]:
                submitted = time.monotonic()
                answer = await client.post(
                    "/v1/agent/chat", json={"message": f"run: echo load-{index}-$(( {index} * 3 ))"}
                )
                assert answer.status_code == 202, answer.text
                accepted = time.monotonic()
                trace_id = answer.json()["traceId"]
                while True:
                    result: dict[str, Any] = (
                        await client.get(f"/v1/agent/chat/result/{trace_id}")
                    ).json()
                    if result["status"] in TERMINAL:
                        break
                    await asyncio.sleep(0.1)
                result["_submitMs"] = (accepted - submitted) * 1000
                result["_turnMs"] = (time.monotonic() - submitted) * 1000
                result["_index"] = index
                return result

            async def sample() -> None:
                while True:
                    registry = (await client.get("/v1/agent/sessions")).json()
                    peak["live"] = max(peak["live"], registry["liveSessions"])
                    peak["codex"] = max(peak["codex"], len(service.codex_pids()))
                    await asyncio.sleep(0.2)

            sampler = asyncio.create_task(sample())
            started = time.monotonic()
            results = await asyncio.gather(*(one(i) for i in range(LOAD_CONVERSATIONS)))
            figures["wallS"] = round(time.monotonic() - started, 2)
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler
            figures["peakLiveSessions"] = peak["live"]
            figures["peakCodexProcesses"] = peak["codex"]
            return list(results)

    results = asyncio.run(load())
    failed = [r for r in results if r["status"] != "completed"]
    assert not failed, f"{failed[:2]}\n{service.describe()}"
    for result in results:
        index = result["_index"]
        assert result["reply"]["content"] == f"agc-e2e reply: load-{index}-{index * 3}"
    threads = {r["threadId"] for r in results}
    assert len(threads) == LOAD_CONVERSATIONS  # one thread per conversation

    verify_started = time.monotonic()
    for result in results:
        report = check_run(result["traceId"], service.store)
        assert report.complete, report.missing
        turn_log = result["audit"]["ledger"]["turnLog"]
        assert check_turn_file(service.store / "ledger" / turn_log).ok
    figures["verifyAllS"] = round(time.monotonic() - verify_started, 2)
    assert _verify(service, "--all")["exit_code"] == 0  # every run and the store chain

    turn_ms = sorted(r["_turnMs"] for r in results)
    figures["turnMsP50"] = round(statistics.median(turn_ms))
    figures["turnMsMax"] = round(turn_ms[-1])
    figures["submitMsMax"] = round(max(r["_submitMs"] for r in results))
    figures["modelRequests"] = len(server.model_requests("responses"))

    # Idle timeout: every process ends, every entry says so.
    deadline = time.monotonic() + idle_s + 10
    while True:
        registry = service.client.get("/v1/agent/sessions").json()
        if registry["liveSessions"] == 0 and not service.codex_pids():
            break
        assert time.monotonic() < deadline, registry
        time.sleep(0.2)
    figures["reapedAfterS"] = round(time.monotonic() - (deadline - idle_s - 10), 2)
    assert len(registry["conversations"]) == LOAD_CONVERSATIONS
    assert {(c["status"], c["processRunning"]) for c in registry["conversations"]} == {
        ("idle", False)
    }
    # Retention: idle entries are then forgotten; nothing is left behind.
    deadline = time.monotonic() + retention_s + 10
    while service.client.get("/v1/agent/sessions").json()["conversations"]:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    figures["registryEmpty"] = True

    target = CACHE_DIR / "serve-load.json"
    with contextlib.suppress(OSError):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    summary = ", ".join(f"{k}={v}" for k, v in figures.items())
    e2e_figures.append(("agc serve, 20 concurrent conversations (codex app-server)", summary))
    print(f"agc serve load: {summary}")
