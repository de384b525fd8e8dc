"""SKILL.md frontmatter: what Codex refuses, and renaming a runtime copy."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from agc.extensions._skill import parse_skill_file, rename_frontmatter

GOOD = b"---\nname: pdf-tools\ndescription: Work with PDF files.\nlicense: MIT\n---\n# Body\n"


def test_a_valid_frontmatter_gives_name_and_description() -> None:
    front = parse_skill_file(GOOD)
    assert (front.name, front.description, front.error) == (
        "pdf-tools",
        "Work with PDF files.",
        None,
    )


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"# no frontmatter\n", "no YAML frontmatter"),
        (b"---\nname: x\ndescription: never closed\n", "no YAML frontmatter"),
        (b"---\nname: [unclosed\n---\n", "not valid YAML"),
        (b"---\n- a\n- b\n---\n", "not a YAML mapping"),
        (b"---\n---\nbody\n", "not a YAML mapping"),
        (b"---\nname: 42\ndescription: d\n---\n", "`name` is not a string"),
        (b"---\nname: x\ndescription: [a, b]\n---\n", "`description` is not a string"),
        (b"---\nname: x\ndescription: " + b"d" * 1025 + b"\n---\n", "1025 characters"),
        (b"\xff\xfe---\n", "not UTF-8"),
    ],
)
def test_frontmatter_codex_would_refuse_is_an_error(data: bytes, problem: str) -> None:
    front = parse_skill_file(data)
    assert front.error is not None
    assert problem in front.error


def test_a_missing_description_is_a_note_not_an_error() -> None:
    front = parse_skill_file(b"---\nname: terse\n---\nbody\n")
    assert front.error is None
    assert front.notes


def test_yaml_tags_are_not_constructed() -> None:
    front = parse_skill_file(b"---\nname: !!python/object/apply:os.system ['true']\n---\n")
    assert front.error is not None
    assert "not valid YAML" in front.error


def test_a_byte_order_mark_is_accepted() -> None:
    assert parse_skill_file(b"\xef\xbb\xbf" + GOOD).name == "pdf-tools"


def test_renaming_changes_only_the_name_line_and_keeps_the_body_bytes() -> None:
    renamed = rename_frontmatter(GOOD, "pixel-art")
    assert renamed == GOOD.replace(b"name: pdf-tools", b"name: pixel-art")


def test_renaming_inserts_a_name_when_the_frontmatter_has_none() -> None:
    renamed = rename_frontmatter(b"---\ndescription: d\n---\nbody", "given")
    assert parse_skill_file(renamed).name == "given"
    assert renamed.endswith(b"---\nbody")


def test_renaming_a_multiline_name_rewrites_the_frontmatter_safely() -> None:
    data = b"---\nname: >\n  folded\n  name\ndescription: keep me\nmetadata:\n  a: '1'\n---\nbody\n"
    renamed = rename_frontmatter(data, "new-name")
    front = yaml.safe_load(renamed.split(b"---\n")[1])
    assert front == {"name": "new-name", "description": "keep me", "metadata": {"a": "1"}}
    assert renamed.endswith(b"---\nbody\n")


def test_renaming_keeps_crlf_line_ends() -> None:
    data = GOOD.replace(b"\n", b"\r\n")
    renamed = rename_frontmatter(data, "win-skill")
    assert b"name: win-skill\r\n" in renamed
    assert renamed.count(b"\r\n") == data.count(b"\r\n")


_texts = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs", "Cc"), blacklist_characters="\r\n\x85\u2028\u2029"
    ),
    max_size=40,
)


@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True).filter(lambda k: k != "name"),
        _texts,
        max_size=5,
    ),
    st.from_regex(r"[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,2}", fullmatch=True),
    st.text(max_size=200),
)
def test_renaming_any_frontmatter_changes_the_name_and_nothing_else(
    fields: dict[str, str], new_name: str, body: str
) -> None:
    front = yaml.safe_dump({"name": "old-name", **fields}, allow_unicode=True, sort_keys=False)
    data = ("---\n" + front + "---\n" + body).encode("utf-8")
    renamed = rename_frontmatter(data, new_name)
    parsed = parse_skill_file(renamed)
    assert parsed.error is None
    assert parsed.name == new_name
    text = renamed.decode("utf-8")
    head, _, rest = text.partition("\n---\n")
    assert yaml.safe_load(head.removeprefix("---\n")) == {"name": new_name, **fields}
    assert rest == body
