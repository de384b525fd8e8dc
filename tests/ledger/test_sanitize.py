"""Tests for agc.ledger._sanitize: paths, commands and text."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc.errors import UsageError
from agc.exitcodes import ExitCode
from agc.ledger._sanitize import (
    PathSanitizer,
    clean_media_type,
    clean_name,
    clean_token,
    deny_reason,
)
from tests.conftest import examples
from tests.ledger.helpers import command, completed, mcp, record_turn

REACHES_INSIDE = {
    "agc.ledger._sanitize": "the sanitizer's rules on single values",
}

ROOT = "/home/alice/proj"
SAN = PathSanitizer([ROOT, "C:\\Users\\alice\\proj"])


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("/home/alice/proj/a/b.md", "a/b.md"),
        ("/home/alice/proj", "."),
        ("/home/alice/proj/", "."),
        ("a\\b.md", "a/b.md"),
        ("./a//b/./c.md", "a/b/c.md"),
        ("a/x/../b.md", "a/b.md"),
        ("C:\\Users\\alice\\proj\\game\\index.html", "game/index.html"),
        ("c:/users/ALICE/proj/x.md", "x.md"),
        ("  assets/uploads/x.md  ", "assets/uploads/x.md"),
        (".", "."),
    ],
)
def test_clean_makes_paths_project_relative(raw: str, expected: str) -> None:
    assert SAN.clean(raw).path == expected


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("../x", "outside"),
        ("a/../../x", "outside"),
        ("/etc/passwd", "outside"),
        ("/home/alice/projX/a", "outside"),
        ("/home/alice/proj/../other/a", "outside"),
        ("D:\\Users\\alice\\proj\\x", "outside"),
        ("~/x", "home"),
        ("~alice/x", "home"),
        ("$HOME/x", "home"),
        ("%USERPROFILE%\\x", "home"),
        ("\\\\server\\share\\x", "unc"),
        ("//server/share/x", "unc"),
        ("https://example.com/x", "url"),
        ("file:///home/alice/proj/x", "url"),
        ("C:foo", "invalid"),
        ("a\x00b", "invalid"),
        ("a\nb", "invalid"),
        ("", "invalid"),
        ("x" * 2000, "invalid"),
        (".agent/agent.db", "control-plane"),
        ("src/.git/config", "control-plane"),
        ("/home/alice/proj/.agent/runtime/x", "control-plane"),
        (".env", "sensitive"),
        ("config/.env.local", "sensitive"),
        ("keys/server.pem", "sensitive"),
        ("home/.ssh/config", "sensitive"),
        ("id_ed25519.pub", "sensitive"),
        ("auth.json", "sensitive"),
    ],
)
def test_clean_rejects_with_reason(raw: str, reason: str) -> None:
    cleaned = SAN.clean(raw)
    assert cleaned.path is None
    assert cleaned.rejected == reason


def test_clean_rejects_non_strings() -> None:
    assert SAN.clean(None).rejected == "invalid"
    assert SAN.clean(["a"]).rejected == "invalid"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("/bin/zsh -lc 'cat /home/alice/proj/README.md'", "/bin/zsh -lc 'cat README.md'"),
        ("rg foo /home/alice/proj", "rg foo ."),
        ("git log a..b", "git log a..b"),
        ("ls assets/uploads", "ls assets/uploads"),
        ("cat x > /dev/null", "cat x > /dev/null"),
        ("curl https://example.com/page", "curl https://example.com/page"),
    ],
)
def test_clean_command_keeps_or_relativizes(raw: str, expected: str) -> None:
    assert SAN.clean_command(raw, max_chars=240).text == expected


@pytest.mark.parametrize(
    "raw",
    [
        "cat /etc/passwd",
        "type C:\\Users\\bob\\fast_gdd.md",
        "ls ~",
        "cat ~/notes",
        "echo $HOME",
        "cd .. && ls",
        "cat ../../secret",
        "curl https://x.example/a?sig=abc",
        "curl https://user:pw@x.example/a",
        "cat file:///etc/hosts",
        "cat \\\\srv\\share\\x",
        "echo a\x00b",
        "cat /home/alice/proj/../bob/x",
    ],
)
def test_clean_command_drops_whole_command_when_a_path_cannot_be_relative(raw: str) -> None:
    cleaned = SAN.clean_command(raw, max_chars=240)
    assert cleaned.text is None
    assert cleaned.redacted is True


def test_clean_command_truncates_to_240() -> None:
    cleaned = SAN.clean_command("echo " + "x" * 400, max_chars=240)
    assert cleaned.text is not None
    assert len(cleaned.text) == 240
    assert cleaned.truncated is True


def test_clean_text_replaces_foreign_paths_and_keeps_words() -> None:
    cleaned = SAN.clean_text(
        "read /home/alice/proj/a.md, not /etc/x nor C:\\Users\\bob\\y or ~/z", max_chars=4000
    )
    assert cleaned.text == "read a.md, not [path] nor [path] or [path]"
    assert cleaned.redacted is True


def test_clean_text_cuts_and_drops_control_characters() -> None:
    cleaned = SAN.clean_text("ab\x00c\u202edef", max_chars=4)
    assert cleaned.text == "abcd"
    assert cleaned.truncated is True
    assert cleaned.redacted is False


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("fast_gdd.md", "fast_gdd.md"),
        ("C:\\Users\\bob\\fast_gdd.md", "fast_gdd.md"),
        ("/home/bob/x.md", "x.md"),
        ("..", None),
        ("~bob", None),
        (3, None),
    ],
)
def test_clean_name_keeps_the_base_name_only(raw: object, expected: str | None) -> None:
    assert clean_name(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("text/markdown", "text/markdown"),
        ("Text/Markdown; charset=utf-8", "text/markdown"),
        ("not a type", None),
        (None, None),
    ],
)
def test_clean_media_type(raw: object, expected: str | None) -> None:
    assert clean_media_type(raw) == expected


def test_clean_token_and_deny_reason() -> None:
    assert clean_token("agc_write_file") == "agc_write_file"
    assert clean_token("[REDACTED_NAME len=43]") is None
    assert clean_token("a" * 129) is None
    assert deny_reason(("game", "index.html")) is None


# -- property tests: hostile input never reaches the file ------------------------------

USER = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=4, max_size=10).map(
    lambda s: "zq" + s
)
SEGMENT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="/\\"),
    min_size=1,
    max_size=12,
)


@st.composite
def hostile_paths(draw: st.DrawFn) -> tuple[str, str]:
    """``(path, user)``: an absolute or home path naming ``user``, in many spellings."""
    user = draw(USER)
    prefix = draw(
        st.sampled_from(
            [
                f"/home/{user}/",
                f"/Users/{user}/",
                f"C:\\Users\\{user}\\",
                f"c:/Users/{user}/",
                f"C:/Users\\{user}/",
                f"\\\\{user}-pc\\share\\",
                f"//{user}-pc/share/",
                f"~{user}/",
                "~/" + user + "/",
                "$HOME/" + user + "/",
                "%USERPROFILE%\\" + user + "\\",
                f"/home/alice/proj/../../{user}/",
                f"../../{user}/",
            ]
        )
    )
    parts = draw(st.lists(SEGMENT, min_size=0, max_size=4))
    sep = draw(st.sampled_from(["/", "\\"]))
    tail = sep.join(parts)
    if draw(st.booleans()):
        tail += draw(st.sampled_from(["\x00", "x" * 3000, "\n", ""]))
    return prefix + tail, user


@given(hostile_paths())
def test_property_clean_never_returns_a_host_path(case: tuple[str, str]) -> None:
    path, user = case
    cleaned = SAN.clean(path)
    assert cleaned.path is None or user not in cleaned.path
    if cleaned.path is not None:
        assert not cleaned.path.startswith("/")
        assert ".." not in cleaned.path.split("/")


@given(st.text(max_size=200))
def test_property_clean_output_is_always_relative_posix(raw: str) -> None:
    cleaned = SAN.clean(raw)
    assert (cleaned.path is None) != (cleaned.rejected is None)
    if cleaned.path is not None:
        assert not cleaned.path.startswith(("/", "~"))
        assert "\\" not in cleaned.path
        assert ".." not in cleaned.path.split("/")
        assert re.match(r"[A-Za-z]:", cleaned.path) is None or "/" in cleaned.path
        assert all(ord(ch) >= 32 for ch in cleaned.path)


@given(hostile_paths(), st.sampled_from(["cat {}", "type {}", "ls -la {} | head", "rg x {}"]))
def test_property_clean_command_never_keeps_a_host_path(
    case: tuple[str, str], template: str
) -> None:
    path, user = case
    cleaned = SAN.clean_command(template.format(path), max_chars=240)
    assert cleaned.text is None or user not in cleaned.text


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(hostile_paths())
def test_property_no_host_path_home_or_user_reaches_the_turn_file(case: tuple[str, str]) -> None:
    """Hostile paths and commands everywhere a path can appear."""
    path, user = case
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "proj"
        project.mkdir()
        events = [
            command("c1", f"cat {path}", [{"type": "read", "path": path}]),
            command("c2", f"ls {path}", [{"type": "listFiles", "path": path}]),
            command("c3", "rg x", [{"type": "search", "query": path, "path": path}]),
            mcp("m1", "agc_write_file", {"path": path, "content": path}),
            mcp("m2", "taonier_prepare_game_art", {"brief": f"use {path} please"}),
            mcp("m3", "agc_import_account_assets", {"localPaths": [path, path]}),
            completed({"type": "imageView", "id": "i1", "path": path}),
            completed({"type": "webSearch", "id": "w1", "query": f"about {path}"}),
            completed(
                {
                    "type": "fileChange",
                    "id": "f1",
                    "changes": [
                        {"path": path, "kind": "add"},
                        {"path": "ok.md", "kind": {"type": "update", "movePath": path}},
                    ],
                }
            ),
        ]
        outcome = record_turn(
            project,
            events,
            prompt=path,
            attachments=[{"name": path, "localPath": path, "status": "imported"}],
        )
        data = outcome.turn_file.read_bytes().decode()
        db = (project / ".agent" / "agent.db").read_bytes()
        assert outcome.audit_write_failed is False
        for text in (data, db.decode("utf-8", "replace")):
            assert user not in text
            assert str(Path.home()) not in text
            assert tmp not in text
        for line in data.splitlines():
            json.loads(line)


def test_clean_text_leaves_words_that_only_look_like_paths() -> None:
    text = "60 fps / smooth, ~5 enemies, A/B testing, ~ 3 levels, see /etc"
    assert SAN.clean_text(text, max_chars=4000).text == text


@pytest.mark.parametrize(
    "raw",
    [
        'curl -H "Authorization: Bearer abcdefghijklmnop" https://api.example.com/v1',
        "OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx codex exec",
        "git clone https://ghp_abcdefghijklmnopqrstuvwxyz0123@github.com/x/y",
        "mysql --password=hunter22 db",
        "export AWS_ACCESS_KEY_ID=AKIAABCDEFGHIJKLMNOP",
        "echo token: abcdefgh12345678",
    ],
)
def test_commands_with_credentials_are_dropped(raw: str) -> None:
    cleaned = SAN.clean_command(raw, max_chars=240)
    assert cleaned.text is None
    assert cleaned.redacted is True


def test_text_credentials_become_secret_marks() -> None:
    cleaned = SAN.clean_text("use key sk-abcdefghijklmnopqrstuvwx for art", max_chars=4000)
    assert cleaned.text == "use key [secret] for art"
    assert cleaned.redacted is True
    assert SAN.clean_text("collect 5 tokens per level", max_chars=100).text == (
        "collect 5 tokens per level"
    )


def test_design_words_are_not_taken_for_credentials() -> None:
    text = "Basic gameplay loop: collect tokens, Bearer of the crown"
    assert SAN.clean_text(text, max_chars=4000).text == text


# -- paths glued to a word: CJK text, markdown, quotes, short options --------------------


@pytest.mark.parametrize(
    "raw",
    [
        "tar -C/home/bob/proj -xf a.tar",
        "gcc -I/Users/bob/include a.c",
        "git -C/home/bob/repo status",
        "ld -L/opt/bob/lib x.o",
        "cat -f../../bob/x",
        "cat ${IFS}/home/bob/x",
        "cat a*/home/bob/x",
        "echo 见/Users/bob/gdd.md",
        "echo 参考C:\\Users\\bob\\gdd.md",
        "echo 见~/Desktop/gdd.md",
        "echo 见../../bob/gdd.md",
    ],
)
def test_clean_command_drops_paths_glued_to_a_word(raw: str) -> None:
    # A command whose paths cannot all be made relative is dropped whole, also
    # when the path follows a short option, "}", "*" or a non-ASCII letter directly.
    cleaned = SAN.clean_command(raw, max_chars=240)
    assert cleaned.text is None
    assert cleaned.redacted is True


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("见/Users/bob/gdd.md的设计", "见[path]"),
        ("路径\uff1a/home/bob/gdd.md", "路径\uff1a[path]"),
        ("按**/home/bob/gdd.md**做", "按**[path]"),
        ("“/Users/bob/Desktop/gdd.md”", "“[path]"),
        ("【/tmp/bob/x】", "【[path]"),
        ("参考C:\\Users\\bob\\gdd.md", "参考[path]"),
        ("见~/Desktop/gdd.md", "见[path]"),
        ("见../../bob/gdd.md", "[path]"),
        ("见/home/alice/proj/game/a.js", "见game/a.js"),
    ],
)
def test_clean_text_finds_host_paths_glued_to_a_word(raw: str, expected: str) -> None:
    # Briefs are often written in Chinese: a host path right after a CJK letter, a
    # full-width colon, "**" or a curly quote is still a host path.
    cleaned = SAN.clean_text(raw, max_chars=4000)
    assert cleaned.text == expected
    assert "bob" not in cleaned.text


def test_clean_text_keeps_cjk_words_separated_by_slashes() -> None:
    text = (
        "收集/射击/跑酷\uff0c动作/RPG/卡牌\uff0cA/B\uff0c60 fps / smooth\uff0c素材/../x"
        "\uff0c素材/data/levels.json\uff0c关卡/work/a.png"
    )
    assert SAN.clean_text(text, max_chars=4000).text == text
    assert SAN.clean_command("ls game/*/index.html src/**/x.js", max_chars=240).text == (
        "ls game/*/index.html src/**/x.js"
    )
    # a short option whose value is a lone "/" (a separator, not a path) stays
    for command_text in ("cut -d/ -f2 a.txt", "awk -F/ '{print $2}' a.txt", "cut -d~ -f1 a"):
        assert SAN.clean_command(command_text, max_chars=240).text == command_text


@given(
    hostile_paths(),
    st.sampled_from(["见{}的设计", "路径\uff1a{}", "**{}**", "“{}”", "【{}】", "参考{}"]),
)
def test_property_clean_text_glued_to_cjk_never_keeps_a_user(
    case: tuple[str, str], template: str
) -> None:
    path, user = case
    cleaned = SAN.clean_text(template.format(path), max_chars=4000)
    assert cleaned.text is None or user not in cleaned.text


@given(
    hostile_paths(),
    st.sampled_from(["tar -C{} -xf a.tar", "gcc -I{} a.c", "echo 见{}", "cat ${{IFS}}{}"]),
)
def test_property_clean_command_glued_never_keeps_a_user(
    case: tuple[str, str], template: str
) -> None:
    path, user = case
    cleaned = SAN.clean_command(template.format(path), max_chars=240)
    assert cleaned.text is None or user not in cleaned.text


@pytest.mark.parametrize("raw", ["type \\bob\\secret.txt", "dir \\ProgramData\\bob\\x"])
def test_clean_command_drops_windows_root_relative_paths(raw: str) -> None:
    # Backslashes count as separators (Windows): "\bob\x" is a host path.
    cleaned = SAN.clean_command(raw, max_chars=240)
    assert cleaned.text is None
    assert cleaned.redacted is True


def test_clean_text_replaces_windows_root_relative_paths_and_keeps_escapes() -> None:
    assert SAN.clean_text("see \\ProgramData\\bob\\x now", max_chars=400).text == "see [path] now"
    assert SAN.clean_command("find . -name \\*.js", max_chars=240).text == "find . -name \\*.js"
    assert SAN.clean_command("printf 'a\\nb' | sed 's/a\\/b/'", max_chars=240).text == (
        "printf 'a\\nb' | sed 's/a\\/b/'"
    )


@pytest.mark.parametrize("raw", ["see\x00/srv/bob/x", "see\u200b/srv/bob/x", "see\x1b/home/bob/x"])
def test_clean_text_dropped_characters_do_not_glue_a_path_to_a_word(raw: str) -> None:
    # Control and format characters are dropped; one right before a path must not
    # make "see/srv/bob/x" out of "see<NUL>/srv/bob/x" (a relative word that leaks).
    cleaned = SAN.clean_text(raw, max_chars=400)
    assert cleaned.text == "see [path]"
    assert SAN.clean_text("a\u200bb\x00c", max_chars=400).text == "abc"


@pytest.mark.parametrize("root", ["relative/proj", "", "proj", "./proj"])
def test_a_project_root_that_is_not_absolute_is_a_usage_error(root: str) -> None:
    with pytest.raises(UsageError, match="not an absolute path") as caught:
        PathSanitizer([root])
    assert caught.value.exit_code == ExitCode.USAGE
