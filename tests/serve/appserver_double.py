"""A stand-in for ``codex app-server`` speaking its stdio JSON-RPC, for protocol tests.

Run as ``python appserver_double.py MODE``. It answers ``initialize``,
``thread/start``, ``thread/resume``, ``turn/start`` and ``turn/interrupt`` with the
shapes of the Codex app-server protocol (v2) and plays one turn per ``turn/start``:

* ``normal``: a command item, then the agent message ``reply: <the user's text>``;
* ``approval``: asks ``item/commandExecution/requestApproval`` first and replies with
  the decision it got;
* ``exit``: exits with code 3 after the command item started;
* ``hang``: waits for ``turn/interrupt``;
* ``silent``: never answers ``initialize``;
* ``spawn``: starts ``sleep 300`` in its process group and writes its pid to stderr;
* ``deep``: sends notifications nested 5000 (deeper than the parser's stack) and 300
  (deeper than the trace's walks) arrays deep before the command item, then plays
  ``normal``.

Extensions, in every mode: ``skills/extraRoots/set`` keeps the roots and
``skills/list`` answers with one skill per folder of a root holding a ``SKILL.md`` (a
folder named ``broken`` is an error instead); after ``thread/start`` or
``thread/resume`` it sends ``mcpServer/startupStatus/updated`` for each
``name=status`` of ``$DOUBLE_MCP`` (comma-separated; ``failed`` with an error naming
a key-shaped string). Its arguments are written to ``$DOUBLE_ARGV`` when set.

It writes one line with a key-shaped string to stderr, for the redaction test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

MODE = sys.argv[1] if len(sys.argv) > 1 else "normal"
FAKE_KEY = "sk-proj-" + "Q" * 40


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def read() -> dict[str, Any] | None:
    line = sys.stdin.readline()
    return json.loads(line) if line else None


def notify(method: str, params: dict[str, Any]) -> None:
    send({"method": method, "params": params})


def main() -> None:
    print(f"starting with {FAKE_KEY}", file=sys.stderr, flush=True)
    if MODE == "spawn":
        child = subprocess.Popen(["sleep", "300"])
        print(f"child {child.pid}", file=sys.stderr, flush=True)
    if os.environ.get("DOUBLE_ARGV"):
        Path(os.environ["DOUBLE_ARGV"]).write_text(json.dumps(sys.argv[2:]))
    pending_turn = None
    roots: list[str] = []
    while True:
        message = read()
        if message is None:
            return
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "initialize":
            if MODE == "silent":
                continue
            send({"id": request_id, "result": {"userAgent": "double/1", "codexHome": "/x"}})
        elif method == "skills/extraRoots/set":
            roots = list(params["extraRoots"])
            send({"id": request_id, "result": {}})
        elif method == "skills/list":
            skills, errors = [], []
            for root in roots:
                for folder in sorted(Path(root).iterdir()):
                    path = str(folder / "SKILL.md")
                    if folder.name == "broken":
                        errors.append({"path": path, "message": "missing field `description`"})
                    elif (folder / "SKILL.md").is_file():
                        skills.append(
                            {"name": folder.name, "path": path, "scope": "user", "enabled": True}
                        )
            skills.append({"name": "sys", "path": "/sys/SKILL.md", "scope": "system"})
            entry = {"cwd": params["cwds"][0], "skills": skills, "errors": errors}
            send({"id": request_id, "result": {"data": [entry]}})
        elif method in ("thread/start", "thread/resume"):
            thread_id = params.get("threadId", "thr-1")
            send(
                {
                    "id": request_id,
                    "result": {
                        "thread": {"id": thread_id, "sessionId": "sess-" + thread_id},
                        "model": "double-model",
                    },
                }
            )
            for server in filter(None, os.environ.get("DOUBLE_MCP", "").split(",")):
                name, status = server.split("=")
                notify("mcpServer/startupStatus/updated", {"name": name, "status": "starting"})
                if status != "starting":
                    error = f"exited: token {FAKE_KEY}" if status == "failed" else None
                    notify(
                        "mcpServer/startupStatus/updated",
                        {"name": name, "status": status, "error": error},
                    )
        elif method == "turn/start":
            turn_id = f"turn-{request_id}"
            text = params["input"][0]["text"]
            send({"id": request_id, "result": {"turn": {"id": turn_id, "status": "inProgress"}}})
            notify("turn/started", {"threadId": params["threadId"], "turn": {"id": turn_id}})
            for depth in (5000, 300) if MODE == "deep" else ():
                nested = "[" * depth + "]" * depth
                sys.stdout.write(f'{{"method": "item/updated", "params": {{"x": {nested}}}}}\n')
                sys.stdout.flush()
            item = {
                "type": "commandExecution",
                "id": "call_1",
                "command": "echo hi",
                "status": "inProgress",
            }
            notify("item/started", {"item": item, "turnId": turn_id})
            decision = None
            if MODE == "approval":
                send(
                    {
                        "id": 99,
                        "method": "item/commandExecution/requestApproval",
                        "params": {"itemId": "call_1", "turnId": turn_id},
                    }
                )
                answer = read()
                decision = (answer or {}).get("result", {}).get("decision")
            if MODE == "exit":
                sys.exit(3)
            if MODE == "hang":
                pending_turn = turn_id
                continue
            done = {**item, "status": "completed", "exitCode": 0, "aggregatedOutput": "hi\n"}
            notify("item/completed", {"item": done, "turnId": turn_id})
            reply = f"reply: {text}" if decision is None else f"decision: {decision}"
            notify(
                "item/completed",
                {"item": {"type": "agentMessage", "id": "m1", "text": reply}, "turnId": turn_id},
            )
            notify(
                "turn/completed",
                {
                    "threadId": params["threadId"],
                    "turn": {"id": turn_id, "status": "completed", "items": []},
                },
            )
        elif method == "turn/interrupt":
            send({"id": request_id, "result": {}})
            if pending_turn is not None:
                notify(
                    "turn/completed",
                    {"turn": {"id": pending_turn, "status": "interrupted", "error": None}},
                )
                pending_turn = None
        elif request_id is not None:
            send({"id": request_id, "error": {"code": -32601, "message": f"unknown {method}"}})


if __name__ == "__main__":
    main()
