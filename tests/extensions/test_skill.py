"""SKILL.md frontmatter: what Codex refuses, and renaming a runtime copy."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agc.errors import ExtensionValueError
from agc.extensions._skill import (
    MAX_FRONTMATTER_DEPTH,
    MAX_FRONTMATTER_EXPANDED_BYTES,
    MAX_FRONTMATTER_NODES,
    parse_skill_file,
    rename_frontmatter,
)
from tests.conftest import examples

REACHES_INSIDE = {
    "agc.extensions._skill": "SKILL.md front matter parsing and renaming, and its limits",
}

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


def _laughs(levels: int, width: int) -> bytes:
    lines = ["---", "name: Laughs", "description: d", "l0: &l0 lol"]
    for level in range(1, levels + 1):
        refs = ", ".join([f"*l{level - 1}"] * width)
        lines.append(f"l{level}: &l{level} [{refs}]")
    return ("\n".join([*lines, "---", "body", ""])).encode()


@given(levels=st.integers(min_value=1, max_value=40), width=st.integers(min_value=2, max_value=10))
def test_alias_expansion_beyond_the_limit_is_refused_and_below_it_read(
    levels: int, width: int
) -> None:
    # Expanded nodes: l0 is one scalar, lK one list of `width` copies of l(K-1); the
    # document is one mapping holding name, description and every lK with its key.
    sizes = [1]
    for _ in range(levels):
        sizes.append(1 + width * sizes[-1])
    expanded = 1 + 4 + sum(1 + size for size in sizes)
    front = parse_skill_file(_laughs(levels, width))
    if expanded > MAX_FRONTMATTER_NODES:
        assert front.error is not None
        assert "expand to more than" in front.error
    elif levels + 1 <= MAX_FRONTMATTER_DEPTH:
        assert front.error is None


@pytest.mark.parametrize(
    "frontmatter",
    [
        "name: x\na: &a [*a]\n",
        "name: x\na: &a {k: *a}\n",
        "name: x\na: &a [[1, [*a]]]\n",
    ],
)
def test_a_recursive_alias_is_refused(frontmatter: str) -> None:
    front = parse_skill_file(f"---\n{frontmatter}---\n".encode())
    assert front.error is not None
    assert "alias refers to a node that contains it" in front.error


@pytest.mark.parametrize("depth", [MAX_FRONTMATTER_DEPTH, 400, 20_000])
def test_deep_frontmatter_is_an_error_not_a_recursion_error(depth: int) -> None:
    front = parse_skill_file(("---\nname: x\nk: " + "[" * depth + "]" * depth + "\n---\n").encode())
    assert front.error is not None
    assert f"deeper than {MAX_FRONTMATTER_DEPTH}" in front.error


def test_shared_aliases_within_the_limits_are_read_and_renamed() -> None:
    data = b"---\nname: Shared\ndescription: d\nbase: &b {x: 1}\nuse: [*b, *b]\n---\nbody\n"
    assert parse_skill_file(data).error is None
    renamed = rename_frontmatter(data, "shared")
    assert yaml.safe_load(renamed.split(b"---\n")[1])["use"] == [{"x": 1}, {"x": 1}]


@pytest.mark.parametrize(
    "data",
    [b"---\nname: x\na: &a [*a]\n---\n", b"---\nk: " + b"[" * 5000 + b"]" * 5000 + b"\n---\n"],
)
def test_renaming_a_frontmatter_beyond_the_limits_is_a_value_error(data: bytes) -> None:
    with pytest.raises(ValueError, match="not valid YAML"):
        rename_frontmatter(data, "renamed")


@pytest.mark.parametrize("field", ["name", "description", "other"])
def test_a_lone_surrogate_escape_in_the_frontmatter_is_refused(field: str) -> None:
    front = parse_skill_file(f'---\nname: x\n{field}: "a\\ud800"\n---\n'.encode())
    assert front.error is not None
    assert "lone surrogate" in front.error


def _anchored(size: int, copies: int) -> bytes:
    """One anchored string of ``size`` bytes, referred to ``copies`` times."""
    refs = ", ".join(["*big"] * copies)
    return (f"---\nname: x\ndescription: d\nbig: &big {'a' * size}\nuse: [{refs}]\n---\n").encode()


@settings(max_examples=examples(30), deadline=None)
@given(size=st.integers(1, 300_000), copies=st.integers(0, 60))
def test_aliases_are_bounded_by_the_text_they_expand_to_not_only_by_nodes(
    size: int, copies: int
) -> None:
    front = parse_skill_file(_anchored(size, copies))
    # name, x, description, d, big, use: 12 bytes of text besides the anchored string.
    expanded = 12 + size * (1 + copies)
    if expanded > MAX_FRONTMATTER_EXPANDED_BYTES:
        assert front.error is not None
        assert f"more than {MAX_FRONTMATTER_EXPANDED_BYTES} bytes of text" in front.error
    else:
        assert front.error is None


def test_a_one_megabyte_string_repeated_500_times_is_refused_quickly() -> None:
    data = _anchored(1_000_000, 500)
    assert len(data) < 1_100_000
    front = parse_skill_file(data)
    assert front.error is not None
    assert "bytes of text" in front.error
    with pytest.raises(ValueError, match="bytes of text"):
        rename_frontmatter(data, "renamed")


# Every scalar form PyYAML builds an integer from, at sizes Python refuses to write out.
_HUGE_INTEGERS = st.one_of(
    st.integers(4301, 6000).map(lambda n: "9" * n),
    st.integers(4301, 6000).map(lambda n: "-" + "7" * n),
    st.integers(4301, 6000).map(lambda n: "0x" + "f" * n),
    st.integers(4301, 6000).map(lambda n: "0" + "7" * n),  # YAML 1.1 octal
    st.integers(4301, 6000).map(lambda n: "0b" + "1" * (4 * n)),
    st.integers(4301, 6000).map(lambda n: "1" * n + ":30"),  # YAML 1.1 base 60
    st.integers(1001, 4300).map(lambda n: "9" * n),  # Python could, agc keeps 1000
)


def _frontmatter_with(field: str, value: str) -> bytes:
    frontmatter = f"name: x\ndescription: d\n{field}: {value}\n"
    if field == "metadata":
        frontmatter = f"name: x\ndescription: d\nmetadata: {{n: [{value}]}}\n"
    return f"---\n{frontmatter}---\nbody\n".encode()


@settings(max_examples=examples(30), deadline=None)
@given(field=st.sampled_from(["name", "description", "version", "metadata"]), value=_HUGE_INTEGERS)
def test_an_integer_too_long_to_keep_refuses_the_file_naming_it(field: str, value: str) -> None:
    """A number agc cannot keep exactly is no skill error for Codex (it ignores fields it
    does not read): the file is refused (exit 2), named, with the integer's length."""
    data = _frontmatter_with(field, value)
    with pytest.raises(ExtensionValueError, match="an integer in the frontmatter") as refused:
        parse_skill_file(data, label="skills/x/SKILL.md")
    assert refused.value.exit_code == 2
    assert refused.value.message.startswith("skills/x/SKILL.md: ")
    assert f"written with {len(value)} characters" in refused.value.message
    with pytest.raises(ValueError, match="an integer"):
        rename_frontmatter(data, "renamed")


@pytest.mark.parametrize("value", ["2024-13-45", "2024-02-30", "2024-00-01 10:00:00"])
def test_a_date_python_cannot_build_is_a_frontmatter_error_not_a_crash(value: str) -> None:
    data = _frontmatter_with("version", value)
    front = parse_skill_file(data)
    assert front.error is not None
    assert "not valid YAML" in front.error
    with pytest.raises(ValueError, match="not valid YAML"):
        rename_frontmatter(data, "renamed")


@pytest.mark.parametrize(
    "name", ["crafter:onboard-repo", "PDF Processing", "#tag", "true", "null", "1e3", "- x", "名前"]
)
def test_renaming_to_any_codex_name_reads_back_as_that_string(name: str) -> None:
    renamed = rename_frontmatter(GOOD, name)
    assert parse_skill_file(renamed).name == name
    assert renamed.endswith(b"# Body\n")
