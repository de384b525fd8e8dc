"""agc's handlers of the per-tool-call events are installed as background hooks where the
client has them (Claude Code's and Codex's ``async``), the events that seal a session stay
synchronous, and an install made without them is brought up to date by installing again."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from agc.capture import (
    BACKGROUND_EVENTS,
    CLIENT_EVENTS,
    CLIENTS,
    ClientName,
    check_hooks,
    codex_hook_hash,
    config_paths,
    hook_command,
    install_hooks,
)

AGC = "/opt/agc/bin/agc"

#: The whole hook configuration ``agc hooks install`` writes into an empty file, per
#: client (the golden shape: event -> (async?, timeout in the client's unit)).
GOLDEN: dict[str, dict[str, tuple[bool, int]]] = {
    "claude-code": {
        "SessionStart": (False, 10),
        "UserPromptSubmit": (False, 10),
        "PreToolUse": (True, 10),
        "PostToolUse": (True, 10),
        "PostToolUseFailure": (True, 10),
        "Stop": (False, 10),
        "PreCompact": (False, 10),
        "SessionEnd": (False, 10),
    },
    "codex": {
        "SessionStart": (False, 10),
        "UserPromptSubmit": (False, 10),
        "PreToolUse": (True, 10),
        "PostToolUse": (True, 10),
        "Stop": (False, 10),
        "SessionEnd": (False, 3),
    },
    "gemini": {
        "SessionStart": (False, 10000),
        "BeforeAgent": (False, 10000),
        "BeforeTool": (False, 10000),
        "AfterTool": (False, 10000),
        "AfterAgent": (False, 10000),
        "PreCompress": (False, 10000),
        "SessionEnd": (False, 10000),
    },
}


def _env(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "CODEX_HOME": str(home / ".codex")}


def _read(client: ClientName, path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    value: dict[str, Any] = tomllib.loads(text) if client == "codex" else json.loads(text)
    return value


def _shape(client: ClientName, value: dict[str, Any]) -> dict[str, tuple[bool, int]]:
    shape = {}
    for event, groups in value["hooks"].items():
        if event == "state":
            continue
        (group,) = groups
        (handler,) = group["hooks"]
        assert set(handler) <= {"type", "command", "timeout", "async"}, handler
        assert handler["type"] == "command"
        assert handler["command"] == hook_command(AGC, client)
        shape[event] = (handler.get("async", False), handler["timeout"])
    return shape


@pytest.mark.parametrize("client", CLIENTS)
def test_an_install_into_an_empty_file_has_the_golden_shape(
    tmp_path: Path, client: ClientName
) -> None:
    install_hooks(client, "user", command=hook_command(AGC, client), environ=_env(tmp_path))
    path = config_paths(client, "user", environ=_env(tmp_path)).hooks
    shape = _shape(client, _read(client, path))
    assert shape == GOLDEN[client]
    assert list(shape) == list(CLIENT_EVENTS[client])
    # The sealing events are never in the background, whatever the client.
    assert not BACKGROUND_EVENTS[client] & {"Stop", "SessionEnd", "AfterAgent", "PreCompact"}


def _old_install(client: ClientName, home: Path, *, async_on: frozenset[str]) -> Path:
    """The file as an earlier agc wrote it: every handler synchronous (or ``async`` on
    the events ``async_on``, as an edit by hand may leave it)."""
    path = config_paths(client, "user", environ=_env(home)).hooks
    path.parent.mkdir(parents=True, exist_ok=True)
    command = hook_command(AGC, client)
    if client == "codex":
        lines = []
        for event in CLIENT_EVENTS[client]:
            lines += [f"[[hooks.{event}]]", f"[[hooks.{event}.hooks]]", 'type = "command"']
            lines += [f"command = {json.dumps(command)}", "timeout = 10"]
            if event in async_on:
                lines.append("async = true")
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:
        hooks = {
            event: [
                {
                    "hooks": [
                        {
                            "type": "command",
                            "command": command,
                            "timeout": 10,
                            **({"async": True} if event in async_on else {}),
                        }
                    ]
                }
            ]
            for event in CLIENT_EVENTS[client]
        }
        path.write_text(json.dumps({"hooks": hooks}), encoding="utf-8")
    return path


@pytest.mark.parametrize("client", CLIENTS)
def test_installing_again_upgrades_an_earlier_install_in_place(
    tmp_path: Path, client: ClientName
) -> None:
    # An earlier install (no background hooks), plus a stray `async` on a sealing event.
    path = _old_install(client, tmp_path, async_on=frozenset({"Stop", "SessionEnd"}))
    command = hook_command(AGC, client)
    install_hooks(client, "user", command=command, environ=_env(tmp_path))
    value = _read(client, path)
    for event in CLIENT_EVENTS[client]:
        (group,) = value["hooks"][event]
        (handler,) = group["hooks"]
        assert handler.get("async", False) is (event in BACKGROUND_EVENTS[client]), event
    once = path.read_bytes()
    install_hooks(client, "user", command=command, environ=_env(tmp_path))
    assert path.read_bytes() == once  # idempotent


def test_codex_trust_follows_the_async_member_of_agcs_hooks(tmp_path: Path) -> None:
    # An earlier install, trusted as it was: Codex runs it.
    path = _old_install("codex", tmp_path, async_on=frozenset())
    command = hook_command(AGC, "codex")
    install_hooks("codex", "user", command=command, environ=_env(tmp_path))
    status = check_hooks("codex", "user", environ=_env(tmp_path))
    assert {entry.status for entry in status.trust} == {"trusted"}
    value = _read("codex", path)
    state = value["hooks"]["state"]
    for entry in status.trust:
        handler = value["hooks"][entry.event][0]["hooks"][0]
        background = entry.event in BACKGROUND_EVENTS["codex"]
        assert handler.get("async", False) is background
        digest = codex_hook_hash(
            entry.event, command, timeout=handler["timeout"], is_async=background
        )
        assert state[entry.key]["trusted_hash"] == digest == entry.current_hash
    # The digest of a background hook is not the one of the same hook run synchronously:
    # trusting the earlier hook does not trust the new one.
    assert codex_hook_hash("PreToolUse", command, timeout=10, is_async=True) != codex_hook_hash(
        "PreToolUse", command, timeout=10
    )
    # A background hook made synchronous by hand is no longer the one trusted.
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("async = true", "async = false", 1), encoding="utf-8")
    statuses = {
        e.event: e.status for e in check_hooks("codex", "user", environ=_env(tmp_path)).trust
    }
    assert sorted(statuses.values()).count("modified") == 1


@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_status_says_an_earlier_install_is_outdated_until_installed_again(
    tmp_path: Path, client: ClientName
) -> None:
    _old_install(client, tmp_path, async_on=frozenset())
    status = check_hooks(client, "user", environ=_env(tmp_path))
    assert status.background == ()
    assert status.outdated
    assert status.to_dict()["outdated"] is True
    install_hooks(client, "user", command=hook_command(AGC, client), environ=_env(tmp_path))
    status = check_hooks(client, "user", environ=_env(tmp_path))
    assert set(status.background) == BACKGROUND_EVENTS[client]
    assert not status.outdated
    assert status.to_dict()["background"] == list(status.background)


def test_a_gemini_install_has_nothing_in_the_background_and_is_up_to_date(tmp_path: Path) -> None:
    install_hooks("gemini", "user", command=hook_command(AGC, "gemini"), environ=_env(tmp_path))
    status = check_hooks("gemini", "user", environ=_env(tmp_path))
    assert status.background == ()
    assert not status.outdated
