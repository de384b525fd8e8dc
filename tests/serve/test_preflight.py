"""Preflight blockers from real files and processes: each runbook name for its cause."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agc.serve import Blocker, Preflight, ProviderError
from agc.serve._preflight import check_folder, missing_env, resolve_binary
from tests.serve.fakes import fake_codex, make_config
from tests.serve.helpers import run

REACHES_INSIDE = {
    "agc.serve._preflight": "the preflight checks one by one",
}


def _codes(report: object) -> list[str]:
    return [blocker.code for blocker in report.blockers]  # type: ignore[attr-defined]


async def _ok_handshake(protocol: str) -> None:
    del protocol


def _preflight(tmp_path: Path, **overrides: object) -> Preflight:
    return Preflight(make_config(tmp_path, **overrides), handshake=_ok_handshake)


def test_a_complete_setup_is_ready_with_the_version_and_protocol(tmp_path: Path) -> None:
    report = run(_preflight(tmp_path).run())
    assert report.ready
    assert report.version == "codex-cli 0.171.0"
    assert report.protocol == "app-server"
    answer = report.to_dict()
    assert answer["status"] == "ready"
    assert "error" not in answer


def test_a_binary_not_on_path_is_missing(tmp_path: Path) -> None:
    report = run(
        _preflight(tmp_path, env={"PATH": str(tmp_path / "empty"), "OPENAI_API_KEY": "v"}).run()
    )
    assert _codes(report) == ["codex_cli_binary_missing"]
    assert report.version is None  # nothing was run


@pytest.mark.parametrize("spelling", ["bin/codex", "./bin/codex"])
def test_a_relative_path_is_the_one_beside_the_caller_not_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    """`agc serve --codex-bin ./bin/codex` names a file relative to where the command
    runs; Codex is started in the workspace, where that path named nothing, so the
    check passed and the start failed ("exists but cannot be started")."""
    monkeypatch.chdir(tmp_path)
    config = make_config(tmp_path, codex_bin=spelling)
    assert resolve_binary(config.codex_bin, config.agent_env()) == (
        str(tmp_path / "bin" / "codex"),
        None,
    )
    report = run(Preflight(config, handshake=_ok_handshake).run())
    assert report.ready, report.to_dict()
    assert report.version == "codex-cli 0.171.0"


@pytest.mark.parametrize("entry", ["bin", "./bin"])
def test_a_name_found_through_a_relative_path_entry_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str
) -> None:
    """`codex` found on PATH=bin:… was returned as `bin/codex`: Codex is started in the
    workspace, where that names nothing. Made absolute where the command was given."""
    monkeypatch.chdir(tmp_path)
    env = {"PATH": f"{entry}:/usr/bin:/bin", "OPENAI_API_KEY": "placeholder-value"}
    config = make_config(tmp_path, env=env)
    assert resolve_binary("codex", config.agent_env()) == (str(tmp_path / "bin" / "codex"), None)
    report = run(Preflight(config, handshake=_ok_handshake).run())
    assert report.ready, report.to_dict()


def test_a_missing_explicit_path_is_missing(tmp_path: Path) -> None:
    report = run(_preflight(tmp_path, codex_bin=str(tmp_path / "no" / "codex")).run())
    assert _codes(report) == ["codex_cli_binary_missing"]


@pytest.mark.parametrize("kind", ["not-executable", "directory"])
def test_a_file_that_cannot_run_is_not_executable(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "tools" / "codex"
    target.parent.mkdir()
    if kind == "directory":
        target.mkdir()
    else:
        target.write_text("#!/bin/sh\necho hi\n")
        target.chmod(0o644)
    binary, blocker = resolve_binary(str(target), {})
    assert binary == str(target)
    assert blocker is not None
    assert blocker.code == "codex_cli_not_executable"
    if kind == "not-executable":
        # The same file found by PATH lookup is named, not called missing.
        _, on_path = resolve_binary("codex", {"PATH": str(target.parent)})
        assert on_path is not None
        assert on_path.code == "codex_cli_not_executable"


def test_a_binary_whose_loader_is_missing_is_a_native_dependency_failure(tmp_path: Path) -> None:
    binary = tmp_path / "tools" / "codex"
    binary.parent.mkdir()
    # The kernel cannot find the interpreter: exec fails with ENOENT on a file that exists,
    # which is what a missing ELF loader (a musl binary on glibc, …) looks like.
    binary.write_text("#!/nonexistent/ld-musl-x86_64.so.1\n")
    binary.chmod(0o755)
    report = run(_preflight(tmp_path, codex_bin=str(binary)).run())
    assert _codes(report) == ["codex_cli_native_dependency_missing"]


def test_a_loader_error_at_run_time_is_a_native_dependency_failure(tmp_path: Path) -> None:
    binary = tmp_path / "tools" / "codex"
    binary.parent.mkdir()
    binary.write_text(
        "#!/bin/sh\necho 'codex: error while loading shared libraries: libssl.so.3' >&2\nexit 127\n"
    )
    binary.chmod(0o755)
    report = run(_preflight(tmp_path, codex_bin=str(binary)).run())
    assert _codes(report) == ["codex_cli_native_dependency_missing"]


def test_a_version_command_that_fails_is_not_executable(tmp_path: Path) -> None:
    binary = tmp_path / "tools" / "codex"
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\nexit 3\n")
    binary.chmod(0o755)
    report = run(_preflight(tmp_path, codex_bin=str(binary)).run())
    assert _codes(report) == ["codex_cli_not_executable"]
    assert "exited 3" in report.blockers[0].message


def _unwritable_folder(tmp_path: Path) -> Path:
    if os.geteuid() == 0:
        return Path("/sys")  # root writes through permission bits, but not into sysfs
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    return folder


@pytest.mark.parametrize(
    ("which", "missing", "blocked"),
    [
        ("workspace", "workspace_mount_missing", "workspace_write_boundary_blocked"),
        ("codex_home", "codex_home_missing", "codex_home_write_blocked"),
    ],
)
def test_folders_that_are_missing_or_not_writable_are_blocked(
    tmp_path: Path, which: str, missing: str, blocked: str
) -> None:
    absent = run(_preflight(tmp_path, **{which: tmp_path / "absent"}).run())
    assert _codes(absent) == [missing]
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    assert _codes(run(_preflight(tmp_path, **{which: a_file}).run())) == [blocked]
    locked = run(_preflight(tmp_path, **{which: _unwritable_folder(tmp_path)}).run())
    assert _codes(locked) == [blocked]
    assert absent.version is None  # the deep checks need both folders


def test_check_folder_leaves_nothing_behind(tmp_path: Path) -> None:
    assert check_folder(tmp_path, missing="m", blocked="b", what="x") is None
    assert list(tmp_path.iterdir()) == []


def test_a_missing_key_names_the_variable_and_never_its_value(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path / "bin"), "OPENAI_API_KEY": "", "OTHER_KEY": "sk-not-shown"}
    fake_codex(tmp_path / "bin")
    report = run(
        _preflight(tmp_path, env=env, provider_key_env=("OPENAI_API_KEY", "OTHER_KEY")).run()
    )
    assert report.missing_env == ("OPENAI_API_KEY",)  # empty counts as unset
    answer = report.to_dict()
    assert answer["status"] == "failed"
    assert answer["error"]["code"] == "provider_unavailable"
    assert answer["error"]["missingEnv"] == ["OPENAI_API_KEY"]
    assert "sk-not-shown" not in str(answer)
    assert missing_env(["A", "B"], {"B": "x"}) == ("A",)


def test_the_answer_names_the_most_basic_missing_prerequisite_first(tmp_path: Path) -> None:
    """No Codex program and no API key: the message names the program (without it
    nothing starts, key or not), in plain words; the key is still listed."""
    env = {"PATH": str(tmp_path / "empty")}
    report = run(_preflight(tmp_path, env=env, provider_key_env=("OPENAI_API_KEY",)).run())
    assert _codes(report) == ["codex_cli_binary_missing", "provider_token_boundary"]
    error = report.to_dict()["error"]
    assert error["message"] == report.blockers[0].message
    assert "codex" in error["message"]
    assert "OPENAI_API_KEY" not in error["message"]
    assert error["missingEnv"] == ["OPENAI_API_KEY"]
    key = report.blockers[1].message
    assert (
        key == "the model provider's API key is not set in agc serve's environment: OPENAI_API_KEY"
    )


def test_a_failed_handshake_is_not_wired_and_is_not_cached(tmp_path: Path) -> None:
    calls: list[str] = []

    async def handshake(protocol: str) -> None:
        calls.append(protocol)
        if len(calls) == 1:
            raise ProviderError("stdio_protocol_not_wired", "no answer to initialize")

    preflight = Preflight(make_config(tmp_path), handshake=handshake)
    first = run(preflight.run())
    assert _codes(first) == ["stdio_protocol_not_wired"]
    second = run(preflight.run())
    assert second.ready
    third = run(preflight.run())
    assert third.ready
    assert calls == ["app-server", "app-server"]  # a pass is cached, a failure is not


def test_auto_tries_app_server_then_mcp_server(tmp_path: Path) -> None:
    calls: list[str] = []

    async def handshake(protocol: str) -> None:
        calls.append(protocol)
        if protocol == "app-server":
            raise ProviderError("stdio_protocol_not_wired", "unrecognized subcommand")

    report = run(Preflight(make_config(tmp_path, protocol="auto"), handshake=handshake).run())
    assert report.ready
    assert report.protocol == "mcp-server"
    assert calls == ["app-server", "mcp-server"]


def test_extra_checks_and_a_stopping_supervisor_block(tmp_path: Path) -> None:
    preflight = Preflight(
        make_config(tmp_path),
        handshake=_ok_handshake,
        extra_checks=[lambda: Blocker("audit_store_not_writable", "the store is read-only")],
        lifecycle=lambda: False,
    )
    assert _codes(run(preflight.run())) == ["runner_lifecycle_missing", "audit_store_not_writable"]
