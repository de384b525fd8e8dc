"""``agc serve`` run in this process on a real socket: it writes the port file once
listening, answers the health check, says how it listens, and a SIGTERM stops it
cleanly (exit 0, "stopped (SIGTERM)"); the bearer token gates the API. No Codex is
started: no conversation is opened."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from agc.cli.app import main as agc_main


def serve_while(
    tmp_path: Path,
    visit: Callable[[str], Any],
    *extra: str,
) -> tuple[int, Any, str]:
    """Run ``agc serve`` here until ``visit(url)`` (called from another thread once the
    port file is written) has returned, then SIGTERM this process, which the server
    takes as a stop. Returns the exit code, what ``visit`` returned and the port file."""
    port_file = tmp_path / "port.json"
    (tmp_path / "w").mkdir(exist_ok=True)
    outcome: dict[str, Any] = {}

    def client() -> None:
        deadline = time.monotonic() + 30
        try:
            while not port_file.exists():
                if time.monotonic() > deadline:
                    raise AssertionError("agc serve did not write its port file")
                time.sleep(0.01)
            outcome["value"] = visit(json.loads(port_file.read_text())["url"])
        except BaseException as exc:  # reported by the test thread
            outcome["error"] = exc
        finally:
            os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=client)
    thread.start()
    try:
        code = agc_main([
            "serve", "--port", "0", "--port-file", str(port_file),
            "--workspace", str(tmp_path / "w"), "--store", str(tmp_path / "store"),
            "--codex-home", str(tmp_path / "home"), "--codex-bin", str(tmp_path / "no-codex"),
            "--protocol", "app-server", "--no-extensions", *extra,
        ])  # fmt: skip
    finally:
        thread.join(30)
    if "error" in outcome:
        raise outcome["error"]
    return code, outcome["value"], port_file.read_text()


@pytest.fixture(autouse=True)
def _sigterm_default() -> Any:
    """The test owns SIGTERM's handler while serve runs, and puts it back."""
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGTERM, previous)


def test_serve_listens_answers_health_and_stops_cleanly_on_sigterm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGC_SERVE_TOKEN", raising=False)

    def visit(url: str) -> int:
        with httpx.Client(base_url=url, trust_env=False, timeout=10) as http:
            return http.get("/healthz").status_code

    code, status, port_file = serve_while(tmp_path, visit)
    assert code == 0
    assert status == 200
    info = json.loads(port_file)
    assert info["pid"] == os.getpid()
    assert info["url"] == f"http://127.0.0.1:{info['port']}"
    err = capsys.readouterr().err
    assert f"listening on {info['url']}" in err
    assert "no token (loopback)" in err
    assert "stopped (SIGTERM); running turns were sealed" in err


def test_serve_with_a_token_refuses_a_request_without_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "t" * 40
    monkeypatch.setenv("AGC_TEST_TOKEN", token)

    def visit(url: str) -> tuple[int, int]:
        with httpx.Client(base_url=url, trust_env=False, timeout=10) as http:
            body = {"message": "hi"}
            without = http.post("/v1/agent/chat", json=body).status_code
            wrong = http.post(
                "/v1/agent/chat", json=body, headers={"authorization": "Bearer " + "x" * 40}
            ).status_code
            return without, wrong

    code, statuses, _ = serve_while(tmp_path, visit, "--token-env", "AGC_TEST_TOKEN")
    assert code == 0
    assert statuses == (401, 401)
    err = capsys.readouterr().err
    assert "bearer token required" in err
    assert token not in err  # the token is never printed
