"""Record the real clients' hook payloads into ``tests/fixtures/hooks/<client>/``.

``python -m tests.e2e.record_hooks CLIENT...`` (``claude-code``, ``codex``, ``gemini``)
runs the pinned client through one headless session against the scripted model server:
a shell call that succeeds, one that fails (exit 3), then a final answer. Every hook
event the client offers is configured with a tiny command that writes its stdin to a
file and prints nothing. The payloads are then written as fixtures:

* ``<event>.json``: the first payload of each event, ``<event>-<n>.json`` the n-th;
* ``sequence.json``: the events in the order they fired;
* ``session-file.jsonl``: the client's own session file at the end of the session;
* ``README.md``: the client version and how the fixtures were made.

Host paths and ids are replaced by stable fakes (:func:`sanitize`): the work folder by
``/home/user/project``, the client's home by ``/home/user/.<client>``, the session id by
a fixed UUID, so re-recording changes only what the client changed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from tests.e2e.agents import ClaudeSandbox, CodexSandbox, GeminiSandbox, _run
from tests.e2e.clients import PINNED, ensure_client
from tests.e2e.model_server import Answer, ModelServer, Script, ShellCall

__all__ = ["DUMP_SCRIPT", "FIXTURES", "HookDump", "Sanitizer", "record"]

FIXTURES: Final = Path(__file__).resolve().parents[1] / "fixtures" / "hooks"

#: The hook command's program: stdin to ``<dir>/<ns>-<pid>-<event>.json``, nothing on
#: stdout (a client reads a hook's stdout as its answer), exit 0.
DUMP_SCRIPT: Final = """\
import json, os, sys, time
folder, event = sys.argv[1], sys.argv[2]
data = sys.stdin.buffer.read()
name = "%020d-%d-%s.json" % (time.time_ns(), os.getpid(), event)
record = {"event": event, "argv": sys.argv[3:], "stdin": data.decode("utf-8", "replace")}
with open(os.path.join(folder, name + ".tmp"), "w", encoding="utf-8") as fh:
    json.dump(record, fh)
os.replace(os.path.join(folder, name + ".tmp"), os.path.join(folder, name))
"""

FAKE_SESSION: Final = "00000000-0000-4000-8000-000000000001"  # the first fake UUID
FAKE_WORK: Final = "/home/user/project"

#: The session every recording runs: a call that works, a call that fails, an answer.
PROBE_OK: Final = "echo agc-hook-probe"
PROBE_FAIL: Final = "echo agc-hook-fail >&2; exit 3"


def probe_script() -> Script:
    return Script(
        [
            ShellCall(PROBE_OK, "call_agc_ok"),
            ShellCall(PROBE_FAIL, "call_agc_fail"),
            Answer("agc hook probe done"),
        ]
    )


@dataclass(frozen=True)
class HookDump:
    """The hook command that dumps its stdin into ``folder``."""

    folder: Path

    def __post_init__(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder.parent / "hook_dump.py").write_text(DUMP_SCRIPT, encoding="utf-8")

    def command(self, event: str) -> str:
        """The shell command line for ``event`` (absolute paths, no shell features)."""
        return f"{sys.executable} {self.folder.parent / 'hook_dump.py'} {self.folder} {event}"

    def payloads(self) -> list[tuple[str, Any]]:
        """(event, parsed stdin) in the order the hooks fired."""
        out: list[tuple[str, Any]] = []
        for path in sorted(self.folder.glob("*.json")):
            record = json.loads(path.read_text(encoding="utf-8"))
            try:
                body: Any = json.loads(record["stdin"])
            except ValueError:
                body = record["stdin"]
            out.append((record["event"], body))
        return out


_UUID: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class Sanitizer:
    """Replaces host strings and random ids by stable fakes, the same way in every file.

    ``replacements`` maps host strings (paths) to fakes, longest first; then each UUID
    gets the fake ``00000000-0000-4000-8000-<n>`` in order of first appearance (the
    session id first, when given), so the links between files (a session id, a message's
    parent) survive.
    """

    def __init__(self, replacements: Mapping[str, str], session_id: str | None = None) -> None:
        self.replacements = dict(replacements)
        self.uuids: dict[str, str] = {}
        if session_id is not None:
            self._fake(session_id)

    def _fake(self, found: str) -> str:
        if found not in self.uuids:
            self.uuids[found] = f"00000000-0000-4000-8000-{len(self.uuids) + 1:012d}"
        return self.uuids[found]

    def __call__(self, value: Any) -> Any:
        text = json.dumps(value, ensure_ascii=False)
        for old in sorted(self.replacements, key=len, reverse=True):
            if old:
                fake = self.replacements[old]
                text = text.replace(json.dumps(old)[1:-1], json.dumps(fake)[1:-1])
        text = _UUID.sub(lambda m: self._fake(m.group(0)), text)
        return json.loads(text)


def _write_fixtures(
    target: Path,
    payloads: Sequence[tuple[str, Any]],
    session_file: Path | None,
    sanitize: Sanitizer,
    how: str,
) -> Path:
    if target.exists():
        for old in target.iterdir():
            old.unlink()
    target.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    sequence = []
    for event, body in payloads:
        counts[event] = counts.get(event, 0) + 1
        name = event if counts[event] == 1 else f"{event}-{counts[event]}"
        (target / f"{name}.json").write_text(
            json.dumps(sanitize(body), indent=2, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        sequence.append(name)
    (target / "sequence.json").write_text(json.dumps(sequence, indent=2) + "\n", encoding="utf-8")
    if session_file is not None and session_file.is_file():
        lines = []
        for line in session_file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                lines.append(json.dumps(sanitize(json.loads(line)), ensure_ascii=False))
        (target / "session-file.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (target / "README.md").write_text(how, encoding="utf-8")
    return target


def _readme(client: str, spec: str, argv: str, notes: str) -> str:
    return (
        f"# {client} hook payloads ({spec})\n\n"
        "Recorded by `python -m tests.e2e.record_hooks "
        f"{client}`: the real client, headless, against the scripted model server on "
        "127.0.0.1, with every hook event configured to a command that saves its stdin.\n\n"
        f"Run: `{argv}`\n\n"
        f"Session: a shell call that succeeds (`{PROBE_OK}`), one that fails "
        f"(`{PROBE_FAIL}`), then a final answer.\n\n"
        "`sequence.json` lists the events in the order they fired (`<event>-<n>.json` is "
        "the n-th payload of an event); `session-file.jsonl` is the client's own session "
        "file after the session. Host paths and ids are replaced by stable fakes: the work "
        f"folder is `{FAKE_WORK}`, the session id `{FAKE_SESSION}`.\n\n"
        f"{notes}\n"
    )


def _host_paths(root: Path) -> dict[str, str]:
    """The recording's own paths: its temp root and the Python running the dump hook."""
    return {str(root): "/tmp/agc-hooks", sys.executable: "/usr/bin/python3"}


# --- Claude Code ------------------------------------------------------------------------

CLAUDE_EVENTS: Final = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Notification",
    "Stop",
    "StopFailure",
    "SubagentStop",
    "PreCompact",
    "SessionEnd",
)


def record_claude(root: Path, target: Path) -> Path:
    binary = ensure_client("claude")
    dump = HookDump(root / "dump")
    with ModelServer(probe_script(), log=root / "requests.jsonl") as server:
        claude = ClaudeSandbox.create(root / "claude", server, binary)
        claude.add_hooks(dump.command, CLAUDE_EVENTS)
        session_id = "5e551011-0000-4000-8000-00000000c1a0"
        done = claude.run("run the probe", session_id)
        if done.returncode != 0:
            raise SystemExit(done.describe())
        session_file = claude.session_file(session_id)
        sanitize = Sanitizer(
            {
                str(claude.work): FAKE_WORK,
                str(claude.config): "/home/user/.claude",
                # the projects folder: the cwd with every other character than A-Z a-z 0-9 as -
                re.sub(r"[^A-Za-z0-9]", "-", str(claude.work)): FAKE_WORK.replace("/", "-"),
                **_host_paths(root),
            },
            session_id,
        )
        argv = "claude --output-format stream-json --verbose --dangerously-skip-permissions -p"
        notes = (
            "Hooks configured in `$CLAUDE_CONFIG_DIR/settings.json` `hooks` (matcher `*` "
            "for the tool events). Events offered but not fired in this session have no file."
        )
        return _write_fixtures(
            target,
            dump.payloads(),
            session_file,
            sanitize,
            _readme("claude-code", PINNED["claude"].spec, argv, notes),
        )


# --- Codex CLI -------------------------------------------------------------------------

CODEX_EVENTS: Final = (
    "SessionStart",
    "UserPromptSubmit",
    "PreModelRequest",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PreCompact",
    "PostCompact",
    "SubagentStart",
    "SubagentStop",
    "Interrupt",
    "Stop",
    "SessionEnd",
)


def record_codex(root: Path, target: Path) -> Path:
    binary = ensure_client("codex")
    dump = HookDump(root / "dump")
    with ModelServer(probe_script(), log=root / "requests.jsonl") as server:
        codex = CodexSandbox.create(root / "codex", server, binary)
        codex.add_hooks(dump.command, CODEX_EVENTS)
        # Recording only: the hooks run untrusted for this one invocation. An installed
        # hook must be trusted the documented way (see docs/capture.md).
        argv = codex._argv("--dangerously-bypass-hook-trust", "run the probe")
        done = _run(argv, codex.env, codex.work, 120)
        if done.returncode != 0:
            raise SystemExit(done.describe())
        rollout = codex.session_file()
        session_id = codex.session_id_of(rollout)
        sanitize = Sanitizer(
            {str(codex.work): FAKE_WORK, str(codex.home): "/home/user/.codex", **_host_paths(root)},
            session_id,
        )
        notes = (
            "Hooks configured in `$CODEX_HOME/config.toml` as `[[hooks.<Event>]]` groups with "
            "one `[[hooks.<Event>.hooks]]` command each. Codex 0.171 runs a non-managed hook "
            "only once it is trusted (a hash under `[hooks.state]`): an untrusted hook is "
            "skipped without a word, in `codex exec` too. This recording ran with "
            "`--dangerously-bypass-hook-trust`, which changes whether hooks run, not what they "
            "receive. Events offered but not fired in this session have no file."
        )
        return _write_fixtures(
            target,
            dump.payloads(),
            rollout,
            sanitize,
            _readme(
                "codex",
                PINNED["codex"].spec,
                "codex exec --skip-git-repo-check --dangerously-bypass-hook-trust",
                notes,
            ),
        )


# --- Gemini CLI ------------------------------------------------------------------------

GEMINI_EVENTS: Final = (
    "SessionStart",
    "BeforeAgent",
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
    "BeforeTool",
    "AfterTool",
    "AfterAgent",
    "Notification",
    "PreCompress",
    "SessionEnd",
)


def record_gemini(root: Path, target: Path) -> Path:
    binary = ensure_client("gemini")
    dump = HookDump(root / "dump")
    with ModelServer(probe_script(), log=root / "requests.jsonl") as server:
        work = root / "project"  # the CLI names its project folder after the cwd's name
        work.mkdir()
        gemini = GeminiSandbox.create(root / "gemini", server, binary, work)
        gemini.add_hooks(dump.command, GEMINI_EVENTS)
        done = gemini.run("run the probe")
        if done.returncode != 0:
            raise SystemExit(done.describe())
        chat = gemini.session_file()
        sanitize = Sanitizer(
            {
                str(gemini.work): FAKE_WORK,
                str(gemini.home): "/home/user",
                **_host_paths(root),
            },
            _gemini_session_id(chat),
        )
        notes = (
            "Hooks configured in the user `~/.gemini/settings.json` `hooks` (matcher `*` for "
            "the tool events); `GEMINI_CLI_HOME` points the CLI at a throwaway home. The "
            "model server answers without call ids (as the Gemini API does): the CLI names "
            "each call itself. Events offered but not fired in this session have no file."
        )
        return _write_fixtures(
            target,
            dump.payloads(),
            chat,
            sanitize,
            _readme(
                "gemini",
                PINNED["gemini"].spec,
                "gemini --yolo --skip-trust --output-format stream-json -p",
                notes,
            ),
        )


def _gemini_session_id(chat: Path) -> str | None:
    for line in chat.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("sessionId"), str):
            return str(record["sessionId"])
    return None


RECORDERS: Final[Mapping[str, Callable[[Path, Path], Path]]] = {
    "claude-code": record_claude,
    "codex": record_codex,
    "gemini": record_gemini,
}


def record(client: str, target: Path | None = None) -> Path:
    """Record ``client``'s hook payloads into ``target`` (default: its fixtures folder,
    replaced); the folder written. ``SystemExit`` with the client's output if its session
    fails."""
    with tempfile.TemporaryDirectory(prefix=f"agc-hooks-{client}-") as tmp:
        return RECORDERS[client](Path(tmp), target or FIXTURES / client)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.e2e.record_hooks")
    parser.add_argument("clients", nargs="+", choices=sorted(RECORDERS))
    args = parser.parse_args(argv)
    for client in args.clients:
        print(record(client))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
