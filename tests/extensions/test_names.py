"""Naming rules: native forms, collisions per namespace, suffixes, reserved names."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc.errors import ExtensionNameInvalidError
from agc.extensions import (
    RESERVED_MCP_NAMES,
    ExtensionRepository,
    _names,
    assign_name,
    check_manual_name,
    collision_key,
    is_native_name,
    normalize_name,
)
from agc.extensions._names import ItemType, NameAllocator, skill_folder_name
from tests.conftest import examples

REACHES_INSIDE = {
    "agc.extensions._names": "the name allocator and the item types on their own",
}

SKILL_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
MCP_RE = re.compile(r"[A-Za-z0-9_-]+")
skill_names = st.from_regex(r"[a-z0-9]{1,10}(-[a-z0-9]{1,10}){0,3}", fullmatch=True)
mcp_names = st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True)


# Unicode White_Space (the set Rust's char::is_whitespace, and so Codex, splits on),
# written out here independently of the module.
WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + ("\u2028\u2029\u202f\u205f\u3000")
)


def codex_name(raw: str) -> str | None:
    """The name Codex 0.171.0 loads for frontmatter ``name: raw`` (None: it refuses the
    skill): whitespace runs one space, trimmed, 1..64 characters (codex-rs core-skills
    loader ``sanitize_single_line`` and ``validate_len``)."""
    words = re.split("[" + re.escape(WHITE_SPACE) + "]+", raw)
    name = " ".join(word for word in words if word)
    return name if 0 < len(name) <= 64 else None


def has_control(text: str) -> bool:
    return any(unicodedata.category(ch) in {"Cc", "Cf"} for ch in text)


codex_texts = st.text(
    alphabet=st.one_of(
        st.characters(),
        st.sampled_from([*list(WHITE_SPACE), ":", "/", "#", "-", "\x1c", "\u200b"]),
    ),
    max_size=80,
)


@given(codex_texts)
def test_any_text_normalizes_to_a_name_codex_loads_unchanged(raw: str) -> None:
    name = normalize_name("skill", raw)
    assert codex_name(name) == name
    assert not has_control(name)
    assert is_native_name("skill", name)


@given(codex_texts)
def test_a_name_codex_loads_is_kept_and_only_a_refused_one_rewritten(raw: str) -> None:
    loaded = codex_name(raw)
    if loaded is not None and not has_control(loaded):
        assert normalize_name("skill", raw) == loaded
        assert is_native_name("skill", raw) == (raw == loaded)
    else:
        assert not is_native_name("skill", raw)


@given(st.text())
def test_any_text_normalizes_to_a_valid_mcp_name(raw: str) -> None:
    name = normalize_name("mcp", raw)
    assert MCP_RE.fullmatch(name), name
    assert len(name) <= 64


@given(skill_names)
def test_a_native_skill_name_is_kept_as_it_is(name: str) -> None:
    if len(name) <= 64:
        assert normalize_name("skill", name) == name


def test_skill_names_are_kept_as_codex_loads_them() -> None:
    assert normalize_name("skill", "crafter:onboard-repo") == "crafter:onboard-repo"
    assert normalize_name("skill", "PDF  Processing\n") == "PDF Processing"
    assert normalize_name("skill", "--Café__Tools--") == "--Café__Tools--"
    assert normalize_name("skill", "\u3000") == "skill"
    assert normalize_name("skill", "a" * 70) == "a" * 64
    assert normalize_name("mcp", "my server.v2") == "my_server_v2"


@pytest.mark.parametrize(
    ("name", "folder"),
    [
        ("art-skill", "art-skill"),
        ("Pixel_Art.v2", "Pixel_Art.v2"),
        ("crafter:onboard-repo", "crafter-onboard-repo"),
        ("PDF Processing", "pdf-processing"),
        ("x/../y", "x-y"),
        (".hidden", "hidden"),
        ("名前", "skill"),
    ],
)
def test_a_projected_skill_folder_is_a_portable_file_name(name: str, folder: str) -> None:
    assert skill_folder_name(name) == folder


@settings(max_examples=examples(200))
@given(st.sampled_from(["skill", "mcp"]), st.lists(st.text(max_size=80), max_size=25))
def test_assigned_names_never_collide_and_stay_native(kind: str, raws: list[str]) -> None:
    item_type: ItemType = "skill" if kind == "skill" else "mcp"
    taken: list[str] = []
    for raw in raws:
        wanted = normalize_name(item_type, raw)
        name = assign_name(item_type, wanted, taken)
        assert is_native_name(item_type, name)
        assert collision_key(item_type, name) not in {collision_key(item_type, t) for t in taken}
        taken.append(name)
    if item_type == "mcp":
        reserved = {collision_key("mcp", name) for name in RESERVED_MCP_NAMES}
        assert not reserved & {collision_key("mcp", name) for name in taken}


@given(st.lists(skill_names, min_size=1, max_size=15))
def test_a_free_name_is_given_unchanged_and_a_taken_one_gets_the_first_free_suffix(
    wanted: list[str],
) -> None:
    taken: list[str] = []
    for name in wanted:
        got = assign_name("skill", name, taken)
        if name not in taken:
            assert got == name
        else:
            number = int(got.rsplit("-", 1)[1])
            assert got == f"{name}-{number}"
            for smaller in range(2, number):
                assert f"{name}-{smaller}" in taken
        taken.append(got)


def test_collisions_take_two_then_three() -> None:
    taken = ["art-skill"]
    second = assign_name("skill", "art-skill", taken)
    third = assign_name("skill", "art-skill", [*taken, second])
    assert (second, third) == ("art-skill-2", "art-skill-3")


def test_skill_collisions_ignore_ascii_case() -> None:
    assert assign_name("skill", "foo", ["Foo"]) == "foo-2"


def test_mcp_collisions_are_case_sensitive() -> None:
    assert assign_name("mcp", "Search", ["search"]) == "Search"


@pytest.mark.parametrize(("existing", "new"), [("a_b", "a-b"), ("a-b", "a_b"), ("x-y_z", "x_y-z")])
def test_mcp_names_equal_after_codex_tool_name_sanitising_collide(existing: str, new: str) -> None:
    assert assign_name("mcp", new, [existing]) == f"{new}-2"


def test_skill_and_mcp_namespaces_are_separate() -> None:
    # A name taken by a skill is checked against skills only: assign_name is per namespace.
    assert assign_name("mcp", "search", []) == "search"
    assert assign_name("skill", "search", []) == "search"


@pytest.mark.parametrize("reserved", ["agc_tools", "agc-tools", "codex_apps", "codex-apps"])
def test_reserved_server_names_are_never_given_to_a_third_party_item(reserved: str) -> None:
    assert assign_name("mcp", reserved, []) == f"{reserved}-2"


def test_a_suffix_keeps_the_name_within_64_characters() -> None:
    long_name = "a" * 63 + "b"
    got = assign_name("skill", long_name, [long_name])
    assert len(got) == 64
    assert got.endswith("-2")
    assert is_native_name("skill", got)


def test_a_cut_before_the_suffix_never_leaves_a_double_hyphen() -> None:
    name = "a" * 61 + "-bc"
    got = assign_name("skill", name, [name])
    assert "--" not in got
    assert is_native_name("skill", got)


@pytest.mark.parametrize(
    ("item_type", "name"),
    [
        ("skill", ""),
        ("skill", "   "),
        ("skill", " pixel"),
        ("skill", "pixel  art"),
        ("skill", "pixel\tart"),
        ("skill", "esc\x1b[2J"),
        ("skill", "a" * 65),
        ("mcp", "my server"),
        ("mcp", "db.v2"),
        ("mcp", ""),
        ("unknown", " padded "),
        ("unknown", "bad\nname"),
    ],
)
def test_manual_names_outside_the_native_form_are_refused(item_type: str, name: str) -> None:
    kind: ItemType = (
        "skill" if item_type == "skill" else ("mcp" if item_type == "mcp" else "unknown")
    )
    with pytest.raises(ExtensionNameInvalidError):
        check_manual_name(kind, name)


def test_a_refused_manual_name_suggests_the_native_form() -> None:
    with pytest.raises(ExtensionNameInvalidError) as caught:
        check_manual_name("skill", "Pixel   Art ")
    assert "'Pixel Art'" in caught.value.hint
    assert check_manual_name("skill", "Pixel Art") == "Pixel Art"


@given(mcp_names)
def test_a_valid_mcp_name_passes_the_manual_check(name: str) -> None:
    assert check_manual_name("mcp", name) == name


@given(
    item_type=st.sampled_from(["skill", "mcp"]),
    taken=st.lists(
        st.sampled_from(["a", "a-2", "A-3", "a_4", "b", "b-2", "agc-tools"]), max_size=6
    ),
    wanted=st.lists(st.sampled_from(["a", "a-2", "b", "agc_tools", "c"]), max_size=12),
)
def test_the_allocator_gives_the_names_assign_name_gives_one_by_one(
    item_type: ItemType, taken: list[str], wanted: list[str]
) -> None:
    allocator = NameAllocator(item_type, taken)
    names = list(taken)
    for name in wanted:
        expected = assign_name(item_type, name, names)
        assert allocator.assign(name) == expected
        names.append(expected)


def test_an_import_of_many_servers_wanting_one_name_costs_linear_work(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    count = 2000
    folder = tmp_path / "same"
    folder.mkdir()
    # Distinct keys that all normalise to the MCP name "a_".
    servers = {"a" + chr(0x4E00 + index): {"command": "x"} for index in range(count)}
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    calls = 0
    real = _names.collision_key

    def counting(item_type: ItemType, name: str) -> str:
        nonlocal calls
        calls += 1
        return real(item_type, name)

    monkeypatch.setattr(_names, "collision_key", counting)
    result = ExtensionRepository(store).import_path(folder)
    names = [item.name for item in result.items]
    assert names[:3] == ["a_", "a_-2", "a_-3"]
    assert len(set(names)) == count
    assert calls < 10 * count  # naming each against the whole list: about 4 000 000
