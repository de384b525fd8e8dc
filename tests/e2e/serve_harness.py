"""Run ``agc serve`` as a real uvicorn process in front of the real Codex CLI.

:meth:`ServeProcess.start` makes a throwaway world under a test folder (a workspace, a
``CODEX_HOME`` pointed at the scripted model server, an agc store, a ``bin/`` folder
whose ``codex`` is the pinned binary and comes first on ``PATH``) and starts
``agc serve --port 0`` in its own process group; the port comes from its
``--port-file``. The model provider's key is a dummy in ``OPENAI_API_KEY`` (the env var
the service checks by default), so "key unset" is a test of its own.

::

    with ModelServer(ReactiveScript()) as server:
        service = ServeProcess.start(tmp_path, server, codex_bin)
        accepted = service.chat("run: echo hi")
        result = service.wait_result(accepted["traceId"])
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx

from tests.e2e.clients import API_KEY, codex_env, codex_home
from tests.e2e.model_server import ModelServer

__all__ = ["ServeProcess", "children_of", "process_group_alive"]

AGC: Final = Path(sys.executable).with_name("agc")
START_TIMEOUT: Final = 60.0


def children_of(pid: int) -> list[int]:
    """Pids whose parent is ``pid`` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid …; comm may hold spaces and parentheses.
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def process_group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class ServeProcess:
    """A running ``agc serve`` (see the module docstring)."""

    root: Path
    process: subprocess.Popen[bytes]
    url: str
    workspace: Path
    codex_home: Path
    store: Path
    env: dict[str, str]
    log: Path
    codex_logs: Path
    token: str | None = None
    _client: httpx.Client | None = field(default=None, repr=False)

    @classmethod
    def start(
        cls,
        root: Path,
        server: ModelServer,
        codex_bin: Path,
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str | None] | None = None,
        codex_on_path: bool = True,
        token: str | None = None,
    ) -> ServeProcess:
        """Start the service; ``env`` entries set (or with ``None`` remove) env vars."""
        root.mkdir(parents=True, exist_ok=True)
        workspace = root / "workspace"
        workspace.mkdir()
        home = codex_home(root, server, env_key="OPENAI_API_KEY")
        store = root / "store"
        bin_dir = root / "bin"
        bin_dir.mkdir()
        if codex_on_path:
            (bin_dir / "codex").symlink_to(codex_bin)
        environment = codex_env(root, server, home)
        environment.pop("AGC_E2E_API_KEY", None)
        environment["OPENAI_API_KEY"] = API_KEY
        system_path = [p for p in environment["PATH"].split(os.pathsep) if p]
        environment["PATH"] = os.pathsep.join(
            [str(bin_dir), *(p for p in system_path if not (Path(p) / "codex").exists())]
        )
        environment["PYTHONUNBUFFERED"] = "1"
        if token is not None:
            environment["AGC_SERVE_TOKEN"] = token
        for name, value in (env or {}).items():
            if value is None:
                environment.pop(name, None)
            else:
                environment[name] = value
        port_file = root / "serve-port.json"
        log = root / "serve.log"
        codex_logs = root / "codex-logs"
        argv = [
            str(AGC),
            "serve",
            "--port",
            "0",
            "--port-file",
            str(port_file),
            "--workspace",
            str(workspace),
            "--codex-home",
            str(home),
            "--store",
            str(store),
            "--codex-log-dir",
            str(codex_logs),
            *args,
        ]
        with log.open("wb") as out:
            process = subprocess.Popen(
                argv,
                cwd=root,
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while not port_file.exists():
            if process.poll() is not None:
                raise AssertionError(
                    f"agc serve exited {process.returncode}:\n{log.read_text(errors='replace')}"
                )
            if time.monotonic() > deadline:
                process.kill()
                raise AssertionError(f"agc serve did not start:\n{log.read_text(errors='replace')}")
            time.sleep(0.05)
        url = json.loads(port_file.read_text())["url"]
        return cls(root, process, url, workspace, home, store, environment, log, codex_logs, token)

    # -- HTTP ------------------------------------------------------------------------------

    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            headers = {} if self.token is None else {"Authorization": f"Bearer {self.token}"}
            self._client = httpx.Client(
                base_url=self.url, timeout=30.0, trust_env=False, headers=headers
            )
        return self._client

    def chat(
        self,
        message: str,
        conversation_id: str | None = None,
        *,
        attachments: Sequence[str] = (),
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"message": message}
        if conversation_id is not None:
            body["conversationId"] = conversation_id
        if attachments:
            body["attachments"] = list(attachments)
        answer = self.client.post("/v1/agent/chat", json=body)
        assert answer.status_code == 202, answer.text
        data: dict[str, Any] = answer.json()
        return data

    def result(self, trace_id: str) -> dict[str, Any]:
        answer = self.client.get(f"/v1/agent/chat/result/{trace_id}")
        assert answer.status_code == 200, answer.text
        data: dict[str, Any] = answer.json()
        return data

    def wait_result(self, trace_id: str, timeout: float = 120.0) -> dict[str, Any]:
        """Poll ``/result`` until the turn is terminal."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.result(trace_id)
            if result["status"] in ("completed", "failed", "cancelled"):
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"turn {trace_id} still {result['status']}: {result}")
            time.sleep(0.1)

    def wait_for(self, trace_id: str, waiting_for: str, timeout: float = 60.0) -> dict[str, Any]:
        """Poll ``/result`` until ``waitingFor`` is ``waiting_for``."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.result(trace_id)
            if result.get("waitingFor") == waiting_for:
                return result
            assert result["status"] in ("queued", "running"), result
            if time.monotonic() > deadline:
                raise AssertionError(f"turn {trace_id} never waited for {waiting_for}: {result}")
            time.sleep(0.05)

    def trace(self, trace_id: str) -> list[dict[str, Any]]:
        """Every event of the trace, page by page."""
        events: list[dict[str, Any]] = []
        after = -1
        while True:
            answer = self.client.get(
                f"/v1/agent/chat/trace/{trace_id}", params={"after": after, "limit": 50}
            )
            assert answer.status_code == 200, answer.text
            page = answer.json()
            events += page["events"]
            after = page["nextAfter"]
            if not page["hasMore"]:
                return events

    # -- processes -------------------------------------------------------------------------

    def codex_pids(self) -> list[int]:
        """The Codex processes the service started (its direct children running codex)."""
        return [
            pid
            for pid in children_of(self.process.pid)
            if any(Path(part).name == "codex" for part in cmdline(pid)[:1])
        ]

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM, wait for the exit code."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.returncode

    def kill(self) -> None:
        """SIGKILL the service (a crash): its group only, not the Codex sessions'."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def describe(self) -> str:
        logs = (
            [self.log, *sorted(self.codex_logs.glob("*.log"))]
            if self.codex_logs.exists()
            else [self.log]
        )
        parts = []
        for path in logs:
            with contextlib.suppress(OSError):
                parts.append(f"--- {path.name} ---\n{path.read_text(errors='replace')[-3000:]}")
        return "\n".join(parts)
