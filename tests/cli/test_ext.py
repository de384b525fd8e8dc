"""``agc ext``: the DTOs, exit codes and messages of each command, run in process."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest

from agc.cli.app import main
from agc.exitcodes import ExitCode
from agc.extensions import STARTUP_STATUS_METHOD, ExtensionRepository
from tests.conftest import feed_stdin
from tests.extensions.builders import (
    access_plugins,
    codex_config_two_servers,
    plugin_with_two_skills_and_mcp,
    write_script,
    zip_entries,
    zip_folder,
)

DTO_ITEM_KEYS = {
    "id",
    "name",
    "originalName",
    "extensionType",
    "sourceName",
    "sourceRelativePath",
    "enabled",
    "status",
    "lastError",
}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = _run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def _import_plugin(tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    """Import the plugin with two skills and an MCP server; its import DTO."""
    source = plugin_with_two_skills_and_mcp(tmp_path)
    return _json(capsys, "ext", "import", str(source), "--store", str(store))


def test_import_json_is_the_import_dto(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path / "src")
    archive = zip_folder(plugin, tmp_path / "bundle.zip")
    dto = _json(capsys, "ext", "import", str(archive), "--store", str(store))
    assert {"imported", "sourceName", "renamed", "duplicate"} <= set(dto)
    assert dto["sourceName"] == "bundle.zip"
    assert (dto["renamed"], dto["duplicate"]) == (False, False)
    assert [set(item) for item in dto["imported"]] == [DTO_ITEM_KEYS] * 3
    assert [
        (i["name"], i["extensionType"], i["sourceRelativePath"], i["status"])
        for i in dto["imported"]
    ] == [
        ("art-skill", "skill", "skills/art-skill/SKILL.md", "enabled"),
        ("code-skill", "skill", "skills/code-skill/SKILL.md", "enabled"),
        ("search", "mcp", ".mcp.json", "enabled"),
    ]
    assert all(item["id"].startswith("extension-") for item in dto["imported"])
    assert all(item["sourceName"] == "bundle.zip" and item["enabled"] for item in dto["imported"])


def test_unknown_content_is_an_imported_item_not_a_top_level_field(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tool = write_script(tmp_path / "tool.exe", tmp_path)
    code, out, err = _run(capsys, "ext", "import", str(tool), "--store", str(store), "--json")
    assert code == ExitCode.USAGE, err
    dto = json.loads(out)
    assert "unknown" not in dto
    assert dto.pop("error")["code"] == "extension-unrecognised"
    assert dto["imported"] == [
        {
            "id": dto["imported"][0]["id"],
            "name": "tool.exe",
            "originalName": "tool.exe",
            "extensionType": "unknown",
            "sourceName": "tool.exe",
            "sourceRelativePath": "tool.exe",
            "enabled": False,
            "status": "unknown",
            "lastError": None,
        }
    ]


def test_a_repeated_import_reports_renamed_and_duplicate_with_one_notice(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path)
    _json(capsys, "ext", "import", str(plugin), "--store", str(store))
    code, out, err = _run(capsys, "ext", "import", str(plugin), "--store", str(store), "--json")
    assert code == 0
    dto = json.loads(out)
    assert (dto["renamed"], dto["duplicate"]) == (True, True)
    assert [item["name"] for item in dto["imported"]] == ["art-skill-2", "code-skill-2", "search-2"]
    assert err.count("named automatically") == 1


def test_several_paths_give_a_list_of_dtos(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plugins = access_plugins(tmp_path)
    dtos = _json(capsys, "ext", "import", *map(str, plugins), "--store", str(store))
    assert [dto["imported"][0]["name"] for dto in dtos] == ["access", "access-2", "access-3"]


def test_a_refused_archive_exits_2_names_the_entry_and_keeps_nothing(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = zip_entries(
        tmp_path / "evil.zip", [("skills/x/SKILL.md", b"---\n---\n"), ("../../x", b"")]
    )
    good = plugin_with_two_skills_and_mcp(tmp_path)
    code, out, err = _run(
        capsys, "ext", "import", str(archive), str(good), "--store", str(store), "--json"
    )
    assert code == ExitCode.USAGE
    assert "'../../x'" in err
    assert "hint:" in err
    refused, imported = json.loads(out)
    assert refused["error"]["code"] == "archive-refused"
    assert len(imported["imported"]) == 3
    assert len(ExtensionRepository(store).load().sources) == 1


@pytest.mark.parametrize(
    ("where", "what"),
    [
        ("skills/art-skill/SKILL.md", "an integer in the frontmatter is written with 5000"),
        (".mcp.json", "server 'search': `startup_timeout_sec` is an integer of 61 bits"),
    ],
    ids=["skill-integer", "mcp-timeout"],
)
def test_a_number_agc_cannot_keep_exits_2_names_the_file_and_keeps_nothing(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str], where: str, what: str
) -> None:
    """One huge number in one file of a plugin: the whole source is refused (exit 2,
    naming the source, the file and the number), nothing of it is kept, and the next
    source on the same command line is imported."""
    plugin = plugin_with_two_skills_and_mcp(tmp_path / "bad")
    if where.endswith("SKILL.md"):
        text = (plugin / where).read_text()
        (plugin / where).write_text(text.replace("---\n", f"---\nsize: {'9' * 5000}\n", 1))
    else:
        config = json.loads((plugin / where).read_text())
        config["search"]["startup_timeout_sec"] = 2**60
        (plugin / where).write_text(json.dumps(config))
    good = plugin_with_two_skills_and_mcp(tmp_path / "good", name="other")
    code, out, err = _run(
        capsys, "ext", "import", str(plugin), str(good), "--store", str(store), "--json"
    )
    assert code == ExitCode.USAGE
    assert f"my-plugin: {where}: {what}" in err
    assert "nothing was imported" in err
    refused, imported = json.loads(out)
    assert refused["error"]["code"] == "extension-value-refused"
    assert len(imported["imported"]) == 3
    index = ExtensionRepository(store).load()
    (kept,) = index.sources
    assert kept.original_name == "other"
    assert {item.source_id for item in index.items} == {kept.id}
    assert [p.name for p in (store / "extensions" / "sources").iterdir()] == [kept.id]


def test_a_missing_path_exits_2(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "ext", "import", str(tmp_path / "nope"), "--store", str(store))
    assert code == ExitCode.USAGE
    assert "does not exist" in err
    assert out == ""


def test_list_shows_every_item_flat_with_its_source_and_status(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = zip_folder(
        plugin_with_two_skills_and_mcp(tmp_path / "src"), tmp_path / "my-plugin.zip"
    )
    _json(capsys, "ext", "import", str(archive), "--store", str(store))
    _run(capsys, "ext", "disable", "code-skill", "--store", str(store))
    code, out, _ = _run(capsys, "ext", "list", "--store", str(store))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "TYPE", "SOURCE", "STATUS", "ID"]
    assert [line.split()[:4] for line in lines[1:]] == [
        ["art-skill", "Skill", "my-plugin.zip", "enabled"],
        ["code-skill", "Skill", "my-plugin.zip", "disabled"],
        ["search", "MCP", "my-plugin.zip", "enabled"],
    ]
    listed = _json(capsys, "ext", "list", "--type", "mcp", "--store", str(store))
    assert [item["name"] for item in listed["items"]] == ["search"]


def test_an_empty_list_says_so_and_is_not_an_error(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "ext", "list", "--store", str(store))
    assert (code, out) == (0, "")
    assert "No extensions imported yet" in err
    assert _json(capsys, "ext", "list", "--store", str(store))["items"] == []


def test_enable_disable_rename_rm(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _import_plugin(tmp_path, store, capsys)
    s = ("--store", str(store))
    assert _json(capsys, "ext", "disable", "search", *s)["items"][0]["status"] == "disabled"
    assert _json(capsys, "ext", "enable", "search", *s)["items"][0]["status"] == "enabled"
    renamed = _json(capsys, "ext", "rename", "search", "code-skill", *s)
    assert (renamed["item"]["name"], renamed["renamed"]) == ("code-skill", False)
    clash = _json(capsys, "ext", "rename", "art-skill", "code-skill", *s)
    assert (clash["item"]["name"], clash["renamed"]) == ("code-skill-2", True)
    removed = _json(capsys, "ext", "rm", "code-skill-2", *s)
    assert [r["name"] for r in removed["removed"]] == ["code-skill-2"]
    assert removed["sourcesDeleted"] == []


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (("ext", "rename", "art-skill", "Art  Skill"), ExitCode.USAGE, "not a valid skill name"),
        (("ext", "rename", "art-skill", ""), ExitCode.USAGE, "empty"),
        (("ext", "enable", "no-such-item"), ExitCode.USAGE, "no extension item"),
        (("ext", "rm", "extension-0000000000000000"), ExitCode.USAGE, "no extension item"),
    ],
)
def test_bad_requests_exit_2_with_a_message(
    tmp_path: Path,
    store: Path,
    capsys: pytest.CaptureFixture[str],
    argv: tuple[str, ...],
    code: int,
    message: str,
) -> None:
    _import_plugin(tmp_path, store, capsys)
    got, _out, err = _run(capsys, *argv, "--store", str(store))
    assert got == code
    assert message in err


def test_project_json_has_the_launchers_shape(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _import_plugin(tmp_path, store, capsys)
    home = tmp_path / "home"
    result = _json(capsys, "ext", "project", "--codex-home", str(home), "--store", str(store))
    assert {"skillRoot", "configToml", "fingerprint", "skills", "mcpServers"} <= set(result)
    assert result["skillRoot"] == str(home / "extension-skills")
    assert result["configToml"] == str(home / "config.toml")
    assert result["fingerprint"].startswith("blake3:")
    assert [set(skill) for skill in result["skills"]] == [{"id", "name", "path"}] * 2
    assert [set(server) for server in result["mcpServers"]] == [
        {"id", "name", "forwarded", "warnings"}
    ]
    assert Path(result["skills"][0]["path"]).is_file()


def test_project_with_a_base_config_and_extra_blocked_names(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _json(
        capsys,
        "ext",
        "import",
        str(codex_config_two_servers(tmp_path / "cfg")),
        "--store",
        str(store),
    )
    base = tmp_path / "launcher.toml"
    base.write_text('model = "m"\n[mcp_servers.agc_tools]\ncommand = "agc"\n')
    home = tmp_path / "home"
    code, _out, err = _run(
        capsys,
        "ext",
        "project",
        "--codex-home",
        str(home),
        "--base-config",
        str(base),
        "--block-env",
        "HOME_DIR",
        "--startup-grace-ms",
        "30000",
        "--store",
        str(store),
    )
    assert code == 0, err
    text = (home / "config.toml").read_text()
    assert "[mcp_servers.agc_tools]" in text
    assert "mcp_optional_startup_grace_ms = 30000" in text
    assert "HOME_DIR" not in text
    assert "not forwarded" in err
    assert "OPENAI_API_KEY" in err


def test_project_refuses_a_foreign_codex_home_with_exit_2(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("model = 'mine'\n")
    code, _, err = _run(capsys, "ext", "project", "--codex-home", str(home), "--store", str(store))
    assert code == ExitCode.USAGE
    assert "was not written by" in err
    assert (home / "config.toml").read_text() == "model = 'mine'\n"


@pytest.mark.parametrize("option", ["--codex-home", "--skill-root"])
def test_project_refuses_a_path_that_is_not_utf8_naming_it_and_creating_nothing(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    # The sealed projection record (JSON) and Codex's CODEX_HOME keep the paths as
    # UTF-8 text. A folder name that is not UTF-8 got as far as the record, after the
    # Codex home was created: "record holds a lone surrogate", with a hint about NaN and
    # seq/ts. It is refused first, naming the folder.
    _import_plugin(tmp_path, store, capsys)
    odd = Path(os.fsdecode(os.fsencode(tmp_path) + b"/home-\xff"))
    home = odd if option == "--codex-home" else tmp_path / "home"
    argv = ["ext", "project", "--codex-home", str(home), "--store", str(store)]
    if option == "--skill-root":
        argv += ["--skill-root", str(odd / "skills")]
    code, _, err = _run(capsys, *argv)
    assert code == ExitCode.USAGE, err
    what = "Codex home" if option == "--codex-home" else "skill root"
    assert err.startswith(f"error: the {what} b'{os.fsencode(tmp_path).decode()}/home-\\xff"), err
    assert "is not UTF-8" in err
    assert "seq/ts" not in err
    assert not odd.exists()
    assert not home.exists()


def test_a_bad_base_config_exits_2(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "base.toml"
    base.write_text("[unclosed")
    code, _, err = _run(
        capsys,
        "ext",
        "project",
        "--codex-home",
        str(tmp_path / "h"),
        "--base-config",
        str(base),
        "--store",
        str(store),
    )
    assert code == ExitCode.USAGE
    assert "not valid TOML" in err


@pytest.mark.parametrize(
    ("text", "problem", "hint"),
    [
        ("x = " + "[" * 200_000 + "]" * 200_000 + "\n", "too deep to read", None),
        ("x = " + "[" * 100 + "]" * 100 + "\n", "deeper than 64 levels", "config.toml"),
        ("mcp_servers = 5\n", "mcp_servers is not a table", "config.toml"),
    ],
)
def test_a_base_config_agc_cannot_use_exits_2_naming_it_without_a_traceback(
    tmp_path: Path,
    store: Path,
    capsys: pytest.CaptureFixture[str],
    text: str,
    problem: str,
    hint: str | None,
) -> None:
    base = tmp_path / "base.toml"
    base.write_text(text)
    home = tmp_path / "h"
    code, out, err = _run(
        capsys,
        "ext",
        "project",
        "--codex-home",
        str(home),
        "--base-config",
        str(base),
        "--store",
        str(store),
        "--json",
    )
    assert code == ExitCode.USAGE
    error = json.loads(out)["error"]
    assert problem in error["message"]
    assert "Traceback" not in err
    if hint is not None:
        assert hint in error["hint"]
    assert not (home / "config.toml").exists()


def _events(*items: tuple[str, str, str | None]) -> bytes:
    return b"".join(
        json.dumps(
            {
                "method": STARTUP_STATUS_METHOD,
                "params": {"name": name, "status": status, "error": error},
            }
        ).encode()
        + b"\n"
        for name, status, error in items
    )


def test_status_from_an_events_file_and_from_stdin(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _json(
        capsys,
        "ext",
        "import",
        str(codex_config_two_servers(tmp_path / "cfg")),
        "--store",
        str(store),
    )
    _json(capsys, "ext", "project", "--codex-home", str(tmp_path / "home"), "--store", str(store))
    events = tmp_path / "events.jsonl"
    events.write_bytes(_events(("search", "ready", None), ("docs", "failed", "401 Unauthorized")))
    status = _json(capsys, "ext", "status", "--from-events", str(events), "--store", str(store))
    by_name = {item["name"]: item for item in status["items"]}
    assert by_name["docs"]["status"] == "failed"
    assert by_name["docs"]["lastError"] == "startup failed: 401 Unauthorized"
    assert by_name["search"]["startupStatus"] == "ready"
    assert status["events"]["ignored"] == {"stale": 0, "unmatched": 0, "malformed": 0}
    feed_stdin(monkeypatch, _events(("docs", "ready", None)))
    again = _json(capsys, "ext", "status", "--from-events", "-", "--store", str(store))
    assert {item["name"]: item["status"] for item in again["items"]}["docs"] == "enabled"
    code, out, _ = _run(capsys, "ext", "status", "--store", str(store))
    assert code == 0
    assert "failed" not in out


def test_a_damaged_index_exits_3(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _import_plugin(tmp_path, store, capsys)
    index = store / "extensions" / "index.json"
    os.chmod(index, 0o644)
    index.write_text('{"schemaVersion": 1, "sources": "x"}')
    code, _, err = _run(capsys, "ext", "list", "--store", str(store))
    assert code == ExitCode.UNREADABLE
    assert "sources is not a list" in err


@pytest.mark.parametrize(
    "command", ["import", "list", "enable", "disable", "rename", "rm", "project", "status"]
)
def test_every_command_has_help_with_examples(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    code, out, _ = _run(capsys, "ext", command, "--help")
    assert code == 0
    assert "Examples:" in out
    assert "--store" in out
    assert "--json" in out
    assert "Exit codes:" in out


def test_an_empty_path_is_refused_and_never_imports_the_current_folder(
    tmp_path: Path,
    store: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cwd = tmp_path / "cwd"
    (cwd / "secrets").mkdir(parents=True)
    (cwd / "secrets" / ".env").write_text("TOKEN=do-not-copy\n")
    monkeypatch.chdir(cwd)
    code, out, err = _run(capsys, "ext", "import", "", "--store", str(store), "--json")
    assert code == ExitCode.USAGE
    dto = json.loads(out)
    assert dto["error"]["code"] == "input-invalid"
    assert "empty path" in dto["error"]["message"]
    assert "empty path" in err
    assert ExtensionRepository(store).items() == ()
    assert not (store / "extensions" / "sources").exists()


def test_a_source_that_is_not_there_or_cannot_be_read_gets_the_shared_exit_codes(
    tmp_path: Path,
    store: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As for every command: a named input that does not exist is exit 2 input-missing,
    # one that exists but cannot be read is exit 3 file-unreadable; nothing is kept.
    missing = tmp_path / "nope"
    code, out, err = _run(capsys, "ext", "import", str(missing), "--store", str(store), "--json")
    assert code == ExitCode.USAGE
    error = json.loads(out)["error"]
    assert error["code"] == "input-missing"
    assert str(missing) in error["message"]
    assert error["hint"]
    assert "hint:" in err

    (tmp_path / "file.txt").write_text("x")
    code, out, _ = _run(
        capsys, "ext", "import", str(tmp_path / "file.txt" / "x"), "--store", str(store), "--json"
    )
    assert code == ExitCode.USAGE
    assert json.loads(out)["error"]["code"] == "input-invalid"

    locked = tmp_path / "locked"
    locked.mkdir()
    real_stat = Path.stat

    def stat(self: Path, *args: Any, **kwargs: Any) -> os.stat_result:
        if self == locked:  # as a folder the user may not read (the tests may run as root)
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_stat(self, *args, **kwargs)

    monkeypatch.setattr(Path, "stat", stat)
    code, out, _ = _run(capsys, "ext", "import", str(locked), "--store", str(store), "--json")
    monkeypatch.undo()
    assert code == ExitCode.UNREADABLE
    error = json.loads(out)["error"]
    assert error["code"] == "file-unreadable"
    assert "permission denied" in error["message"].lower()
    assert ExtensionRepository(store).items() == ()


def test_names_from_an_archive_never_reach_the_terminal_as_control_sequences(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    osc_title = "\x1b]0;pwned\x07"
    archive = zip_entries(
        tmp_path / "esc.zip",
        [
            (
                f"plugins/{osc_title}evil/.codex-plugin/plugin.json",
                json.dumps({"name": "p", "hooks": "./h.json", "skills": "./\x1b[2Jx"}).encode(),
            ),
            ("skills/\x1b[31mred\nline/SKILL.md", b"---\ndescription: d\n---\n"),
        ],
    )
    code, out, err = _run(capsys, "ext", "import", str(archive), "--store", str(store))
    assert code == ExitCode.OK
    code, listed, _ = _run(capsys, "ext", "list", "--store", str(store))
    assert code == ExitCode.OK
    for text in (out, err, listed):
        assert "\x1b" not in text
        assert "\x07" not in text
    assert "skills/\\x1b[31mred\\nline/SKILL.md" in out
    assert "\\x1b]0;pwned\\x07evil" in err
    assert len(out.splitlines()) == 3  # the header line, the table head, one item


def _forwarding_config(folder: Path) -> Path:
    """A Codex config.toml of a local and a remote server that ask for the client's
    credentials by name (the shapes published GitHub and database servers use)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.toml"
    path.write_text(
        "[mcp_servers.local-tools]\n"
        'command = "node"\n'
        'env_vars = ["AWS_SECRET_ACCESS_KEY", "LOG_LEVEL", "OPENAI_API_KEY"]\n'
        'env = { MODE = "fast" }\n'
        "[mcp_servers.hosted]\n"
        'url = "https://user:hunter2@mcp.example.com/v1?x=1"\n'
        'bearer_token_env_var = "GITHUB_TOKEN"\n'
        'env_http_headers = { "X-Db" = "DATABASE_URL", "X-Region" = "REGION" }\n',
        encoding="utf-8",
    )
    return path


def test_show_says_what_an_item_receives_and_warns_of_credentials_sent_away(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s = ("--store", str(store))
    code, _, err = _run(capsys, "ext", "import", str(_forwarding_config(tmp_path / "in")), *s)
    assert code == 0, err
    warning = (
        "warning: MCP server hosted: the credential GITHUB_TOKEN (secret-assignment) of the "
        "launching environment is sent to the remote server mcp.example.com in the "
        "Authorization header"
    )
    assert warning in err
    assert "DATABASE_URL (credential-variable)" in err
    assert "local-tools: the credential" not in err  # a local server: shown, not warned

    shown = _json(capsys, "ext", "show", "hosted", *s)
    receives = shown["receives"]
    assert (receives["transport"], receives["remote"]) == ("http", True)
    assert [(f["variable"], f["credential"], f["blocked"]) for f in receives["forwarded"]] == [
        ("GITHUB_TOKEN", "secret-assignment", False),
        ("DATABASE_URL", "credential-variable", False),
        ("REGION", None, False),
    ]
    assert len(receives["warnings"]) == 2
    assert shown["item"]["name"] == "hosted"

    local = _json(capsys, "ext", "show", "local-tools", *s)["receives"]
    assert local["remote"] is False
    assert local["env"] == ["MODE"]
    assert [(f["variable"], f["blocked"]) for f in local["forwarded"]] == [
        ("AWS_SECRET_ACCESS_KEY", False),
        ("LOG_LEVEL", False),
        ("OPENAI_API_KEY", True),
    ]
    assert local["warnings"] == []

    code, out, err = _run(capsys, "ext", "show", "local-tools", *s)
    assert code == 0
    assert (
        "from the launching environment: AWS_SECRET_ACCESS_KEY (credential: aws-secret-key), "
        "LOG_LEVEL" in out
    )
    assert "never given (the client's own secrets): OPENAI_API_KEY" in out
    code, out, err = _run(capsys, "ext", "show", "hosted", *s)
    assert "server:  http (remote)" in out
    assert warning in err
    assert "hunter2" not in out + err

    projection = _json(capsys, "ext", "project", "--codex-home", str(tmp_path / "h"), *s)
    by_name = {server["name"]: server for server in projection["mcpServers"]}
    assert by_name["hosted"]["forwarded"] == ["GITHUB_TOKEN", "DATABASE_URL", "REGION"]
    assert by_name["local-tools"]["forwarded"] == ["AWS_SECRET_ACCESS_KEY", "LOG_LEVEL"]
    assert len(by_name["hosted"]["warnings"]) == 2


def test_show_marks_a_credential_stored_in_the_items_own_env(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A variable whose value is written in the configuration itself is marked when its
    name says it holds a credential (names only: the value is never shown)."""
    config = tmp_path / "mcp.toml"
    config.write_text(
        '[mcp_servers.search]\ncommand = "search-mcp"\n'
        'env = { SEARCH_API_KEY = "kq7-not-a-real-key-31", MODE = "fast" }\n',
        encoding="utf-8",
    )
    s = ("--store", str(store))
    code, _, err = _run(capsys, "ext", "import", str(config), *s)
    assert code == 0, err
    receives = _json(capsys, "ext", "show", "search", *s)["receives"]
    assert receives["env"] == ["MODE", "SEARCH_API_KEY"]
    assert set(receives["envCredentials"]) == {"SEARCH_API_KEY"}
    code, out, err = _run(capsys, "ext", "show", "search", *s)
    assert code == 0
    assert "own env: MODE, SEARCH_API_KEY (credential: " in out
    assert "kq7-not-a-real-key-31" not in out + err


def test_a_credential_header_written_in_the_items_config_is_marked_and_warned(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A literal `Authorization` header of a remote server is a credential sent to it:
    marked by `ext show` and a warning of `ext show` and `ext project` (names only)."""
    config = tmp_path / "mcp.toml"
    config.write_text(
        '[mcp_servers.remote]\nurl = "https://mcp.example.com/mcp"\n'
        'http_headers = { Authorization = "Bearer kq7-not-a-real-token-31", Accept = "x" }\n',
        encoding="utf-8",
    )
    s = ("--store", str(store))
    code, _, err = _run(capsys, "ext", "import", str(config), *s)
    assert code == 0, err
    receives = _json(capsys, "ext", "show", "remote", *s)["receives"]
    assert receives["headerCredentials"] == {"Authorization": "authorization"}
    assert any("the Authorization header" in w for w in receives["warnings"])
    code, out, err = _run(capsys, "ext", "show", "remote", *s)
    assert "headers: Accept, Authorization (credential: authorization" in out
    assert "kq7-not-a-real-token-31" not in out + err
    projection = _json(capsys, "ext", "project", "--codex-home", str(tmp_path / "h"), *s)
    (server,) = projection["mcpServers"]
    assert any("the Authorization header" in w for w in server["warnings"])
    assert "kq7-not-a-real-token-31" not in json.dumps(projection)


def test_show_of_a_skill_says_it_receives_no_environment(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _import_plugin(tmp_path, store, capsys)
    code, out, _ = _run(capsys, "ext", "show", "art-skill", "--store", str(store))
    assert code == 0
    assert "receives no environment" in out
    code, _, err = _run(capsys, "ext", "show", "no-such-item", "--store", str(store))
    assert code == ExitCode.USAGE
    assert "no extension item" in err


def test_importing_the_same_source_again_says_so_and_how_to_undo_it(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second import of the same bytes (here with --env-ref both times) is a second
    copy, as documented; its notice names the earlier source and the command that
    removes the copy, and that command leaves the first import as it was."""
    plugin = plugin_with_two_skills_and_mcp(tmp_path)
    argv = ("ext", "import", str(plugin), "--store", str(store), "--env-ref", "--json")
    code, out, _ = _run(capsys, *argv)
    assert code == 0
    first = json.loads(out)
    code, out, err = _run(capsys, *argv)
    assert code == 0
    second = json.loads(out)
    copy = [item["id"] for item in second["imported"]]
    assert f"The same source was imported before ({first['sourceId']})" in second["notice"]
    assert second["notice"].endswith(f"agc ext rm {' '.join(copy)}")
    assert "imported before" in err
    code, _, _ = _run(capsys, "ext", "rm", *copy, "--store", str(store))
    assert code == 0
    index = ExtensionRepository(store).load()
    assert [source.id for source in index.sources] == [first["sourceId"]]
    assert sorted(item.name for item in index.items) == ["art-skill", "code-skill", "search"]
    # other bytes under the same names: a name collision, not the same source
    (plugin / "skills" / "art-skill" / "references" / "palette.md").write_text("# Other\n")
    code, out, _ = _run(capsys, *argv)
    assert code == 0
    notice = json.loads(out)["notice"]
    assert notice.startswith("Duplicate or same-name extensions found")
    assert "imported before" not in notice


@pytest.mark.parametrize("kind", ["text-file", "folder"])
def test_a_source_with_nothing_recognised_is_an_error_naming_it_and_why(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    if kind == "text-file":
        source = tmp_path / "notes.txt"
        source.write_text("remember the milk\n")
        why = "a lone file is read as a Skill when named SKILL.md"
    else:
        source = tmp_path / "misc"
        (source / "docs").mkdir(parents=True)
        (source / "docs" / "a.txt").write_text("hello")
        why = "a folder is read for SKILL.md files"
    code, out, err = _run(capsys, "ext", "import", str(source), "--store", str(store))
    assert code == ExitCode.USAGE
    # The error is all that is said: no "Imported … 1 item" table beside it.
    assert out == ""
    assert "Imported" not in err
    error = next(line for line in err.splitlines() if line.startswith("error:"))
    assert error.startswith(f"error: {source.name}: no Skill, MCP server or plugin recognised")
    assert why in error
    # Kept as unrecognised content is (one disabled unknown item); the hint removes it.
    (item,) = _json(capsys, "ext", "list", "--store", str(store))["items"]
    assert (item["extensionType"], item["enabled"]) == ("unknown", False)
    assert f"`agc ext rm {item['id']}` removes it" in err
    # A source with something recognised beside it is no error.
    (source.parent / "SKILL.md").write_text("---\nname: s\ndescription: d\n---\n")
    code, _, err = _run(
        capsys, "ext", "import", str(source.parent / "SKILL.md"), "--store", str(store)
    )
    assert code == 0, err
