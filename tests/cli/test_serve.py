"""``agc serve`` at the edge: the audit sink (agc runs + turn ledger) and the command's
refusals. The real server with the real Codex runs in tests/e2e/test_serve_codex.py."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from agc.cli import agc_main
from agc.cli.serve import AuditSink, handle_leftovers, is_loopback, ledger_root_for, listen_url
from agc.errors import UsageError
from agc.extensions import ExtensionRepository
from agc.integrity import check_run
from tests.extensions.builders import plugin_with_two_skills_and_mcp
from tests.serve.helpers import start_command_turn, turn_info


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_serve_recover_seals_what_a_crash_left_and_otherwise_only_lists_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    sink = AuditSink(store=store, signing_key=None, ledger_root=None)
    trace_id = "trc-" + "b" * 32
    sink.on_turn_start(turn_info(trace_id))
    sink._turns[trace_id].run.abort()
    assert handle_leftovers(sink, store=store, signing_key=None, recover=False) == []
    assert "agc serve --recover" in capsys.readouterr().err
    assert not check_run(trace_id, store).complete
    assert handle_leftovers(sink, store=store, signing_key=None, recover=True) == [trace_id]
    assert check_run(trace_id, store).complete
    assert handle_leftovers(sink, store=store, signing_key=None, recover=True) == []


def test_a_crash_between_the_two_seals_is_found_and_recovered_at_the_next_start(
    tmp_path: Path,
) -> None:
    # The transcript is sealed first: killed before the tool events' seal, the run's
    # transcript has its sidecar, and the run is still incomplete.
    store = tmp_path / "store"
    sink = AuditSink(store=store, signing_key=None, ledger_root=None)
    trace_id = "trc-" + "d" * 32
    start_command_turn(sink, trace_id)
    run_writers = sink._turns[trace_id].run
    run_writers.transcript.close()
    run_writers.tool_events.abort()  # the kill -9
    assert not check_run(trace_id, store).complete
    assert sink.unsealed_runs() == [trace_id]
    assert handle_leftovers(sink, store=store, signing_key=None, recover=True) == [trace_id]
    assert check_run(trace_id, store).complete
    tools = _lines(store / "audit" / "tool-events" / f"{trace_id}.jsonl")
    assert [t["type"] for t in tools] == ["tool.call"]
    assert sink.unsealed_runs() == []


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("192.168.1.4", False),
        ("example.com", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_non_loopback_address_needs_the_flag_and_a_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AGC_SERVE_TOKEN", raising=False)
    base = ["serve", "--workspace", str(tmp_path), "--store", str(tmp_path / "s")]
    assert agc_main([*base, "--host", "0.0.0.0"]) == 2
    assert "--allow-non-loopback" in capsys.readouterr().err
    assert agc_main([*base, "--host", "0.0.0.0", "--allow-non-loopback"]) == 2
    assert "bearer token" in capsys.readouterr().err
    monkeypatch.setenv("AGC_SERVE_TOKEN", "short")
    assert agc_main([*base, "--host", "0.0.0.0", "--allow-non-loopback"]) == 2
    err = capsys.readouterr().err
    assert "at least 16" in err
    assert "short" not in err.replace("shortly", "")


@pytest.mark.parametrize(
    "token", ["Z" * 20 + "\n", " " * 20, "Z" * 10 + " " + "Z" * 10, "Z" * 20 + "\u00e9"]
)
def test_a_token_no_client_could_present_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], token: str
) -> None:
    # The presented token is stripped and is visible ASCII: with this one every request
    # would be refused 401 (twenty spaces even passed the length check).
    monkeypatch.setenv("AGC_SERVE_TOKEN", token)
    base = ["serve", "--workspace", str(tmp_path), "--store", str(tmp_path / "s")]
    with socket.socket() as taken:  # were the token let through, it would stop here
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        assert agc_main([*base, "--port", port]) == 2
    err = capsys.readouterr().err
    assert "$AGC_SERVE_TOKEN holds a character a bearer token cannot have" in err
    assert "Z" * 10 not in err


def test_a_bad_protocol_and_a_busy_port_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "w").mkdir()
    base = ["serve", "--workspace", str(tmp_path / "w"), "--store", str(tmp_path / "s")]
    assert agc_main([*base, "--protocol", "websocket"]) == 2
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert agc_main([*base, "--port", str(port)]) == 2
    assert "cannot listen" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1", "http://127.0.0.1:8765"),
        ("localhost", "http://localhost:8765"),
        ("::1", "http://[::1]:8765"),
        ("[::1]", "http://[::1]:8765"),
        ("[fe80::1]", "http://[fe80::1]:8765"),
    ],
)
def test_the_listening_url_brackets_an_ipv6_address_once(host: str, url: str) -> None:
    assert listen_url(host, 8765) == url


def test_the_ledger_defaults_to_the_store_and_is_refused_inside_the_workspace(
    tmp_path: Path,
) -> None:
    workspace = (tmp_path / "w").resolve()
    workspace.mkdir()
    store = tmp_path / "store"
    assert ledger_root_for(None, workspace=workspace, store_root=store, insecure=False) == (
        store.resolve() / "ledger"
    )
    for inside in (workspace, workspace / ".agent" / "..", workspace / "sub"):
        with pytest.raises(UsageError, match="inside the workspace") as refused:
            ledger_root_for(inside, workspace=workspace, store_root=store, insecure=False)
        assert "--insecure-ledger-in-workspace" in (refused.value.hint or "")
        assert ledger_root_for(inside, workspace=workspace, store_root=store, insecure=True) == (
            inside.resolve()
        )
    # A store inside the workspace puts its ledger there too: refused the same way.
    with pytest.raises(UsageError, match="the store's ledger folder"):
        ledger_root_for(None, workspace=workspace, store_root=workspace / "s", insecure=False)
    # A symlink out of the workspace is judged where it leads.
    (tmp_path / "elsewhere").mkdir()
    (workspace / "link").symlink_to(tmp_path / "elsewhere")
    assert (
        ledger_root_for(workspace / "link", workspace=workspace, store_root=store, insecure=False)
        == (tmp_path / "elsewhere").resolve()
    )


@pytest.mark.parametrize(
    ("ledger", "workspace"),
    [
        ("lr", "lr/.agent"),  # the workspace is the ledger's own .agent/
        ("lr", "lr/sub/deeper"),
        ("lr", "lr"),
        ("link-to-lr", "lr/.agent"),  # a symlink naming the ledger root
        ("lr", "link-to-lr/.agent"),  # a symlink naming the workspace
        ("lr", "link-to-inside"),  # a symlink out of the ledger root's reach, leading in
    ],
)
def test_a_ledger_root_holding_the_workspace_is_refused(
    tmp_path: Path, ledger: str, workspace: str
) -> None:
    """The agent writes anywhere in the workspace: a ledger root holding it is within
    reach too, whichever path names either (symbolic links are followed)."""
    (tmp_path / "lr" / ".agent").mkdir(parents=True)
    (tmp_path / "lr" / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "link-to-lr").symlink_to(tmp_path / "lr")
    (tmp_path / "link-to-inside").symlink_to(tmp_path / "lr" / "sub")
    root, work = tmp_path / ledger, tmp_path / workspace
    with pytest.raises(UsageError, match="workspace") as refused:
        ledger_root_for(root, workspace=work, store_root=tmp_path / "s", insecure=False)
    assert "--insecure-ledger-in-workspace" in (refused.value.hint or "")
    assert ledger_root_for(root, workspace=work, store_root=tmp_path / "s", insecure=True) == (
        root.resolve()
    )
    # siblings whose names share a beginning hold nothing of one another
    (tmp_path / "lr-work").mkdir()
    beside = ledger_root_for(
        tmp_path / "lr", workspace=tmp_path / "lr-work", store_root=tmp_path / "s", insecure=False
    )
    assert beside == (tmp_path / "lr").resolve()


def test_serve_refuses_a_ledger_root_in_the_workspace_before_it_listens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "w").mkdir()
    base = ["serve", "--workspace", str(tmp_path / "w"), "--store", str(tmp_path / "s")]
    with socket.socket() as taken:  # were the ledger root let through, it would stop here
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        assert agc_main([*base, "--port", port, "--ledger-root", str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err
    assert "inside the workspace" in err
    assert "--insecure-ledger-in-workspace" in err


def test_serve_refuses_a_ledger_root_holding_the_workspace_before_it_listens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--workspace lr/.agent --ledger-root lr``: the agent would write the ledger."""
    (tmp_path / "lr" / ".agent").mkdir(parents=True)
    workspace = str(tmp_path / "lr" / ".agent")
    base = ["serve", "--workspace", workspace, "--store", str(tmp_path / "s")]
    with socket.socket() as taken:  # were the ledger root let through, it would stop here
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        assert agc_main([*base, "--port", port, "--ledger-root", str(tmp_path / "lr")]) == 2
    err = capsys.readouterr().err
    assert "holds the workspace" in err
    assert "--insecure-ledger-in-workspace" in err


def test_serve_refuses_an_extensions_home_it_cannot_project_into_before_it_listens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The enabled items are projected at the start: a foreign Codex home is refused
    (exit 2, the file named, left as it was); ``--no-extensions`` does not project."""
    (tmp_path / "w").mkdir()
    store = tmp_path / "s"
    ExtensionRepository(store).import_path(plugin_with_two_skills_and_mcp(tmp_path / "in"))
    foreign = tmp_path / "foreign-home"
    foreign.mkdir()
    (foreign / "config.toml").write_text('model = "mine"\n', encoding="utf-8")
    base = ["serve", "--workspace", str(tmp_path / "w"), "--store", str(store)]
    with socket.socket() as taken:  # were the projection let through, it would stop here
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        args = [*base, "--port", port, "--extensions-home", str(foreign)]
        assert agc_main(args) == 2
        err = capsys.readouterr().err
        assert "was not written by `agc ext project`" in err
        assert (foreign / "config.toml").read_text() == 'model = "mine"\n'
        assert agc_main([*args, "--no-extensions"]) == 2
        assert "cannot listen" in capsys.readouterr().err


def test_a_ledger_root_under_another_name_of_the_workspace_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One folder under two names (a bind mount: `mount --bind ws alias`) is one folder:
    a ledger root inside the alias is inside the workspace. The mount is stood in for
    by giving the alias the workspace's device and inode."""
    workspace, alias, store = tmp_path / "ws", tmp_path / "alias", tmp_path / "store"
    for folder in (workspace, alias, store):
        folder.mkdir()
    real_stat = os.stat

    def stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        same = Path(path) == alias
        return real_stat(workspace if same else path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    with pytest.raises(UsageError, match="inside the workspace"):
        ledger_root_for(alias / "ledger", workspace=workspace, store_root=store, insecure=False)
    with pytest.raises(UsageError, match="holds the workspace"):
        ledger_root_for(alias, workspace=workspace / "sub", store_root=store, insecure=False)
    apart = ledger_root_for(store / "ledger", workspace=workspace, store_root=store, insecure=False)
    assert apart == (store / "ledger").resolve()
