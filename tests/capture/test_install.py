"""Tests for ``agc hooks install / uninstall / status``: agc's hook in the clients' own
configuration files (Claude Code and Gemini CLI ``settings.json``, Codex ``config.toml``)."""

from __future__ import annotations

import errno
import json
import os
import shlex
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st

import agc.cli as agc_cli
from agc.capture import (
    BACKGROUND_EVENTS,
    CLIENT_EVENTS,
    CLIENTS,
    ClientName,
    check_hooks,
    codex_hook_hash,
    config_paths,
    hook_client_command,
    hook_command,
    install_hooks,
    read_http_hook,
    uninstall_hooks,
)
from agc.cli.app import main
from agc.errors import ClientConfigInvalidError, FileWriteError, UsageError
from tests.conftest import examples
from tests.faults import failing_disk, temp_files

AGC = "/opt/agc/bin/agc"

_NAMES = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12)
_SCALARS = st.one_of(st.integers(-1000, 1000), st.booleans(), st.text(max_size=20))
_OTHER_EVENTS = ("Notification", "SubagentStop", "PermissionRequest")


def _command() -> st.SearchStrategy[str]:
    # The user's own commands: anything but agc's hook (a program named agc running
    # `hook --client`).
    return st.one_of(
        st.text(min_size=1, max_size=40),
        st.sampled_from(["/usr/bin/agc verify r1", "agc hook", "notify-send done", "true"]),
    ).filter(lambda text: text.strip() != "" and "agc hook --client" not in text)


def _handler() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"type": st.just("command"), "command": _command()},
        optional={"timeout": st.integers(1, 600)},
    )


def _group() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"hooks": st.lists(_handler(), min_size=1, max_size=3)},
        optional={"matcher": st.sampled_from(["", "*", "Bash", "^Bash$", "run_shell_command"])},
    )


@st.composite
def configs(draw: st.DrawFn, client: ClientName) -> dict[str, Any]:
    """A client configuration as a user may have it: other settings, the user's own
    hooks for some of agc's events and for others, and for Codex trust entries."""
    value: dict[str, Any] = draw(
        st.dictionaries(_NAMES.filter(lambda n: n != "hooks"), _SCALARS, max_size=4)
    )
    events = draw(
        st.lists(st.sampled_from((*CLIENT_EVENTS[client], *_OTHER_EVENTS)), unique=True, max_size=4)
    )
    hooks: dict[str, Any] = {
        event: draw(st.lists(_group(), min_size=1, max_size=3)) for event in events
    }
    if client == "codex" and draw(st.booleans()):
        hooks["state"] = {
            f"/elsewhere/config.toml:{name}:0:0": {"trusted_hash": "sha256:" + "ab" * 32}
            for name in draw(st.lists(_NAMES, min_size=1, max_size=3, unique=True))
        }
    if hooks:
        value["hooks"] = hooks
    return value


def _text(client: ClientName, value: dict[str, Any], compact: bool) -> str:
    if client == "codex":
        return tomli_w.dumps(value)
    return json.dumps(value, indent=None if compact else 2) + "\n"


def _parse(client: ClientName, text: str) -> dict[str, Any]:
    parsed: dict[str, Any] = tomllib.loads(text) if client == "codex" else json.loads(text)
    return parsed


def _is_agc(handler: dict[str, Any]) -> bool:
    return "agc hook --client" in str(handler.get("command"))


def _user_hooks(client: ClientName, value: dict[str, Any]) -> dict[str, Any]:
    """The configuration without agc's handlers (and Codex's trust entries of them)."""
    hooks: dict[str, Any] = {}
    for event, groups in value.get("hooks", {}).items():
        if event == "state":
            kept_state = {k: v for k, v in groups.items() if k.startswith("/elsewhere/")}
            if kept_state:
                hooks[event] = kept_state
            continue
        kept = [
            {**g, "hooks": [h for h in g["hooks"] if not _is_agc(h)]}
            for g in groups
            if not all(_is_agc(h) for h in g["hooks"])
        ]
        if kept:
            hooks[event] = kept
    rest = {k: v for k, v in value.items() if k != "hooks"}
    return {**rest, "hooks": hooks} if hooks else rest


@contextmanager
def _home() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder) / "home"


def _env(home: Path) -> dict[str, str]:
    return {"HOME": str(home)}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".agc-backup-*"))


@settings(max_examples=examples(200))
@given(data=st.data(), client=st.sampled_from(CLIENTS), compact=st.booleans())
def test_install_keeps_every_user_hook_in_place_adds_one_per_event_and_is_idempotent(
    data: st.DataObject, client: ClientName, compact: bool
) -> None:
    value = data.draw(configs(client))
    original = _text(client, value, compact)
    with _home() as home:
        path = config_paths(client, "user", environ=_env(home)).hooks
        _write(path, original)
        command = hook_command(AGC, client, store="/srv/evidence")
        first = install_hooks(client, "user", command=command, environ=_env(home))
        installed_text = path.read_text(encoding="utf-8")
        installed = _parse(client, installed_text)

        # every user handler is where it was (same event, group and index)
        for event, groups in value.get("hooks", {}).items():
            if event == "state":
                continue
            for g, group in enumerate(groups):
                assert installed["hooks"][event][g]["hooks"][: len(group["hooks"])] == [
                    {**h} for h in group["hooks"]
                ]
                assert installed["hooks"][event][g].get("matcher") == group.get("matcher")
        # exactly one agc handler per event, running the command
        for event in CLIENT_EVENTS[client]:
            ours = [h for g in installed["hooks"][event] for h in g["hooks"] if _is_agc(h)]
            assert [h["command"] for h in ours] == [command]
        # nothing else changed
        assert _user_hooks(client, installed) == value
        # the former bytes are in the backup
        assert first.changed
        if first.files[0].backup is not None:
            assert Path(first.files[0].backup).read_text(encoding="utf-8") == original

        again = install_hooks(client, "user", command=command, environ=_env(home))
        assert not again.changed
        assert path.read_text(encoding="utf-8") == installed_text
        assert len(_backups(path)) == 1


@settings(max_examples=examples(200))
@given(data=st.data(), client=st.sampled_from(CLIENTS), compact=st.booleans())
def test_uninstall_gives_back_the_users_configuration(
    data: st.DataObject, client: ClientName, compact: bool
) -> None:
    value = data.draw(configs(client))
    original = _text(client, value, compact)
    with _home() as home:
        path = config_paths(client, "user", environ=_env(home)).hooks
        _write(path, original)
        install_hooks(client, "user", command=hook_command(AGC, client), environ=_env(home))
        removed = uninstall_hooks(client, "user", environ=_env(home))
        assert removed.changed
        after = path.read_text(encoding="utf-8")
        assert _parse(client, after) == value
        if client == "codex":  # comments and layout kept: the same text, whitespace aside
            assert after.split() == original.split()
        assert not check_hooks(client, "user", environ=_env(home)).installed
        assert not uninstall_hooks(client, "user", environ=_env(home)).changed


@settings(max_examples=examples(100))
@given(data=st.data())
def test_codex_trusts_each_agc_hook_by_its_digest_and_keeps_the_users_trust(
    data: st.DataObject,
) -> None:
    value = data.draw(configs("codex"))
    with _home() as home:
        path = config_paths("codex", "user", environ=_env(home)).hooks
        _write(path, tomli_w.dumps(value))
        command = hook_command(AGC, "codex")
        install_hooks("codex", "user", command=command, environ=_env(home))
        installed = tomllib.loads(path.read_text(encoding="utf-8"))
        state = installed["hooks"]["state"]
        for key, entry in value.get("hooks", {}).get("state", {}).items():
            assert state[key] == entry
        for event in CLIENT_EVENTS["codex"]:
            groups = installed["hooks"][event]
            g = next(i for i, grp in enumerate(groups) if any(_is_agc(h) for h in grp["hooks"]))
            key = f"{path}:{_snake(event)}:{g}:0"
            handler = groups[g]["hooks"][0]
            assert handler.get("async", False) is (event in BACKGROUND_EVENTS["codex"])
            digest = codex_hook_hash(
                event, command, timeout=handler["timeout"], is_async=handler.get("async", False)
            )
            assert state[key] == {"trusted_hash": digest}
        status = check_hooks("codex", "user", environ=_env(home))
        assert [entry.status for entry in status.trust] == ["trusted"] * len(CLIENT_EVENTS["codex"])


def _snake(event: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in event).lstrip("_")


def test_the_codex_digest_is_sha256_of_the_sorted_compact_json_of_the_hook() -> None:
    # The identity Codex hashes (codex-rs/hooks discovery.rs command_hook_hash): the
    # event's snake-case label and the one normalized handler; matcher only when set.
    # Codex 0.171's hooks/list currentHash for this handler:
    expected = "sha256:2e7a8fdd966d8f37484a600978d23ad0c3d1039f6da5d1e48339128cba18d859"
    assert codex_hook_hash("PreToolUse", "/usr/bin/agc hook --client codex", timeout=10) == (
        expected
    )
    # A SessionEnd handler's timeout is bounded to 1-3 s by Codex, 1 s when absent.
    assert codex_hook_hash("SessionEnd", "x", timeout=10) == codex_hook_hash(
        "SessionEnd", "x", timeout=3
    )
    assert codex_hook_hash("SessionEnd", "x", timeout=None) == codex_hook_hash(
        "SessionEnd", "x", timeout=1
    )


def test_a_changed_agc_hook_is_modified_until_installed_again(tmp_path: Path) -> None:
    env = _env(tmp_path)
    path = config_paths("codex", "user", environ=env).hooks
    install_hooks("codex", "user", command=hook_command(AGC, "codex"), environ=env)
    path.write_text(path.read_text().replace("timeout = 10", "timeout = 11", 1))
    status = check_hooks("codex", "user", environ=env)
    assert "modified" in [entry.status for entry in status.trust]
    assert not status.will_run
    install_hooks("codex", "user", command=hook_command(AGC, "codex"), environ=env)
    assert {e.status for e in check_hooks("codex", "user", environ=env).trust} == {"trusted"}


def test_uninstall_moves_the_trust_of_a_user_hook_that_moves_up(tmp_path: Path) -> None:
    env = _env(tmp_path)
    path = config_paths("codex", "user", environ=env).hooks
    install_hooks("codex", "user", command=hook_command(AGC, "codex"), environ=env)
    # The user adds a hook after agc's and trusts it (as Codex's /hooks review does).
    key_before = f"{path}:stop:1:0"
    path.write_text(
        path.read_text()
        + '\n[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = "command"\ncommand = "mine"\n'
        + f'\n[hooks.state."{key_before}"]\ntrusted_hash = "sha256:{"cd" * 32}"\nenabled = true\n'
    )
    uninstall_hooks("codex", "user", environ=env)
    state = tomllib.loads(path.read_text())["hooks"]["state"]
    assert state == {f"{path}:stop:0:0": {"trusted_hash": "sha256:" + "cd" * 32, "enabled": True}}


def test_codex_trust_keys_name_the_codex_home_with_symlinks_resolved(tmp_path: Path) -> None:
    # Codex 0.171 keys a user hook by its home folder resolved (hooks/list "key"), so a
    # home reached through a symlink (macOS /var -> /private/var) still matches.
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    env = {"HOME": str(tmp_path / "link")}
    install_hooks("codex", "user", command=hook_command(AGC, "codex"), environ=env)
    keys = [entry.key for entry in check_hooks("codex", "user", environ=env).trust]
    assert keys
    assert all(key.startswith(f"{tmp_path / 'real' / '.codex' / 'config.toml'}:") for key in keys)


def test_project_scope_codex_hooks_are_trusted_in_the_user_configuration(
    tmp_path: Path,
) -> None:
    env = {"HOME": str(tmp_path / "home"), "CODEX_HOME": str(tmp_path / "codex")}
    project = tmp_path / "app"
    change = install_hooks(
        "codex", "project", command=hook_command(AGC, "codex"), project=project, environ=env
    )
    assert [f.path for f in change.files] == [
        str(project / ".codex" / "config.toml"),
        str(tmp_path / "codex" / "config.toml"),
    ]
    status = check_hooks("codex", "project", project=project, environ=env)
    assert {e.status for e in status.trust} == {"trusted"}
    # Codex reads a project's .codex/ only in a project the user trusts.
    assert any("trusted project" in p for p in status.problems)
    user = tmp_path / "codex" / "config.toml"
    user.write_text(user.read_text() + f'\n[projects."{project}"]\ntrust_level = "trusted"\n')
    status = check_hooks("codex", "project", project=project, environ=env)
    assert not any("trusted project" in p for p in status.problems)


@pytest.mark.parametrize(
    ("client", "switch", "said"),
    [
        ("claude-code", {"disableAllHooks": True}, "disableAllHooks"),
        ("gemini", {"hooksConfig": {"enabled": False}}, "hooksConfig.enabled"),
        ("codex", {"features": {"hooks": False}}, "[features] hooks"),
        ("codex", {"features": {"codex_hooks": False}}, "[features] hooks"),
    ],
)
def test_status_names_the_clients_switch_that_turns_hooks_off(
    tmp_path: Path, client: ClientName, switch: dict[str, Any], said: str
) -> None:
    env = _env(tmp_path)
    path = config_paths(client, "user", environ=env).hooks
    _write(path, _text(client, switch, compact=False))
    install_hooks(client, "user", command=hook_command(AGC, client), environ=env)
    problems = check_hooks(client, "user", environ=env).problems
    assert [p for p in problems if said in p]


def test_status_says_when_the_gemini_cli_disables_agcs_hook(tmp_path: Path) -> None:
    env = _env(tmp_path)
    command = hook_command(AGC, "gemini")
    path = config_paths("gemini", "user", environ=env).hooks
    _write(path, json.dumps({"hooksConfig": {"disabled": [command]}}))
    install_hooks("gemini", "user", command=command, environ=env)
    assert any(
        "hooksConfig.disabled" in p for p in check_hooks("gemini", "user", environ=env).problems
    )


def test_a_codex_that_cannot_be_asked_is_said_so(tmp_path: Path) -> None:
    env = _env(tmp_path)
    missing = str(tmp_path / "no-codex")
    change = install_hooks(
        "codex", "user", command=hook_command(AGC, "codex"), environ=env, codex=missing
    )
    assert change.codex_says is not None
    assert change.codex_says.startswith("not asked: cannot start")
    assert {e.status for e in check_hooks("codex", "user", environ=env).trust} == {"trusted"}
    status = check_hooks("codex", "user", environ=env, codex=missing)
    assert status.codex_says is None
    assert any(p.startswith("Codex could not be asked") for p in status.problems)


def test_gemini_project_hooks_need_a_trusted_folder(tmp_path: Path) -> None:
    env = _env(tmp_path)
    project = tmp_path / "app"
    install_hooks(
        "gemini", "project", command=hook_command(AGC, "gemini"), project=project, environ=env
    )

    def said() -> bool:
        status = check_hooks("gemini", "project", project=project, environ=env)
        return any("trusted folder" in p for p in status.problems)

    assert said()
    rules = tmp_path / ".gemini" / "trustedFolders.json"
    _write(rules, json.dumps({str(tmp_path): "TRUST_FOLDER"}))
    assert not said()
    _write(rules, json.dumps({str(tmp_path): "TRUST_FOLDER", str(project): "DO_NOT_TRUST"}))
    assert said()
    _write(rules, json.dumps({str(project / "sub"): "TRUST_PARENT"}))
    assert not said()
    env["GEMINI_CLI_TRUST_WORKSPACE"] = "false"
    assert said()


_INVALID: dict[ClientName, list[str]] = {
    "claude-code": [
        "{",
        "// a comment\n{}",
        '{"hooks": 1}',
        '{"hooks": {"PreToolUse": {}}}',
        '{"hooks": {"Stop": [{"hooks": "x"}]}}',
        '{"a": 1, "a": 2}',
        "[]",
    ],
    "codex": [
        "model = ",
        "hooks = 1",
        "[hooks]\nPreToolUse = 3",
        '[[hooks.Stop]]\nhooks = "x"',
        "[hooks]\nstate = 1",
    ],
    "gemini": ['{"hooks": []}', '{"hooks": {"BeforeTool": [1]}}', "\ufeff{}", "nul\x00"],
}


@pytest.mark.parametrize(
    ("client", "text"), [(c, t) for c, texts in _INVALID.items() for t in texts]
)
def test_an_invalid_configuration_is_refused_and_nothing_is_written(
    tmp_path: Path, client: ClientName, text: str
) -> None:
    env = _env(tmp_path)
    path = config_paths(client, "user", environ=env).hooks
    _write(path, text)
    with pytest.raises(ClientConfigInvalidError, match=str(path)):
        install_hooks(client, "user", command=hook_command(AGC, client), environ=env)
    with pytest.raises(ClientConfigInvalidError):
        uninstall_hooks(client, "user", environ=env)
    assert path.read_text(encoding="utf-8") == text
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]
    assert not check_hooks(client, "user", environ=env).will_run


@settings(max_examples=examples(100))
@given(client=st.sampled_from(CLIENTS), garbage=st.binary(max_size=200))
def test_garbage_is_refused_or_merged_never_lost(client: ClientName, garbage: bytes) -> None:
    with _home() as home:
        path = config_paths(client, "user", environ=_env(home)).hooks
        path.parent.mkdir(parents=True)
        path.write_bytes(garbage)
        try:
            install_hooks(client, "user", command=hook_command(AGC, client), environ=_env(home))
        except ClientConfigInvalidError:
            assert path.read_bytes() == garbage
            assert not _backups(path)
            return
        if garbage.strip():
            assert [p.read_bytes() for p in _backups(path)] == [garbage]


@pytest.mark.parametrize("client", ["claude-code", "gemini"])
def test_a_null_hooks_member_is_an_empty_one(tmp_path: Path, client: ClientName) -> None:
    env = _env(tmp_path)
    path = config_paths(client, "user", environ=env).hooks
    _write(path, '{"hooks": null, "model": "m"}')
    install_hooks(client, "user", command=hook_command(AGC, client), environ=env)
    status = check_hooks(client, "user", environ=env)
    assert status.events == CLIENT_EVENTS[client]
    uninstall_hooks(client, "user", environ=env)
    assert json.loads(path.read_text()) == {"model": "m"}


@pytest.mark.parametrize(
    "text",
    [
        'hooks = { Stop = [ { hooks = [ { type = "command", command = "mine" } ] } ] }\n',
        '[hooks]\nStop = [ { hooks = [ { type = "command", command = "mine" } ] } ]\n'
        'state = { "k" = { enabled = false } }\n',
        'model = "o3"\nhooks = { state = { "k" = { trusted_hash = "sha256:00" } } }\n',
    ],
)
def test_codex_inline_tables_are_merged_into(tmp_path: Path, text: str) -> None:
    env = _env(tmp_path)
    path = config_paths("codex", "user", environ=env).hooks
    _write(path, text)
    install_hooks("codex", "user", command=hook_command(AGC, "codex"), environ=env)
    status = check_hooks("codex", "user", environ=env)
    assert set(status.events) == set(CLIENT_EVENTS["codex"])
    assert {entry.status for entry in status.trust} == {"trusted"}
    uninstall_hooks("codex", "user", environ=env)
    assert tomllib.loads(path.read_text()) == tomllib.loads(text)


def test_backups_are_never_overwritten(tmp_path: Path) -> None:
    env = _env(tmp_path)
    path = config_paths("claude-code", "user", environ=env).hooks
    _write(path, '{"model": "opus"}')
    for store in ("/a", "/b", "/c"):
        install_hooks(
            "claude-code",
            "user",
            command=hook_command(AGC, "claude-code", store=store),
            environ=env,
        )
    contents = [p.read_text() for p in _backups(path)]
    assert len(contents) == 3  # one per change: each install changed the command
    assert contents.count('{"model": "opus"}') == 1
    assert any("/a" in c for c in contents)
    assert any("/b" in c for c in contents)


def test_a_symlinked_settings_file_is_written_through(tmp_path: Path) -> None:
    env = _env(tmp_path)
    path = config_paths("claude-code", "user", environ=env).hooks
    real = tmp_path / "dotfiles" / "settings.json"
    _write(real, '{"theme": "dark"}')
    path.parent.mkdir(parents=True)
    path.symlink_to(real)
    install_hooks("claude-code", "user", command=hook_command(AGC, "claude-code"), environ=env)
    assert path.is_symlink()
    assert json.loads(real.read_text())["theme"] == "dark"
    assert check_hooks("claude-code", "user", environ=env).installed


# --- the command line ---------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _fake_agc(folder: Path) -> Path:
    program = folder / "bin" / "agc"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    return program


def test_cli_install_then_status_says_every_client_will_run_it(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    agc = _fake_agc(home)
    monkeypatch.setenv("PATH", str(agc.parent))  # no codex program to ask
    assert main(["hooks", "status"]) == 1  # nothing installed
    for client in CLIENTS:
        assert (
            main(["hooks", "install", "--client", client, "--agc", str(agc), "--store", "ev"]) == 0
        )
    capsys.readouterr()
    # Codex's trust is agc's own digest until a Codex program confirms it.
    for asked in ([], ["--codex", ""]):
        assert main(["hooks", "status", "--json", *asked]) == 1
        report = json.loads(capsys.readouterr().out)
        assert report["ok"] is False
        assert [c["client"] for c in report["clients"]] == list(CLIENTS)
        for entry in report["clients"]:
            codex = entry["client"] == "codex"
            assert entry["will_run"] is (None if codex else True)
            assert (entry["unconfirmed"] is not None) is codex
            assert entry["problems"] == []
            assert entry["command_found"]
            assert entry["store"] == str(home / "ev")  # made absolute: hooks run elsewhere
    assert main(["hooks", "status", "--client", "codex"]) == 1
    out = capsys.readouterr().out
    assert "codex (user): cannot be confirmed to run agc's hook" in out
    assert "trusted by agc's digest (Codex not asked)" in out
    assert "will run" not in out
    for client in ("claude-code", "gemini"):
        assert main(["hooks", "status", "--client", client]) == 0
    agc.unlink()
    assert main(["hooks", "status", "--client", "gemini"]) == 1
    assert "program does not exist" in capsys.readouterr().out


def test_cli_refuses_an_invalid_file_with_exit_2(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agc = _fake_agc(home)
    settings_file = home / ".gemini" / "settings.json"
    _write(settings_file, "{ // comments\n}")
    assert main(["hooks", "install", "--client", "gemini", "--agc", str(agc)]) == 2
    err = capsys.readouterr().err
    assert "client-config-invalid" in err or "not strict JSON" in err
    assert settings_file.read_text() == "{ // comments\n}"


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EROFS, errno.EIO])
@pytest.mark.parametrize("client", CLIENTS)
def test_cli_a_disk_that_fails_is_exit_3_and_the_file_unchanged(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    client: ClientName,
    err: int,
) -> None:
    agc = _fake_agc(home)
    path = config_paths(client, "user").hooks
    original = _text(client, {"model": "m"}, compact=False)
    _write(path, original)
    with failing_disk(monkeypatch, path.parent, err):
        code = main(["hooks", "install", "--client", client, "--agc", str(agc)])
    assert code == 3
    assert str(path.parent) in capsys.readouterr().err
    assert path.read_text(encoding="utf-8") == original
    assert not temp_files(path.parent)


def test_cli_a_file_that_may_not_be_replaced_is_exit_3(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Not a failure of the machine: a permission (as a user without write access to the
    # folder gets; the tests run as root, who may write anywhere).
    agc = _fake_agc(home)
    path = config_paths("gemini", "user").hooks
    _write(path, '{"model": "m"}')
    real_replace = os.replace

    def refuse(src: Any, dst: Any) -> None:
        if Path(dst) == path:
            raise PermissionError(errno.EACCES, "Permission denied", str(dst))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(FileWriteError, match="permission denied") as caught:
        install_hooks("gemini", "user", command=hook_command(str(agc), "gemini"))
    assert caught.value.path == str(path)
    assert main(["hooks", "install", "--client", "gemini", "--agc", str(agc)]) == 3
    assert "permission denied" in capsys.readouterr().err.lower()
    assert path.read_text(encoding="utf-8") == '{"model": "m"}'
    assert not temp_files(path.parent)


def test_cli_uninstall_json_names_the_backup(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agc = _fake_agc(home)
    assert main(["hooks", "install", "--client", "codex", "--agc", str(agc)]) == 0
    capsys.readouterr()
    assert main(["hooks", "uninstall", "--client", "codex", "--json"]) == 0
    change = json.loads(capsys.readouterr().out)
    assert change["changed"]
    assert os.path.exists(change["files"][0]["backup"])


@pytest.mark.parametrize("client", CLIENTS)
def test_cli_install_writes_the_hook_client_in_place_of_an_agc_hook_command(
    client: ClientName, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --agc the hook is agc's hook client run by this Python (-I -S); a hook
    installed before as `agc hook` is agc's, replaced in place: one handler an event."""
    agc = _fake_agc(home)
    assert main(["hooks", "install", "--client", client, "--agc", str(agc)]) == 0
    assert main(["hooks", "install", "--client", client, "--store", "ev", "--codex", ""]) == 0
    capsys.readouterr()
    # Codex not asked (--codex ''): whether it runs the hooks cannot be confirmed.
    confirmed = client != "codex"
    code = main(["hooks", "status", "--client", client, "--json", "--codex", ""])
    assert code == (0 if confirmed else 1)
    (entry,) = json.loads(capsys.readouterr().out)["clients"]
    script = Path(agc_cli.__file__).with_name("_hookclient.py")
    # Claude Code's per-tool-call events go over HTTP; its other events' command names
    # the port, so that they make agc's resident process listen on it.
    http = read_http_hook() if client == "claude-code" else None
    port = [] if http is None else ["--http", str(http.port)]
    argv = [sys.executable, "-I", "-S", str(script), "--client", client, "--store"]
    assert entry["command"] == shlex.join([*argv, str(home / "ev"), *port])
    assert (entry["will_run"], entry["command_found"]) == (True if confirmed else None, True)
    assert sorted(entry["events"]) == sorted(CLIENT_EVENTS[client])
    text = config_paths(client, "user", environ=_env(home)).hooks.read_text()
    commands = len(CLIENT_EVENTS[client]) - len(entry["http"])
    assert text.count("_hookclient.py") == commands
    assert sorted(entry["http"]) == ([] if http is None else sorted(BACKGROUND_EVENTS[client]))
    assert str(agc) not in text


def test_status_says_a_hook_client_whose_script_is_gone_is_not_found(home: Path) -> None:
    gone = str(home / "old" / "agc" / "cli" / "_hookclient.py")
    command = hook_client_command(sys.executable, gone, "gemini")
    install_hooks("gemini", "user", command=command, environ=_env(home))
    status = check_hooks("gemini", "user", environ=_env(home))
    assert status.installed
    assert not status.command_found
    assert not status.will_run
    with pytest.raises(UsageError):
        hook_client_command(sys.executable, str(home / "client.py"), "gemini")


def test_cli_install_refuses_a_store_that_is_a_file_and_notes_a_store_switch(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    agc = _fake_agc(home)
    monkeypatch.setenv("PATH", str(agc.parent))
    monkeypatch.chdir(home)
    (home / "a-file").write_text("not a store\n")
    argv = ["hooks", "install", "--client", "claude-code", "--agc", str(agc)]
    assert main([*argv, "--store", "a-file"]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert main(["hooks", "status", "--client", "claude-code"]) == 1  # nothing installed
    capsys.readouterr()
    assert main([*argv, "--store", "first"]) == 0
    assert "note:" not in capsys.readouterr().err  # a first install switches nothing
    assert (home / "first").is_dir()  # made at once: `agc runs --store first` reads it
    assert main(["runs", "--store", "first"]) == 0
    assert main([*argv, "--store", "first"]) == 0
    assert "note:" not in capsys.readouterr().err  # the same store again
    assert main([*argv, "--store", "second"]) == 0
    err = capsys.readouterr().err
    assert f"the hook now writes to {home / 'second'}" in err
    assert f"it wrote to {home / 'first'}" in err


@pytest.mark.parametrize("client", CLIENTS)
def test_cli_uninstall_of_a_file_that_does_not_exist_says_so(
    client: ClientName, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["hooks", "uninstall", "--client", client]) == 0
    out = capsys.readouterr().out
    assert ": does not exist, nothing to remove" in out
    assert "unchanged" not in out
    assert not any(home.rglob("*.json"))
    assert not any(home.rglob("*.toml"))
