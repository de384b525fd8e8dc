"""What capturing a session through the clients' hooks costs the agent, as ratios.

Two measurements, each against a baseline measured in the same run:

* **A scripted session with hooks ÷ without.** The real client (Claude Code, Codex CLI,
  Gemini CLI, pinned in ``tests/e2e/clients.py``) runs one headless turn of
  :data:`CALLS` shell calls (``true``) against the scripted model server of
  ``tests/e2e`` on 127.0.0.1, which answers at once, so the hooks' cost is not hidden
  behind a model's latency. Variants, interleaved: no hooks; every capture event hooked
  to ``cat > /dev/null`` (what running any hook process costs the client); to a Python
  process that only reads its stdin (the floor of any hook written in Python); to the
  command ``agc hooks install`` installs, agc's hook client
  (``python -I -S …/agc/cli/_hookclient.py --client C --store S``), with agc's resident
  capture process already running (as it is after the user's first event; the hook
  client started it on a warm-up event), installed as ``agc hooks install`` does: the
  per-tool-call events (:data:`agc.capture.BACKGROUND_EVENTS`) as HTTP hooks to the
  resident process for Claude Code (the settings file written by
  :func:`agc.capture.install_hooks` itself, with the port and secret
  :func:`agc.capture.keep_http_hook` keeps), as the client's background (``async``)
  hooks for Codex; for those clients also with every event a waited-for command (as
  installed before), and the floors: the tool events in the background to ``cat`` and
  to a Python reader, and for Claude Code as HTTP hooks to a Python HTTP server of the
  benchmark's that only reads the body and answers 200. The figure is the client
  process's wall time.
  Target: agc's ≤ 1.25x the session without hooks.
* **agc's hook's own time per event**, as a whole process (start, the event appended
  and checkpointed in the store), fed a real payload of the client from
  ``tests/fixtures/hooks/<client>/``: the hook client (resident process running) and
  ``agc hook`` (the whole capture in its own process, as the hook client does when no
  resident process answers), next to ``python -c pass`` and ``python -I -S -c pass``
  on the same interpreter.

``AGC_BENCH_HOOK_CLIENTS`` (comma-separated: ``claude-code,codex,gemini``) measures the
sessions of those clients only (the per-event figures are measured for every client).
``AGC_BENCH_HOOK_ROUNDS`` sets the rounds of the per-event and last-records rows (by
default 3 with ``--quick``, else ``EVENT_ROUNDS``, or ``--rounds`` when more; the
harness's own test runs the same code with one round).

Codex runs a hook only once it is trusted: the benchmark passes
``--dangerously-bypass-hook-trust`` to every Codex variant alike (it decides whether the
hooks run, not what they cost). Clients that cannot be installed (no node/npm) are
skipped with the reason. ``--quick`` measures only the per-event figures.

The resident process's socket folder is a fresh one of the benchmark's
(``XDG_RUNTIME_DIR``); the resident is killed at the end.

Run: ``python -m benchmarks --only hook_capture --rounds 1 --name hook-capture``.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import tomlkit
from tests.e2e.agents import ClaudeSandbox, ClientResult, CodexSandbox, GeminiSandbox, _run
from tests.e2e.clients import ClientName, ClientUnavailableError, ensure_client, gemini_settings
from tests.e2e.model_server import Answer, ModelServer, Script, ShellCall
from tests.e2e.record_hooks import FIXTURES

import agc.cli
from agc.capture import (
    BACKGROUND_EVENTS,
    CLIENT_EVENTS,
    HttpHook,
    hook_client_command,
    install_hooks,
    keep_http_hook,
)
from benchmarks.harness import Timing, Variant, command_variant, interleaved
from benchmarks.report import Row, Section, Target

__all__ = ["CALLS", "CAPTURE_EVENTS", "bench_hook_capture"]

CALLS: Final = 50
TARGET_SLOWDOWN: Final = 1.25
EVENT_ROUNDS: Final = 11  # a process start is milliseconds: noisy on a shared machine
SESSION_ROUNDS: Final = 3  # a session is seconds long; per-event rounds use ctx.rounds
SESSION_TIMEOUT: Final = 1800.0  # seconds; a slow hook makes a session minutes long

#: The events a capture hooks, per client: the ones ``agc hooks install`` installs.
CAPTURE_EVENTS: Final[Mapping[str, tuple[str, ...]]] = {str(k): v for k, v in CLIENT_EVENTS.items()}

_PINS: Final[dict[str, ClientName]] = {
    "claude-code": "claude",
    "codex": "codex",
    "gemini": "gemini",
}

#: agc's hook client with every event synchronous (as installed before background hooks).
SYNC_VARIANT: Final = "agc hook client, every event waited for"

#: The floors with the per-tool-call events in the background (clients that have it).
BACKGROUND_CAT: Final = "shell hook (cat), tool events in the background"
BACKGROUND_FLOOR: Final = "python hook floor, tool events in the background"

#: Claude Code's tool events as HTTP hooks to a server that only reads the body and
#: answers 200, the other events to ``cat``: what any HTTP hook costs the client.
HTTP_FLOOR: Final = "HTTP hook floor (tool events), cat for the others"

#: The cheapest hook process: the client's own cost of running a hook.
SHELL_HOOK: Final = "cat > /dev/null"

#: The floor of a hook written in Python: start, read the event, exit 0.
FLOOR_HOOK: Final = "import sys; sys.stdin.buffer.read()"


def hook_client_argv(client: str, store: Path, http: HttpHook | None = None) -> list[str]:
    """The hook command ``agc hooks install`` installs, as argv (see
    :func:`agc.capture.hook_client_command`)."""
    script = Path(agc.cli.__file__).with_name("_hookclient.py")
    command = hook_client_command(
        sys.executable,
        str(script),
        client,  # type: ignore[arg-type]
        store=str(store),
        http_port=None if http is None else http.port,
    )
    return shlex.split(command)


class FloorServer:
    """An HTTP server on 127.0.0.1 that reads each request's body and answers 200, in a
    thread (the floor of any HTTP hook)."""

    def __init__(self) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def handler(self) -> dict[str, Any]:
        return {"type": "http", "url": f"http://127.0.0.1:{self.port}/floor", "timeout": 5}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _clients() -> list[str]:
    """The clients whose sessions are measured (``AGC_BENCH_HOOK_CLIENTS``, else all)."""
    chosen = os.environ.get("AGC_BENCH_HOOK_CLIENTS", "")
    names = [name.strip() for name in chosen.split(",") if name.strip()]
    unknown = [name for name in names if name not in _PINS]
    if unknown:
        raise ValueError(f"AGC_BENCH_HOOK_CLIENTS: unknown client(s) {', '.join(unknown)}")
    return names or list(_PINS)


def stop_resident(runtime: Path) -> None:
    """Kill the resident capture process whose socket folder is ``runtime/agc``."""
    for lock in (runtime / "agc").glob("*.lock"):
        text = lock.read_text().strip()
        if text.isdigit():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(text), signal.SIGKILL)


def agc_command() -> str | None:
    """The ``agc`` console script beside this Python, if it has the ``hook`` command."""
    agc = Path(sys.executable).parent / "agc"
    if not agc.exists():
        return None
    done = subprocess.run([str(agc), "hook", "--help"], capture_output=True, check=False)
    return str(agc) if done.returncode == 0 else None


def script(calls: int) -> Script:
    """``calls`` shell calls of ``true N`` (each different: the Gemini CLI stops a turn
    that repeats one call, "Loop detected"), then the final answer."""
    return Script(
        [*(ShellCall(f"true {i}", f"call_bench_{i}") for i in range(calls)), Answer("done")]
    )


@dataclass(frozen=True)
class Session:
    """One client's headless session runner, with or without hooks."""

    client: str
    binary: Path
    calls: int

    def run(
        self,
        root: Path,
        hook: Callable[[str], str] | None,
        background: frozenset[str] = frozenset(),
        http: Callable[[ClaudeSandbox], None] | None = None,
    ) -> ClientResult:
        """A fresh sandbox under ``root``, ``hook(event)`` on every capture event (or no
        hooks), those of ``background`` as the client's background (``async``) hooks,
        one turn; the finished client process (AssertionError if it failed). Claude
        Code: ``http(sandbox)`` writes the hooks into its settings file instead."""
        root.mkdir(parents=True, exist_ok=True)
        events = CAPTURE_EVENTS[self.client]
        with ModelServer(script(self.calls)) as server:
            if self.client == "claude-code":
                claude = ClaudeSandbox.create(root, server, self.binary)
                if http is not None:
                    http(claude)
                elif hook is not None:
                    claude.add_hooks(hook, events)
                    _json_background(claude.config / "settings.json", background)
                done = claude.run("run the calls", str(uuid.uuid4()), timeout=SESSION_TIMEOUT)
            elif self.client == "codex":
                codex = CodexSandbox.create(root, server, self.binary)
                if hook is not None:
                    codex.add_hooks(hook, events)
                    _toml_background(codex.home / "config.toml", background)
                argv = codex._argv("--dangerously-bypass-hook-trust", "run the calls")
                done = _run(argv, codex.env, codex.work, SESSION_TIMEOUT)
            else:
                gemini = GeminiSandbox.create(root, server, self.binary)
                if hook is not None:
                    gemini.add_hooks(hook, events)
                    _json_background(gemini_settings(gemini.home), background)
                done = gemini.run("run the calls", timeout=SESSION_TIMEOUT)
            calls = sum(1 for r in server.model_requests() if isinstance(r.step, ShellCall))
        if done.returncode != 0 or calls < self.calls:
            raise AssertionError(f"{self.client} session failed ({calls} calls)\n{done.describe()}")
        return done


def _json_background(path: Path, events: frozenset[str]) -> None:
    """Mark the command hooks of ``events`` in a JSON settings file ``"async": true``."""
    if not events:
        return
    settings = json.loads(path.read_text(encoding="utf-8"))
    for event, groups in settings.get("hooks", {}).items():
        if event in events:
            for group in groups:
                for handler in group["hooks"]:
                    handler["async"] = True
    path.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")


def _toml_background(path: Path, events: frozenset[str]) -> None:
    """Mark the command hooks of ``events`` in a Codex ``config.toml`` ``async = true``."""
    if not events:
        return
    doc = tomlkit.parse(path.read_text(encoding="utf-8"))
    for event in events:
        for group in doc.get("hooks", {}).get(event, ()):
            for handler in group["hooks"]:
                handler["async"] = True
    path.write_text(doc.as_string(), encoding="utf-8")


def _session_variants(
    session: Session, work: Path, agc: str | None, runtime: Path, floor_server: FloorServer
) -> tuple[list[Variant], dict[str, Path]]:
    counter = iter(range(1_000_000))
    stores: dict[str, Path] = {}

    def variant(
        name: str,
        hook: Callable[[str], str] | None,
        background: frozenset[str] = frozenset(),
        http: Callable[[ClaudeSandbox], None] | None = None,
    ) -> Variant:
        def run() -> float:
            return session.run(work / f"{name}-{next(counter)}", hook, background, http).seconds

        return Variant(name, run)

    floor = shlex.join([sys.executable, "-c", FLOOR_HOOK])
    variants = [
        variant("no hooks", None),
        variant("shell hook (cat)", lambda _event: SHELL_HOOK),
        variant("python hook floor", lambda _event: floor),
    ]
    store = work / "store"
    stores["agc hook client"] = store
    store.mkdir(parents=True, exist_ok=True)
    background = BACKGROUND_EVENTS[session.client]  # type: ignore[index]
    if session.client == "claude-code":
        # As `agc hooks install --client claude-code` writes it: the tool events as
        # HTTP hooks to agc's resident process, the others to the hook client.
        state = work / "state"
        state_env = {"XDG_STATE_HOME": str(state)}
        http = keep_http_hook(state_env)
        argv = hook_client_argv(session.client, store, http)
        _warm_resident(argv, runtime, session.client, state)

        def install(claude: ClaudeSandbox) -> None:
            # The hooks run in the client's environment: the benchmark's socket folder
            # and the state folder that holds the secret.
            claude.env |= {"XDG_RUNTIME_DIR": str(runtime), "XDG_STATE_HOME": str(state)}
            install_hooks(
                "claude-code",
                "user",
                command=shlex.join(argv),
                environ={"HOME": claude.env["HOME"], "CLAUDE_CONFIG_DIR": str(claude.config)},
                http=http.handler("claude-code", str(store)),
            )

        def http_floor(claude: ClaudeSandbox) -> None:
            settings = claude.config / "settings.json"
            _json_hooks_with(settings, SHELL_HOOK, background, floor_server)

        variants.append(variant(BACKGROUND_CAT, lambda _event: SHELL_HOOK, background))
        variants.append(variant(HTTP_FLOOR, None, http=http_floor))
        variants.append(variant("agc hook client", None, http=install))
        plain = shlex.join(hook_client_argv(session.client, store))
        command = f"XDG_RUNTIME_DIR={shlex.quote(str(runtime))} {plain}"
        variants.append(variant(SYNC_VARIANT, lambda _event: command))
        return variants, stores
    argv = hook_client_argv(session.client, store)
    _warm_resident(argv, runtime, session.client)
    command = f"XDG_RUNTIME_DIR={shlex.quote(str(runtime))} {shlex.join(argv)}"
    if background:
        # The floors of a background hook: what the client pays for starting one.
        variants.append(variant(BACKGROUND_CAT, lambda _event: SHELL_HOOK, background))
        variants.append(variant(BACKGROUND_FLOOR, lambda _event: floor, background))
        # As `agc hooks install` writes it: the per-tool-call events in the background.
        variants.append(variant("agc hook client", lambda _event: command, background))
        variants.append(variant(SYNC_VARIANT, lambda _event: command))
    else:
        variants.append(variant("agc hook client", lambda _event: command))
    return variants, stores


def _json_hooks_with(
    path: Path, command: str, over_http: frozenset[str], server: FloorServer
) -> None:
    """Claude Code's settings with ``command`` for every capture event but those of
    ``over_http``, which are HTTP hooks to ``server``."""
    settings = json.loads(path.read_text(encoding="utf-8"))
    hooks = settings.setdefault("hooks", {})
    for event in CAPTURE_EVENTS["claude-code"]:
        handler = (
            server.handler() if event in over_http else {"type": "command", "command": command}
        )
        hooks[event] = [{"hooks": [handler]}]
    path.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")


def _warm_resident(
    argv: Sequence[str], runtime: Path, client: str, state: Path | None = None
) -> None:
    """Start the resident capture process (the hook client's first event does) and wait
    until it serves."""
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    if state is not None:
        env["XDG_STATE_HOME"] = str(state)
    event = b'{"session_id": "warm-up", "hook_event_name": "SessionStart"}'
    subprocess.run(list(argv), input=event, env=env, capture_output=True, check=True)
    deadline = time.monotonic() + 120
    while not list((runtime / "agc").glob("*.sock")):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{client}: agc's resident capture process never started")
        time.sleep(0.05)


def _event_variants(client: str, agc: str | None, store: Path, runtime: Path) -> list[Variant]:
    variants = []
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    store.mkdir(parents=True, exist_ok=True)
    _warm_resident(hook_client_argv(client, store), runtime, client)
    for event in ("PreToolUse", "PostToolUse", "BeforeTool", "AfterTool"):
        fixture = FIXTURES / client / f"{event}.json"
        if not fixture.is_file():
            continue
        payload = fixture.read_bytes()
        commands = {"hook client": hook_client_argv(client, store)}
        if agc is not None:
            commands["agc hook"] = [agc, "hook", "--client", client, "--store", str(store)]
        for name, argv in commands.items():

            def run(argv: Sequence[str] = argv, payload: bytes = payload) -> None:
                done = subprocess.run(
                    list(argv), input=payload, capture_output=True, env=env, check=False
                )
                if done.returncode != 0 or done.stdout or done.stderr:
                    raise RuntimeError(
                        f"{shlex.join(argv)}: exit {done.returncode}, {done.stdout!r}, "
                        f"{done.stderr!r}"
                    )

            variants.append(Variant(f"{client}: {name}, one {event} event", run))
    return variants


def bench_hook_capture(ctx: Any) -> Section:
    """The suite (see the module docstring)."""
    section = Section(
        "hook_capture",
        "Capture through the clients' hooks",
        f"A real client's headless turn of {CALLS} shell calls against the scripted model "
        "server (answers at once), client wall time: no hooks, every capture event hooked to "
        "`cat > /dev/null`, to a Python process that only reads stdin (floor), to agc's "
        "hook client (the installed command; agc's resident capture process running); and "
        "per event as a whole process, fed the client's recorded payload: the hook client "
        "and `agc hook` (the capture in its own process), next to `python -c pass`. "
        "Ratio = baseline time / variant time.",
    )
    agc = agc_command()
    work = Path(tempfile.mkdtemp(prefix="hook-capture-", dir=ctx.work))
    # A short socket folder of our own (a Unix socket's path has at most 107 bytes).
    runtime = Path(tempfile.mkdtemp(prefix="agc-bench-", dir="/tmp"))
    try:
        return _bench(ctx, section, agc, work, runtime)
    finally:
        stop_resident(runtime)


def _bench(ctx: Any, section: Section, agc: str | None, work: Path, runtime: Path) -> Section:
    # -- agc hook per event ---------------------------------------------------------------
    base_name = "python -c pass"
    per_event: list[Variant] = [
        command_variant(base_name, [sys.executable, "-c", "pass"]),
        command_variant("python -I -S -c pass", [sys.executable, "-I", "-S", "-c", "pass"]),
    ]
    if agc is None:
        section.rows.append(Row("agc hook per event", skipped="`agc hook` is not installed"))
    for client in CAPTURE_EVENTS:
        per_event += _event_variants(client, agc, work / "event-store", runtime)
    rounds = _event_rounds(ctx)
    timings = interleaved(per_event, rounds=rounds)
    base = timings[base_name]
    section.rows.append(Row.timed(base_name, base))
    for variant in per_event[1:]:
        section.rows.append(
            Row.timed(variant.name, timings[variant.name], baseline=base, baseline_name=base_name)
        )
    _tail_rows(section, work, rounds=rounds)
    # -- sessions -------------------------------------------------------------------------
    if ctx.quick:
        section.rows.append(Row("sessions", skipped="full run only (seconds per session)"))
        return section
    floor_server = FloorServer()
    try:
        return _sessions(ctx, section, agc, work, runtime, floor_server)
    finally:
        floor_server.close()


def _event_rounds(ctx: Any) -> int:
    """Rounds of the per-event and last-records rows: ``AGC_BENCH_HOOK_ROUNDS`` when set;
    else --quick shows the figures exist (a smoke run): three rounds, not the full count."""
    chosen = os.environ.get("AGC_BENCH_HOOK_ROUNDS")
    if chosen:
        return int(chosen)
    rounds: int = ctx.rounds
    return max(rounds, 3 if ctx.quick else EVENT_ROUNDS)


TAIL_RECORDS: Final = (20, 20_000)
"""Tool-events records of a short and of a long session, for the last-records rows."""

_TAIL_CALLS: Final = 200  # questions per timed round: each takes microseconds


def _tail_rows(section: Section, work: Path, *, rounds: int) -> None:
    """What a synchronous hook asks of its run's last records (is a turn running? is the
    run's last event this one?: ``agc.flows._hook``) in a long session's tool-events
    file ÷ in a short one's: read from the file's end, the ratio stays near 1 (a scan of
    the whole file made it the files' size ratio)."""
    from agc.flows import _hook  # noqa: PLC0415 - the questions themselves, in process

    variants = []
    for count in TAIL_RECORDS:
        path = work / f"tail-{count}.jsonl"
        lines = (
            json.dumps({"event": "call", "source": "hook", "seq": n, "input": {"cmd": "true"}})
            for n in range(count)
        )
        path.write_text("\n".join(lines) + "\n" + '{"event":"stop","source":"hook"}\n')
        fields = {"event": "stop", "source": "hook"}

        def run(path: Path = path, fields: dict[str, str] = fields) -> None:
            for _ in range(_TAIL_CALLS):
                _hook._in_turn(path)
                _hook._is_last_record(path, fields)

        variants.append(Variant(f"last records of a {count:,}-record run", run))
    timings = interleaved(variants, rounds=rounds)
    base = variants[0].name
    section.rows.append(Row.timed(base, timings[base]))
    for variant in variants[1:]:
        section.rows.append(
            Row.timed(
                variant.name, timings[variant.name], baseline=timings[base], baseline_name=base
            )
        )


def _sessions(
    ctx: Any,
    section: Section,
    agc: str | None,
    work: Path,
    runtime: Path,
    floor_server: FloorServer,
) -> Section:
    for client in _clients():
        pin = _PINS[client]
        try:
            binary = ensure_client(pin)
        except ClientUnavailableError as exc:
            section.rows.append(Row(f"{client} session", skipped=str(exc).splitlines()[0]))
            continue
        session = Session(client, binary, CALLS)
        variants, _ = _session_variants(session, work / client, agc, runtime, floor_server)
        # No warm-up run: every session starts in a fresh client home anyway.
        try:
            found = interleaved(variants, rounds=min(ctx.rounds, SESSION_ROUNDS), warmup=False)
        except AssertionError as exc:  # a session that did not finish: say so, go on
            section.rows.append(Row(f"{client} session", skipped=str(exc).splitlines()[0]))
            continue
        _session_rows(section, client, found)
    return section


def _session_rows(section: Section, client: str, found: dict[str, Timing]) -> None:
    plain = found["no hooks"]
    name = f"{client}, {CALLS} calls"
    section.rows.append(Row.timed(f"{name}: no hooks", plain))
    for variant in (
        "shell hook (cat)",
        "python hook floor",
        BACKGROUND_CAT,
        BACKGROUND_FLOOR,
        HTTP_FLOOR,
        SYNC_VARIANT,
        "agc hook client",
    ):
        if variant in found:
            section.rows.append(
                Row.timed(
                    f"{name}: {variant}",
                    found[variant],
                    baseline=plain,
                    baseline_name="no hooks",
                )
            )
    timing = found.get("agc hook client")
    section.targets.append(
        Target.judge(
            f"hook-session-{client}",
            f"{client}: a {CALLS}-call session with agc hooks <= {TARGET_SLOWDOWN}x without",
            timing.median / plain.median if timing else None,
            threshold=TARGET_SLOWDOWN,
            op="<=",
            note="time ratio" if timing else "agc's hook client did not run",
        )
    )
